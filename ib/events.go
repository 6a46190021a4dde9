package ib

import (
	"errors"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// eventWaiter is how the progress goroutine sleeps until one of its file
// descriptors (the wake-up eventfd, the devices' completion channels and
// asynchronous event queues) is readable: an epoll instance holding them,
// itself registered with the Go runtime's poller, so that the goroutine
// parks like one waiting for a socket and its P is free meanwhile. A
// sleep inside a C call (poll) held the P in a system call until the
// runtime's monitor thread took it back; CPU-served atomics on Soft-RoCE
// took a median of 609 us that way and 495 parked (5 alternated rounds,
// 13 of 15 pairs faster; BENCHMARKS.md).
type eventWaiter struct {
	f    *os.File // the epoll instance
	conn syscall.RawConn
	evs  []unix.EpollEvent
	mask uint64             // filled by ready
	fn   func(uintptr) bool // ready, bound once (a method value per wait would be garbage)
}

// newEventWaiter watches fds (at most 64; bit i of wait's result is
// fds[i]). It fails when the runtime cannot poll the epoll instance.
func newEventWaiter(fds []int32) (*eventWaiter, error) {
	if len(fds) > 64 {
		return nil, errors.New("more than 64 file descriptors to wait for")
	}
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, err
	}
	for i, fd := range fds {
		ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(i)}
		if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, int(fd), &ev); err != nil {
			_ = unix.Close(ep)
			return nil, err
		}
	}
	// Non-blocking, so that os.NewFile registers it with the poller.
	if err := unix.SetNonblock(ep, true); err != nil {
		_ = unix.Close(ep)
		return nil, err
	}
	w := &eventWaiter{f: os.NewFile(uintptr(ep), "ib-events"), evs: make([]unix.EpollEvent, len(fds))}
	w.fn = w.ready
	if w.conn, err = w.f.SyscallConn(); err == nil {
		// Only a file the poller holds takes a deadline.
		err = w.f.SetReadDeadline(time.Time{})
	}
	if err != nil {
		_ = w.f.Close()
		return nil, err
	}
	return w, nil
}

// ready is the poller's callback: done when something is readable.
func (w *eventWaiter) ready(fd uintptr) bool {
	n, err := unix.EpollWait(int(fd), w.evs, 0)
	if err != nil {
		return err != unix.EINTR
	}
	for _, ev := range w.evs[:n] {
		w.mask |= 1 << uint(ev.Fd)
	}
	return n > 0
}

// wait sleeps until one of the file descriptors is readable or d has
// passed, and returns which are readable as a bit mask (0: none).
func (w *eventWaiter) wait(d time.Duration) uint64 {
	w.mask = 0
	if w.f.SetReadDeadline(time.Now().Add(d)) != nil {
		return 0
	}
	_ = w.conn.Read(w.fn) // a passed deadline ends it with an error, and a mask of 0
	return w.mask
}

func (w *eventWaiter) close() { _ = w.f.Close() }
