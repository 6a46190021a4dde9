package udp

import (
	"errors"
	"fmt"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/libacp/libacp/core"
	"github.com/libacp/libacp/internal/reuse"
)

// ---- operations initiated here ----

// Put implements core.Transport.
func (e *endpoint) Put(peerIdx int, dst core.GA, src unsafe.Pointer, n uint64, c core.Completion) {
	e.mu.Lock()
	p := e.peer(peerIdx)
	o := e.newOp(opPut, p, c)
	per := uint64(p.mtu - headerSize - putHeader)
	o.fragsLeft = max((n+per-1)/per, 1)
	o.putStream = stream{typ: tPut, opID: o.id, op: o, src: src, dstGA: dst, size: n}
	o.stream = &o.putStream
	o.refs++ // the stream in p.streams
	p.streams = append(p.streams, o.stream)
	e.activate(p)
	e.flushLocked(o.created)
	e.unlockAndRun()
}

// Get implements core.Transport.
func (e *endpoint) Get(peerIdx int, src core.GA, dst unsafe.Pointer, n uint64, c core.Completion) {
	e.mu.Lock()
	p := e.peer(peerIdx)
	o := e.newOp(opGet, p, c)
	o.dst, o.size = dst, n
	b := e.newDgram(p, tGetReq, 0, 24)
	le.PutUint64(b[headerSize:], o.id)
	le.PutUint64(b[headerSize+8:], uint64(src))
	le.PutUint64(b[headerSize+16:], n)
	e.flushLocked(o.created)
	e.unlockAndRun()
}

// Atomic implements core.Transport.
func (e *endpoint) Atomic(peerIdx int, aop core.AtomicOp, target core.GA, a, b uint64, c core.Completion) {
	e.mu.Lock()
	p := e.peer(peerIdx)
	o := e.newOp(opAtomic, p, c)
	d := e.newDgram(p, tAtomic, 0, 40)
	le.PutUint64(d[headerSize:], o.id)
	le.PutUint64(d[headerSize+8:], uint64(aop))
	le.PutUint64(d[headerSize+16:], uint64(target))
	le.PutUint64(d[headerSize+24:], a)
	le.PutUint64(d[headerSize+32:], b)
	e.flushLocked(o.created)
	e.unlockAndRun()
}

// Send implements core.Transport.
func (e *endpoint) Send(peerIdx int, msg []byte) {
	e.mu.Lock()
	p := e.peer(peerIdx)
	if len(msg) > p.mtu-headerSize {
		e.mu.Unlock()
		panic(fmt.Sprintf("udp: control message of %d bytes exceeds one datagram", len(msg)))
	}
	b := e.newDgram(p, tCtrl, 0, len(msg))
	copy(b[headerSize:], msg)
	e.flushLocked(time.Now())
	e.unlockAndRun()
}

func (e *endpoint) newOp(kind opKind, p *peer, c core.Completion) *op {
	e.nextOp++
	o := reuse.Take(&e.freeOps)
	*o = op{id: e.nextOp, kind: kind, peer: p, c: c, created: time.Now(), refs: 1}
	e.ops.add(o)
	// Our datagrams may all be acknowledged while we still wait for the
	// peer (the data of a get, an atomic's answer): look again later.
	e.armCheck(o.created.Add(e.timeout))
	return o
}

// unref drops one reference to o, and keeps o for reuse when none is left.
// (A reference not dropped on some rare path only leaves o to the
// collector.)
func (e *endpoint) unref(o *op) {
	o.refs--
	if o.refs == 0 {
		reuse.Keep(&e.freeOps, o, maxFreeOps)
	}
}

// newDgram queues a small reliable datagram with a body of n bytes and
// returns its buffer for the caller to fill in.
func (e *endpoint) newDgram(p *peer, typ, status uint8, n int) []byte {
	d := reuse.Take(&e.spare)
	var b []byte
	if n <= maxSmallBody {
		b = d.small[:headerSize+n]
	} else {
		b = make([]byte, headerSize+n)
	}
	putFixedHeader(b, e.key, uint32(e.me), typ, status, p.nextSeq)
	d.seq, d.buf = p.nextSeq, b
	p.queue = append(p.queue, d)
	p.nextSeq++
	e.activate(p)
	return b
}

func (e *endpoint) activate(p *peer) {
	if !p.isActive {
		p.isActive = true
		e.active = append(e.active, p)
	}
}

// finish completes an operation once (callbacks run after the lock).
func (e *endpoint) finish(o *op, val uint64, st core.Status) {
	if o.done {
		return
	}
	o.done = true
	e.ops.remove(o)
	if o.stream != nil {
		o.stream.cancelled = true
	}
	if o.kind == opPut && o.fragsLeft > 0 {
		for _, d := range o.peer.inflight {
			if d.op == o && !d.acked {
				d.own()
			}
		}
	}
	e.completions = append(e.completions, completion{o.c, val, st.Err()})
	e.unref(o)
}

// unlockAndRun releases the lock and runs the callbacks collected under it.
// A few completions (the usual case) are copied out, and their slice stays
// with the endpoint for the next ones; a longer list is taken whole, and
// the endpoint continues with the one the last long list left behind.
func (e *endpoint) unlockAndRun() {
	var few [4]completion
	// long is read from e.completions, never from comps: a variable that
	// may hold few and is stored in the endpoint would move few to the
	// heap, an allocation per call.
	var long []completion
	comps, dels, fatal := e.completions, e.deliveries, e.fatal
	if len(comps) > len(few) {
		long = e.completions
		e.completions, e.spareCompletions = e.spareCompletions, nil
	} else {
		comps = few[:copy(few[:], comps)]
		clear(e.completions)
		e.completions = e.completions[:0]
	}
	e.deliveries, e.fatal = nil, nil
	e.mu.Unlock()
	for _, d := range dels {
		e.host.Deliver(d.peer, d.msg)
	}
	for _, c := range comps {
		c.c.OnComplete(c.val, c.err)
	}
	if long != nil {
		clear(long)
		e.mu.Lock()
		if e.spareCompletions == nil {
			e.spareCompletions = long[:0]
		}
		e.mu.Unlock()
	}
	if fatal != nil {
		e.host.Fatal(fatal)
	}
}

