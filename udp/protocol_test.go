package udp

import (
	"bytes"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/libacp/libacp/core"
)

// fakeHost is a target that owns one buffer and records what happens.
type fakeHost struct {
	mem     []byte
	atomics atomic.Int64
	mu      sync.Mutex
	fatal   []error
	msgs    [][]byte
	polled  atomic.Bool // Polled: an application thread polls in a wait
	gone    atomic.Bool // the memory was unregistered: accesses fail
}

func (h *fakeHost) Acquire(ga core.GA, n uint64) (unsafe.Pointer, *core.Region, core.Status) {
	if h.gone.Load() {
		return nil, nil, core.StatusBadSegment
	}
	if uint64(ga) > uint64(len(h.mem)) || n > uint64(len(h.mem))-uint64(ga) {
		return nil, nil, core.StatusOutOfBounds
	}
	r := &core.Region{}
	return unsafe.Pointer(&h.mem[ga]), r, core.StatusOK
}

func (h *fakeHost) ApplyAtomic(op core.AtomicOp, ga core.GA, a, b uint64) (uint64, core.Status) {
	h.atomics.Add(1)
	p, _, st := h.Acquire(ga, op.Width())
	if st != core.StatusOK {
		return 0, st
	}
	return core.ApplyAtomic(op, p, a, b), core.StatusOK
}

func (h *fakeHost) Deliver(peer int, msg []byte) {
	h.mu.Lock()
	h.msgs = append(h.msgs, append([]byte(nil), msg...))
	h.mu.Unlock()
}

func (h *fakeHost) PeerRank(peer int) int { return peer }

func (h *fakeHost) Wake() {}

func (h *fakeHost) Polled() bool       { return h.polled.Load() }
func (h *fakeHost) OrderWaiting() bool { return false }
func (h *fakeHost) MappedMemory(unsafe.Pointer, uint64) (unsafe.Pointer, uint64) {
	return nil, 0
}

func (h *fakeHost) Layout() core.Layout { l, _ := core.NewLayout(2, 1); return l }

func (h *fakeHost) Fatal(err error) {
	h.mu.Lock()
	h.fatal = append(h.fatal, err)
	h.mu.Unlock()
}

func (h *fakeHost) Logf(int, string, ...any) {}

func (h *fakeHost) fatals() []error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]error(nil), h.fatal...)
}

type waitDone struct {
	ch  chan struct{}
	val uint64
	err error
}

func newWait() *waitDone { return &waitDone{ch: make(chan struct{})} }

func (w *waitDone) OnComplete(val uint64, err error) { w.val, w.err = val, err; close(w.ch) }

func (w *waitDone) wait(t *testing.T) {
	t.Helper()
	select {
	case <-w.ch:
	case <-time.After(10 * time.Second):
		t.Fatal("operation did not complete")
	}
}

// pair opens two connected endpoints with the given extra settings.
func pair(t *testing.T, kv ...string) ([2]*endpoint, [2]*fakeHost) {
	var eps [2]*endpoint
	var hosts [2]*fakeHost
	var addrs []byte
	for i := range eps {
		s := core.NewSettings(core.BaseSettings, Settings)
		for j := 0; j+1 < len(kv); j += 2 {
			require.NoError(t, s.Set(kv[j], kv[j+1], "test"))
		}
		hosts[i] = &fakeHost{mem: make([]byte, 1<<20)}
		tr, err := open(core.TransportConfig{Host: hosts[i], Settings: s, Peer: i, NPeers: 2, BindHint: "127.0.0.1"})
		require.NoError(t, err)
		eps[i] = tr.(*endpoint)
		addrs = append(addrs, eps[i].Address()...)
	}
	for _, e := range eps {
		require.NoError(t, e.Connect(core.AddressBook{RecSize: addressSize, Data: addrs}, 0x1234))
	}
	t.Cleanup(func() {
		for _, e := range eps {
			_ = e.Close()
		}
	})
	return eps, hosts
}

// rawSend delivers a hand-made datagram to endpoint e from a foreign socket.
func rawSend(t *testing.T, e *endpoint, b []byte) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM, 0)
	require.NoError(t, err)
	defer unix.Close(fd)
	require.NoError(t, unix.Sendto(fd, b, 0, &unix.SockaddrInet4{Port: e.port, Addr: [4]byte{127, 0, 0, 1}}))
}

