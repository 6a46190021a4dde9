package udp

import (
	"errors"
	"fmt"
	"net"
	"unsafe"

	"golang.org/x/sys/unix"
)

// packet is one datagram on its way out: data, then tail (a put
// fragment's source memory, gathered by the kernel without a copy of ours).
type packet struct {
	to   *dest
	data []byte
	tail []byte
}

// dest is a peer's address and the socket that sends to it: one connected
// to it, chosen by the socket at the first send (via). A connected
// socket's route is looked up once, at connect; an unconnected one looks
// it up for every datagram (0.3-0.5 us of the 4 us an acp_copy took in a
// udp pingpong on one host). Every datagram to a destination leaves
// through the same socket, so the network keeps them in one flow. They
// arrive from that socket's port; the receiver knows the sender from the
// header, not from the source address.
type dest struct {
	sa  unix.RawSockaddrInet4
	via int // the sending socket; -1 until the first send chooses it
}

// packetConn is the socket as the protocol sees it: batches in, batches
// out. The real one uses sendmmsg/recvmmsg; tests and ACP_UDP_FAULTS wrap it
// to lose, duplicate and reorder datagrams.
type packetConn interface {
	// send transmits the packets (as many as the kernel takes; datagrams
	// it refuses for lack of buffer space are lost, as on a network).
	send(pkts []packet) error
	// recv fills bufs with waiting datagrams without blocking and returns
	// how many arrived and their sizes.
	recv(bufs [][]byte, sizes []int) (int, error)
	// peek copies the start of the next waiting datagram into b without
	// taking it, and returns how much it copied and the datagram's length
	// (size -1 when none waits; an empty datagram has size 0).
	peek(b []byte) (n, size int, err error)
	// recvInto takes the next datagram, its first len(hdr) bytes into hdr
	// and the rest into data, and returns its length (0, nil when none
	// waits).
	recvInto(hdr, data []byte) (int, error)
	// recvScattered takes up to len(hdrs) waiting datagrams without
	// blocking, datagram i's first len(hdrs[i]) bytes into hdrs[i], the
	// next len(datas[i]) into datas[i] and the rest into spills[i] (none
	// may be empty), and returns how many it took and their lengths.
	recvScattered(hdrs, datas, spills [][]byte, sizes []int) (int, error)
	fd() int
	close() error
}

// socket is a non-blocking IPv4 UDP socket with batched I/O.
//
// Calls on one datagram (a receive, a peek, a send) are raw system calls:
// they never block and take microseconds at most, so the runtime need not
// be told that the thread left. That telling (entersyscall/exitsyscall)
// cost 50 ns of a 215 ns receive that finds nothing, the call a waiting
// thread repeats; on a message's way are the receive that finds it and
// the send that answers it. Batches (recvmmsg, sendmmsg) stay ordinary
// calls: one can copy megabytes, and a raw call would keep its P, and a
// stop-the-world, waiting meanwhile.
type socket struct {
	sfd     int
	rcvbuf  int
	sendHdr []unix.Mmsghdr
	sendIov []unix.Iovec
	recvHdr []unix.Mmsghdr
	recvIov []unix.Iovec
	scatter []unix.Iovec // recvScattered's, three per datagram
	// burst: the last receive took a datagram, so more may be waiting and
	// the next one asks for a batch. Otherwise it asks for one datagram,
	// which costs the kernel a third less (one buffer, no message headers
	// to read): most receives of a waiting thread find nothing, and in a
	// pingpong the one that finds something is on the message's way.
	burst bool
	// routes are the connected sockets opened for destinations (dest.via),
	// all sending from ip.
	routes []int
	ip     [4]byte
}

// maxRoutes bounds the connected sockets one process opens (one file
// descriptor each); destinations beyond them share the main socket.
const maxRoutes = 64

const socketBuffer = 8 << 20