// ---- sending ----

// flushLocked sends what the windows allow: queued small datagrams first,
// then fragments of streams, then pure acknowledgements still owed. now is
// the caller's reading of the clock, taken within the last few hundred
// nanoseconds: a reading per step of a message's way costs more than the
// whole step.
func (e *endpoint) flushLocked(now time.Time) {
	keep := e.active[:0]
	for _, p := range e.active {
		for len(p.queue) > 0 && p.canSend(p.queue[0].size()) {
			d := p.queue[0]
			p.queue = reuse.DropFront(p.queue, 1)
			e.transmit(p, d, now)
		}
		if len(p.queue) == 0 {
			e.produce(p, now)
		}
		if p.busy() {
			keep = append(keep, p)
		} else {
			// Idle: a peer in a pingpong is idle after every message and
			// keeps its (small) arrays; large ones go back to the heap.
			p.isActive = false
			p.queue, p.inflight, p.streams = reuse.Emptied(p.queue, idleQueue), reuse.Emptied(p.inflight, idleQueue), reuse.Emptied(p.streams, idleQueue)
		}
	}
	clear(e.active[len(keep):])
	e.active = keep
	e.sendAcks(now)
	e.sendOut()
	e.recycle()
}

// idleQueue: the longest array an idle peer's queue keeps.
const idleQueue = 16

// transmit sends a datagram for the first time.
func (e *endpoint) transmit(p *peer, d *dgram, now time.Time) {
	d.sentAt, d.firstSent, d.rto, d.sent = now, now, p.rto, d.size()
	p.inflight = append(p.inflight, d)
	p.inflightBytes += d.sent
	e.stamp(p, d.buf)
	e.out = append(e.out, packet{to: p.addr, data: d.buf, tail: d.data})
	e.armCheck(now.Add(d.rto))
}

// stamp writes our current acknowledgement state for p into a datagram.
func (e *endpoint) stamp(p *peer, b []byte) {
	putAckState(b, p.rxNext, p.sack(), p.nextSeq)
	b[offDups] = uint8(min(p.dupsSeen, 255))
	p.dupsSeen = 0
	p.ackDue, p.ackNow, p.unacked, p.unackedBytes = false, false, 0, 0
}

// produce cuts fragments from p's streams while the window has room.
func (e *endpoint) produce(p *peer, now time.Time) {
	for len(p.streams) > 0 {
		s := p.streams[0]
		if s.cancelled || (s.started && s.off >= s.size) {
			p.streams = reuse.DropFront(p.streams, 1)
			if s.op != nil {
				e.unref(s.op)
			} else {
				// A served get's: nothing refers to it any more (its
				// fragments carry what they need).
				reuse.Keep(&e.spareStreams, s, maxSpare)
			}
			continue
		}
		var hdr int
		if s.typ == tPut {
			hdr = putHeader
		} else {
			hdr = getDataHeader
		}
		chunk := min(uint64(p.mtu-headerSize-hdr), s.size-s.off)
		n := headerSize + hdr + int(chunk)
		if !p.canSend(n) {
			return
		}
		var d *dgram
		if s.typ == tPut {
			// The data goes out straight from the source, which the engine
			// keeps pinned until the put completes; a put that ends early
			// copies what may still be retransmitted (dgram.own).
			d = reuse.Take(&e.spare)
			b := d.small[:headerSize+putHeader]
			body := b[headerSize:]
			putFixedHeader(b, e.key, uint32(e.me), tPut, 0, p.nextSeq)
			le.PutUint64(body[0:], s.opID)
			le.PutUint64(body[8:], uint64(s.dstGA))
			le.PutUint64(body[16:], s.size)
			le.PutUint64(body[24:], s.off)
			d.buf, d.data, d.op = b, bytesAt(unsafe.Add(s.src, s.off), chunk), s.op
			s.op.refs++
		} else {
			// Served data goes out straight from our memory, as a put's does.
			d = reuse.Take(&e.spare)
			d.served, d.srcGA, d.srcSize, d.srcOff, d.srcLen = true, s.srcGA, s.size, s.off, chunk
			if st := e.lend(d); st != core.StatusOK {
				// The memory was unregistered while we served the get.
				reuse.Keep(&e.spare, d, maxSpare)
				s.cancelled = true
				eb := e.newDgram(p, tGetErr, uint8(st), 8)
				le.PutUint64(eb[headerSize:], s.opID)
				return
			}
			b := d.small[:headerSize+getDataHeader]
			putFixedHeader(b, e.key, uint32(e.me), tGetData, 0, p.nextSeq)
			le.PutUint64(b[headerSize:], s.opID)
			le.PutUint64(b[headerSize+8:], s.off)
			d.buf = b
		}
		d.seq = p.nextSeq
		p.nextSeq++
		s.off += chunk
		s.started = true
		e.transmit(p, d, now)
	}
}

