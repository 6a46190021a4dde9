package ch

import (
	"sync/atomic"
	"unsafe"

	"github.com/libacp/libacp/core"
	"github.com/libacp/libacp/ml/segbuf"
)

// The fast block is the part of a channel end that a C fast path in the
// same process may share (capi/chfast.c mirrors this layout). It lives
// outside the Go heap, in a block of the library's memory, and carries:
// a lock that C and Go both take around any use of the fields below; the
// positions (slots written or taken, slots published); where the ring is;
// whether C may act now; and a table of requests that C posted.
//
// C handles the common case: sends that go through the ring (up to
// eagerMax, one to maxFillSlots slots) and receives of messages that came
// in such slots, taken once all of them landed. A sender that maps the
// receiver's ring (same node) writes the slots in place when the ring has
// room for all of them. One that does not, over a transport whose puts land
// without the receiver's CPU (ib), stages the message's slots in its
// staging slots, each with its checksum, and puts them with the C fast
// path of copies (capi/fastpath.c: one put, two where the slots wrap
// around the ring), whose handles the slots keep until they are reused.
// Receivers take slots written either way in C, checking the checksum of
// those that came by puts, except over transports whose writes land only
// when a thread receives them (udp): C spins on the ring without polling
// the transports. Everything else — a queued send, a rendezvous, a free,
// an error — is Go's. C requests that Go must take over (a receive
// whose message is not for C) are adopted: Go posts them as ordinary
// receives, in order, and C waits for them through Go.
//
// Layout (byte offsets; keep in step with capi/chfast.h):
const (
	fLock      = 0   // int32: 0 free, 1 held
	fSendOK    = 4   // uint32: C may send (sender end)
	fRecvOK    = 8   // uint32: C may post and fill receives (receiver end)
	fHandle    = 16  // uint64: the channel's C handle (set by capi)
	fPos       = 24  // uint64: sender: slots written; receiver: slots taken
	fPublished = 32  // uint64: receiver: slots released to the sender
	fRing      = 40  // uint64: sender: the receiver's ring, mapped here; receiver: our ring
	fCount     = 48  // uint64: sender: address of the released count record {value, check}
	fSeen      = 56  // uint64: sender: largest released count seen by C
	fNext      = 64  // uint64: C requests handed out (sequence of the table below; receiver: receives posted)
	fFilled    = 72  // uint64: receiver: C receives matched with a message or adopted
	fPubAt     = 80  // uint64: receiver: the sender's count record {value, check}, mapped here (0: publish through Go)
	fPutRing   = 88  // uint64: sender: GA of the receiver's ring (sends by puts)
	fStageGA   = 96  // uint64: sender: GA of our staging slots
	fStagePtr  = 104 // uint64: sender: address of our staging slots
	fTable     = 128 // fEntries × fEntrySize: C requests
	fEntries   = 16
	fEntrySize = 32 // handle u64, state u64, buf u64 (then n), size u64 (or the adopted Go handle)
	// fStage: sender: per slot, the handle of the put that last wrote it
	// from its staging slot (Go's and C's; 0: none, or seen complete).
	fStage = fTable + fEntries*fEntrySize
	// Receiver, releases by puts (C's, over ib): the GA of the sender's
	// count record (0: C leaves releases to Go), the GA of the 16 bytes
	// staged for the put, the latest release's handle (Go's or C's; each
	// follows it), and the staged {value, check}.
	fPubRemote  = fStage + slotCount*8
	fPubStageGA = fPubRemote + 8
	fPubLast    = fPubStageGA + 8
	fPubStage   = fPubLast + 8
	fastSize    = fPubStage + 16
)

// What C may do on a sender's end (fSendOK).
const (
	sendInPlace = 1 // write the slots in the receiver's ring, mapped here
	sendByPut   = 2 // stage the slots and put them
)

// Request entry states.
const (
	eFree    = 0
	ePosted  = 1 // a receive waiting for its message
	eDone    = 2 // complete; buf holds the bytes received
	eAdopted = 3 // taken over by Go; size holds the Go request's handle
)

// kindOrdered in a slot's kind: the sender wrote the slot with its own CPU
// stores, the sequence number last, so a slot whose number is here is
// complete and needs no checksum. A channel's sender decides once
// (direct), so the flag never appears in a ring written by puts, and a
// stale flag can never vouch for a slot still landing.
const kindOrdered = 0x100

func (c *Channel) fw(off uintptr) *uint64 { return (*uint64)(unsafe.Add(c.fast.Ptr, off)) }
func (c *Channel) fw32(off uintptr) *uint32 {
	return (*uint32)(unsafe.Add(c.fast.Ptr, off))
}

// lock takes the channel: its mutex, then the fast block's lock, and
// reads back what C changed.
func (c *Channel) lock() {
	c.mu.Lock()
	c.lockFast()
}

func (c *Channel) tryLock() bool {
	if !c.mu.TryLock() {
		return false
	}
	if c.fastGone {
		return true
	}
	if !atomic.CompareAndSwapInt32((*int32)(c.fast.Ptr), 0, 1) {
		c.mu.Unlock()
		return false
	}
	c.loadFast()
	return true
}

