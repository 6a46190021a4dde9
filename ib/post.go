package ib

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/libacp/libacp/core"
)

type opKind uint8

const (
	opPut       opKind = iota // RDMA WRITE
	opGet                     // RDMA READ
	opNICAtomic               // verbs fetch-and-add or compare-and-swap
	opCPUAtomic               // request executed by the owner's engine
)

// op is an operation initiated here. Guarded by endpoint.mu.
type op struct {
	kind   opKind
	c      core.Completion
	peer   int
	path   int
	ga     core.GA // remote end
	local  unsafe.Pointer
	n      uint64
	aop    core.AtomicOp
	a, b   uint64
	sent   int64  // coarse clock (endpoint.now) when a request to the owner left
	posted uint64 // bytes handed to work requests so far
	parts  int    // work requests not completed
	queued bool   // bytes still wait in a queue or for a key
	val    uint64
	err    error
	done   bool
	// carried: the owner's key packed for this read (GetCarried), used
	// instead of the cache's.
	carried *rkey
}

type slotKind uint8

const (
	slotFree slotKind = iota
	slotData          // part of an op
	slotMsg           // a message
)

// slot is a work request in flight; its index is the wr_id and names a
// scratch area in the registered message memory.
type slot struct {
	kind     slotKind
	op       *op
	conn     *conn
	lr       *localRegion   // local registration whose lkey the request uses
	postedAt int64          // coarse clock (endpoint.now)
	scratch  bool           // an atomic's result lands in the scratch area
	readTo   unsafe.Pointer // a read landed in the scratch area, to be copied here
	readLen  uint64
}

// ---- operations initiated here ----

// Put implements core.Transport: RDMA WRITE from src to dst.
func (e *endpoint) Put(peer int, dst core.GA, src unsafe.Pointer, n uint64, c core.Completion) {
	e.issue(&op{kind: opPut, c: c, peer: peer, ga: dst, local: src, n: n}, true)
}

// PutPolled implements core.PolledPutter: a put that does not wake the
// sleeping progress goroutine, whose caller polls for the completion. In
// the Soft-RoCE guest the wake-up cost the issuer 0.3-0.9 ms: a barrier
// of 2 processes took 0.36-0.78 ms with it and 0.14-0.27 ms without, in 4
// of 5 alternated rounds (BENCHMARKS.md, 2026-11-29, third section).
func (e *endpoint) PutPolled(peer int, dst core.GA, src unsafe.Pointer, n uint64, c core.Completion) {
	e.issue(&op{kind: opPut, c: c, peer: peer, ga: dst, local: src, n: n}, false)
}

// Get implements core.Transport: RDMA READ from src into dst.
func (e *endpoint) Get(peer int, src core.GA, dst unsafe.Pointer, n uint64, c core.Completion) {
	e.issue(&op{kind: opGet, c: c, peer: peer, ga: src, local: dst, n: n}, true)
}

// Atomic implements core.Transport. An atomic executes at the owner's CPU
// (a request its engine serves with Host.ApplyAtomic) unless the adapters
// carry it (atomicKind). With --acp-ib-atomics nic they carry every 8-byte
// one, peer may be this process (a loopback connection), and those
// without a verb run as a compare-and-swap loop (casLoop).
func (e *endpoint) Atomic(peer int, aop core.AtomicOp, target core.GA, a, b uint64, c core.Completion) {
	if e.nicAll && aop.Width() == 8 && aop != core.OpAdd8 && aop != core.OpCas8 {
		l := &casLoop{e: e, peer: peer, op: aop, target: target, a: a, c: c}
		l.try(0)
		return
	}
	e.issue(&op{kind: e.atomicKind(peer, aop, target), c: c, peer: peer, ga: target, n: aop.Width(), aop: aop, a: a, b: b}, true)
}

// casLoop executes an 8-byte swap, xor, or or and on the adapters: a
// compare-and-swap of the value the word is expected to hold for the
// value the operation makes of it, again with the value found until the
// word held what was expected. The first guess is 0, so a word that holds
// 0 takes one round trip and any other two.
type casLoop struct {
	e      *endpoint
	peer   int
	op     core.AtomicOp
	target core.GA
	a      uint64
	expect uint64
	c      core.Completion
}