func atomicDatagram(key uint64, seq uint64) []byte {
	b := make([]byte, headerSize+40)
	putFixedHeader(b, key, 0, tAtomic, 0, seq)
	putAckState(b, 1, 0, seq+1)
	le.PutUint64(b[headerSize:], 99)
	le.PutUint64(b[headerSize+8:], uint64(core.OpAdd8))
	le.PutUint64(b[headerSize+16:], 64)
	le.PutUint64(b[headerSize+24:], 5)
	return b
}

func TestDatagramsOfAnotherJobAreDropped(t *testing.T) {
	eps, hosts := pair(t)
	rawSend(t, eps[1], atomicDatagram(0x9999, 1))
	time.Sleep(50 * time.Millisecond)
	assert.Zero(t, hosts[1].atomics.Load(), "a datagram with a foreign key was executed")
	rawSend(t, eps[1], atomicDatagram(0x1234, 1))
	assert.Eventually(t, func() bool { return hosts[1].atomics.Load() == 1 }, 5*time.Second, time.Millisecond,
		"the same datagram with the job's key was not executed")
}

func TestDuplicatedRequestsExecuteOnce(t *testing.T) {
	eps, hosts := pair(t)
	d := atomicDatagram(0x1234, 1)
	for i := 0; i < 5; i++ {
		rawSend(t, eps[1], d)
	}
	// A later sequence number, then an old one again, arriving out of order.
	rawSend(t, eps[1], atomicDatagram(0x1234, 3))
	rawSend(t, eps[1], atomicDatagram(0x1234, 2))
	rawSend(t, eps[1], d)
	assert.Eventually(t, func() bool { return hosts[1].atomics.Load() == 3 }, 5*time.Second, time.Millisecond)
	time.Sleep(50 * time.Millisecond)
	assert.Equal(t, int64(3), hosts[1].atomics.Load(), "duplicates were executed")
	assert.Equal(t, uint64(15), le.Uint64(received(eps[1], hosts[1], 64, 8)))
}

func TestOperationsAcrossAPairOfEndpoints(t *testing.T) {
	eps, hosts := pair(t, "udp-mtu", "1472")
	src := make([]byte, 100000)
	for i := range src {
		src[i] = byte(i * 7)
	}
	w := newWait()
	eps[0].Put(1, 1000, unsafe.Pointer(&src[0]), uint64(len(src)), w)
	w.wait(t)
	require.NoError(t, w.err)
	assert.Equal(t, src, received(eps[1], hosts[1], 1000, len(src)))

	dst := make([]byte, len(src))
	w = newWait()
	eps[0].Get(1, 1000, unsafe.Pointer(&dst[0]), uint64(len(dst)), w)
	w.wait(t)
	require.NoError(t, w.err)
	assert.Equal(t, src, dst)

	w = newWait()
	eps[0].Put(1, core.GA(len(hosts[1].mem)-10), unsafe.Pointer(&src[0]), 11, w)
	w.wait(t)
	assert.Equal(t, core.StatusOutOfBounds, core.StatusOf(w.err), "the owner's verdict reaches the initiator")

	eps[0].Send(1, []byte("hello"))
	assert.Eventually(t, func() bool {
		hosts[1].mu.Lock()
		defer hosts[1].mu.Unlock()
		return len(hosts[1].msgs) == 1 && string(hosts[1].msgs[0]) == "hello"
	}, 5*time.Second, time.Millisecond)
}

