package boot

import (
	"fmt"
	"net"
	"sync"
	"syscall"
)

// hangupWatch waits, in a goroutine of its own, for the other end of a
// connection to close it, without reading: the collectives read the same
// connection. It sleeps in epoll_wait for the connection's hang-up
// (EPOLLRDHUP) or for stop, so it costs a thread that never wakes up
// otherwise.
type hangupWatch struct {
	epfd   int
	wakeup [2]int // a pipe: stop writes to it

	mu      sync.Mutex
	stopped bool // stop was called: a hang-up is expected now
	ended   bool // the goroutine returned and closed the descriptors
}

// watchHangup calls hungUp once, from a goroutine of its own, when the
// other end of c closes it, unless stop was called before.
func watchHangup(c net.Conn, hungUp func()) (*hangupWatch, error) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil, fmt.Errorf("cannot watch a %T for a hang-up", c)
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return nil, err
	}
	w := &hangupWatch{epfd: -1, wakeup: [2]int{-1, -1}}
	if err := w.open(raw); err != nil {
		w.close()
		return nil, fmt.Errorf("watching the rendezvous connection: %v", err)
	}
	go w.wait(hungUp)
	return w, nil
}

// open registers the connection's hang-up and the wake-up pipe with a new
// epoll instance.
func (w *hangupWatch) open(raw syscall.RawConn) error {
	var err error
	if w.epfd, err = syscall.EpollCreate1(syscall.EPOLL_CLOEXEC); err != nil {
		return err
	}
	if err = syscall.Pipe2(w.wakeup[:], syscall.O_CLOEXEC); err != nil {
		return err
	}
	wake := syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(w.wakeup[0])}
	if err = syscall.EpollCtl(w.epfd, syscall.EPOLL_CTL_ADD, w.wakeup[0], &wake); err != nil {
		return err
	}
	cerr := raw.Control(func(fd uintptr) {
		// EPOLLHUP and EPOLLERR are reported without being asked for.
		hup := syscall.EpollEvent{Events: syscall.EPOLLRDHUP, Fd: int32(fd)}
		err = syscall.EpollCtl(w.epfd, syscall.EPOLL_CTL_ADD, int(fd), &hup)
	})
	if cerr != nil {
		return cerr
	}
	return err
}

func (w *hangupWatch) wait(hungUp func()) {
	events := make([]syscall.EpollEvent, 2)
	var n int
	err := error(syscall.EINTR)
	for err == syscall.EINTR {
		n, err = syscall.EpollWait(w.epfd, events, -1)
	}
	woken := err != nil
	for _, ev := range events[:max(n, 0)] {
		woken = woken || ev.Fd == int32(w.wakeup[0])
	}
	w.mu.Lock()
	report := !woken && !w.stopped
	w.close()
	w.mu.Unlock()
	if report {
		hungUp()
	}
}

// close releases the descriptors; w.mu is held (or the goroutine never
// started).
func (w *hangupWatch) close() {
	w.ended = true
	for _, fd := range []int{w.epfd, w.wakeup[0], w.wakeup[1]} {
		if fd >= 0 {
			_ = syscall.Close(fd)
		}
	}
}

// stop ends the watch: a hang-up from now on is expected (the process
// said goodbye, or dropped the connection itself).
func (w *hangupWatch) stop() {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.stopped && !w.ended {
		_, _ = syscall.Write(w.wakeup[1], []byte{0})
	}
	w.stopped = true
}
