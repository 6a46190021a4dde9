// Package ch implements ACP's channels (acp_*_ch): one-directional,
// in-order, message-preserving pipes from a sender rank to a receiver rank.
//
// A channel is a ring (package ml/segbuf's Pair) owned by the receiver:
// the sender writes each slot with one put whose checksum tells the
// receiver when it landed completely, and the receiver releases slots by
// publishing a count into the sender's memory. Small messages travel in one
// slot, medium ones in consecutive slots; a large message is announced in a
// slot and the receiver copies it straight from the sender's buffer into
// its own. Every step is a one-sided operation of the side that takes it.
package ch

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/libacp/libacp/core"
	"github.com/libacp/libacp/internal/reuse"
	"github.com/libacp/libacp/ml/segbuf"
)

var errStopped = errors.New("the communication library stopped (acp_finalize or acp_reset) before the request could complete")

// Lib is one process's channel library.
type Lib struct {
	seg      *segbuf.Lib
	e        *core.Engine
	helped   atomic.Uint64 // pieces of shared rendezvous copies we copied as the sender
	streamed atomic.Uint64 // messages above eagerMax we sent through the ring
	ahead    atomic.Uint64 // rendezvous copies started before the one ahead finished (prefetch)
}

// Helped is how many pieces of rendezvous messages this process copied
// into their receivers' buffers as the sender (shared copies).
func (l *Lib) Helped() uint64 { return l.helped.Load() }

// Streamed is how many messages larger than the eager size this process
// sent through the receiver's ring (same node) rather than by rendezvous.
func (l *Lib) Streamed() uint64 { return l.streamed.Load() }

// CopiedAhead is how many rendezvous messages this process began to copy
// as receiver while the message before was still being copied.
func (l *Lib) CopiedAhead() uint64 { return l.ahead.Load() }

// New starts the channel library on a communication-library base.
func New(seg *segbuf.Lib) *Lib {
	return &Lib{seg: seg, e: seg.Engine()}
}

type opKind uint8

const (
	opSend opKind = iota + 1
	opRecv
	opFree
)

// Request is a posted send, receive or free (acp_request_t).
type Request struct {
	c    *Channel
	op   opKind
	buf  unsafe.Pointer
	size uint64

	started bool    // sender: protocol chosen
	off     uint64  // sender: bytes written into slots
	seq     uint64  // sender, rendezvous: sequence number of its slot
	key     core.GA // sender, rendezvous: registration of buf

	done   atomic.Bool
	n      uint64
	err    error
	waited atomic.Bool
}

func (r *Request) complete(n uint64, err error) {
	r.n, r.err = n, err
	r.done.Store(true)
}

// Done reports whether the request completed (without waiting).
func (r *Request) Done() bool { return r.done.Load() }

// PollFirst implements segbuf.PollFirst: over a transport whose data lands
// on receipt, a step finds nothing new unless a poll received something.
func (r *Request) PollFirst() bool { return r.c.byReceipt }

// Wait blocks until the request completed and returns the bytes received
// (receives) or 0 (sends and frees). A request can be waited for once.
func (r *Request) Wait() (uint64, error) {
	if r.waited.Swap(true) {
		return 0, errors.New("the request was waited for already")
	}
	if !r.done.Load() {
		r.c.l.seg.Wait(r)
		// What the wait did may have left work (a count to publish).
		r.c.kickIfPending()
	}
	return r.n, r.err
}

// Step implements segbuf.Waiter: progress on the request's channel. While
// the request's message is being copied from the sender, it waits for
// that copy the basic layer's way, which wakes up as soon as it completes.
//
// A waiting sender copies a piece of the rendezvous message the receiver
// is taking, if it opened it for a shared copy: the thread would only spin
// otherwise. The background progress never does, so that no CPU the
// application did not offer is taken.
func (r *Request) Step() bool {
	c := r.c
	c.lock()
	changed := c.progress(false)
	h := core.HandleNull
	if g := c.get; g != nil && g.r == r {
		h = g.h
	}
	p, help := c.claimPiece()
	c.unlock()
	if h != core.HandleNull {
		c.l.e.Complete(h)
		changed = true
	}
	if help {
		c.copyPiece(p)
		changed = true
	}
	return changed
}

