package core

import (
	"fmt"
	"runtime"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Yield is for the transports' progress goroutines: it lets other
// goroutines have this P, then gives the CPU to another runnable thread.
// With GOMAXPROCS 1 (a rank bound to one core) a progress goroutine that
// spun in system calls alone would keep a C thread calling into Go waiting
// for the scheduler's next preemption, milliseconds away.
func Yield() {
	runtime.Gosched()
	osYield()
}

// osYield gives the CPU to another runnable thread, keeping the P. Waits
// in the application's thread use it: that goroutine is locked to its C
// thread, and handing its P away would cost two thread switches per turn
// (it polls the transports itself). Now and then they hand the P over all
// the same (runtime.Gosched): a goroutine that holds a transport's poll
// lock may be waiting for one.
func osYield() { _, _, _ = unix.RawSyscall(unix.SYS_SCHED_YIELD, 0, 0, 0) }

// YieldTurn is turn n of a wait that yields: it gives the CPU to another
// runnable thread, keeping the P, and on every 16th turn hands the P over
// first. The thread that will end the wait may be a goroutine that the Go
// scheduler preempted while it held a lock; it needs a P to go on. With
// GOMAXPROCS 1 (a rank bound to one core) a waiter that kept its P would
// starve it for good: the waiter spends nearly all its time inside the raw
// system call, where the runtime cannot preempt it, and osYield's callees
// are nosplit (no preemption check either).
func YieldTurn(n int) {
	if n&15 == 15 {
		runtime.Gosched()
	}
	osYield()
}

// Nap sleeps for d in this thread, to within the kernel's timer slack
// (tens of microseconds). Go's own timers are not that fine: when every
// goroutine is asleep the runtime waits for the next one in epoll with a
// timeout of whole milliseconds, so time.Sleep(20µs) took 1.07 ms on the
// Xeon host and 1.3 ms at the median in the Soft-RoCE guest, where a
// nanosleep of 20 µs took 76 µs and 158 µs. A wait that sleeps between
// looks at memory that peers write (nothing wakes it) needs the finer one.
// The thread is in a system call meanwhile, and the runtime gives its P to
// others.
func Nap(d time.Duration) {
	ts := unix.NsecToTimespec(int64(d))
	for unix.Nanosleep(&ts, &ts) == unix.EINTR {
	}
}

// SpinWait is turn i of a wait for a word that another thread changes
// soon (a lock word, a count of users): spin, then yield (YieldTurn).
func SpinWait(i int) {
	if i >= 64 {
		YieldTurn(i)
	}
}

// mapAnon maps size bytes of zeroed private memory outside the Go heap.
// Pages are committed on first touch (MAP_NORESERVE), so a large starter
// memory costs nothing until it is used.
func mapAnon(size uint64) ([]byte, error) {
	if size == 0 {
		return nil, nil
	}
	if size > uint64(^uint(0)>>1) {
		return nil, fmt.Errorf("%d bytes do not fit the address space", size)
	}
	b, err := unix.Mmap(-1, 0, int(size), unix.PROT_READ|unix.PROT_WRITE,
		unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
	if err != nil {
		return nil, err
	}
	return b, nil
}

// unmap releases memory from mapAnon.
func unmap(b []byte) {
	if len(b) > 0 {
		_ = unix.Munmap(b)
	}
}

// zeroMapped clears starter memory. Dropping the pages is cheaper than
// writing zeros and gives the memory back to the system: MADV_REMOVE frees
// the backing store of shared memory (every process mapping it then sees
// zeros); private anonymous memory refuses it, and MADV_DONTNEED gives it
// fresh zero pages.
func zeroMapped(b []byte) {
	if len(b) == 0 {
		return
	}
	if unix.Madvise(b, unix.MADV_REMOVE) == nil {
		return
	}
	if err := unix.Madvise(b, unix.MADV_DONTNEED); err != nil {
		clear(b)
	}
}

// checkMapped fails unless every page of [p, p+size) is mapped in this
// process. Peers write registered memory through the owner's own loads and
// stores (udp, owner-served shm) and its CPU atomics: a registration that
// runs past the end of an allocation would let a peer's access kill the
// owner with SIGSEGV. ib's ibv_reg_mr refuses such a range; this refuses it
// on every transport. msync(MS_ASYNC) only walks the mappings (ENOMEM for a
// hole), without touching or committing a page, and never blocks (hence
// RawSyscall: a system call is most of a registration's cost).
func checkMapped(p unsafe.Pointer, size uint64) error {
	page := uint64(unix.Getpagesize())
	start := uint64(uintptr(p)) &^ (page - 1)
	end := uint64(uintptr(p)) + size // the caller checked that it does not wrap
	_, _, errno := unix.RawSyscall(unix.SYS_MSYNC, uintptr(start), uintptr(end-start), unix.MS_ASYNC)
	switch errno {
	case 0:
		return nil
	case unix.ENOMEM:
		return fmt.Errorf("range %p + %d bytes is not all mapped memory of this process (is size larger than the allocation?)", p, size)
	default:
		return fmt.Errorf("cannot check that range %p + %d bytes is mapped: %v", p, size, errno)
	}
}

// bytesAt views n bytes of non-Go memory at p as a slice.
func bytesAt(p unsafe.Pointer, n uint64) []byte {
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(p), n)
}

// hostCPUs counts the CPUs the given processes of this host may use
// together: the union of their affinity masks, so that processes pinned
// one to a CPU each (acprun --acp-bind) count as many CPUs as processes.
// A process whose mask cannot be read (gone, or another host's pid
// namespace) counts with this process's CPUs.
func hostCPUs(pids map[uint32]bool) int {
	var all unix.CPUSet
	own := runtime.NumCPU()
	for pid := range pids {
		var set unix.CPUSet
		if unix.SchedGetaffinity(int(pid), &set) != nil {
			return max(own, all.Count())
		}
		for i := range all {
			all[i] |= set[i]
		}
	}
	return max(all.Count(), 1)
}

// awaitOutputRead waits, at most limit, until whoever reads fds (this
// process's standard output and error) through a pipe or a socket (a
// launcher) has read what was written there. A launcher told to stop the
// job kills its processes and may drop what still sits in those pipes:
// the message of acp_abort among it.
func awaitOutputRead(fds []int, limit time.Duration) {
	deadline := time.Now().Add(limit)
	for _, fd := range fds {
		var st unix.Stat_t
		if unix.Fstat(fd, &st) != nil {
			continue
		}
		// Bytes not read yet: a pipe counts them on either end; a socket
		// counts those it sent that the peer has not taken.
		req := uint(0)
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFIFO:
			req = unix.TIOCINQ
		case unix.S_IFSOCK:
			req = unix.TIOCOUTQ
		default:
			continue
		}
		for {
			n, err := unix.IoctlGetInt(fd, req)
			if err != nil || n == 0 || time.Now().After(deadline) {
				break
			}
			time.Sleep(time.Millisecond)
		}
	}
}

