package shm

import (
	"fmt"
	"os"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Memory shared between the processes of one host lives in memfd files:
// they have no name, so nothing is left behind when a job crashes (the
// kernel frees them with the last process that maps them), and /dev/shm's
// size limit (small in containers) does not apply. A peer reaches a
// process's memfd through /proc/<pid>/fd/<fd>.

// memfd is one shared file and this process's mapping of it.
type memfd struct {
	fd  int
	mem []byte
}

func newMemfd(name string, size int) (*memfd, error) {
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("memfd_create: %v", err)
	}
	m := &memfd{fd: fd}
	if size > 0 {
		if err := m.resize(size); err != nil {
			unix.Close(fd)
			return nil, err
		}
	}
	return m, nil
}

// resize sets the file's size and maps all of it. It is used once, before
// anybody holds pointers into the mapping.
func (m *memfd) resize(size int) error {
	if err := unix.Ftruncate(m.fd, int64(size)); err != nil {
		return fmt.Errorf("cannot size shared memory to %d bytes: %v", size, err)
	}
	if m.mem != nil {
		_ = unix.Munmap(m.mem)
		m.mem = nil
	}
	b, err := unix.Mmap(m.fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_NORESERVE)
	if err != nil {
		return fmt.Errorf("cannot map %d bytes of shared memory: %v", size, err)
	}
	m.mem = b
	return nil
}

func (m *memfd) close() {
	if m == nil {
		return
	}
	if m.mem != nil {
		_ = unix.Munmap(m.mem)
		m.mem = nil
	}
	if m.fd >= 0 {
		_ = unix.Close(m.fd)
		m.fd = -1
	}
}

// mapPeer maps size bytes of another process's memfd.
func mapPeer(pid, fd, size int) ([]byte, error) {
	path := fmt.Sprintf("/proc/%d/fd/%d", pid, fd)
	f, err := unix.Open(path, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("cannot open %s: %v (are the processes in different containers?)", path, err)
	}
	defer unix.Close(f)
	var st unix.Stat_t
	if err := unix.Fstat(f, &st); err != nil {
		return nil, err
	}
	if st.Size < int64(size) {
		return nil, fmt.Errorf("%s holds %d bytes, expected at least %d", path, st.Size, size)
	}
	b, err := unix.Mmap(f, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_NORESERVE)
	if err != nil {
		return nil, fmt.Errorf("cannot map %d bytes of %s: %v", size, path, err)
	}
	return b, nil
}

// unmapPeer undoes mapPeer.
func unmapPeer(b []byte) { _ = unix.Munmap(b) }

// allowPeerAccess lets other processes of this user read and write our
// memory with process_vm_readv/writev when the Yama security module
// restricts that to ancestors (ptrace_scope 1). Scopes 2 and 3 forbid it;
// then copies to registered memory are served by the owner instead.
func allowPeerAccess() (bool, string) {
	b, err := os.ReadFile("/proc/sys/kernel/yama/ptrace_scope")
	if err != nil {
		return true, "no Yama restriction"
	}
	switch strings.TrimSpace(string(b)) {
	case "0":
		return true, "ptrace_scope 0"
	case "1":
		if err := unix.Prctl(unix.PR_SET_PTRACER, unix.PR_SET_PTRACER_ANY, 0, 0, 0); err != nil {
			return false, fmt.Sprintf("ptrace_scope 1 and PR_SET_PTRACER failed: %v", err)
		}
		return true, "ptrace_scope 1, PR_SET_PTRACER set"
	default:
		return false, "ptrace_scope " + strings.TrimSpace(string(b))
	}
}

// cmaWrite copies local memory into another process (process_vm_writev).
func cmaWrite(pid int, remote uintptr, local unsafe.Pointer, n uint64) error {
	for n > 0 {
		chunk := min(n, 1<<30)
		l := []unix.Iovec{{Base: (*byte)(local)}}
		l[0].SetLen(int(chunk))
		r := []unix.RemoteIovec{{Base: remote, Len: int(chunk)}}
		w, err := unix.ProcessVMWritev(pid, l, r, 0)
		if err != nil {
			return err
		}
		if w <= 0 {
			return fmt.Errorf("process_vm_writev wrote nothing")
		}
		n -= uint64(w)
		remote += uintptr(w)
		local = unsafe.Add(local, w)
	}
	return nil
}

// cmaRead copies another process's memory here (process_vm_readv).
func cmaRead(pid int, remote uintptr, local unsafe.Pointer, n uint64) error {
	for n > 0 {
		chunk := min(n, 1<<30)
		l := []unix.Iovec{{Base: (*byte)(local)}}
		l[0].SetLen(int(chunk))
		r := []unix.RemoteIovec{{Base: remote, Len: int(chunk)}}
		got, err := unix.ProcessVMReadv(pid, l, r, 0)
		if err != nil {
			return err
		}
		if got <= 0 {
			return fmt.Errorf("process_vm_readv read nothing")
		}
		n -= uint64(got)
		remote += uintptr(got)
		local = unsafe.Add(local, got)
	}
	return nil
}

// futexWait sleeps while *addr == val, at most timeoutNs (shared, not
// private: the word lives in memory other processes map).
func futexWait(addr *uint32, val uint32, timeoutNs int64) {
	ts := unix.NsecToTimespec(timeoutNs)
	_, _, _ = unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), 0 /* FUTEX_WAIT */, uintptr(val), uintptr(unsafe.Pointer(&ts)), 0, 0)
}

// futexWake wakes one sleeper on addr.
func futexWake(addr *uint32) {
	_, _, _ = unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), 1 /* FUTEX_WAKE */, 1, 0, 0, 0)
}