func (c *Channel) lockFast() {
	if c.fastGone {
		return // released: the block may be another channel's now
	}
	w := (*int32)(c.fast.Ptr)
	for i := 0; !atomic.CompareAndSwapInt32(w, 0, 1); i++ {
		core.SpinWait(i)
	}
	c.loadFast()
}

func (c *Channel) loadFast() {
	if c.role == segbuf.Source {
		c.tail = atomic.LoadUint64(c.fw(fPos))
	} else {
		// Slots C took count as taken now for the idle release (publish).
		if h := atomic.LoadUint64(c.fw(fPos)); h != c.head {
			c.head = h
			c.lastTake = nanotime()
		}
		c.published = atomic.LoadUint64(c.fw(fPublished))
	}
}

// unlock publishes the positions and what C may do now, and releases.
func (c *Channel) unlock() {
	if !c.fastGone {
		c.storeFast()
		atomic.StoreInt32((*int32)(c.fast.Ptr), 0)
		if c.released {
			// C sees the handle no more (a released block is zeroed, and
			// recycled blocks carry their new channel's handle).
			c.orphanAll()
			c.fastGone = true
			c.l.seg.Free(c.fast)
		}
	}
	c.mu.Unlock()
}

func (c *Channel) storeFast() {
	broken := c.released || c.closing || c.lingering || c.err != nil
	if c.role == segbuf.Source {
		atomic.StoreUint64(c.fw(fPos), c.tail)
		mode := uint32(0)
		if !broken && len(c.push) == 0 && c.p.Connected() {
			switch {
			case c.direct != nil:
				mode = sendInPlace
				atomic.StoreUint64(c.fw(fRing), uint64(uintptr(c.direct)))
			case c.directKnown && !c.byReceipt:
				// A put lands by itself: C may post the slot and leave
				// (progressSend gave it the ring's and the staging slots'
				// places). Over udp it would wait for the receiver to take
				// it in.
				mode = sendByPut
			}
		}
		atomic.StoreUint32(c.fw32(fSendOK), mode)
		return
	}
	atomic.StoreUint64(c.fw(fPos), c.head)
	atomic.StoreUint64(c.fw(fPublished), c.published)
	if !c.pubKnown && c.p.Connected() {
		// C publishes released slots itself when the sender's record is
		// mapped here: a plain store of {value, check}, which the sender
		// reads as any publication (the largest value whose check holds).
		c.pubKnown = true
		atomic.StoreUint64(c.fw(fPubAt), uint64(uintptr(c.p.PeerCountRecord())))
		if c.p.PeerCountRecord() == nil && !c.byReceipt {
			atomic.StoreUint64(c.fw(fPubRemote), uint64(c.p.PeerCountGA()))
			atomic.StoreUint64(c.fw(fPubStageGA), uint64(c.fast.GA)+fPubStage)
		}
	}
	if h := uint64(c.p.LastPublication()); h > *c.fw(fPubLast) {
		*c.fw(fPubLast) = h
	}
	// Slots that came by puts are C's too when they land by themselves
	// (C checks their checksums); over udp C's spin would never see them.
	ok := (c.inPlace || !c.byReceipt) && !broken && c.free == nil && len(c.recv) == 0 && !c.msgOn && c.get == nil && c.p.Connected()
	atomic.StoreUint32(c.fw32(fRecvOK), b2u(ok))
}

func b2u(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}

// entry is C request i of the table.
func (c *Channel) entry(i uint64) []uint64 {
	return unsafe.Slice((*uint64)(unsafe.Add(c.fast.Ptr, fTable+(i%fEntries)*fEntrySize)), 4)
}

// stageAt is the handle of the put that last wrote slot i from its staging
// slot (sender). Called with the channel locked.
func (c *Channel) stageAt(i uint64) *uint64 { return c.fw(fStage + uintptr(i%slotCount)*8) }

// cPending reports whether C posted receives that no message filled yet.
// Called with the channel locked.
func (c *Channel) cPending() bool { return !c.fastGone && *c.fw(fFilled) != *c.fw(fNext) }

// adopt turns the receives C posted and no message filled into Go
// receives, in order, ahead of anything posted after them; register gives
// each its Go handle, which C then waits for. Called with the channel
// locked, before a receive or a free is posted in Go.
func (c *Channel) adopt() {
	if c.role == segbuf.Source || !c.cPending() || c.handles == nil {
		return
	}
	for q := *c.fw(fFilled); q != *c.fw(fNext); q++ {
		// Every table entry from filled to posted is a posted receive.
		e := c.entry(q)
		r := &Request{c: c, op: opRecv, buf: *(*unsafe.Pointer)(unsafe.Pointer(&e[2])), size: e[3]}
		if c.err != nil {
			r.complete(0, c.err)
		}
		c.recv = append(c.recv, r)
		e[3] = c.handles(r)
		atomic.StoreUint64(&e[1], eAdopted)
	}
	*c.fw(fFilled) = *c.fw(fNext)
}