// While an application thread polls in a wait (Host.Polled), the progress
// goroutine leaves the socket to it: what arrives waits for the thread's
// Poll. Once no thread polls, the goroutine receives again by itself.
func TestProgressStaysAwayWhileAThreadPolls(t *testing.T) {
	eps, hosts := pair(t)
	hosts[1].polled.Store(true)
	src := []byte("one thread receives")
	w := newWait()
	eps[0].Put(1, 64, unsafe.Pointer(&src[0]), uint64(len(src)), w)
	select {
	case <-w.ch:
		t.Fatal("the put was received and acknowledged although only a waiting thread may receive")
	case <-time.After(100 * time.Millisecond):
	}
	deadline := time.Now().Add(10 * time.Second)
	for done := false; !done; {
		eps[1].Poll() // the waiting thread
		select {
		case <-w.ch:
			done = true
		default:
			require.True(t, time.Now().Before(deadline), "the waiting thread's polls did not receive the put")
		}
	}
	require.NoError(t, w.err)
	assert.Equal(t, src, hosts[1].mem[64:64+len(src)])

	hosts[1].polled.Store(false)
	w = newWait()
	eps[0].Put(1, 128, unsafe.Pointer(&src[0]), uint64(len(src)), w)
	w.wait(t) // received by the progress goroutine
	require.NoError(t, w.err)
}

func TestUnreachablePeerIsFatalAndNamed(t *testing.T) {
	eps, hosts := pair(t, "peer-timeout", "0.3")
	// Rank 1 disappears: its socket is closed, nothing answers any more.
	require.NoError(t, eps[1].Close())
	var word uint64
	start := time.Now()
	eps[0].Put(1, 0, unsafe.Pointer(&word), 8, newWait())
	assert.Eventually(t, func() bool { return len(hosts[0].fatals()) > 0 }, 5*time.Second, 5*time.Millisecond,
		"no fatal error for a peer that does not answer")
	assert.GreaterOrEqual(t, time.Since(start), 300*time.Millisecond, "gave up before the timeout")
	assert.ErrorContains(t, hosts[0].fatals()[0], "rank 1")
	assert.ErrorContains(t, hosts[0].fatals()[0], "unreachable")
}

func TestRetransmissionBacksOff(t *testing.T) {
	eps, _ := pair(t, "peer-timeout", "2")
	require.NoError(t, eps[1].Close())
	var word uint64
	eps[0].Put(1, 0, unsafe.Pointer(&word), 8, newWait())
	time.Sleep(500 * time.Millisecond)
	eps[0].mu.Lock()
	p := eps[0].peers[1]
	d := p.inflight[0]
	retries, rto := d.retries, d.rto
	eps[0].mu.Unlock()
	// 100 µs doubling to 100 ms: ten tries take 102 ms, then one per 100 ms.
	assert.InDelta(t, 14, retries, 3, "retries in 0.5 s")
	assert.Greater(t, rto, 64*time.Millisecond)
	assert.LessOrEqual(t, rto, maxRTO)
	t.Logf("after 0.5 s: %d retries, timeout now %v", retries, rto)
}

// An operation whose datagrams were all acknowledged but whose answer never
// comes (the peer died after taking the request) must end in a fatal error
// naming the peer, not hang: nothing is in flight to time out.
func TestWaitingForASilentPeerIsFatal(t *testing.T) {
	eps, hosts := pair(t, "peer-timeout", "0.3")
	eps[0].mu.Lock()
	eps[0].newOp(opGet, eps[0].peer(1), newWait()) // a request the peer will never answer
	eps[0].mu.Unlock()
	assert.Eventually(t, func() bool { return len(hosts[0].fatals()) > 0 }, 5*time.Second, 5*time.Millisecond,
		"no fatal error for a peer that sends nothing while we wait for it")
	assert.ErrorContains(t, hosts[0].fatals()[0], "rank 1")
	assert.ErrorContains(t, hosts[0].fatals()[0], "nothing arrived")
}