// owe notes that p is owed an acknowledgement: at once when urgent,
// otherwise within the acknowledgement delay. A lone request is usually
// answered sooner than that (a put pingpong, an atomic, a barrier round),
// and the answer carries the acknowledgement: one datagram instead of two,
// and no system call on the way to the application.
func (e *endpoint) owe(p *peer, now time.Time, urgent bool) {
	if !p.ackDue {
		p.ackDue = true
		p.ackAt = now.Add(e.ackDelay)
		p.ackSince = now
		e.owed = append(e.owed, p)
	}
	if urgent || e.ackDelay == 0 {
		p.ackNow = true
	}
}

// holdAck lets the delayed acknowledgement owed to p wait until t, when
// the last fragment of a put of several has just landed. Its delay ran
// from the first datagram it acknowledges, an earlier fragment, and often
// ended before the program could answer the put: a pure acknowledgement
// then completed the sender's put, whose thread went on to spin on memory
// while the answer waited in its socket for the progress goroutine to be
// woken. In a udp put pingpong of 256 KiB-1 MiB that was the slow mode of
// whole runs, twice the usual time per message (BENCHMARKS.md, 2026-11-28,
// sixth section). The wait is bounded by maxAckHold from when the
// acknowledgement became owed, and never shortened.
func (p *peer) holdAck(t time.Time) {
	if limit := p.ackSince.Add(maxAckHold); t.After(limit) {
		t = limit
	}
	if p.ackDue && !p.ackNow && t.After(p.ackAt) {
		p.ackAt = t
	}
}

// sendAcks sends a pure acknowledgement to every peer owed one that is
// urgent or due (the others got theirs on a datagram that went their way,
// or still wait for one).
func (e *endpoint) sendAcks(now time.Time) {
	if len(e.owed) == 0 {
		return
	}
	keep := e.owed[:0]
	for _, p := range e.owed {
		if !p.ackDue {
			continue
		}
		if !p.ackNow {
			if now.Before(p.ackAt) {
				keep = append(keep, p)
				e.armCheck(p.ackAt)
				continue
			}
		}
		putFixedHeader(p.ackBuf[:], e.key, uint32(e.me), tAck, 0, 0)
		e.stamp(p, p.ackBuf[:])
		e.out = append(e.out, packet{to: p.addr, data: p.ackBuf[:]})
	}
	clear(e.owed[len(keep):])
	e.owed = keep
}

func (e *endpoint) sendOut() {
	if len(e.out) == 0 {
		return
	}
	e.stats.sent.Add(int64(len(e.out)))
	if err := e.conn.send(e.out); err != nil && e.fatal == nil {
		e.fatal = fmt.Errorf("udp: send failed: %v", err)
	}
	clear(e.out)
	e.out = e.out[:0]
	// No send reads served memory any more.
	for _, d := range e.lent {
		d.reg.Release()
		d.reg, d.data = nil, nil
	}
	clear(e.lent)
	e.lent = e.lent[:0]
}

// lend points a served fragment at its data and pins that memory until
// the next sendOut. Not OK: the memory is no longer registered.
func (e *endpoint) lend(d *dgram) core.Status {
	if d.reg != nil {
		return core.StatusOK // lent already in this round
	}
	src, r, st := e.host.Acquire(d.srcGA, d.srcSize)
	if st != core.StatusOK {
		return st
	}
	if r.UserMemory() && !core.Readable(unsafe.Add(src, d.srcOff), d.srcLen) {
		// Protected or unmapped since its registration: the send would
		// fail with EFAULT for the whole batch.
		r.Release()
		return core.StatusFault
	}
	d.data, d.reg = bytesAt(unsafe.Add(src, d.srcOff), d.srcLen), r
	e.lent = append(e.lent, d)
	return core.StatusOK
}

// recycle keeps retired datagrams (their small arrays with them) for reuse
// and lets go of their operations, once no queued packet can point at
// them any more.
func (e *endpoint) recycle() {
	for _, d := range e.retired {
		if d.op != nil {
			e.unref(d.op)
		}
		reuse.Keep(&e.spare, d, maxSpare)
	}
	clear(e.retired)
	e.retired = e.retired[:0]
}

func (e *endpoint) armCheck(t time.Time) {
	if ns := t.UnixNano(); ns < e.nextCheck.Load() {
		e.nextCheck.Store(ns)
		// The progress goroutine may sleep past it (it read the
		// deadline before this one, and sleeps up to idleSleep): wake
		// it to sleep for the right time. That is the first datagram
		// after a quiet spell; later ones find it awake.
		if until := e.sleepUntil.Load(); until != 0 && ns < until {
			e.wake()
		}
	}
}

// ---- receiving ----

// handle processes one received datagram (under e.mu).
func (e *endpoint) handle(b []byte, now time.Time) {
	e.stats.received.Add(1)
	h, ok := parseHeader(b)
	if !ok || !e.connected.Load() || h.key != e.key || int(h.src) >= e.n || int(h.src) == e.me {
		e.stats.dropped.Add(1)
		return
	}
	p := e.peer(int(h.src))
	p.lastHeard = now
	e.processAck(p, h, now)
	if h.typ == tAck {
		return
	}
	before := p.rxNext
	if !p.accept(h.seq) {
		// A duplicate (our acknowledgement was lost), or beyond the window:
		// the sender is retransmitting, tell it where we are now.
		if h.seq < p.rxNext || h.seq-p.rxNext < rxWindow { // not beyond the window
			p.dupsSeen++
		}
		e.owe(p, now, true)
		e.stats.dropped.Add(1)
		return
	}
	// Acknowledge a gap at once (the sender may retransmit sooner), and a
	// stream every quarter of the largest window a sender keeps in flight
	// to us (half our receive buffer) so that it never waits for one; the
	// rest may wait for an answer to ride on, which keeps a pingpong's
	// waiting threads waiting for the answer, where they receive it
	// themselves.
	p.unacked++
	p.unackedBytes += len(b)
	e.owe(p, now, h.seq != before || p.unacked >= ackEvery || p.unackedBytes >= e.sock.rcvbuf/8)
	e.dispatch(p, h, b[headerSize:], now)
	if p.rxNext != before && len(p.waitMark) > 0 {
		e.releaseMarks(p)
	}
}