// piece is a part of a shared rendezvous copy that the sender claimed.
type piece struct {
	dst, src core.GA
	n        uint64
	area     sharedCopy // in the receiver's ring
}

// claimPiece claims the next piece of a rendezvous message of ours that
// the receiver opened for a shared copy. Called with the channel locked:
// a slot not yet released cannot be written again meanwhile (only we
// write slots), and after the claim it stays unreleased until our piece
// is settled. The registrations bound both ends of the copy.
func (c *Channel) claimPiece() (p piece, ok bool) {
	if c.role != segbuf.Source || c.direct == nil || len(c.rdv) == 0 || c.err != nil {
		return piece{}, false
	}
	released := c.p.Count()
	for _, r := range c.rdv {
		if released >= r.seq {
			continue
		}
		a := sharedAt(c.direct, r.seq-1)
		if !a.opened(r.seq) {
			return piece{}, false // not taken yet; nor are the ones after it
		}
		if off, n, ok := a.claim(); ok {
			return piece{dst: a.key() + core.GA(off), src: r.key + core.GA(off), n: n, area: a}, true
		}
	}
	return piece{}, false
}

// copyPiece copies a claimed piece into the receiver's buffer and counts
// it done. Should the copy fail, the count is left alone (the receiver's
// buffer or ring may be gone: that is what makes a put there fail) and
// the channel fails here.
func (c *Channel) copyPiece(p piece) {
	h, err := c.l.e.Copy(p.dst, p.src, p.n, core.HandleNull)
	if err == nil {
		c.l.e.Complete(h)
		p.area.settle(p.n)
		c.l.helped.Add(1)
		return
	}
	c.lock()
	c.fail(fmt.Errorf("%s: cannot copy %d bytes of a message into rank %d: %v", c.name(), p.n, c.receiver, err))
	c.unlock()
}

// Channel is this process's end of a channel (acp_ch_t).
type Channel struct {
	l        *Lib
	sender   int
	receiver int
	role     segbuf.Role

	mu        sync.Mutex // taken with the fast block's lock: lock, unlock
	fast      segbuf.Block
	fastGone  bool                  // the fast block was given back (released)
	handles   func(*Request) uint64 // C handles of adopted requests (capi)
	orphan    func(h, gh uint64)    // C request h lives on as Go request gh (capi)
	p         *segbuf.Pair
	ring      segbuf.Block // receiver: the ring; sender: staging slots, one per ring slot
	closing   bool         // Free was called
	lingering bool         // the free completed; the end waits to be released
	released  bool
	err       error // the channel broke (protocol error); every request fails
	// spare: finished sends and receives handed back (Request.Release),
	// cleared, for the next ones; guarded by mu alone (post holds it).
	spare []*Request

	// sender
	push []*Request // sends (and then the free) whose slots are not all written
	rdv  []*Request // rendezvous sends the receiver has not finished with
	tail uint64     // slots written (the puts from staging slots: stageAt)
	// byReceipt: what the peer writes here lands only when a thread of ours
	// receives it (core.ReceiptDriven; decided at creation).
	byReceipt bool

	// direct is the receiver's ring mapped here (nil: written with puts);
	// decided once, when the channel connects.
	direct      unsafe.Pointer
	directKnown bool
	pubKnown    bool // receiver: fPubAt is decided

	// receiver
	// inPlace: a slot came written in place by the sender's stores (kind
	// ordered), so later ones will too (a sender decides once). Only then
	// does C take receives: it takes ordered slots only, and spins on the
	// ring without polling the transports, which over udp must first
	// receive what a sender puts.
	inPlace   bool
	recv      []*Request // posted receives, oldest first
	free      *Request
	head      uint64 // slots consumed
	published uint64 // slots the sender was told about
	force     bool   // publish at the next chance (someone waits for it)
	heldBack  bool   // a pass that completed a receive left the count to the next (publish)
	// rdvHeld: a finished rendezvous message's release waits for half the
	// ring (queuedBehind); its sender may be waiting for that send, so the
	// count goes out at idle even while C's receives wait (publish).
	rdvHeld  bool
	lastTake int64 // when a slot was last taken (monotonic nanoseconds)
	msg      *Request
	msgOn    bool // a message sent through the ring is being taken
	msgTotal uint64
	msgOff   uint64
	get      *getState
	next     *getState // the copy of the message after get's, started ahead (prefetch)
	dropped  uint64    // messages that arrived after Free with no receive
}