// A lone datagram's acknowledgement waits for the answer and rides on it:
// a put pingpong costs one datagram per message, and the first put
// completes with the answer, long before the acknowledgement delay.
func TestAcknowledgementRidesOnTheAnswer(t *testing.T) {
	eps, hosts := pair(t, "udp-ack-delay", "2")
	src := []byte{42}
	w0 := newWait()
	eps[0].Put(1, 100, unsafe.Pointer(&src[0]), 1, w0)
	require.Eventually(t, func() bool { return received(eps[1], hosts[1], 100, 1)[0] == 42 },
		5*time.Second, 10*time.Microsecond, "the put did not land")
	w1 := newWait()
	eps[1].Put(0, 200, unsafe.Pointer(&src[0]), 1, w1)
	select {
	case <-w0.ch:
	case <-time.After(time.Second):
		t.Fatal("the first put waited for the acknowledgement delay instead of the answer")
	}
	require.NoError(t, w0.err)
	// Nothing more goes back: the second acknowledgement comes alone, late.
	w1.wait(t)
	require.NoError(t, w1.err)
	// Retransmissions aside: in a slow run (the race detector, a loaded
	// machine) the put may be retransmitted before the answer, and its
	// duplicate is acknowledged at once; or the answer may be, while its
	// own acknowledgement is late (a retransmission is counted as resent
	// before it is counted as sent, so the counts are read only now).
	if eps[0].stats.resent.Load() == 0 && eps[1].stats.resent.Load() == 0 {
		assert.Equal(t, int64(1), eps[1].stats.sent.Load(),
			"the answer and its acknowledgement travel as one datagram")
	}
}

// The acknowledgement of a put of several fragments waits the whole delay
// after its last fragment for an answer to ride on, not only after the
// first fragment it acknowledges, within maxAckHold of that first one; a
// put of one datagram keeps the plain delay. The clock is handed to handle
// an hour ahead, so that the endpoint's own timer checks (on the real
// clock) find nothing due meanwhile.
func TestPutsLastFragmentHoldsTheAcknowledgement(t *testing.T) {
	eps, hosts := pair(t)
	e := eps[1]
	delay := e.ackDelay
	require.Positive(t, delay)
	require.Less(t, 3*delay, maxAckHold, "the test's fragments must fit in the hold")
	base := time.Now().Add(time.Hour)
	payload := bytes.Repeat([]byte{7}, 1000)

	e.rxMu.Lock()
	e.mu.Lock()
	p := e.peer(0)
	seq := p.rxNext
	feed := func(at time.Duration, off int) {
		e.handle(putFragment(seq, 1, 0, 3000, off, payload), base.Add(at))
		seq++
	}
	feed(0, 0)
	assert.Equal(t, base.Add(delay), p.ackAt, "first fragment: the plain delay")
	feed(delay/2, 1000)
	assert.Equal(t, base.Add(delay), p.ackAt, "a middle fragment does not move it")
	feed(delay*9/10, 2000)
	assert.Equal(t, base.Add(delay*9/10+delay), p.ackAt, "last fragment: the delay from it")
	assert.True(t, p.ackDue)
	assert.False(t, p.ackNow)

	// Again, the last fragment late: the hold ends maxAckHold after the
	// first fragment.
	e.stamp(p, make([]byte, headerSize)) // as if an answer took the acknowledgement
	base = base.Add(time.Second)
	feed(0, 0)
	feed(maxAckHold-delay/2, 1000)
	feed(maxAckHold-delay/4, 2000)
	assert.Equal(t, base.Add(maxAckHold), p.ackAt, "held no longer than maxAckHold")

	// A put of one datagram: the plain delay.
	e.stamp(p, make([]byte, headerSize))
	base = base.Add(time.Second)
	e.handle(putFragment(seq, 2, 0, 1000, 0, payload), base)
	assert.Equal(t, base.Add(delay), p.ackAt)
	e.mu.Unlock()
	e.rxMu.Unlock()
	assert.Equal(t, payload, received(e, hosts[1], 2000, 1000), "the fragments landed")
}