func openSocket(ip net.IP, batch int) (*socket, int, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, 0, err
	}
	// Large buffers absorb bursts of a windowed stream. Root may exceed
	// net.core.rmem_max; others get what the limit allows.
	for _, opt := range [][2]int{{unix.SO_RCVBUFFORCE, unix.SO_RCVBUF}, {unix.SO_SNDBUFFORCE, unix.SO_SNDBUF}} {
		if unix.SetsockoptInt(fd, unix.SOL_SOCKET, opt[0], socketBuffer) != nil {
			_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, opt[1], socketBuffer)
		}
	}
	sa := &unix.SockaddrInet4{}
	copy(sa.Addr[:], ip.To4())
	if err := unix.Bind(fd, sa); err != nil {
		unix.Close(fd)
		return nil, 0, fmt.Errorf("bind %s: %v", ip, err)
	}
	bound, err := unix.Getsockname(fd)
	if err != nil {
		unix.Close(fd)
		return nil, 0, err
	}
	rcv, _ := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF)
	s := &socket{
		sfd:     fd,
		rcvbuf:  rcv,
		sendHdr: make([]unix.Mmsghdr, batch),
		sendIov: make([]unix.Iovec, 2*batch),
		recvHdr: make([]unix.Mmsghdr, batch),
		recvIov: make([]unix.Iovec, batch),
		scatter: make([]unix.Iovec, 3*batch),
	}
	copy(s.ip[:], ip.To4())
	return s, bound.(*unix.SockaddrInet4).Port, nil
}

func (s *socket) fd() int { return s.sfd }

func (s *socket) close() error {
	for _, fd := range s.routes {
		unix.Close(fd)
	}
	return unix.Close(s.sfd)
}

// routeTo returns the socket that sends to d, choosing it at the first
// send: a socket connected to d, or the main socket once maxRoutes are
// open or when the kernel refuses one.
func (s *socket) routeTo(d *dest) int {
	if d.via < 0 {
		d.via = s.connect(&d.sa)
	}
	return d.via
}

// connect opens a socket connected to sa from our address, or returns the
// main socket.
func (s *socket) connect(sa *unix.RawSockaddrInet4) int {
	if len(s.routes) >= maxRoutes {
		return s.sfd
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return s.sfd
	}
	if unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, socketBuffer) != nil {
		_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF, socketBuffer)
	}
	err = unix.Bind(fd, &unix.SockaddrInet4{Addr: s.ip})
	if err == nil {
		// The kernel address as it is (x/sys's Connect wants the port
		// in host order).
		_, _, errno := unix.Syscall(unix.SYS_CONNECT, uintptr(fd), uintptr(unsafe.Pointer(sa)), unix.SizeofSockaddrInet4)
		if errno != 0 {
			err = errno
		}
	}
	if err != nil {
		unix.Close(fd)
		return s.sfd
	}
	s.routes = append(s.routes, fd)
	return fd
}