func (l *casLoop) try(expect uint64) {
	next := expect
	core.ApplyAtomic(l.op, unsafe.Pointer(&next), l.a, 0)
	l.expect = expect
	l.e.issue(&op{kind: opNICAtomic, c: l, peer: l.peer, ga: l.target, n: 8, aop: core.OpCas8, a: expect, b: next}, true)
}

// OnComplete implements core.Completion for the loop's compare-and-swaps.
func (l *casLoop) OnComplete(val uint64, err error) {
	if err != nil || val == l.expect {
		l.c.OnComplete(val, err)
		return
	}
	l.try(val)
}

// atomicKind is the path of an atomic on target, a word of peer's: our
// device of the target's colour and the peer's devices (its address
// record) decide (nicAtomic).
func (e *endpoint) atomicKind(peer int, aop core.AtomicOp, target core.GA) opKind {
	col := e.layout.Color(target)
	if col >= len(e.paths) {
		return opCPUAtomic // the owner checks the colour
	}
	if e.nicAll {
		// The adapters take every 8-byte atomic; 4-byte ones have no verb
		// and stay with the owner's CPU (one path per width).
		if aop == core.OpAdd8 || aop == core.OpCas8 {
			return opNICAtomic
		}
		return opCPUAtomic
	}
	mine, owner := e.paths[col].dev.atomicGlob, peerAtomicGlob(e.book.At(peer))
	if e.forceNIC {
		mine, owner = true, true
	}
	if nicAtomic(aop, mine, owner) {
		return opNICAtomic
	}
	return opCPUAtomic
}

// nicAtomic decides whether an atomic goes to the adapters (the owner's
// executes it) rather than to the owner's CPU, given whether our device of
// the target's colour and the owner's devices report IBV_ATOMIC_GLOB. The
// engine executes local and delegated atomics with CPU instructions, so
// every atomic on a word must be a CPU atomic of its owner or something
// atomic with those: an adapter's atomic is that only on IBV_ATOMIC_GLOB
// devices, and the one that executes it is the owner's. Ours must report
// it too, as it always had to, so that a pair of processes chooses alike
// in both directions. Only fetch-and-add and compare-and-swap of 8 bytes
// exist as verbs.
func nicAtomic(op core.AtomicOp, mine, owner bool) bool {
	return (op == core.OpAdd8 || op == core.OpCas8) && mine && owner
}

// issue enqueues o; wake: whether a sleeping progress goroutine must be
// woken to see o complete (wakeIdle), rather than a thread that polls.
func (e *endpoint) issue(o *op, wake bool) {
	// The issuer usually waits for the operation next, polling itself.
	e.appPolls.Add(1)
	e.mu.Lock()
	if o.n == 0 {
		e.finish(o)
		e.unlockAndRun()
		return
	}
	path := 0
	if o.kind != opCPUAtomic {
		path = e.layout.Color(o.ga)
		if path >= len(e.paths) {
			o.err = &core.AccessError{Status: core.StatusBadSegment, Rank: -1}
			e.finish(o)
			e.unlockAndRun()
			return
		}
	}
	o.path = path
	o.queued = true
	var r *req
	if o.kind == opCPUAtomic {
		e.nextID++
		id := e.nextID
		e.ops[id] = o
		o.queued = false
		r = &req{msg: encodeAtomicReq(make([]byte, atomicReqLen), id, o.aop, o.ga, o.a, o.b), sentAt: &o.sent}
	} else {
		r = &req{op: o}
	}
	e.enqueue(e.connTo(o.peer, path), r)
	e.unlockAndRun()
	if wake {
		e.wakeIdle()
	}
}

// Send implements core.Transport: an RC SEND on the colour-0 connection.
func (e *endpoint) Send(peer int, msg []byte) {
	e.mu.Lock()
	if len(msg) > maxCtrl {
		if e.fatal == nil {
			e.fatal = fmt.Errorf("ib: internal error: a control message of %d bytes exceeds the %d bytes of a receive buffer", len(msg), maxCtrl)
		}
	} else {
		b := make([]byte, 1+len(msg))
		b[0] = mCtrl
		copy(b[1:], msg)
		e.enqueue(e.connTo(peer, 0), &req{msg: b})
	}
	e.unlockAndRun()
}

// sendMsg queues a transport message to a peer. Locked.
func (e *endpoint) sendMsg(peer int, b []byte) {
	e.enqueue(e.connTo(peer, 0), &req{msg: b})
}