// A large put lands in place (received straight into its destination) and
// a duplicate of a fragment does not write again.
func TestLargePutLandsOnceInPlace(t *testing.T) {
	eps, hosts := pair(t)
	src := make([]byte, 600000)
	for i := range src {
		src[i] = byte(i*13 + 1)
	}
	for round := 0; round < 3; round++ {
		w := newWait()
		eps[0].Put(1, 4096, unsafe.Pointer(&src[0]), uint64(len(src)), w)
		w.wait(t)
		require.NoError(t, w.err)
		assert.Equal(t, src, received(eps[1], hosts[1], 4096, len(src)))
	}
	// A fragment of the last put again, after the memory changed: it was
	// executed once already and must not write.
	eps[0].mu.Lock()
	p := eps[0].peers[1]
	seq := p.nextSeq - 2
	eps[0].mu.Unlock()
	hdr := make([]byte, headerSize+putHeader)
	putFixedHeader(hdr, 0x1234, 0, tPut, 0, seq)
	putAckState(hdr, 1, 0, seq+1)
	le.PutUint64(hdr[headerSize:], 1)
	le.PutUint64(hdr[headerSize+8:], 4096)
	le.PutUint64(hdr[headerSize+16:], uint64(len(src)))
	le.PutUint64(hdr[headerSize+24:], 0)
	eps[1].rxMu.Lock()
	eps[1].rxBulk = true
	eps[1].rxMu.Unlock()
	eps[1].rxMu.Lock()
	clear(hosts[1].mem[4096 : 4096+placeMin])
	eps[1].rxMu.Unlock()
	rawSend(t, eps[1], append(hdr, src[:placeMin]...))
	assert.Eventually(t, func() bool { return eps[1].stats.dropped.Load() > 0 }, 5*time.Second, time.Millisecond)
	assert.Equal(t, make([]byte, placeMin), received(eps[1], hosts[1], 4096, placeMin), "a duplicate fragment was written")
}

// putFragment is a put fragment from rank 0 as its endpoint would send it.
func putFragment(seq, id uint64, dst, size, off int, payload []byte) []byte {
	b := make([]byte, headerSize+putHeader, headerSize+putHeader+len(payload))
	putFixedHeader(b, 0x1234, 0, tPut, 0, seq)
	putAckState(b, 1, 0, seq+1)
	le.PutUint64(b[headerSize:], id)
	le.PutUint64(b[headerSize+8:], uint64(dst))
	le.PutUint64(b[headerSize+16:], uint64(size))
	le.PutUint64(b[headerSize+24:], uint64(off))
	return append(b, payload...)
}

// pureAck is a pure acknowledgement from rank src.
func pureAck(src uint32, ackNext uint64) []byte {
	b := make([]byte, headerSize)
	putFixedHeader(b, 0x1234, src, tAck, 0, 0)
	putAckState(b, ackNext, 0, ackNext)
	return b
}

// setConn makes e send and receive through c.
func setConn(e *endpoint, c packetConn) {
	e.rxMu.Lock()
	e.mu.Lock()
	e.conn = c
	e.mu.Unlock()
	e.rxMu.Unlock()
}

// pattern is n bytes that differ from those of another seed.
func pattern(n, seed int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + seed)
	}
	return b
}

// nextSeq is the sequence number e expects next from peer.
func nextSeq(e *endpoint, peer int) uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	if p := e.peers[peer]; p != nil {
		return p.rxNext
	}
	return 1
}

// sendAndWait delivers a hand-made datagram to e and waits until e has
// handled it.
func sendAndWait(t *testing.T, e *endpoint, b []byte) {
	n := e.stats.received.Load()
	rawSend(t, e, b)
	require.Eventually(t, func() bool { return e.stats.received.Load() > n }, 5*time.Second, 100*time.Microsecond)
}

// received reads what peers wrote into a host's memory: every write happens
// under the receiving endpoint's rxMu.
func received(e *endpoint, h *fakeHost, off, n int) []byte {
	e.rxMu.Lock()
	defer e.rxMu.Unlock()
	return append([]byte(nil), h.mem[off:off+n]...)
}

// A large get's data is sent from the owner's memory and received straight
// into the destination, under faults as well.
func TestLargeGetLandsInPlace(t *testing.T) {
	for _, faults := range []string{"", "loss=0.05,dup=0.05,reorder=0.1,seed=7"} {
		t.Run("faults="+faults, func(t *testing.T) {
			var kv []string
			if faults != "" {
				kv = []string{"udp-faults", faults}
			}
			eps, hosts := pair(t, kv...)
			eps[1].mu.Lock() // the server reads its memory under its lock
			for i := range hosts[1].mem {
				hosts[1].mem[i] = byte(i*11 + 3)
			}
			eps[1].mu.Unlock()
			dst := make([]byte, 600000)
			for round := 0; round < 3; round++ {
				clear(dst)
				w := newWait()
				eps[0].Get(1, 4096, unsafe.Pointer(&dst[0]), uint64(len(dst)), w)
				w.wait(t)
				require.NoError(t, w.err)
				require.Equal(t, hosts[1].mem[4096:4096+len(dst)], dst, "round %d", round)
			}
			assert.Positive(t, eps[0].stats.placed.Load(), "no fragment was received in place")
		})
	}
}

