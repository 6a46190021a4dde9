package ch_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/libacp/libacp/core"
	"github.com/libacp/libacp/core/coretest"
	"github.com/libacp/libacp/core/memnet"
	"github.com/libacp/libacp/ml/ch"
	"github.com/libacp/libacp/ml/segbuf"
)

// world is n ranks with the communication library started on each.
type world struct {
	*coretest.World
	seg []*segbuf.Lib
	ch  []*ch.Lib
}

func newWorld(t *testing.T, n int, settings ...string) *world {
	t.Helper()
	return newWorldOn(t, "memnet", n, settings...)
}

// newWorldOn is newWorld over the named transport.
func newWorldOn(t testing.TB, transport string, n int, settings ...string) *world {
	t.Helper()
	w := &world{World: coretest.NewWorld(t, n, transport, append([]string{"size-smem-cl=1024"}, settings...)...)}
	w.seg = make([]*segbuf.Lib, n)
	w.ch = make([]*ch.Lib, n)
	w.Run(func(r int, e *core.Engine) error {
		s, err := segbuf.Start(e)
		if err != nil {
			return err
		}
		w.seg[r], w.ch[r] = s, ch.New(s)
		return nil
	})
	return w
}

// close stops the library (collectively) and the engines.
func (w *world) close() {
	w.Run(func(r int, _ *core.Engine) error { return w.seg[r].Stop() })
	w.Close()
}

func ptr(b []byte) unsafe.Pointer { return unsafe.Pointer(&b[0]) }

func fill(b []byte, seed uint64) {
	r := rand.New(rand.NewPCG(seed, seed*7+1))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
}

func pattern(n int, seed uint64) []byte {
	b := make([]byte, n)
	fill(b, seed)
	return b
}

func check(cond bool, format string, args ...any) error {
	if !cond {
		return fmt.Errorf(format, args...)
	}
	return nil
}

// sizes crosses every protocol boundary: empty, one slot, several slots,
// the largest eager message, rendezvous.
var sizes = []int{0, 1, 7, 4031, 4032, 4033, 8064, 8065, 16383, 16384, 16385, 65536, 1 << 20, 4<<20 + 3}

func TestPingPongEverySize(t *testing.T) {
	for _, cl := range []string{"1024", "1048576"} {
		t.Run("size-smem-cl="+cl, func(t *testing.T) { pingPongEverySize(t, "size-smem-cl="+cl) })
	}
}

// pingPongEverySize runs with the rings in registered memory (a small CL
// starter memory) or in the CL starter memory.
func pingPongEverySize(t *testing.T, cl string) {
	w := newWorld(t, 2, "memnet-shuffle=1", cl)
	defer w.close()
	maxSize := sizes[len(sizes)-1]
	w.Run(func(r int, e *core.Engine) error {
		l := w.ch[r]
		out, err := l.Create(r, 1-r)
		if err != nil {
			return err
		}
		in, err := l.Create(1-r, r)
		if err != nil {
			return err
		}
		sbuf, rbuf := coretest.CMem(t, maxSize), coretest.CMem(t, maxSize)
		for i, n := range sizes {
			seed := uint64(i*10 + r)
			fill(sbuf[:n], seed)
			if r == 0 {
				if err := send(out, sbuf[:n]); err != nil {
					return err
				}
			}
			got, err := recv(in, rbuf[:max(n, 1)])
			if err != nil {
				return err
			}
			if err := check(got == uint64(n), "size %d: received %d bytes", n, got); err != nil {
				return err
			}
			if err := check(bytes.Equal(rbuf[:n], pattern(n, uint64(i*10+1-r))), "size %d: data differs", n); err != nil {
				return err
			}
			if r == 1 {
				if err := send(out, sbuf[:n]); err != nil {
					return err
				}
			}
		}
		return freeBoth(out, in)
	})
}

func send(c *ch.Channel, b []byte) error {
	var p unsafe.Pointer
	if len(b) > 0 {
		p = ptr(b)
	}
	q, err := c.Send(p, uint64(len(b)))
	if err != nil {
		return err
	}
	n, err := q.Wait()
	if err != nil {
		return err
	}
	return check(n == 0, "send returned %d", n)
}