// getState is a rendezvous message being copied from the sender.
type getState struct {
	r      *Request
	n      uint64  // bytes to copy
	src    core.GA // the sender's buffer
	key    core.GA // registration of the receive buffer (0: bounce through the slot)
	off    uint64  // bounce: bytes copied so far
	chunk  uint64  // bounce: bytes of the copy in flight
	h      core.Handle
	bounce bool
	// carried: the sender's key for reading src, from the announcing
	// slot (core.KeyCarrier); empty where its transport has none.
	carried core.CarriedKey

	// A copy shared with the sender (shared.slot set): whether every
	// piece is claimed; chunk is then the bytes of our piece in flight.
	shared  sharedCopy
	claimed bool
}

// Create makes this process's end of the channel from sender to receiver.
// Both processes call it with the same arguments; the k-th channel created
// between the same two ranks on one side meets the k-th on the other. It
// returns at once: messages may be posted before the other side exists.
func (l *Lib) Create(sender, receiver int) (*Channel, error) {
	me, n := l.e.Rank(), l.e.Procs()
	switch {
	case sender < 0 || sender >= n:
		return nil, fmt.Errorf("sender rank %d out of range 0..%d", sender, n-1)
	case receiver < 0 || receiver >= n:
		return nil, fmt.Errorf("receiver rank %d out of range 0..%d", receiver, n-1)
	case sender == receiver:
		return nil, fmt.Errorf("sender and receiver are both rank %d: a channel joins two different processes", sender)
	case me != sender && me != receiver:
		return nil, fmt.Errorf("the calling process (rank %d) is neither the sender (%d) nor the receiver (%d)", me, sender, receiver)
	}
	role, peer := segbuf.Source, receiver
	if me == receiver {
		role, peer = segbuf.Dest, sender
	}
	ring, err := l.seg.Alloc(ringSize)
	if err != nil {
		return nil, err
	}
	fast, err := l.seg.Alloc(fastSize)
	if err != nil {
		l.seg.Free(ring)
		return nil, err
	}
	p, err := l.seg.NewPair(segbuf.KindChannel, role, peer, ring.GA, slotSize, slotCount)
	if err != nil {
		l.seg.Free(ring)
		l.seg.Free(fast)
		return nil, err
	}
	c := &Channel{l: l, sender: sender, receiver: receiver, role: role, p: p, ring: ring, fast: fast,
		byReceipt: l.e.LandsOnReceipt(peer)}
	if role == segbuf.Source {
		*c.fw(fCount) = uint64(uintptr(p.CountRecord()))
	} else {
		*c.fw(fRing) = uint64(uintptr(ring.Ptr))
	}
	l.seg.Add(c)
	return c, nil
}

// Sender and Receiver are the ranks the channel joins.
func (c *Channel) Sender() int   { return c.sender }
func (c *Channel) Receiver() int { return c.receiver }

func (c *Channel) name() string { return fmt.Sprintf("channel %d->%d", c.sender, c.receiver) }