// sendTimed queues a request whose answer is awaited; *sentAt receives
// the time it leaves. Locked.
func (e *endpoint) sendTimed(peer int, b []byte, sentAt *int64) {
	e.enqueue(e.connTo(peer, 0), &req{msg: b, sentAt: sentAt})
}

// enqueue adds work to a connection and posts what it can. Locked.
func (e *endpoint) enqueue(c *conn, r *req) {
	if c.state == connFailed {
		if r.op != nil {
			e.failQueued(r.op, c.err)
		}
		return
	}
	c.queue = append(c.queue, r)
	switch c.state {
	case connIdle:
		e.startConnect(c)
	case connReady:
		e.drain(c)
	}
}

// drain posts queued work while the connection, the queue pair and the
// slot pool have room. Keys are looked up here, at posting time, so that
// work that waited never uses a key revoked meanwhile. Locked.
func (e *endpoint) drain(c *conn) {
	defer e.unholdSQ(c)
	for len(c.queue) > 0 && c.state == connReady {
		if !e.holdSQ(c) {
			return
		}
		if len(e.free) == 0 {
			if !c.waitingSlot {
				c.waitingSlot = true
				e.waitSlot = append(e.waitSlot, c)
			}
			return
		}
		r := c.queue[0]
		if r.msg != nil {
			c.queue = c.queue[1:]
			e.postMsg(c, r.msg)
			if r.sentAt != nil {
				*r.sentAt = e.now()
			}
			continue
		}
		o := r.op
		if o.done || o.err != nil {
			c.queue = c.queue[1:]
			e.dequeued(o)
			continue
		}
		raddr, rkey, st, miss := e.resolve(c, o)
		if miss {
			c.queue = c.queue[1:]
			e.awaitKey(o)
			continue
		}
		if st != core.StatusOK {
			c.queue = c.queue[1:]
			o.err = &core.AccessError{Status: st, Rank: -1}
			e.dequeued(o)
			continue
		}
		if e.postData(c, o, raddr, rkey) {
			c.queue = c.queue[1:]
			e.dequeued(o)
		}
	}
}

// dequeued ends the queued part of an op that will post nothing more.
func (e *endpoint) dequeued(o *op) {
	o.queued = false
	if o.parts == 0 {
		e.finish(o)
	}
}

func (e *endpoint) failQueued(o *op, err error) {
	if o.err == nil {
		o.err = err
	}
	e.dequeued(o)
}

// resolve finds the remote address and key of the rest of o, checking the
// whole operation against the registration's bounds: an access that
// leaves the region is refused here and never reaches the owner. Locked.
func (e *endpoint) resolve(c *conn, o *op) (raddr uint64, rkey uint32, st core.Status, miss bool) {
	d := e.layout.Decode(o.ga)
	var base, size, offBase uint64
	readOnly := false
	if o.peer == e.me {
		// An atomic on our own memory (--acp-ib-atomics nic): our
		// registration table has the key, and is current.
		lr := e.regs[d.Seg]
		if lr == nil || len(lr.rkeys) == 0 || (d.Seg < core.SegFirstUser && d.Color != 0) || (d.Seg >= core.SegFirstUser && lr.r.Color != d.Color) {
			return 0, 0, core.StatusBadSegment, false
		}
		base, size, offBase, rkey = uint64(lr.base), lr.size, lr.r.OffBase, lr.rkeys[c.p.dev.index]
		readOnly = lr.readOnly
	} else if d.Seg < core.SegFirstUser {
		if d.Color != 0 {
			return 0, 0, core.StatusBadSegment, false
		}
		s := c.remote.starters[d.Seg]
		base, size, offBase, rkey = s.base, s.size, s.offBase, s.rkey
	} else {
		k := o.carried
		if k == nil {
			k = e.keys.get(o.peer, d.Seg)
		}
		if k == nil {
			return 0, 0, 0, true
		}
		if k.color != d.Color {
			return 0, 0, core.StatusBadSegment, false
		}
		if !k.inFast && k != o.carried {
			// Its slot on the C side was busy when it was learnt.
			e.fastKeyPut(k)
		}
		base, size, offBase, rkey = k.base, k.size, k.offBase, k.key
		readOnly = k.readOnly
	}
	off := d.Off
	if off < offBase || off-offBase > size || o.n > size-(off-offBase) {
		return 0, 0, core.StatusOutOfBounds, false
	}
	if readOnly && o.kind != opGet {
		// The owner's adapter would refuse the write with a remote
		// access error, which ends the connection.
		return 0, 0, core.StatusFault, false
	}
	return base + (off - offBase) + o.posted, rkey, core.StatusOK, false
}