// Served memory that is unregistered before a fragment's retransmission
// is not read again: the retransmission becomes the get's error report.
func TestServedMemoryGoneBeforeRetransmission(t *testing.T) {
	eps, hosts := pair(t)
	// Everything the server sends is lost until the memory is gone.
	lossy, err := newFaultyConn(eps[1].sock, "loss=0.999999,seed=3")
	require.NoError(t, err)
	setConn(eps[1], lossy)
	dst := make([]byte, 200000)
	w := newWait()
	eps[0].Get(1, 0, unsafe.Pointer(&dst[0]), uint64(len(dst)), w)
	require.Eventually(t, func() bool { return eps[1].stats.sent.Load() > 0 }, 5*time.Second, time.Millisecond,
		"the server sent nothing")
	hosts[1].gone.Store(true)
	setConn(eps[1], eps[1].sock)
	w.wait(t)
	assert.Equal(t, core.StatusBadSegment, core.StatusOf(w.err))
	assert.Equal(t, make([]byte, len(dst)), dst, "data arrived from memory that was gone")
}

// While a put streams in, the next datagram is received on the guess that
// it is the put's next fragment, straight into its place. A datagram that
// is something else (another put's fragment of the same length, a pure
// acknowledgement) is copied out again and executed where it belongs, and
// the fragment that does belong there still lands whole, the put's short
// last fragment in place as well.
func TestWrongGuessIsCopiedOutAndTheFragmentStillLands(t *testing.T) {
	eps, hosts := pair(t)
	e := eps[1]
	const frag = 2 * placeMin
	const total = 2*frag + 100 // two full fragments and a short last one
	const dstA, dstB = 4096, 300000
	srcA, srcB := pattern(total, 1), pattern(frag, 5)
	s := nextSeq(e, 0)

	sendAndWait(t, e, putFragment(s, 1, dstA, total, 0, srcA[:frag]))
	e.rxMu.Lock()
	guessed := e.guess
	e.rxMu.Unlock()
	require.True(t, guessed.valid, "no guess after a put's first fragment")
	assert.Equal(t, uint64(frag), guessed.off)

	// Another put's fragment, as long as the guessed one, takes its place
	// first.
	sendAndWait(t, e, putFragment(s+1, 2, dstB, frag, 0, srcB))
	assert.Equal(t, srcB, received(e, hosts[1], dstB, frag), "the other put's data")
	assert.Equal(t, int64(1), e.stats.misguessed.Load())

	// The put goes on under the next sequence numbers; a pure
	// acknowledgement comes in between.
	sendAndWait(t, e, putFragment(s+2, 1, dstA, total, frag, srcA[frag:2*frag]))
	sendAndWait(t, e, pureAck(0, 1))
	assert.Equal(t, int64(2), e.stats.misguessed.Load())
	placed := e.stats.placed.Load()
	sendAndWait(t, e, putFragment(s+3, 1, dstA, total, 2*frag, srcA[2*frag:]))
	assert.Equal(t, placed+1, e.stats.placed.Load(), "the short last fragment was not placed on the guess")
	assert.Equal(t, srcA, received(e, hosts[1], dstA, total), "the put's data")
	e.rxMu.Lock()
	assert.False(t, e.guess.valid, "a guess beyond the put's end")
	e.rxMu.Unlock()
}