// exchange creates a channel from rank 0 to rank 1, runs sender on rank
// 0 and receiver on rank 1 over it, and frees it.
func (w *world) exchange(sender, receiver func(c *ch.Channel) error) {
	w.Run(func(r int, _ *core.Engine) error {
		c, err := w.ch[r].Create(0, 1)
		if err != nil {
			return err
		}
		if r == 0 {
			err = sender(c)
		} else {
			err = receiver(c)
		}
		if err != nil {
			return err
		}
		return freeBoth(c)
	})
}

// msg is a message of size bytes and the receive that takes it.
type msg struct{ size, recv int }

// sendAll sends each message (its pattern seeded seed+i): one at a time,
// each waited for before the next, or all posted at once and then waited
// for.
func sendAll(t *testing.T, c *ch.Channel, msgs []msg, seed uint64, oneByOne bool) error {
	return sendAllThen(t, c, msgs, seed, oneByOne, nil)
}

// sendAllThen is sendAll that calls posted, when not nil, once every send
// is posted and before it waits for them.
func sendAllThen(t *testing.T, c *ch.Channel, msgs []msg, seed uint64, oneByOne bool, posted func()) error {
	var qs []*ch.Request
	for i, m := range msgs {
		b := coretest.CMem(t, m.size)
		fill(b, seed+uint64(i))
		q, err := c.Send(ptr(b), uint64(m.size))
		if err == nil && oneByOne {
			_, err = q.Wait()
		}
		if err != nil {
			return fmt.Errorf("message %d (%d bytes): %v", i, m.size, err)
		}
		if !oneByOne {
			qs = append(qs, q)
		}
	}
	if posted != nil {
		posted()
	}
	for i, q := range qs {
		if _, err := q.Wait(); err != nil {
			return fmt.Errorf("message %d: %v", i, err)
		}
	}
	return nil
}

// recvAll receives each message into a guarded buffer, gap after the
// previous one completed, and checks it (checkReceived).
func recvAll(t *testing.T, c *ch.Channel, msgs []msg, seed uint64, gap time.Duration) error {
	for i, m := range msgs {
		b := guarded(t, m.recv)
		time.Sleep(gap)
		q, err := c.Recv(ptr(b), uint64(m.recv))
		if err == nil {
			err = checkReceived(q, b, m.size, m.recv, seed+uint64(i))
		}
		if err != nil {
			return fmt.Errorf("message %d (%d bytes into %d): %v", i, m.size, m.recv, err)
		}
	}
	return nil
}

// guard bytes follow each receive buffer, set to guardByte.
const (
	guard     = 4096
	guardByte = 0xa5
)

// guarded is a receive buffer of n bytes followed by the guard.
func guarded(t *testing.T, n int) []byte {
	b := coretest.CMem(t, n+guard)
	for k := range b {
		b[k] = guardByte
	}
	return b
}

// checkReceived waits for a receive of recv bytes of a size-byte message
// and checks its bytes and the guard beyond it.
func checkReceived(q *ch.Request, b []byte, size, recv int, seed uint64) error {
	n, err := q.Wait()
	if err != nil {
		return err
	}
	want := min(size, recv)
	if n != uint64(want) {
		return fmt.Errorf("received %d bytes, want %d", n, want)
	}
	if !bytes.Equal(b[:want], pattern(size, seed)[:want]) {
		return fmt.Errorf("content differs")
	}
	if bytes.Count(b[want:], []byte{guardByte}) != len(b)-want {
		return fmt.Errorf("bytes written beyond the receive")
	}
	return nil
}

func recv(c *ch.Channel, b []byte) (uint64, error) {
	q, err := c.Recv(ptr(b), uint64(len(b)))
	if err != nil {
		return 0, err
	}
	return q.Wait()
}

func freeBoth(cs ...*ch.Channel) error {
	var qs []*ch.Request
	for _, c := range cs {
		q, err := c.Free()
		if err != nil {
			return err
		}
		qs = append(qs, q)
	}
	for _, q := range qs {
		if _, err := q.Wait(); err != nil {
			return err
		}
	}
	return nil
}