// postData posts the next work request of o; it reports whether o has
// nothing left to post. Locked.
func (e *endpoint) postData(c *conn, o *op, raddr uint64, rkey uint32) bool {
	d := c.p.dev
	left := o.n - o.posted
	n := min(left, maxChunk)
	if c.p.maxMsg > 0 {
		n = min(n, uint64(c.p.maxMsg))
	}
	s := e.takeSlot()
	sl := &e.slots[s]
	var w sendWR
	w.raddr = raddr
	w.rkey = rkey
	switch o.kind {
	case opNICAtomic:
		n = 8
		w.laddr, w.len, w.lkey = e.scratchAddr(s), 8, e.bufLkey[d.index]
		w.compareAdd = o.a
		w.opcode = opFetchAdd
		if o.aop == core.OpCas8 {
			w.opcode, w.swap = opCmpSwap, o.b
		}
		sl.scratch = true
	default:
		local := unsafe.Add(o.local, o.posted)
		w.opcode = opWrite
		if o.kind == opGet {
			w.opcode = opRead
		}
		w.laddr = uint64(uintptr(local))
		switch {
		case o.kind == opPut && n <= uint64(c.inline):
			w.flags = flagInline
		default:
			lr, lkey, readOnly := e.lookupLocal(uintptr(local), n, d.index, o.kind == opGet)
			if readOnly {
				// A read into our memory registered read-only: the
				// adapter would refuse it (a local protection error,
				// which ends the connection); the memory faults as
				// it would for a copy by any other path.
				e.releaseSlot(s)
				o.err = &core.AccessError{Status: core.StatusFault, Rank: -1}
				return true
			}
			if lr == nil && n > msgSize {
				lr, lkey = e.registerMapped(local, n, d.index)
			}
			switch {
			case lr != nil:
				w.lkey = lkey
				sl.lr = lr
			case o.kind == opPut:
				// A word on its way (an atomic's old value) lives in
				// the engine's memory, and a same-host peer's memory
				// may be unregistrable: send from the scratch area,
				// msgSize bytes per work request.
				n = min(n, msgSize)
				copy(e.scratch(s), unsafe.Slice((*byte)(local), n))
				w.laddr, w.lkey = e.scratchAddr(s), e.bufLkey[d.index]
			default:
				// A word read into the engine's memory (the check of an
				// atomic's result location before the atomic is
				// applied), or into memory as above: read into the
				// scratch area, copied out when the read completed
				// (handleWC).
				n = min(n, msgSize)
				w.laddr, w.lkey = e.scratchAddr(s), e.bufLkey[d.index]
				sl.readTo, sl.readLen = local, n
			}
		}
		w.len = uint32(n)
	}
	sl.kind, sl.op, sl.conn, sl.postedAt = slotData, o, c, e.now()
	w.id = uint64(s)
	if err := e.post(c, &w); err != nil {
		e.releaseSlot(s)
		o.err = err
		e.connFailed(c, err)
		return true
	}
	o.parts++
	o.posted += n
	return o.posted >= o.n
}

func (e *endpoint) postMsg(c *conn, msg []byte) {
	s := e.takeSlot()
	sl := &e.slots[s]
	copy(e.scratch(s), msg)
	var w sendWR
	w.opcode = opSend
	w.flags = flagSolicited // the peer may have to wake up for it
	w.len = uint32(len(msg))
	w.laddr, w.lkey = e.scratchAddr(s), e.bufLkey[c.p.dev.index]
	if uint32(len(msg)) <= c.inline {
		w.flags |= flagInline
	}
	sl.kind, sl.conn, sl.postedAt = slotMsg, c, e.now()
	w.id = uint64(s)
	if err := e.post(c, &w); err != nil {
		e.releaseSlot(s)
		e.connFailed(c, err)
	}
}

// post hands one work request to the queue pair. Locked.
func (e *endpoint) post(c *conn, w *sendWR) error {
	if err := postSend(c.qp, w); err != nil {
		return fmt.Errorf("ibv_post_send on %s: %v", c.p.name, err)
	}
	c.sqHeld = false // the entry holdSQ took is this request's now
	c.posted++
	return nil
}

func (e *endpoint) takeSlot() int32 {
	s := e.free[len(e.free)-1]
	e.free = e.free[:len(e.free)-1]
	return s
}