// A guess is not tried while a datagram sent after the one guessed has
// arrived: that may be the fragment that belongs in the guessed place.
// Here a put's second fragment comes first, under a later sequence number
// than the one its first fragment's guess names (another put's datagram
// went out in between), and that other datagram would have overwritten it.
func TestNoGuessPastAnArrivalOutOfOrder(t *testing.T) {
	eps, hosts := pair(t)
	e := eps[1]
	const frag = 2 * placeMin
	const total = 3 * frag
	const dstA, dstB = 4096, 300000
	srcA, srcB := pattern(total, 2), pattern(frag, 1)
	s := nextSeq(e, 0)
	sendAndWait(t, e, putFragment(s+2, 1, dstA, total, frag, srcA[frag:2*frag])) // A's second fragment, early
	sendAndWait(t, e, putFragment(s, 1, dstA, total, 0, srcA[:frag]))            // A's first: guesses s+1 at frag
	sendAndWait(t, e, putFragment(s+1, 2, dstB, frag, 0, srcB))                  // B's only fragment
	sendAndWait(t, e, putFragment(s+3, 1, dstA, total, 2*frag, srcA[2*frag:]))
	assert.Equal(t, srcA, received(e, hosts[1], dstA, total), "put A's data")
	assert.Equal(t, srcB, received(e, hosts[1], dstB, frag), "put B's data")
	assert.Zero(t, e.stats.misguessed.Load(), "a guess was tried with a later datagram already in")
}

// A timeout that was needless (the receiver was only slow to read: the
// datagram arrives twice) halves the congestion window only until the
// receiver reports the duplicate; a real loss keeps it halved.
func TestNeedlessRetransmissionRestoresTheWindow(t *testing.T) {
	eps, hosts := pair(t)
	window := func() (cwnd, max int) {
		eps[0].mu.Lock()
		defer eps[0].mu.Unlock()
		p := eps[0].peers[1]
		return p.cwnd, p.maxWindow
	}
	src := make([]byte, 4*placeMin)
	for i := range src {
		src[i] = byte(i + 3)
	}
	// Contact first: the window exists from then on.
	w := newWait()
	eps[0].Put(1, 0, unsafe.Pointer(&src[0]), 8, w)
	w.wait(t)
	_, full := window()

	// The receiver stops reading until the sender has retransmitted.
	eps[1].rxMu.Lock()
	resent := eps[0].stats.resent.Load()
	w = newWait()
	eps[0].Put(1, 4096, unsafe.Pointer(&src[0]), uint64(len(src)), w)
	require.Eventually(t, func() bool { return eps[0].stats.resent.Load() > resent }, 5*time.Second, 50*time.Microsecond)
	cut, _ := window()
	assert.Less(t, cut, full, "the timeout did not cut the window")
	eps[1].rxMu.Unlock()
	w.wait(t)
	require.NoError(t, w.err)
	assert.Equal(t, src, received(eps[1], hosts[1], 4096, len(src)))
	assert.Eventually(t, func() bool { c, _ := window(); return c == full }, 5*time.Second, time.Millisecond,
		"the window stayed cut after the duplicate was reported")

	// A real loss: the receiver never sees the first transmission.
	lossy, err := newFaultyConn(eps[0].sock, "loss=0.999999,seed=5")
	require.NoError(t, err)
	setConn(eps[0], lossy)
	w = newWait()
	resent = eps[0].stats.resent.Load()
	eps[0].Put(1, 4096, unsafe.Pointer(&src[0]), 8, w)
	require.Eventually(t, func() bool { return eps[0].stats.resent.Load() > resent }, 5*time.Second, 50*time.Microsecond)
	setConn(eps[0], eps[0].sock)
	w.wait(t)
	require.NoError(t, w.err)
	time.Sleep(20 * time.Millisecond) // any report has come by now
	c, _ := window()
	assert.Less(t, c, full, "the window was restored after a real loss")
}