// post checks what every new request needs.
func (c *Channel) post(op opKind, buf unsafe.Pointer, size uint64) (*Request, error) {
	if c.released || c.closing {
		return nil, fmt.Errorf("%s is being freed (acp_nbfree_ch was called)", c.name())
	}
	if c.err != nil {
		return nil, c.err
	}
	if buf == nil && size > 0 {
		return nil, fmt.Errorf("buffer is NULL with size %d", size)
	}
	if size > 0 && (uintptr(buf)+uintptr(size) < uintptr(buf) || uint64(uintptr(buf))+size > AddressLimit) {
		return nil, fmt.Errorf("buffer %p + %d reaches past the address space (no process maps memory from %#x on)", buf, size, uint64(AddressLimit))
	}
	r := reuse.Take(&c.spare)
	r.c, r.op, r.buf, r.size = c, op, buf, size
	return r, nil
}

// AddressLimit is above every address a process can map (user space ends
// at 2^47 on x86-64, 2^56 with five-level paging, 2^52 on arm64): a buffer
// reaching past it is a garbage size, whose bytes a send would read until
// the process faulted.
const AddressLimit = 1 << 57

// maxSpareRequests bounds the requests a channel keeps for reuse (112
// bytes each, and only as many as were in use at once): a window of
// messages waited for together needs one each.
const maxSpareRequests = 64

// Release hands a send or receive that completed and was waited for back
// to its channel, whose next request reuses it (a channel message then
// allocates nothing). The caller gives up r: the C layer does, once the
// request's handle is gone. Anything else is left alone.
func (r *Request) Release() {
	if r.op == opFree || !r.waited.Load() || !r.done.Load() {
		return
	}
	// Every reference the channel had to r went in the locked pass that
	// completed it.
	c := r.c
	c.mu.Lock()
	reuse.Keep(&c.spare, r, maxSpareRequests)
	c.mu.Unlock()
}

// Send posts a message of size bytes from buf (sender's end). buf must not
// change until the request completed.
func (c *Channel) Send(buf unsafe.Pointer, size uint64) (*Request, error) {
	if c.role != segbuf.Source {
		return nil, fmt.Errorf("this process is the receiver of %s; it cannot send on it", c.name())
	}
	c.lock()
	r, err := c.post(opSend, buf, size)
	if err == nil {
		c.push = append(c.push, r)
		c.progress(false)
	}
	c.unlockKick()
	return r, err
}

// Recv posts a receive into buf of size bytes (receiver's end). Messages
// are taken in order; a longer message fills buf and the rest is dropped.
func (c *Channel) Recv(buf unsafe.Pointer, size uint64) (*Request, error) {
	if c.role != segbuf.Dest {
		return nil, fmt.Errorf("this process is the sender of %s; it cannot receive on it", c.name())
	}
	c.lock()
	r, err := c.post(opRecv, buf, size)
	if err == nil {
		c.adopt() // receives C posted come first
		c.recv = append(c.recv, r)
		c.progress(false)
	}
	c.unlockKick()
	return r, err
}

// Free releases the channel after every request posted before: the
// request completes on the sender once its messages are written (and
// rendezvous buffers given back), on the receiver once its receives
// completed. The end then lingers in the background until the other side
// is done with it: a sender's end until the receiver took or dropped
// every message, a receiver's end (dropping what still arrives) until the
// sender freed its end. Freeing never waits for the other side's free.
func (c *Channel) Free() (*Request, error) {
	c.lock()
	r, err := c.post(opFree, nil, 0)
	if err == nil {
		c.adopt() // receives C posted complete before the free
		c.closing = true
		if c.role == segbuf.Source {
			c.push = append(c.push, r)
		} else {
			c.free = r
		}
		c.progress(false)
	}
	c.unlockKick()
	return r, err
}

// kickIfPending wakes the background progress when the channel has work
// left that must go on while the application is away. Called without c.mu.
func (c *Channel) kickIfPending() {
	c.lock()
	c.unlockKick()
}

// unlockKick releases c.mu and then wakes the background progress if the
// channel has work left.
func (c *Channel) unlockKick() {
	pending := c.pendingLocked()
	c.unlock()
	if pending {
		c.l.seg.Kick()
	}
}

func (c *Channel) pendingLocked() bool {
	return !c.released && c.err == nil && (c.p.Pending() || c.lingering || len(c.push) > 0 || c.cPending() ||
		len(c.rdv) > 0 || len(c.recv) > 0 || c.free != nil || c.get != nil || c.head != c.published)
}