// dispatch executes the body of an accepted reliable datagram.
func (e *endpoint) dispatch(p *peer, h header, body []byte, now time.Time) {
	switch h.typ {
	case tPut:
		if len(body) < putHeader {
			return
		}
		id, dst, size, off := le.Uint64(body), core.GA(le.Uint64(body[8:])), le.Uint64(body[16:]), le.Uint64(body[24:])
		data := body[putHeader:]
		n := uint64(len(data))
		if e.placed >= 0 {
			n = uint64(e.placed) // recvPlaced checked it all and wrote the data already
		}
		e.rxPartial = off <= size && n < size-off
		if off > 0 && off <= size && n == size-off {
			p.holdAck(now.Add(e.ackDelay)) // the last fragment of a put of several
		}
		if e.placed >= 0 {
			e.landed = true
			e.guessNext(fragGuess{src: uint32(p.idx), seq: h.seq + 1, dst: dst, size: size}, off, n)
			return
		}
		if len(data) >= placeMin {
			e.rxBulk = true
		}
		st := core.StatusBadRequest
		if off <= size && uint64(len(data)) <= size-off {
			// The whole operation's range is checked with every fragment, so
			// a put that is partly out of bounds writes nothing at all.
			var ptr unsafe.Pointer
			var r *core.Region
			ptr, r, st = e.host.Acquire(dst, size)
			if st == core.StatusOK {
				if r.CopyInto(bytesAt(unsafe.Add(ptr, off), uint64(len(data))), data) {
					e.landed = true
					if len(data) >= placeMin {
						e.guessNext(fragGuess{src: uint32(p.idx), seq: h.seq + 1, dst: dst, size: size}, off, uint64(len(data)))
					}
				} else {
					st = core.StatusFault
				}
				r.Release()
			}
		}
		if st != core.StatusOK && p.lastErr != id {
			p.lastErr = id
			e.host.Logf(3, "udp: put %d from rank %d to GA %#x size %d rejected: %s", id, e.host.PeerRank(p.idx), uint64(dst), size, st)
			eb := e.newDgram(p, tPutErr, uint8(st), 8)
			le.PutUint64(eb[headerSize:], id)
		}

	case tGetReq:
		if len(body) < 24 {
			return
		}
		id, src, size := le.Uint64(body), core.GA(le.Uint64(body[8:])), le.Uint64(body[16:])
		_, r, st := e.host.Acquire(src, size)
		if st != core.StatusOK {
			eb := e.newDgram(p, tGetErr, uint8(st), 8)
			le.PutUint64(eb[headerSize:], id)
			return
		}
		r.Release()
		s := reuse.Take(&e.spareStreams)
		*s = stream{typ: tGetData, opID: id, srcGA: src, size: size}
		p.streams = append(p.streams, s)
		e.activate(p)

	case tGetData:
		if len(body) < getDataHeader {
			return
		}
		o := e.ops.get(le.Uint64(body))
		off, data := le.Uint64(body[8:]), body[getDataHeader:]
		n := uint64(len(data))
		if e.placed >= 0 {
			n = uint64(e.placed) // recvPlaced checked it and wrote the data already
		} else if len(data) >= placeMin {
			e.rxBulk = true
		}
		if o == nil || o.kind != opGet || o.peer != p || off > o.size || n > o.size-off {
			return
		}
		if (e.placed >= 0 || n >= placeMin) && !o.noPlace {
			e.guessNext(fragGuess{get: true, src: uint32(p.idx), seq: h.seq + 1, opID: o.id, size: o.size}, off, n)
		}
		if e.placed < 0 && !core.GuardedCopy(bytesAt(unsafe.Add(o.dst, off), n), data) {
			// Our own destination faulted (read-only, or protected since
			// its registration): the get fails; later fragments find no op.
			e.finish(o, 0, core.StatusFault)
			return
		}
		o.received += n
		if o.received == o.size {
			e.finish(o, 0, core.StatusOK)
		}

	case tGetErr, tPutErr:
		if len(body) < 8 {
			return
		}
		if o := e.ops.get(le.Uint64(body)); o != nil && o.peer == p {
			e.finish(o, 0, core.Status(h.status))
		}

	case tAtomic:
		if len(body) < 40 {
			return
		}
		id := le.Uint64(body)
		old, st := e.host.ApplyAtomic(core.AtomicOp(le.Uint64(body[8:])), core.GA(le.Uint64(body[16:])), le.Uint64(body[24:]), le.Uint64(body[32:]))
		rb := e.newDgram(p, tAtomicRep, uint8(st), 16)
		le.PutUint64(rb[headerSize:], id)
		le.PutUint64(rb[headerSize+8:], old)

	case tAtomicRep:
		if len(body) < 16 {
			return
		}
		if o := e.ops.get(le.Uint64(body)); o != nil && o.kind == opAtomic && o.peer == p {
			e.finish(o, le.Uint64(body[8:]), core.Status(h.status))
		}

	case tCtrl:
		e.deliveries = append(e.deliveries, delivery{p.idx, append([]byte(nil), body...)})
	}
}