// SignalEventfd wakes whoever polls the eventfd fd (a transport's sleeping
// progress goroutine).
//
// Both eventfd calls are system calls of their own, not unix.Write and
// unix.Read: built with the race detector those report the buffer to it,
// which moves the buffer to the heap, an allocation per wake-up and per
// nap (TestChannelPingpongAllocations failed under -race, 0.5-1.2
// allocations per round trip where none is made).
func SignalEventfd(fd int) {
	one := [8]byte{1}
	_, _, _ = unix.Syscall(unix.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(&one[0])), uintptr(len(one)))
}

// DrainEventfd resets the non-blocking eventfd fd, which may have been
// signalled.
func DrainEventfd(fd int) {
	var b [8]byte
	_, _, _ = unix.Syscall(unix.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
}

// PinCallingThread pins the calling thread, and no other, to cpu
// (acprun --acp-bind thread: acp_init pins the application's thread, on
// which a call from C runs). The library's threads keep every CPU, so two
// ranks' busy waits never share a CPU, which the kernel otherwise let
// happen for whole runs (over udp on 2 CPUs, 3-6 runs in 60 of the put
// pingpong took 10-30 us one way instead of 4.5), while a progress
// goroutine can still run beside either, such as the one that receives
// for a target computing without ACP calls (pinned with its rank, it
// waited for the rank's time slice: milliseconds per put).
//
// A thread starts with the mask of the thread that creates it, and the Go
// runtime creates threads from the one that needs another (the
// application's, in a call into Go) unless that thread is locked to its
// goroutine: then its template thread does, which the lock starts before
// the pin. So the calling goroutine stays locked to its thread for good (a
// C thread keeps its M). Without the lock, 1-2 threads pinned this way
// appeared within seconds, and a computing target waited up to 8 ms for a
// put when its progress goroutine ran on one (tests/c/t_bind checks every
// thread's CPUs).
func PinCallingThread(cpu int) error {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return fmt.Errorf("cannot read the CPUs of this thread: %v", err)
	}
	if cpu < 0 || cpu >= 1024 || !set.IsSet(cpu) {
		return fmt.Errorf("CPU %d is not one this process may use (%d of them)", cpu, set.Count())
	}
	runtime.LockOSThread()
	set.Zero()
	set.Set(cpu)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return fmt.Errorf("cannot pin this thread to CPU %d: %v", cpu, err)
	}
	return nil
}