// Every rank sends to every other at once, over all N(N-1) channels, and
// every message arrives intact and in order.
func TestAllPairsAtOnce(t *testing.T) {
	const n, msgs = 4, 12
	w := newWorld(t, n, "memnet-shuffle=1")
	defer w.close()
	w.Run(func(r int, e *core.Engine) error {
		l := w.ch[r]
		outs := map[int]*ch.Channel{}
		ins := map[int]*ch.Channel{}
		for p := 0; p < n; p++ {
			if p == r {
				continue
			}
			var err error
			if outs[p], err = l.Create(r, p); err != nil {
				return err
			}
			if ins[p], err = l.Create(p, r); err != nil {
				return err
			}
		}
		size := func(from, to, k int) int { return []int{0, 5, 4100, 20000, 300000}[(from+to+k)%5] }
		var reqs []*ch.Request
		var bufs [][]byte
		for p, c := range outs {
			for k := 0; k < msgs; k++ {
				b := coretest.CMem(t, size(r, p, k))
				fill(b, uint64(r*1000+p*100+k))
				q, err := c.Send(ptr(b), uint64(size(r, p, k)))
				if err != nil {
					return err
				}
				reqs = append(reqs, q)
				bufs = append(bufs, b)
			}
		}
		type want struct {
			q    *ch.Request
			b    []byte
			seed uint64
			n    int
		}
		var recvs []want
		for p, c := range ins {
			for k := 0; k < msgs; k++ {
				b := coretest.CMem(t, 300000)
				q, err := c.Recv(ptr(b), 300000)
				if err != nil {
					return err
				}
				recvs = append(recvs, want{q, b, uint64(p*1000 + r*100 + k), size(p, r, k)})
			}
		}
		// Wait in reverse order: completion does not depend on it.
		for i := len(recvs) - 1; i >= 0; i-- {
			v := recvs[i]
			got, err := v.q.Wait()
			if err != nil {
				return err
			}
			if err := check(got == uint64(v.n) && bytes.Equal(v.b[:v.n], pattern(v.n, v.seed)), "message seed %d: %d bytes, data ok %v", v.seed, got, bytes.Equal(v.b[:v.n], pattern(v.n, v.seed))); err != nil {
				return err
			}
		}
		for _, q := range reqs {
			if _, err := q.Wait(); err != nil {
				return err
			}
		}
		var all []*ch.Channel
		for p := range outs {
			all = append(all, outs[p], ins[p])
		}
		return freeBoth(all...)
	})
}

// Many messages through a ring of 16 slots, receives posted late and in
// bulk; message k carries k.
func TestManyMessagesInOrder(t *testing.T) {
	const msgs = 2000
	w := newWorld(t, 2)
	defer w.close()
	w.Run(func(r int, e *core.Engine) error {
		l := w.ch[r]
		c, err := l.Create(0, 1)
		if err != nil {
			return err
		}
		buf := coretest.CMem(t, 8*msgs)
		if r == 0 {
			var qs []*ch.Request
			for k := 0; k < msgs; k++ {
				le64(buf[8*k:], uint64(k))
				q, err := c.Send(ptr(buf[8*k:]), 8)
				if err != nil {
					return err
				}
				qs = append(qs, q)
			}
			for _, q := range qs {
				if _, err := q.Wait(); err != nil {
					return err
				}
			}
		} else {
			time.Sleep(20 * time.Millisecond) // the sender fills the ring first
			var qs []*ch.Request
			for k := 0; k < msgs; k++ {
				q, err := c.Recv(ptr(buf[8*k:]), 8)
				if err != nil {
					return err
				}
				qs = append(qs, q)
			}
			for k := msgs - 1; k >= 0; k-- {
				if n, err := qs[k].Wait(); err != nil || n != 8 {
					return fmt.Errorf("message %d: %d bytes, %v", k, n, err)
				}
			}
			for k := 0; k < msgs; k++ {
				if got := rd64(buf[8*k:]); got != uint64(k) {
					return fmt.Errorf("message %d carries %d", k, got)
				}
			}
		}
		return freeBoth(c)
	})
}

func le64(b []byte, v uint64) {
	for i := 0; i < 8; i++ {
		b[i] = byte(v >> (8 * i))
	}
}