func (s *socket) send(pkts []packet) error {
	waited := false
	used := 0 // headers filled, cleared at the end
	for len(pkts) > 0 {
		// A batch goes through one socket: the datagrams at the head that
		// share its route.
		fd := s.routeTo(pkts[0].to)
		n := 1
		for n < min(len(pkts), len(s.sendHdr)) && s.routeTo(pkts[n].to) == fd {
			n++
		}
		used = max(used, n)
		for i := 0; i < n; i++ {
			p := pkts[i]
			iov := s.sendIov[2*i : 2*i+2]
			iov[0].Base = &p.data[0]
			iov[0].SetLen(len(p.data))
			h := &s.sendHdr[i].Hdr
			if fd != s.sfd {
				h.Name, h.Namelen = nil, 0
			} else {
				h.Name = (*byte)(unsafe.Pointer(&p.to.sa))
				h.Namelen = unix.SizeofSockaddrInet4
			}
			h.Iov = &iov[0]
			h.Iovlen = 1
			if len(p.tail) > 0 {
				iov[1].Base = &p.tail[0]
				iov[1].SetLen(len(p.tail))
				h.Iovlen = 2
			}
		}
		var sent uintptr
		var errno unix.Errno
		if n == 1 {
			// One datagram (a pingpong's message, an acknowledgement):
			// sendmsg, without sendmmsg's batch to walk.
			_, _, errno = unix.RawSyscall(unix.SYS_SENDMSG, uintptr(fd), uintptr(unsafe.Pointer(&s.sendHdr[0].Hdr)), 0)
			sent = 1
		} else {
			sent, _, errno = unix.Syscall6(unix.SYS_SENDMMSG, uintptr(fd), uintptr(unsafe.Pointer(&s.sendHdr[0])), uintptr(n), 0, 0, 0)
		}
		switch {
		case errno == unix.EINTR:
			continue
		case (errno == unix.EAGAIN || errno == unix.ENOBUFS) && !waited:
			// Our own send buffer is full: give the kernel a moment.
			waitWritable(fd, 1e6)
			waited = true
			continue
		case errno == unix.EAGAIN || errno == unix.ENOBUFS || errno == unix.ECONNREFUSED || errno == unix.EPERM,
			fd != s.sfd && (errno == unix.EHOSTUNREACH || errno == unix.ENETUNREACH || errno == unix.EMSGSIZE):
			// The datagram at the head is lost (full buffer, or an ICMP
			// error from an earlier send, which a connected socket reports
			// at its next send): skip it, retransmission repairs.
			sent = 1
		case errno != 0:
			s.forget(used)
			return errno
		}
		waited = false
		pkts = pkts[sent:]
	}
	s.forget(used)
	return nil
}

// forget drops the pointers to the packets' memory from the first n
// message headers, the ones a send filled: the whole arrays are 6 KiB,
// which a pingpong cleared for each datagram.
func (s *socket) forget(n int) {
	clear(s.sendIov[:2*n])
	clear(s.sendHdr[:n])
}

func (s *socket) recv(bufs [][]byte, sizes []int) (int, error) {
	batch := s.burst
	n := 1
	if batch {
		n = min(len(bufs), len(s.recvHdr))
		for i := 0; i < n; i++ {
			s.recvIov[i].Base = &bufs[i][0]
			s.recvIov[i].SetLen(len(bufs[i]))
			h := &s.recvHdr[i].Hdr
			*h = unix.Msghdr{Iov: &s.recvIov[i], Iovlen: 1}
		}
	}
	for {
		var got uintptr
		var errno unix.Errno
		if batch {
			got, _, errno = unix.Syscall6(unix.SYS_RECVMMSG, uintptr(s.sfd), uintptr(unsafe.Pointer(&s.recvHdr[0])), uintptr(n), unix.MSG_DONTWAIT, 0, 0)
		} else {
			got, _, errno = unix.RawSyscall6(unix.SYS_RECVFROM, uintptr(s.sfd), uintptr(unsafe.Pointer(&bufs[0][0])), uintptr(len(bufs[0])), unix.MSG_DONTWAIT, 0, 0)
		}
		switch {
		case errno == unix.EINTR:
			continue
		case errno == unix.EAGAIN || errno == unix.ECONNREFUSED:
			s.burst = false
			return 0, nil
		case errno != 0:
			return 0, errno
		}
		if !batch {
			sizes[0] = int(got)
			s.burst = true
			return 1, nil
		}
		for i := 0; i < int(got); i++ {
			sizes[i] = int(s.recvHdr[i].Len)
		}
		s.burst = got > 1
		return int(got), nil
	}
}

func (s *socket) peek(b []byte) (int, int, error) {
	iov := unix.Iovec{Base: &b[0]}
	iov.SetLen(len(b))
	msg := unix.Msghdr{Iov: &iov, Iovlen: 1}
	for {
		// MSG_TRUNC: the result is the datagram's whole length.
		size, _, errno := unix.RawSyscall(unix.SYS_RECVMSG, uintptr(s.sfd), uintptr(unsafe.Pointer(&msg)), unix.MSG_PEEK|unix.MSG_TRUNC|unix.MSG_DONTWAIT)
		switch {
		case errno == unix.EINTR:
			continue
		case errno == unix.EAGAIN || errno == unix.ECONNREFUSED:
			return 0, -1, nil
		case errno != 0:
			return 0, -1, errno
		}
		return min(int(size), len(b)), int(size), nil
	}
}