// fillC takes landed messages into the receives C posted, as C does (a
// message that went through the ring, once every slot of it landed), so
// that they complete while C is not looking (its thread may be in a
// blocking send to the very process whose message waits here); a message
// of another kind makes Go adopt them. Called with the channel locked.
func (c *Channel) fillC() (changed bool) {
	for c.cPending() {
		total, k, ready := c.landedMessage()
		if ready < 0 {
			c.adopt()
			return true
		}
		if ready == 0 {
			return changed
		}
		q := *c.fw(fFilled)
		e := c.entry(q)
		buf, capacity := *(*unsafe.Pointer)(unsafe.Pointer(&e[2])), e[3]
		for i, off := uint64(0), uint64(0); i < k && off < capacity; i, off = i+1, off+slotPayload {
			s := slotAt(c.ring.Ptr, c.head+i)
			n := min(uint64(le.Uint32(s[hLen:])), capacity-off)
			copy(unsafe.Slice((*byte)(unsafe.Add(buf, off)), n), s[headerSize:headerSize+n])
		}
		e[2] = min(total, capacity)
		atomic.StoreUint64(&e[1], eDone)
		*c.fw(fFilled) = q + 1
		c.head += k
		c.lastTake = nanotime()
		changed = true
	}
	return changed
}

// maxFillSlots is the most slots a message C (and fillC) takes may have:
// a message through the ring has at most this many (eagerMax), and the
// receiver releases slots whenever half the ring waits, so the sender is
// never stopped before it wrote all of them.
const maxFillSlots = (eagerMax + slotPayload - 1) / slotPayload

// A sender may have slotCount slots unreleased and the receiver leaves at
// most slotCount/2-1 taken slots unreleased: a message waited for whole
// must fit in the rest.
var _ [slotCount - (slotCount/2 - 1) - maxFillSlots]struct{}

// landedMessage looks at the message whose first slot is at c.head: ready
// is 1 when every one of its slots landed (its size and slot count are
// returned), 0 while one is missing, -1 when C does not take it (a
// rendezvous, or something a sender never writes: Go's take reports it).
func (c *Channel) landedMessage() (total, k uint64, ready int) {
	h, ok := landedSlot(slotAt(c.ring.Ptr, c.head), c.head+1)
	if !ok {
		return 0, 0, 0
	}
	if h.kind != slotFirst || h.total > eagerMax || h.n != min(h.total, slotPayload) {
		return 0, 0, -1
	}
	k = max(1, (h.total+slotPayload-1)/slotPayload)
	for i := uint64(1); i < k; i++ {
		hi, ok := landedSlot(slotAt(c.ring.Ptr, c.head+i), c.head+i+1)
		if !ok {
			return 0, 0, 0
		}
		off := i * slotPayload
		if hi.kind != slotNext || hi.total != h.total || hi.aux != off || hi.n != min(h.total-off, slotPayload) {
			return 0, 0, -1
		}
	}
	return h.total, k, 1
}

// Adopt hands the receives C posted on the channel to Go (C asks when
// their messages are not for it, or when it stops waiting by itself).
func (c *Channel) Adopt() {
	c.lock()
	c.adopt()
	c.progress(false)
	c.unlockKick()
}

// Publish tells the sender about slots C took (C asks when half the ring
// is released).
func (c *Channel) Publish() {
	c.lock()
	c.force = true
	c.progress(false)
	c.unlockKick()
}

// SetFast gives the fast block the channel's C handle, the function that
// gives adopted requests their handles, and the one that keeps C requests
// alive once the end or its handle is gone (orphans): C may act from now
// on.
func (c *Channel) SetFast(handle uint64, handles func(*Request) uint64, orphan func(h, gh uint64)) {
	c.lock()
	atomic.StoreUint64(c.fw(fHandle), handle)
	c.handles, c.orphan = handles, orphan
	c.unlock()
}

// orphanAll hands every C request still in the table to Go: C will not
// find them any more (the end is released, or its handle forgotten), but
// they may still be waited for. Called with the channel locked.
func (c *Channel) orphanAll() {
	if c.fastGone || c.orphan == nil {
		return
	}
	c.adopt()
	for i := uint64(0); i < fEntries; i++ {
		e := c.entry(i)
		// A finished request is claimed by turning it from done to free,
		// as C's wait does without the lock: whoever does owns it.
		if atomic.CompareAndSwapUint64(&e[1], eDone, eFree) {
			r := &Request{c: c, op: opRecv}
			r.complete(e[2], nil)
			c.orphan(e[0], c.handles(r))
			continue
		}
		if atomic.LoadUint64(&e[1]) == eAdopted {
			c.orphan(e[0], e[3])
		}
		atomic.StoreUint64(&e[1], eFree)
	}
	atomic.StoreUint64(c.fw(fHandle), 0) // C finds nothing here any more
}

// Forget is called when the channel's handle goes: C requests live on in
// Go.
func (c *Channel) Forget() {
	c.lock()
	c.orphanAll()
	c.unlock()
}

// Fast is the channel's fast block, for a C fast path in this process.
func (c *Channel) Fast() unsafe.Pointer { return c.fast.Ptr }