func rd64(b []byte) uint64 {
	var v uint64
	for i := 0; i < 8; i++ {
		v |= uint64(b[i]) << (8 * i)
	}
	return v
}

// A receive buffer shorter than the message gets its first bytes; a longer
// one gets the whole message and the rest is untouched.
func TestTruncation(t *testing.T) {
	w := newWorld(t, 2)
	defer w.close()
	cases := []msg{{100, 10}, {100, 0}, {10000, 5000}, {1 << 20, 1000}, {1 << 20, 0}, {50, 4096}, {100000, 200000}}
	w.exchange(
		func(c *ch.Channel) error { return sendAll(t, c, cases, 0, true) },
		func(c *ch.Channel) error { return recvAll(t, c, cases, 0, 0) })
}

// Channels between the same two ranks meet in creation order, also when
// the sender posts before the receiver created its end.
func TestCreationOrderAndEarlySends(t *testing.T) {
	w := newWorld(t, 2)
	defer w.close()
	w.Run(func(r int, e *core.Engine) error {
		l := w.ch[r]
		if r == 1 {
			time.Sleep(30 * time.Millisecond)
		}
		var cs []*ch.Channel
		for i := 0; i < 5; i++ {
			c, err := l.Create(0, 1)
			if err != nil {
				return err
			}
			cs = append(cs, c)
			if r == 0 {
				b := coretest.CMem(t, 8)
				le64(b, uint64(i+100))
				if _, err := c.Send(ptr(b), 8); err != nil {
					return err
				}
			}
		}
		if r == 1 {
			for i := 4; i >= 0; i-- {
				b := coretest.CMem(t, 8)
				n, err := recv(cs[i], b)
				if err != nil {
					return err
				}
				if err := check(n == 8 && rd64(b) == uint64(i+100), "channel %d carried %d (%d bytes)", i, rd64(b), n); err != nil {
					return err
				}
			}
		}
		return freeBoth(cs...)
	})
}

// Frees that are never waited for finish by themselves, and the library
// stops cleanly; receives that can never match fail instead of hanging.
func TestUnwaitedFreesAndStop(t *testing.T) {
	w := newWorld(t, 3)
	defer w.close()
	w.Run(func(r int, e *core.Engine) error {
		l := w.ch[r]
		if r == 0 {
			for p := 1; p < 3; p++ {
				c, err := l.Create(0, p)
				if err != nil {
					return err
				}
				b := coretest.CMem(t, 100000)
				fill(b, uint64(p))
				if _, err := c.Send(ptr(b), 100000); err != nil {
					return err
				}
				if _, err := c.Free(); err != nil {
					return err
				}
			}
			return nil // stops with the frees in flight
		}
		c, err := l.Create(0, r)
		if err != nil {
			return err
		}
		b := coretest.CMem(t, 100000)
		n, err := recv(c, b)
		if err != nil {
			return err
		}
		if err := check(n == 100000 && bytes.Equal(b, pattern(100000, uint64(r))), "rank %d: %d bytes", r, n); err != nil {
			return err
		}
		// One receive too many: fails once the sender freed its end.
		q, err := c.Recv(ptr(b), 8)
		if err != nil {
			return err
		}
		if _, err := q.Wait(); err == nil {
			return fmt.Errorf("a receive with no message completed without an error")
		}
		f, err := c.Free()
		if err != nil {
			return err
		}
		_, err = f.Wait()
		return err
	})
}

// A receive posted on a channel whose sender never shows up is abandoned
// when the library stops.
func TestStopAbandonsWhatCannotFinish(t *testing.T) {
	w := newWorld(t, 2)
	var q *ch.Request
	w.Run(func(r int, e *core.Engine) error {
		if r != 1 {
			return nil
		}
		c, err := w.ch[r].Create(0, 1)
		if err != nil {
			return err
		}
		q, err = c.Recv(ptr(coretest.CMem(t, 8)), 8)
		return err
	})
	w.close()
	require.True(t, q.Done())
	_, err := q.Wait()
	assert.ErrorContains(t, err, "stopped")
}