func (e *endpoint) releaseSlot(s int32) {
	sl := &e.slots[s]
	if sl.lr != nil {
		sl.lr.users.Add(-1)
	}
	*sl = slot{}
	e.free = append(e.free, s)
}

// finish completes o once; the callback runs after the lock is released.
func (e *endpoint) finish(o *op) {
	if o.done {
		return
	}
	o.done = true
	e.comps = append(e.comps, completion{o.c, o.val, o.err})
}

// ---- completions ----

// handleWC processes one completion of device dev. Locked.
func (e *endpoint) handleWC(dev int, w *wc) {
	if uint64(w.wr_id)&recvTag != 0 {
		e.handleRecv(dev, w)
		return
	}
	if isFastWC(w) {
		e.handleFastWC(w)
		return
	}
	s := int32(w.wr_id)
	sl := &e.slots[s]
	c, o, kind := sl.conn, sl.op, sl.kind
	c.sq.Add(-1)
	c.completed++
	var err error
	if w.status != wcSuccess {
		err = e.wcError(c, sl, uint32(w.status))
	}
	if kind == slotData {
		o.parts--
		if err != nil && o.err == nil {
			o.err = err
		}
		if err == nil && sl.scratch {
			o.val = le.Uint64(e.scratch(s))
		}
		if err == nil && sl.readTo != nil {
			copy(unsafe.Slice((*byte)(sl.readTo), sl.readLen), e.scratch(s))
		}
		if o.parts == 0 && !o.queued {
			e.finish(o)
		}
	}
	e.releaseSlot(s)
	if err != nil && w.status != wcFlushErr {
		e.connFailed(c, err)
	}
	e.drain(c)
	e.drainWaiting()
	if len(e.acks) > 0 {
		e.checkAcks()
	}
}

// wcError describes a failed work request.
func (e *endpoint) wcError(c *conn, sl *slot, status uint32) error {
	what := "message"
	if sl.kind == slotData {
		switch sl.op.kind {
		case opPut:
			what = "RDMA write"
		case opGet:
			what = "RDMA read"
		default:
			what = "RDMA atomic"
		}
	}
	rank := e.host.PeerRank(c.peer)
	switch status {
	case wcFlushErr:
		if c.err != nil {
			return c.err
		}
		return fmt.Errorf("%s to rank %d cancelled: the connection on %s failed", what, rank, c.p.name)
	case wcRetryExc, wcRNRRetryExc:
		return unreachableError{fmt.Errorf("rank %d is unreachable: its adapter stopped answering (%s on %s: %s); is it still running?",
			rank, what, c.p.name, wcStatusText(status))}
	}
	return fmt.Errorf("%s to rank %d failed on %s: %s (verbs status %d)", what, rank, c.p.name, wcStatusText(status), status)
}

// drainWaiting gives freed slots to connections that waited for one.
func (e *endpoint) drainWaiting() {
	for len(e.waitSlot) > 0 && len(e.free) > 0 {
		c := e.waitSlot[0]
		e.waitSlot = e.waitSlot[1:]
		c.waitingSlot = false
		e.drain(c)
	}
}

// connFailed ends a connection after a queue pair error: queued work fails
// now, posted work fails as its flushed completions arrive. The colour-0
// connection carries the engine's control messages, which may now be lost,
// and a peer that stopped answering cannot be worked around: both are
// fatal, naming the peer. Locked.
func (e *endpoint) connFailed(c *conn, err error) {
	if c.state == connFailed {
		return
	}
	rank := e.host.PeerRank(c.peer)
	c.state = connFailed
	c.err = err
	e.fastConnDown(c)
	var ue unreachableError
	if errors.As(err, &ue) || c.path == 0 {
		if e.fatal == nil && !e.closed.Load() {
			e.fatal = fmt.Errorf("ib: the connection to rank %d on %s failed: %v", rank, c.p.name, err)
		}
	}
	q := c.queue
	c.queue = nil
	for _, r := range q {
		if r.op != nil {
			e.failQueued(r.op, err)
		}
	}
}

// unreachableError marks errors that mean the peer is gone.
type unreachableError struct{ error }