// processAck applies the acknowledgement state a peer sent us.
func (e *endpoint) processAck(p *peer, h header, now time.Time) {
	if p.cwndUndo > 0 {
		if h.dups > 0 {
			p.undoRetrans -= int(h.dups)
		}
		if p.undoRetrans <= 0 {
			p.cwnd = max(p.cwnd, p.cwndUndo)
			p.cwndUndo = 0
		} else if now.After(p.undoUntil) {
			p.cwndUndo = 0
		}
	}
	if len(p.inflight) == 0 {
		return
	}
	front := p.inflight[0].seq
	ackOne := func(d *dgram) {
		if d.acked {
			return
		}
		d.acked = true
		p.lastProgress = now
		p.quietUntil = time.Time{} // the peer is taking datagrams again
		p.inflightBytes -= d.sent
		if d.retries == 0 {
			p.updateRTT(now.Sub(d.sentAt))
		}
		// Additive increase: about one datagram per round trip.
		p.cwnd = min(p.cwnd+max(d.sent*d.sent/max(p.cwnd, 1), 1), p.maxWindow)
		if o := d.op; o != nil && !o.done {
			o.fragsLeft--
			o.mark = max(o.mark, h.txMark)
			if o.fragsLeft == 0 {
				if p.rxNext >= o.mark {
					e.finish(o, 0, core.StatusOK)
				} else {
					o.refs++
					p.waitMark = append(p.waitMark, o)
				}
			}
		}
	}
	for _, d := range p.inflight {
		if d.seq >= h.ackNext {
			break
		}
		ackOne(d)
	}
	if h.ackBits != 0 {
		highest := uint64(0)
		for i := uint64(0); i < 64; i++ {
			if h.ackBits&(1<<i) == 0 {
				continue
			}
			s := h.ackNext + 1 + i
			highest = s
			if s >= front && s-front < uint64(len(p.inflight)) {
				ackOne(p.inflight[s-front])
			}
		}
		// Fast retransmit: a hole with three later arrivals is lost.
		for _, d := range p.inflight {
			if d.seq+3 > highest {
				break
			}
			if !d.acked && now.Sub(d.sentAt) >= p.srtt {
				e.retransmit(p, d, now)
			}
		}
	}
	// Retire the acknowledged prefix. Their buffers are recycled only after
	// this round's datagrams are sent: a retransmission queued earlier in
	// the round may still point at one, and a buffer reused meanwhile by a
	// datagram for another peer would send that datagram to this one.
	i := 0
	for i < len(p.inflight) && p.inflight[i].acked {
		e.retired = append(e.retired, p.inflight[i])
		i++
	}
	p.inflight = reuse.DropFront(p.inflight, i)
}

// releaseMarks completes puts whose mark our receive side has reached.
func (e *endpoint) releaseMarks(p *peer) {
	keep := p.waitMark[:0]
	for _, o := range p.waitMark {
		switch {
		case p.rxNext >= o.mark:
			e.finish(o, 0, core.StatusOK)
			e.unref(o)
		case o.done:
			e.unref(o)
		default:
			keep = append(keep, o)
		}
	}
	clear(p.waitMark[len(keep):])
	p.waitMark = keep
}

// retransmit sends d again with a doubled timeout.
func (e *endpoint) retransmit(p *peer, d *dgram, now time.Time) {
	d.retries++
	e.stats.resent.Add(1)
	d.rto = min(d.rto*2, maxRTO)
	d.sentAt = now
	if p.cwndUndo > 0 {
		// Its duplicate, if it is one, is reported within a round trip;
		// the longest timeout leaves room for a receiver that was off its
		// CPU for a while.
		p.undoRetrans++
		p.undoUntil = now.Add(maxRTO)
	}
	if d.served {
		if st := e.lend(d); st != core.StatusOK {
			// The memory was unregistered since: the fragment, under its
			// sequence number, becomes the get's error report.
			id := le.Uint64(d.buf[headerSize:])
			d.buf, d.served = d.small[:headerSize+8], false
			putFixedHeader(d.buf, e.key, uint32(e.me), tGetErr, uint8(st), d.seq)
			le.PutUint64(d.buf[headerSize:], id)
		}
	}
	e.stamp(p, d.buf)
	e.out = append(e.out, packet{to: p.addr, data: d.buf, tail: d.data})
	e.armCheck(now.Add(d.rto))
}

