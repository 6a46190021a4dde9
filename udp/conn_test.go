package udp

import (
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// receiver is a bound socket on loopback that reports where datagrams came
// from.
type receiver struct {
	fd   int
	port int
	addr *dest
}

func newReceiver(t *testing.T) *receiver {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	require.NoError(t, err)
	t.Cleanup(func() { unix.Close(fd) })
	require.NoError(t, unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}))
	sa, err := unix.Getsockname(fd)
	require.NoError(t, err)
	tv := unix.NsecToTimeval(int64(5 * time.Second))
	require.NoError(t, unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv))
	port := sa.(*unix.SockaddrInet4).Port
	return &receiver{fd: fd, port: port, addr: newDest(net.IPv4(127, 0, 0, 1), port)}
}

// next returns the next datagram's bytes and its source port.
func (r *receiver) next(t *testing.T) ([]byte, int) {
	b := make([]byte, 256)
	n, from, err := unix.Recvfrom(r.fd, b, 0)
	require.NoError(t, err)
	return b[:n], from.(*unix.SockaddrInet4).Port
}

// TestEachDestinationHasItsOwnRoute sends single datagrams and batches to
// more destinations than maxRoutes: the first maxRoutes get a socket of
// their own (its port, not the main socket's, is the source), the rest go
// through the main socket, every datagram arrives, and a destination keeps
// its route.
func TestEachDestinationHasItsOwnRoute(t *testing.T) {
	s, mainPort, err := openSocket(net.IPv4(127, 0, 0, 1), sendBatch)
	require.NoError(t, err)
	defer s.close()
	rs := make([]*receiver, maxRoutes+3)
	for i := range rs {
		rs[i] = newReceiver(t)
	}
	sources := map[int]int{} // receiver -> source port
	for round := 0; round < 2; round++ {
		// One datagram to each, then a batch that visits them all twice.
		for i, r := range rs {
			require.NoError(t, s.send([]packet{{to: r.addr, data: []byte{byte(round), byte(i), 0}}}))
		}
		var batch []packet
		for k := 0; k < 2; k++ {
			for i, r := range rs {
				batch = append(batch, packet{to: r.addr, data: []byte{byte(round), byte(i), byte(1 + k)}, tail: []byte{0xee}})
			}
		}
		require.NoError(t, s.send(batch))
		for i, r := range rs {
			for k := 0; k < 3; k++ {
				b, from := r.next(t)
				want := []byte{byte(round), byte(i), byte(k)}
				if k > 0 {
					want = append(want, 0xee)
				}
				require.Equal(t, want, b, "datagram %d to destination %d", k, i)
				if p, ok := sources[i]; ok {
					require.Equal(t, p, from, "destination %d changed its route", i)
				}
				sources[i] = from
			}
		}
	}
	for i := range rs {
		if i < maxRoutes {
			assert.NotEqual(t, mainPort, sources[i], "destination %d: no socket of its own", i)
		} else {
			assert.Equal(t, mainPort, sources[i], "destination %d beyond maxRoutes", i)
		}
	}
	assert.Len(t, s.routes, maxRoutes)
}

// TestRouteToAClosedPortLosesDatagrams: a connected socket reports the ICMP
// error of an earlier datagram at its next send. That is a lost datagram
// (retransmission repairs it, or the peer times out), not a failed send,
// which would be fatal.
func TestRouteToAClosedPortLosesDatagrams(t *testing.T) {
	s, _, err := openSocket(net.IPv4(127, 0, 0, 1), sendBatch)
	require.NoError(t, err)
	defer s.close()
	// A port nobody listens on: bind one, note it, close it.
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	require.NoError(t, err)
	require.NoError(t, unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}))
	sa, err := unix.Getsockname(fd)
	require.NoError(t, err)
	require.NoError(t, unix.Close(fd))
	port := sa.(*unix.SockaddrInet4).Port
	to := newDest(net.IPv4(127, 0, 0, 1), port)
	// What the kernel does: the second send on a connected socket fails.
	probe, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	require.NoError(t, err)
	defer unix.Close(probe)
	require.NoError(t, unix.Connect(probe, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}, Port: port}))
	_, err = unix.Write(probe, []byte{0})
	require.NoError(t, err)
	_, err = unix.Write(probe, []byte{0})
	require.ErrorIs(t, err, unix.ECONNREFUSED)
	for i := 0; i < 5; i++ {
		require.NoError(t, s.send([]packet{{to: to, data: []byte{1}}}))
		require.NoError(t, s.send([]packet{{to: to, data: []byte{2}}, {to: to, data: []byte{3}}}))
	}
	require.NotEqual(t, s.sfd, s.routeTo(to), "the destination has no route of its own")
}