// Channels are created and freed many times: endpoint memory is recycled.
func TestCreateFreeManyTimes(t *testing.T) {
	w := newWorld(t, 2, "size-smem-cl=100000") // some ends in starter memory, some not
	defer w.close()
	w.Run(func(r int, e *core.Engine) error {
		for i := 0; i < 300; i++ {
			c, err := w.ch[r].Create(0, 1)
			if err != nil {
				return err
			}
			b := coretest.CMem(t, 8)
			if r == 0 {
				le64(b, uint64(i))
				if err := send(c, b); err != nil {
					return err
				}
			} else if n, err := recv(c, b); err != nil || n != 8 || rd64(b) != uint64(i) {
				return fmt.Errorf("round %d: %d bytes, value %d, %v", i, n, rd64(b), err)
			}
			if err := freeBoth(c); err != nil {
				return err
			}
		}
		return nil
	})
}

func TestBadInput(t *testing.T) {
	w := newWorld(t, 3)
	defer w.close()
	w.Run(func(r int, e *core.Engine) error {
		l := w.ch[r]
		for _, c := range [][2]int{{-1, 1}, {0, 3}, {r, r}, {(r + 1) % 3, (r + 2) % 3}, {0, 1 << 30}} {
			if _, err := l.Create(c[0], c[1]); err == nil {
				return fmt.Errorf("create(%d, %d) succeeded", c[0], c[1])
			}
		}
		if r == 2 {
			return nil
		}
		c, err := l.Create(0, 1)
		if err != nil {
			return err
		}
		b := coretest.CMem(t, 8)
		if r == 0 {
			if _, err := c.Recv(ptr(b), 8); err == nil {
				return fmt.Errorf("receive on the sender's end succeeded")
			}
			if _, err := c.Send(nil, 8); err == nil {
				return fmt.Errorf("send of 8 bytes from NULL succeeded")
			}
			// Past any address a process maps: the send read until it
			// faulted.
			for _, n := range []uint64{1 << 63, ch.AddressLimit} {
				if _, err := c.Send(ptr(b), n); err == nil {
					return fmt.Errorf("send of %d bytes from %p succeeded", n, ptr(b))
				}
			}
			q, err := c.Send(nil, 0)
			if err != nil {
				return err
			}
			if _, err := q.Wait(); err != nil {
				return err
			}
			if _, err := q.Wait(); err == nil {
				return fmt.Errorf("second wait succeeded")
			}
		} else {
			if _, err := c.Send(ptr(b), 8); err == nil {
				return fmt.Errorf("send on the receiver's end succeeded")
			}
			if n, err := recv(c, b); err != nil || n != 0 {
				return fmt.Errorf("empty message: %d bytes, %v", n, err)
			}
		}
		f, err := c.Free()
		if err != nil {
			return err
		}
		if _, err := c.Free(); err == nil {
			return fmt.Errorf("second free succeeded")
		}
		if _, err := c.Send(ptr(b), 8); err == nil {
			return fmt.Errorf("send after free succeeded")
		}
		_, err = f.Wait()
		return err
	})
}

// Several threads use one channel end at once.
func TestThreads(t *testing.T) {
	const threads, msgs = 4, 200
	w := newWorld(t, 2)
	defer w.close()
	w.Run(func(r int, e *core.Engine) error {
		c, err := w.ch[r].Create(0, 1)
		if err != nil {
			return err
		}
		var wg sync.WaitGroup
		errs := make(chan error, threads)
		counts := make([]int, threads)
		var mu sync.Mutex
		for th := 0; th < threads; th++ {
			wg.Add(1)
			go func(th int) {
				defer wg.Done()
				b := coretest.CMem(t, 16)
				for k := 0; k < msgs; k++ {
					if r == 0 {
						le64(b, uint64(th))
						if err := send(c, b[:8]); err != nil {
							errs <- err
							return
						}
					} else {
						if _, err := recv(c, b[:8]); err != nil {
							errs <- err
							return
						}
						mu.Lock()
						counts[rd64(b)%threads]++
						mu.Unlock()
					}
				}
			}(th)
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			return err
		}
		if r == 1 {
			for th, n := range counts {
				if n != msgs {
					return fmt.Errorf("thread %d's messages: %d, want %d", th, n, msgs)
				}
			}
		}
		return freeBoth(c)
	})
}