// checkTimers retransmits what timed out and gives up on silent peers.
//
// One timeout retransmits one datagram, the oldest, and then the peer's
// other datagrams wait for that one's (doubled) timeout or for progress,
// as TCP does: when a receiver is off the CPU for longer than the timeout
// while it takes a burst, every datagram of the burst falls due at once,
// and sending them all again would double the traffic just when the
// receiver is behind. A real loss inside a stream is repaired sooner, by
// the selective acknowledgements of later datagrams (fast retransmit).
func (e *endpoint) checkTimers(now time.Time) {
	next := now.Add(time.Hour)
	for _, p := range e.active {
		lost := false
		for _, d := range p.inflight {
			if d.acked {
				continue
			}
			if now.Sub(d.firstSent) > e.timeout {
				if e.fatal == nil {
					e.fatal = fmt.Errorf("rank %d (%s) is unreachable: no acknowledgement for %v; is it still running? (raise --acp-peer-timeout / ACP_PEER_TIMEOUT for slow networks)",
						e.host.PeerRank(p.idx), p.ipText, e.timeout)
				}
				continue
			}
			due := p.dueAt(d)
			if !due.After(now) && !now.Before(p.quietUntil) {
				if p.cwndUndo == 0 {
					p.cwndUndo, p.undoRetrans = p.cwnd, 0
				}
				e.retransmit(p, d, now)
				lost = true
				p.quietUntil = now.Add(d.rto)
				due = p.dueAt(d)
			}
			if due.Before(p.quietUntil) {
				due = p.quietUntil
			}
			if due.Before(next) {
				next = due
			}
		}
		if lost {
			// Multiplicative decrease on a timeout (undone when the
			// retransmission proves needless: cwndUndo).
			p.cwnd = max(p.cwnd/2, 2*p.mtu)
		}
	}
	// An operation that waits for a peer which has sent us nothing for the
	// whole timeout will never finish: say so rather than hang.
	if e.ops.len() > 0 {
		if !now.Before(e.nextOpCheck) {
			e.nextOpCheck = now.Add(e.timeout / 8)
			e.ops.each(func(o *op) {
				since := o.created
				if o.peer.lastHeard.After(since) {
					since = o.peer.lastHeard
				}
				if now.Sub(since) > e.timeout && e.fatal == nil {
					e.fatal = fmt.Errorf("rank %d (%s) is unreachable: nothing arrived from it for %v while an operation waited for it; is it still running? (raise --acp-peer-timeout / ACP_PEER_TIMEOUT for slow networks)",
						e.host.PeerRank(o.peer.idx), o.peer.ipText, e.timeout)
				}
			})
		}
		if e.nextOpCheck.Before(next) {
			next = e.nextOpCheck
		}
	}
	e.nextCheck.Store(next.UnixNano())
}

// ---- progress ----

// progress receives and processes one batch and runs due timers. It never
// blocks; several goroutines may call it (one receives at a time).
func (e *endpoint) progress() bool {
	worked, _ := e.progressTurn()
	return worked
}

// progressTurn is progress that also reports whether another thread was
// reading the socket (then it did nothing).
func (e *endpoint) progressTurn() (worked, readerBusy bool) {
	var now time.Time
	reading := e.rxMu.TryLock()
	if reading {
		var n int
		var err error
		none, inPlace := false, false
		if e.rxBulk {
			n, none = e.recvPlaced()
			inPlace = n > 0
		}
		if n == 0 && !none {
			n, err = e.conn.recv(e.rxBufs, e.rxSizes)
		}
		if n == 0 && err == nil {
			e.rxBacklog = 0
		} else {
			e.rxBacklog += n
		}
		if n > 0 {
			now = time.Now()
			e.mu.Lock()
			for i := 0; i < n; i++ {
				if inPlace && e.rxPlacedLen[i] >= 0 {
					e.bulkSmall = 0
					e.placed = e.rxPlacedLen[i]
					e.handle(e.rxHdr[i][:e.rxHdrLen], now)
					e.placed = -1
					continue
				}
				e.handle(e.rxBufs[i][:e.rxSizes[i]], now)
			}
			if e.placedReg != nil {
				e.placedReg.Release()
				e.placedReg = nil
			}
			// The reading before the batch still serves its answers and
			// timers, unless copying it out took a while.
			if n > 1 || (n == 1 && e.rxSizes[0] >= placeMin) {
				now = time.Now()
			}
			e.flushLocked(now)
			e.rxMu.Unlock()
			landed := e.landed
			e.landed = false
			e.unlockAndRun()
			if landed {
				e.host.Wake()
			}
			worked = true
		} else {
			e.rxMu.Unlock()
			if err != nil && !e.closed.Load() {
				e.host.Logf(1, "udp: receive failed: %v", err)
			}
		}
	}
	// Timers only where the socket was read: a thread that found it taken
	// would retransmit for want of an acknowledgement the taker is
	// reading now (it checks them itself when done).
	if !reading {
		return worked, true
	}
	if now.IsZero() {
		now = time.Now()
	}
	if now.UnixNano() >= e.nextCheck.Load() {
		e.mu.Lock()
		e.checkTimers(now)
		e.flushLocked(now)
		e.unlockAndRun()
	}
	return worked, false
}

// guessNext notes that the datagrams after a fragment of n bytes at off
// are probably the next fragments of its operation, next (the guess
// without its place).
func (e *endpoint) guessNext(next fragGuess, off, n uint64) {
	if off+n >= next.size {
		e.guess.valid = false
		return
	}
	next.valid, next.off, next.frag = true, off+n, n
	e.guess = next
}