func (s *socket) recvInto(hdr, data []byte) (int, error) {
	iov := [2]unix.Iovec{{Base: &hdr[0]}, {Base: &data[0]}}
	iov[0].SetLen(len(hdr))
	iov[1].SetLen(len(data))
	msg := unix.Msghdr{Iov: &iov[0], Iovlen: 2}
	return receive(func() (uintptr, unix.Errno) {
		n, _, errno := unix.RawSyscall(unix.SYS_RECVMSG, uintptr(s.sfd), uintptr(unsafe.Pointer(&msg)), unix.MSG_DONTWAIT)
		return n, errno
	})
}

// receive makes a non-blocking receive system call until a signal does not
// interrupt it: 0, nil when nothing waits. Only for calls whose 0 can mean
// nothing else (a count of datagrams, a datagram already peeked at): recv's
// single receive and peek see empty datagrams, and keep their own loops.
func receive(call func() (uintptr, unix.Errno)) (int, error) {
	for {
		n, errno := call()
		switch {
		case errno == unix.EINTR:
			continue
		case errno == unix.EAGAIN || errno == unix.ECONNREFUSED:
			return 0, nil
		case errno != 0:
			return 0, errno
		}
		return int(n), nil
	}
}

func (s *socket) recvScattered(hdrs, datas, spills [][]byte, sizes []int) (int, error) {
	n := min(len(hdrs), len(s.recvHdr))
	for i := 0; i < n; i++ {
		iov := s.scatter[3*i : 3*i+3]
		iov[0].Base, iov[1].Base, iov[2].Base = &hdrs[i][0], &datas[i][0], &spills[i][0]
		iov[0].SetLen(len(hdrs[i]))
		iov[1].SetLen(len(datas[i]))
		iov[2].SetLen(len(spills[i]))
		s.recvHdr[i].Hdr = unix.Msghdr{Iov: &iov[0], Iovlen: 3}
	}
	got, err := receive(func() (uintptr, unix.Errno) {
		got, _, errno := unix.Syscall6(unix.SYS_RECVMMSG, uintptr(s.sfd), uintptr(unsafe.Pointer(&s.recvHdr[0])), uintptr(n), unix.MSG_DONTWAIT, 0, 0)
		return got, errno
	})
	for i := 0; i < got; i++ {
		sizes[i] = int(s.recvHdr[i].Len)
	}
	return got, err
}

// waitReadable blocks until fd or wake is readable or the timeout passes
// (negative: forever).
func waitReadable(fd, wake int, timeoutNs int64) error {
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}, {Fd: int32(wake), Events: unix.POLLIN}}
	var ts *unix.Timespec
	if timeoutNs >= 0 {
		t := unix.NsecToTimespec(timeoutNs)
		ts = &t
	}
	_, err := unix.Ppoll(fds, ts, nil)
	if err != nil && !errors.Is(err, unix.EINTR) {
		return err
	}
	return nil
}

func waitWritable(fd int, timeoutNs int64) {
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}
	t := unix.NsecToTimespec(timeoutNs)
	_, _ = unix.Ppoll(fds, &t, nil)
}

// newDest builds the kernel address of a peer; its sending socket is
// chosen at the first send.
func newDest(ip net.IP, port int) *dest {
	d := &dest{sa: unix.RawSockaddrInet4{Family: unix.AF_INET}, via: -1}
	copy(d.sa.Addr[:], ip.To4())
	// sin_port is in network byte order.
	p := (*[2]byte)(unsafe.Pointer(&d.sa.Port))
	p[0], p[1] = byte(port>>8), byte(port)
	return d
}