// A peer whose application is busy elsewhere (no library call) does not
// hold up its partner: the connection, slots it has not taken yet, and a
// large message it posted a receive for all move in the background.
func TestBusyPeerDoesNotStall(t *testing.T) {
	const busy = 400 * time.Millisecond
	w := newWorld(t, 2)
	defer w.close()
	big := 1 << 20
	w.Run(func(r int, e *core.Engine) error {
		c, err := w.ch[r].Create(0, 1)
		if err != nil {
			return err
		}
		if r == 1 {
			b := coretest.CMem(t, big)
			q, err := c.Recv(ptr(b), uint64(big))
			if err != nil {
				return err
			}
			time.Sleep(busy) // computing
			if _, err := q.Wait(); err != nil {
				return err
			}
			small := coretest.CMem(t, 8)
			for k := 0; k < 4; k++ {
				if n, err := recv(c, small); err != nil || n != 8 {
					return fmt.Errorf("small message %d: %d, %v", k, n, err)
				}
			}
			return freeBoth(c)
		}
		start := time.Now()
		b := coretest.CMem(t, big)
		if err := send(c, b); err != nil { // rendezvous: done when the peer copied it
			return err
		}
		small := coretest.CMem(t, 8)
		for k := 0; k < 4; k++ { // fit in the ring
			if err := send(c, small); err != nil {
				return err
			}
		}
		if d := time.Since(start); d >= busy {
			return fmt.Errorf("the sends took %v although the receiver's application was busy for %v", d, busy)
		}
		return freeBoth(c)
	})
}

// A receiver with several receives posted copies the next rendezvous
// message while the one before is still on its way (over udp a get takes
// a round trip and more), and still completes every receive with its own
// message, shortened ones and empty ones included, in order, then a
// message through the ring after them.
func TestRendezvousCopiedAhead(t *testing.T) {
	w := newWorld(t, 2)
	defer w.close()
	carried := memnet.CarriedGets()
	msgs := []msg{{1 << 20, 1 << 20}, {300000, 300000}, {1 << 20, 5000}, {200000, 0}, {1 << 20, 1 << 20},
		{100000, 200000}, {1 << 20, 1 << 20}, {100, 100}}
	w.exchange(
		func(c *ch.Channel) error { return sendAll(t, c, msgs, 7, false) },
		func(c *ch.Channel) error {
			// Every announcement is in the ring before the first receive is
			// posted (the sender posts all its messages at once and the ring
			// holds them all), and the receives follow one another with
			// nothing between them: otherwise each copy could be done before
			// the next announcement landed or the next receive was posted,
			// and nothing would go ahead.
			bufs := make([][]byte, len(msgs))
			for i, m := range msgs {
				bufs[i] = guarded(t, m.recv)
			}
			if !coretest.WaitFor(10*time.Second, func() bool { return c.Landed() >= len(msgs) }) {
				return fmt.Errorf("%d of %d announcements landed in 10 s", c.Landed(), len(msgs))
			}
			qs := make([]*ch.Request, len(msgs))
			for i, m := range msgs {
				q, err := c.Recv(ptr(bufs[i]), uint64(m.recv))
				if err != nil {
					return err
				}
				qs[i] = q
			}
			for i, m := range msgs {
				if err := checkReceived(qs[i], bufs[i], m.size, m.recv, 7+uint64(i)); err != nil {
					return fmt.Errorf("message %d (%d bytes into %d): %v", i, m.size, m.recv, err)
				}
			}
			return nil
		})
	assert.NotZero(t, w.ch[1].CopiedAhead(), "no message was copied while the one before was on its way")
	// Six messages were read from the sender's buffer (the one received
	// into 0 bytes was not), each with the key its announcement carried
	// (core.KeyCarrier: memnet packs keys as an adapter's).
	assert.Equal(t, int64(6), memnet.CarriedGets()-carried, "reads with the sender's carried key")
}