// Datagrams waiting together are taken in one batch on the guess, each in
// the place of the fragment it would be: those that are something else,
// before and after one that fits, are copied out and executed where they
// belong, and what they left at the guessed places is overwritten by the
// fragments that belong there.
func TestGuessedBatchWithStrangers(t *testing.T) {
	eps, hosts := pair(t)
	e := eps[1]
	const frag = 2 * placeMin
	const total = 5*frag + 100
	const dstA, dstB = 4096, 400000
	srcA, srcB := pattern(total, 1), pattern(frag, 5)
	s := nextSeq(e, 0)
	fragA := func(seq uint64, i int) []byte {
		return putFragment(seq, 1, dstA, total, i*frag, srcA[i*frag:min((i+1)*frag, total)])
	}
	handled := func(n int64) {
		require.Eventually(t, func() bool { return e.stats.received.Load() >= n }, 5*time.Second, 100*time.Microsecond)
	}
	received0 := e.stats.received.Load()
	sendAndWait(t, e, fragA(s, 0))

	e.rxMu.Lock() // the next five wait together
	rawSend(t, e, fragA(s+1, 1))
	rawSend(t, e, pureAck(0, 1))
	rawSend(t, e, putFragment(s+2, 2, dstB, frag, 0, srcB))
	rawSend(t, e, fragA(s+3, 2))
	rawSend(t, e, fragA(s+4, 3))
	e.rxMu.Unlock()
	handled(received0 + 6)
	assert.Equal(t, int64(1), e.stats.placed.Load(), "the fragment that fits was not placed")
	assert.Equal(t, int64(4), e.stats.misguessed.Load(), "not one batch")

	rawSend(t, e, fragA(s+5, 4))
	rawSend(t, e, fragA(s+6, 5))
	handled(received0 + 8)
	assert.Equal(t, int64(3), e.stats.placed.Load(), "the last fragments were not placed on the guess")
	assert.Equal(t, srcA, received(e, hosts[1], dstA, total), "put A's data")
	assert.Equal(t, srcB, received(e, hosts[1], dstB, frag), "put B's data")
}

// The data of a get is received on the guess too: each fragment straight
// into the get's destination, a stranger in between copied out.
func TestGuessedGetData(t *testing.T) {
	eps, _ := pair(t)
	e := eps[0]
	// The server's own answers are lost: the test answers for it.
	mute, err := newFaultyConn(eps[1].sock, "loss=0.999999,seed=9")
	require.NoError(t, err)
	setConn(eps[1], mute)

	const frag = 2 * placeMin
	const total = 3*frag + 100
	src := pattern(total, 7)
	dst := make([]byte, total)
	w := newWait()
	e.Get(1, 4096, unsafe.Pointer(&dst[0]), total, w)
	var id uint64
	require.Eventually(t, func() bool {
		e.mu.Lock()
		defer e.mu.Unlock()
		e.ops.each(func(o *op) {
			if o.kind == opGet {
				id = o.id
			}
		})
		return id != 0
	}, 5*time.Second, 100*time.Microsecond)
	s := nextSeq(e, 1)
	data := func(seq uint64, i int) []byte {
		b := make([]byte, headerSize+getDataHeader)
		putFixedHeader(b, 0x1234, 1, tGetData, 0, seq)
		putAckState(b, 1, 0, seq+1)
		le.PutUint64(b[headerSize:], id)
		le.PutUint64(b[headerSize+8:], uint64(i*frag))
		return append(b, src[i*frag:min((i+1)*frag, total)]...)
	}
	sendAndWait(t, e, data(s, 0))
	sendAndWait(t, e, pureAck(1, 1))
	assert.Equal(t, int64(1), e.stats.misguessed.Load(), "the acknowledgement was not taken on the guess")
	for i := 1; i <= 3; i++ {
		sendAndWait(t, e, data(s+uint64(i), i))
	}
	w.wait(t)
	require.NoError(t, w.err)
	assert.Equal(t, src, dst)
	assert.Equal(t, int64(3), e.stats.placed.Load(), "the get's later fragments were not placed on the guess")
}

// A small datagram between two large puts (an acknowledgement, or an empty
// one from anywhere) is received alone and bulk mode goes on: the next
// put's first fragment is still received straight into its place.
func TestBulkModeOutlastsASmallDatagram(t *testing.T) {
	for name, small := range map[string][]byte{"acknowledgement": pureAck(0, 1), "empty": nil} {
		t.Run(name, func(t *testing.T) {
			eps, hosts := pair(t)
			e := eps[1]
			const frag = 2 * placeMin
			src := pattern(frag, 3)
			s := nextSeq(e, 0)
			sendAndWait(t, e, putFragment(s, 1, 4096, frag, 0, src)) // copied: not in bulk mode yet
			sendAndWait(t, e, small)
			placed := e.stats.placed.Load()
			sendAndWait(t, e, putFragment(s+1, 2, 200000, frag, 0, src))
			assert.Equal(t, placed+1, e.stats.placed.Load(), "the put after the small datagram was not placed")
			assert.Equal(t, src, received(e, hosts[1], 200000, frag))
		})
	}
}