// Progress implements segbuf.Poller.
func (c *Channel) Progress(background bool) (changed, pending bool) {
	if !c.tryLock() {
		return false, true
	}
	defer c.unlock()
	changed = c.progress(background)
	return changed, c.pendingLocked()
}

// progress advances the channel. Called with c.mu held.
func (c *Channel) progress(background bool) bool {
	if c.released {
		return false
	}
	changed := c.p.Progress()
	if err := c.p.Err(); err != nil {
		if c.err != nil {
			return changed // failed before
		}
		c.fail(fmt.Errorf("%s: %v", c.name(), err))
		return true
	}
	if c.role == segbuf.Source {
		return c.progressSend() || changed
	}
	return c.progressRecv(background) || changed
}

// fail breaks the channel: every request completes with err.
func (c *Channel) fail(err error) {
	if c.err == nil {
		c.err = err
		c.l.e.Logf(1, "communication library: %v", err)
	}
	c.adopt() // C's receives fail with the rest
	for _, r := range c.push {
		r.complete(0, err)
	}
	for _, r := range c.rdv {
		_ = c.l.e.Unregister(r.key)
		r.complete(0, err)
	}
	for _, r := range c.recv {
		r.complete(0, err)
	}
	if c.get != nil && c.get.key != 0 {
		if c.get.shared.slot != nil {
			c.closeShared()
		}
		_ = c.l.e.Unregister(c.get.key)
	}
	if c.next != nil {
		_ = c.l.e.Unregister(c.next.key)
	}
	if c.free != nil {
		c.free.complete(0, err)
	}
	c.push, c.rdv, c.recv, c.free, c.get, c.next = nil, nil, nil, nil, nil, nil
}

// Abandon implements segbuf.Poller: the library stops.
func (c *Channel) Abandon() {
	c.lock()
	defer c.unlock()
	if c.released {
		return
	}
	n := len(c.push) + len(c.rdv) + len(c.recv)
	if c.free != nil {
		n++
	}
	if n > 0 {
		c.l.e.Logf(1, "communication library: %s: %d request(s) could not complete before the library stopped", c.name(), n)
	}
	if c.err == nil {
		c.err = errStopped // fail would say it once more
	}
	c.fail(errStopped)
	c.release()
}

// release gives the channel's memory back; both ends are settled (or the
// library stops).
func (c *Channel) release() {
	c.released = true
	c.p.Release()
	c.l.seg.Free(c.ring)
	c.l.seg.Remove(c)
	// The fast block goes when the channel is unlocked (unlock writes it).
}

// ReportState implements core.StateReporter: the end's counts and what
// it waits for, a line of the engine's hang report.
func (c *Channel) ReportState(w io.Writer) {
	if !c.tryLock() {
		fmt.Fprintf(w, "  %s: locked by a thread that is using it\n", c.name())
		return
	}
	defer c.unlock()
	fmt.Fprintf(w, "  %s, %s", c.name(), c.p.State())
	if c.role == segbuf.Source {
		fmt.Fprintf(w, "; sender: %d slots written, %d released, %d send(s) not yet written, %d rendezvous send(s) unfinished",
			c.tail, c.p.Count(), len(c.push), len(c.rdv))
	} else {
		fmt.Fprintf(w, "; receiver: %d slots taken, %d released, %d receive(s) posted, message half taken %v, rendezvous copy %v",
			c.head, c.published, len(c.recv), c.msgOn, c.get != nil)
	}
	if !c.fastGone {
		fmt.Fprintf(w, "; C requests %d, of them filled %d", *c.fw(fNext), *c.fw(fFilled))
	}
	if c.closing || c.lingering || c.released {
		fmt.Fprintf(w, "; freeing (closing %v, lingering %v, released %v)", c.closing, c.lingering, c.released)
	}
	if c.err != nil {
		fmt.Fprintf(w, "; broken: %v", c.err)
	}
	fmt.Fprintln(w)
}