// Requests handed back after their wait (Request.Release, as the C layer
// does) are reused by the channel's next ones, and messages of every kind,
// waited for one by one or in windows, still arrive whole and in order,
// over a transport that serves operations in random order.
func TestReleasedRequestsAreReused(t *testing.T) {
	w := newWorld(t, 2, "memnet-shuffle=1")
	defer w.close()
	var msgs []msg
	for _, n := range sizes {
		msgs = append(msgs, msg{n, n})
	}
	seed := func(round, j int) uint64 { return uint64(round*100 + j) }
	w.exchange(
		func(c *ch.Channel) error {
			b := coretest.CMem(t, 8)
			q1, err := c.Send(ptr(b), 8)
			if err == nil {
				err = waitRelease(q1)
			}
			if err != nil {
				return err
			}
			q2, err := c.Send(ptr(b), 8)
			if err != nil {
				return err
			}
			if err := check(q2 == q1, "a released request was not reused"); err != nil {
				return err
			}
			if err := waitRelease(q2); err != nil {
				return err
			}
			return inWindows(len(msgs), func(round, j int) (*ch.Request, error) {
				m := coretest.CMem(t, msgs[j].size)
				fill(m, seed(round, j))
				return c.Send(ptr(m), uint64(msgs[j].size))
			}, func(_, _ int, q *ch.Request) error { return waitRelease(q) })
		},
		func(c *ch.Channel) error {
			for k := 0; k < 2; k++ {
				q, err := c.Recv(ptr(coretest.CMem(t, 8)), 8)
				if err == nil {
					err = waitRelease(q)
				}
				if err != nil {
					return err
				}
			}
			bufs := make([][]byte, len(msgs))
			return inWindows(len(msgs), func(_, j int) (*ch.Request, error) {
				bufs[j] = guarded(t, msgs[j].recv)
				return c.Recv(ptr(bufs[j]), uint64(msgs[j].recv))
			}, func(round, j int, q *ch.Request) error {
				if err := checkReceived(q, bufs[j], msgs[j].size, msgs[j].recv, seed(round, j)); err != nil {
					return fmt.Errorf("round %d, message %d (%d bytes): %v", round, j, msgs[j].size, err)
				}
				q.Release()
				return nil
			})
		})
}

// waitRelease waits for q and hands it back.
func waitRelease(q *ch.Request) error {
	_, err := q.Wait()
	q.Release()
	return err
}

// inWindows posts n messages in windows of 4 (post), then finishes each
// window's requests in order (finish), three rounds over.
func inWindows(n int, post func(round, j int) (*ch.Request, error), finish func(round, j int, q *ch.Request) error) error {
	const window = 4
	for round := 0; round < 3; round++ {
		for i := 0; i < n; i += window {
			var qs []*ch.Request
			for j := i; j < min(i+window, n); j++ {
				q, err := post(round, j)
				if err != nil {
					return err
				}
				qs = append(qs, q)
			}
			for k, q := range qs {
				if err := finish(round, i+k, q); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// A receive that waits longer than the hang-report setting prints the
// channel's state: which end, what it took and released, what is posted.
func TestHangReportListsTheChannel(t *testing.T) {
	w := newWorld(t, 2, "hang-report=0.05")
	defer w.close()
	w.exchange(
		func(c *ch.Channel) error {
			time.Sleep(400 * time.Millisecond)
			buf := coretest.CMem(t, 8)
			q, err := c.Send(unsafe.Pointer(&buf[0]), 8)
			if err == nil {
				_, err = q.Wait()
			}
			return err
		},
		func(c *ch.Channel) error {
			buf := coretest.CMem(t, 8)
			q, err := c.Recv(unsafe.Pointer(&buf[0]), 8)
			if err == nil {
				_, err = q.Wait()
			}
			return err
		})
	out := w.Stderr.String()
	assert.Equal(t, 1, strings.Count(out, "acp[1]: hang report: a wait on a channel or segmented buffer has waited"), out)
	assert.Contains(t, out, "acp[1]: hang report: channels and segmented buffers:\n")
	assert.Regexp(t, `acp\[1\]: hang report:   channel 0->1, destination end with rank 0: connected true .*; receiver: 0 slots taken, 0 released, 1 receive\(s\) posted`, out)
}