// recvGuessed takes the datagrams waiting, up to a batch, on the guess
// (e.guess) that they are the next fragments of the put just received
// (or of the data of our get), in order: each one's header into rxHdr,
// its data straight to where that fragment belongs, anything longer into
// the tail of a receive buffer. That is one system call for the batch where recvPlaced's check
// makes two per datagram (a peek, then the receive), and it places a
// put's short last fragment too, which ends bulk mode there.
//
// A datagram that turns out to be something else (another peer's, an
// acknowledgement, a retransmission) is put back together in its receive
// buffer for the copying path. The bytes it left at its guessed place are
// overwritten later by the fragment that belongs there: the guess is
// tried only while every datagram the peer sent before the guessed ones
// has arrived and none sent after, so each guessed place's fragment (sent
// after the one that made the guess) has not been executed yet, and will
// be, unless the operation fails, whose destination is then undefined anyway;
// if it is in this very batch, in another place, the copying path that
// executes it runs after the kernel wrote the batch. The guessed places
// are inside the operation's destination, checked as recvPlaced checks it.
//
// It returns how many datagrams it took, a batch as recvPlaced describes;
// tried is false when the guess could not be tried, and then nothing was
// received.
func (e *endpoint) recvGuessed() (n int, tried bool) {
	g := e.guess
	e.guess.valid = false // one try per guess: handle makes the next
	e.mu.Lock()
	p := e.peers[g.src] // made the guess: it exists
	ok := p != nil && p.rxNext == g.seq && p.inOrder() && g.frag > 0
	var ptr unsafe.Pointer
	if ok && g.get {
		// Only this thread finishes operations (it handles what arrives),
		// so the get stays as found until the batch is handled.
		o := e.ops.get(g.opID)
		ok = o != nil && !o.done && o.kind == opGet && o.peer == p && !o.noPlace && o.size == g.size
		if ok {
			ptr = o.dst
		}
	}
	e.mu.Unlock()
	if !ok {
		return 0, false
	}
	var r *core.Region
	hdrLen := headerSize + getDataHeader
	if !g.get {
		var st core.Status
		ptr, r, st = e.host.Acquire(g.dst, g.size)
		if st != core.StatusOK {
			return 0, false
		}
		if r.Faulted() {
			r.Release()
			return 0, false
		}
		hdrLen = headerSize + putHeader
	}
	e.rxHdrLen = hdrLen
	k := min(int((g.size-g.off+g.frag-1)/g.frag), len(e.rxHdr), len(e.rxBufs))
	for i := 0; i < k; i++ {
		off := g.off + uint64(i)*g.frag
		dataLen := min(g.frag, g.size-off)
		e.guessHdrs[i] = e.rxHdr[i][:hdrLen]
		e.guessData[i] = bytesAt(unsafe.Add(ptr, off), dataLen)
		// The rest of a longer datagram lands where it belongs when the
		// datagram is put back together in this buffer.
		e.guessSpill[i] = e.rxBufs[i][min(hdrLen+int(dataLen), len(e.rxBufs[i])-1):]
	}
	got, err := e.conn.recvScattered(e.guessHdrs[:k], e.guessData[:k], e.guessSpill[:k], e.rxSizes)
	if err != nil {
		if errors.Is(err, unix.EFAULT) {
			// The kernel dropped the datagram (see recvPlaced).
			if r != nil {
				r.MarkFaulted()
			} else {
				e.mu.Lock()
				if o := e.ops.get(g.opID); o != nil {
					o.noPlace = true
				}
				e.mu.Unlock()
			}
		}
		if r != nil {
			r.Release()
		}
		return 0, false
	}
	placedAny := false
	connected := e.connected.Load()
	for i := 0; i < got; i++ {
		size, hdr, data := e.rxSizes[i], e.rxHdr[i][:hdrLen], e.guessData[i]
		if size == hdrLen+len(data) && connected {
			h, _ := parseHeader(hdr)
			body := hdr[headerSize:]
			off := g.off + uint64(i)*g.frag
			fits := h.key == e.key && h.src == g.src && h.seq == g.seq+uint64(i)
			if g.get {
				fits = fits && h.typ == tGetData && le.Uint64(body) == g.opID && le.Uint64(body[8:]) == off
			} else {
				fits = fits && h.typ == tPut && core.GA(le.Uint64(body[8:])) == g.dst &&
					le.Uint64(body[16:]) == g.size && le.Uint64(body[24:]) == off
			}
			if fits {
				e.rxPlacedLen[i] = len(data)
				placedAny = true
				e.stats.placed.Add(1)
				continue
			}
		}
		b := e.rxBufs[i]
		copy(b, hdr[:min(size, hdrLen)])
		if size > hdrLen {
			copy(b[hdrLen:], data[:min(size-hdrLen, len(data))])
		}
		e.rxPlacedLen[i] = -1
		e.stats.misguessed.Add(1)
	}
	if placedAny {
		e.placedReg = r // released once the batch is handled
	} else {
		if r != nil {
			r.Release()
		}
		e.guess = g // no fragment came: the guess stands
	}
	return got, true
}