// handleRecv processes an arrived message. Locked.
func (e *endpoint) handleRecv(dev int, w *wc) {
	idx := uint32(w.wr_id)
	e.repost[dev] = append(e.repost[dev], idx)
	if w.status != wcSuccess {
		if w.status != wcFlushErr && !e.closed.Load() {
			e.host.Logf(1, "ib: receive failed on %s: %s", e.devs[dev].name, wcStatusText(uint32(w.status)))
		}
		return
	}
	c := e.byQPN[uint64(dev)<<32|uint64(w.qp_num)]
	if c == nil {
		e.host.Logf(1, "ib: message on unknown queue pair %d of %s dropped", w.qp_num, e.devs[dev].name)
		return
	}
	off := sendSlots*msgSize + dev*srqDepth*msgSize + int(idx)*msgSize
	b := e.buf[off : off+int(min(w.byte_len, msgSize))]
	if !validLen(b) {
		e.host.Logf(1, "ib: malformed message (type %d, %d bytes) from rank %d dropped", b[0], len(b), e.host.PeerRank(c.peer))
		return
	}
	if isRequest(b[0]) {
		e.served.Add(1)
	}
	switch b[0] {
	case mCtrl:
		e.deliver = append(e.deliver, delivery{c.peer, append([]byte(nil), b[1:]...)})
	case mAtomicReq:
		e.atomics = append(e.atomics, atomicReq{from: c.peer, op: core.AtomicOp(b[1]), id: le.Uint64(b[8:]),
			ga: core.GA(le.Uint64(b[16:])), a: le.Uint64(b[24:]), b: le.Uint64(b[32:])})
	case mAtomicRep:
		id := le.Uint64(b[8:])
		o := e.ops[id]
		if o == nil || o.peer != c.peer {
			e.host.Logf(1, "ib: answer to unknown atomic %d from rank %d dropped", id, e.host.PeerRank(c.peer))
			return
		}
		delete(e.ops, id)
		o.val = le.Uint64(b[16:])
		if st := core.Status(b[1]); st != core.StatusOK {
			o.err = &core.AccessError{Status: st, Rank: -1}
		}
		e.finish(o)
	case mKeyReq:
		e.serveKey(c.peer, int(le.Uint32(b[4:])), core.GA(le.Uint64(b[8:])))
	case mKeyRep:
		e.installKey(c.peer, decodeKeyRep(b))
	case mInval:
		e.invalidate(c.peer, int(le.Uint32(b[4:])), le.Uint32(b[8:]))
	case mInvalAck:
		e.invalAcked(c.peer, int(le.Uint32(b[4:])), le.Uint32(b[8:]))
	}
}

// serveAtomic executes a peer's atomic with the engine's CPU atomics and
// answers. Runs without the lock.
func (e *endpoint) serveAtomic(a atomicReq) {
	old, st := e.host.ApplyAtomic(a.op, a.ga, a.a, a.b)
	e.mu.Lock()
	e.sendMsg(a.from, encodeAtomicRep(make([]byte, atomicRepLen), a.id, st, old))
	e.unlockAndRun()
}

// checkTimers stops the job when a peer leaves work unanswered for
// --acp-peer-timeout. Locked.
func (e *endpoint) checkTimers(now int64) {
	if e.fatal != nil {
		return
	}
	stuck, what := -1, ""
	if len(e.free) != len(e.slots) {
		for _, s := range e.slots {
			if s.kind != slotFree && now-s.postedAt > int64(e.timeout) {
				stuck, what = s.conn.peer, "no acknowledgement from its adapter"
				break
			}
		}
	}
	// The C fast path's work: an adapter that retries for ever (Soft-RoCE)
	// never fails it, and its poller, the application's wait, has no
	// deadline of its own.
	if peer, posted := e.oldestFast(); peer >= 0 && now-posted > int64(e.timeout) {
		stuck, what = peer, "no acknowledgement from its adapter"
	}
	for _, o := range e.ops {
		if o.sent != 0 && now-o.sent > int64(e.timeout) {
			stuck, what = o.peer, "no answer to an atomic operation"
			break
		}
	}
	for k, m := range e.misses {
		if m.sent != 0 && now-m.sent > int64(e.timeout) {
			stuck, what = int(k.peer), "no answer to a memory key request"
			break
		}
	}
	if stuck >= 0 {
		e.fatal = fmt.Errorf("rank %d is unreachable: %s for %v; is it still running? (raise --acp-peer-timeout / ACP_PEER_TIMEOUT for slow networks)",
			e.host.PeerRank(stuck), what, e.timeout)
	}
}