// recvPlaced receives in bulk mode. It returns how many datagrams it
// took, a batch in which datagram i is in place for rxPlacedLen[i] bytes
// (its header in rxHdr[i][:rxHdrLen]), or, at -1, whole in rxBufs[i]; its
// length is rxSizes[i]. It takes the fragments recvGuessed expects, or
// else the next datagram straight into its destination if it is a large
// fragment that will be executed: a put fragment or the data of a get of
// ours, from this peer's stream, not seen before, within bounds; or a
// small datagram alone. 0 and none: nothing waits; 0 alone: the datagrams
// waiting are for the copying path, bulk mode may have ended.
func (e *endpoint) recvPlaced() (n int, none bool) {
	if e.guess.valid {
		if n, tried := e.recvGuessed(); tried {
			return n, n == 0
		}
	}
	n, size, err := e.conn.peek(e.peekHdr[:])
	if err != nil || size < 0 {
		return 0, err == nil
	}
	h, ok := parseHeader(e.peekHdr[:n])
	hdrLen := headerSize + putHeader
	if h.typ == tGetData {
		hdrLen = headerSize + getDataHeader
	}
	if !ok || n < len(e.peekHdr) || size-hdrLen < placeMin || (h.typ != tPut && h.typ != tGetData) ||
		!e.connected.Load() || h.key != e.key || int(h.src) >= e.n || int(h.src) == e.me {
		if size < placeMin && e.bulkSmall < bulkSmallMax && e.rxBacklog < bulkBacklogMax {
			// An acknowledgement between puts, or a flag after one. Ending
			// bulk mode here, the next receive copied the next put's
			// fragments, as many as were waiting; a 1 MiB put pingpong
			// placed two thirds of them. Behind a backlog, though, a batch
			// copied costs less than a system call per datagram: a stream
			// is catching up.
			e.bulkSmall++
			got, err := e.conn.recv(e.rxBufs[:1], e.rxSizes)
			if err != nil || got == 0 {
				return 0, err == nil
			}
			e.rxPlacedLen[0] = -1
			return 1, false
		}
		e.rxBulk = false
		return 0, false
	}
	body := e.peekHdr[headerSize:]
	dataLen := uint64(size - hdrLen)
	var ptr unsafe.Pointer
	var r *core.Region
	e.mu.Lock()
	p := e.peers[h.src]
	fresh := p != nil && p.fresh(h.seq)
	if fresh && h.typ == tGetData {
		// Only this thread finishes operations (it handles what arrives),
		// so the get stays as found until its fragment is handled.
		o, off := e.ops.get(le.Uint64(body)), le.Uint64(body[8:])
		if o != nil && o.kind == opGet && o.peer == p && !o.noPlace && off <= o.size && dataLen <= o.size-off {
			ptr = unsafe.Add(o.dst, off)
		}
	}
	e.mu.Unlock()
	if !fresh {
		return 0, false // a duplicate: the copying path drops it
	}
	if h.typ == tPut {
		dst, total, off := core.GA(le.Uint64(body[8:])), le.Uint64(body[16:]), le.Uint64(body[24:])
		if off > total || dataLen > total-off {
			return 0, false
		}
		var st core.Status
		ptr, r, st = e.host.Acquire(dst, total)
		if st != core.StatusOK {
			return 0, false // the copying path reports it
		}
		if r.Faulted() {
			r.Release()
			return 0, false // the copying path reports it
		}
		ptr = unsafe.Add(ptr, off)
	} else if ptr == nil {
		return 0, false // not for a get of ours: the copying path drops it
	}
	// This thread is the socket's only reader (rxMu): the datagram taken
	// is the one peeked.
	got, err := e.conn.recvInto(e.rxHdr[0][:hdrLen], bytesAt(ptr, dataLen))
	if err != nil || got != size || string(e.rxHdr[0][:hdrLen]) != string(e.peekHdr[:hdrLen]) {
		if errors.Is(err, unix.EFAULT) {
			// The destination cannot be written (read-only, or protected
			// since its registration) and the kernel dropped the datagram:
			// its retransmission, and every later datagram for that
			// destination, takes the copying path, which fails the
			// operation.
			if r != nil {
				r.MarkFaulted()
			} else {
				e.mu.Lock()
				if o := e.ops.get(le.Uint64(body)); o != nil {
					o.noPlace = true
				}
				e.mu.Unlock()
			}
		}
		if r != nil {
			r.Release()
		}
		return 0, false
	}
	e.rxPlacedLen[0], e.rxHdrLen, e.rxSizes[0], e.placedReg = int(dataLen), hdrLen, size, r
	e.stats.placed.Add(1)
	return 1, false
}

// progressLoop serves the job while the application computes: it polls
// for a while after activity, then sleeps until a datagram arrives or a
// timer (retransmission, delayed acknowledgement) is due. Polling, it
// yields the CPU each turn (and its P every 16th): on a machine with as many busy threads as CPUs
// it then gets the CPU at the application's next yield, where a sleeping
// one waits to be woken and scheduled (tens of microseconds there).
//
// While an application thread polls the transports in a wait (Polled),
// the goroutine stays off the socket, napping (appNap), so that one thread
// receives. Spinning beside a waiter, the two took turns at the
// datagrams, the goroutine never ran out of work, and with every CPU
// running a rank a channel pingpong fell for tenths of a second at a time
// from 7 µs to 95 µs one way. Sleeping on the socket instead, the kernel
// woke it for each datagram and it often took it first (BENCHMARKS.md,
// night VI). A nap is a Go sleep, not a system call: the runtime's monitor
// thread is not set polling by each return.
func (e *endpoint) progressLoop() {
	defer close(e.done)
	gate := core.NewIdleGate(e.spin)
	idle := 0 // turns without work, for YieldTurn
	for !e.closed.Load() {
		if e.host.Polled() {
			time.Sleep(appNap)
			gate.Worked(time.Now()) // the waiter may have just left: poll a while
			continue
		}
		worked, readerBusy := e.progressTurn()
		if worked {
			gate.Worked(time.Now())
			continue
		}
		if readerBusy {
			// An application thread is reading the socket. Sleeping on the
			// socket would return at once while datagrams wait there: a
			// loop of system calls that, on the CPU of a reader preempted
			// with the lock, kept it from running for the rest of a time
			// slice (1 MiB pingpong trips of 4-5 ms where 0.2 is usual).
			// Yield instead: the reader gets its CPU back, and we the
			// lock soon after. (A nap here left the answer of a small
			// pingpong waiting for the nap to end.)
			core.YieldTurn(idle)
			idle++
			continue
		}
		if !gate.MaySleep(time.Now()) {
			// The P goes to other goroutines on every 16th turn only: with
			// a P idle (capi's minProcs) each hand-over wakes a thread to
			// run it, at every turn 10 times the futex calls of a pingpong.
			core.YieldTurn(idle)
			idle++
			continue
		}
		// Announce the sleep before reading the deadline: one armed
		// meanwhile is either seen here or wakes us (armCheck).
		now := time.Now().UnixNano()
		e.sleepUntil.Store(now + int64(idleSleep))
		wait := min(int64(idleSleep), max(e.nextCheck.Load()-now, 0))
		err := waitReadable(e.sock.fd(), e.wakeFd, wait)
		e.sleepUntil.Store(0)
		core.DrainEventfd(e.wakeFd)
		if err != nil {
			e.host.Logf(1, "udp: poll failed: %v", err)
			time.Sleep(time.Millisecond)
		}
	}
}
