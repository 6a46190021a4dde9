package core

import (
	"encoding/binary"
	"runtime"
	"unsafe"
)

// Control messages between engines, carried by Transport.Send. A rank that
// can reach neither end of an operation hands it to the owner of the source
// (copy) or target (atomic), which executes it and answers with msgDone —
// the way the original devices did it.
const (
	msgCopy   = 1 // h, dst, src, size
	msgAtomic = 2 // h, op, dst, src, a, b
	msgDone   = 3 // h, status, end (endSource or endDest: which end was refused)
)

// The end of a delegated operation that a msgDone's status is about: the
// source or target, which the executing rank owns, or the destination or
// result location, which may be a third rank's. The initiator then names
// the right rank and GA in its error.
const (
	endSource = 0
	endDest   = 1
)

var le = binary.LittleEndian

func encodeDelegation(c *cmd) []byte {
	var b [42]byte
	if c.kind == kindCopyRemote {
		b[0] = msgCopy
		le.PutUint64(b[1:], uint64(c.h))
		le.PutUint64(b[9:], uint64(c.dst))
		le.PutUint64(b[17:], uint64(c.src))
		le.PutUint64(b[25:], c.size)
		return b[:33]
	}
	b[0] = msgAtomic
	le.PutUint64(b[1:], uint64(c.h))
	b[9] = byte(c.op)
	le.PutUint64(b[10:], uint64(c.dst))
	le.PutUint64(b[18:], uint64(c.src))
	le.PutUint64(b[26:], c.a)
	le.PutUint64(b[34:], c.b)
	return b[:42]
}

// Deliver implements Host: a control message from a peer.
func (e *Engine) Deliver(peer int, msg []byte) {
	if len(msg) == 0 {
		return
	}
	e.served.Add(1)
	for !e.routed.Load() {
		runtime.Gosched()
	}
	switch {
	case msg[0] == msgCopy && len(msg) == 33:
		e.execCopy(peer, Handle(le.Uint64(msg[1:])), GA(le.Uint64(msg[9:])), GA(le.Uint64(msg[17:])), le.Uint64(msg[25:]))
	case msg[0] == msgAtomic && len(msg) == 42:
		e.execAtomic(peer, Handle(le.Uint64(msg[1:])), AtomicOp(msg[9]), GA(le.Uint64(msg[10:])), GA(le.Uint64(msg[18:])), le.Uint64(msg[26:]), le.Uint64(msg[34:]))
	case msg[0] == msgDone && len(msg) == 11:
		e.onDone(peer, Handle(le.Uint64(msg[1:])), Status(msg[9]), msg[10] == endDest)
	default:
		e.Logf(1, "dropped malformed control message (type %d, %d bytes) from process %d", msg[0], len(msg), peer)
	}
}

// delegated is an operation this rank executes for another one.
type delegated struct {
	e    *Engine
	from int // physical index of the initiator
	h    Handle
	pin  *Region
	word uint64
}

func (d *delegated) OnComplete(_ uint64, err error) {
	if d.pin != nil {
		d.pin.Release()
	}
	d.e.sendDone(d.from, d.h, StatusOf(err), endDest)
}

func (e *Engine) sendDone(to int, h Handle, st Status, end byte) {
	var b [11]byte
	b[0] = msgDone
	le.PutUint64(b[1:], uint64(h))
	b[9] = byte(st)
	b[10] = end
	e.transportTo(to).Send(to, b[:])
}

// execCopy runs a copy whose source is here, for initiator `from`.
func (e *Engine) execCopy(from int, h Handle, dst, src GA, n uint64) {
	s, sr, st := e.regs.Acquire(src, n)
	if st != StatusOK {
		e.sendDone(from, h, st, endSource)
		return
	}
	dr := e.layout.Rank(dst)
	switch {
	case dr < 0:
		sr.Release()
		e.sendDone(from, h, StatusBadRequest, endDest)
	case dr == e.Rank():
		d, dreg, st := e.regs.Acquire(dst, n)
		if st == StatusOK {
			if !copyRegions(d, s, n, dreg, sr) {
				st = StatusFault
			}
			dreg.Release()
		}
		sr.Release()
		e.sendDone(from, h, st, endDest)
	default:
		peer := e.peerOf(dr)
		e.transportTo(peer).Put(peer, dst, s, n, &delegated{e: e, from: from, h: h, pin: sr})
	}
}

// execAtomic runs an atomic whose target is here, for initiator `from`,
// and stores the old value at dst wherever it is. The result location is
// checked before the target changes: an atomic whose old value cannot be
// stored fails whole, the target untouched.
func (e *Engine) execAtomic(from int, h Handle, op AtomicOp, dst, target GA, a, b uint64) {
	if !op.Valid() {
		e.sendDone(from, h, StatusBadRequest, endSource)
		return
	}
	w := op.Width()
	dr := e.layout.Rank(dst)
	switch {
	case dr < 0:
		e.sendDone(from, h, StatusBadRequest, endDest)
	case dr == e.Rank():
		p, r, st := e.regs.Acquire(dst, w)
		if st != StatusOK {
			e.sendDone(from, h, st, endDest)
			return
		}
		if !writableIn(r, p, w) {
			r.Release()
			e.sendDone(from, h, StatusFault, endDest)
			return
		}
		old, st := e.ApplyAtomic(op, target, a, b)
		if st == StatusOK && !storeIn(r, p, w, old) {
			st = StatusFault
		}
		r.Release()
		e.sendDone(from, h, st, endSource)
	default:
		if st := e.regs.Check(target, w); st != StatusOK {
			e.sendDone(from, h, st, endSource)
			return
		}
		// The result location's owner checks it when we read it; the
		// atomic is applied once that succeeded (delegatedAtomic).
		peer := e.peerOf(dr)
		x := &delegatedAtomic{d: delegated{e: e, from: from, h: h}, op: op, dst: dst, target: target, a: a, b: b, peer: peer}
		e.transportTo(peer).Get(peer, dst, unsafe.Pointer(&x.d.word), w, x)
	}
}

// delegatedAtomic is an atomic run here for another rank whose result
// location is at a third one, waiting for that location to be read.
type delegatedAtomic struct {
	d           delegated
	op          AtomicOp
	dst, target GA
	a, b        uint64
	peer        int // physical index of the result location's owner
}

func (x *delegatedAtomic) OnComplete(_ uint64, err error) {
	d := &x.d
	if err != nil {
		d.e.sendDone(d.from, d.h, StatusOf(err), endDest)
		return
	}
	old, st := d.e.ApplyAtomic(x.op, x.target, x.a, x.b)
	if st != StatusOK {
		d.e.sendDone(d.from, d.h, st, endSource)
		return
	}
	d.word = old
	d.e.transportTo(x.peer).Put(x.peer, x.dst, unsafe.Pointer(&d.word), x.op.Width(), d)
}

// onDone completes a delegated operation of ours; atDest: the status is
// about the destination (result location), whose owner may be a third rank.
func (e *Engine) onDone(peer int, h Handle, st Status, atDest bool) {
	q := &e.q
	q.lock()
	c := q.slot(h)
	ok := c.h == h && c.state == slotRunning && (c.kind == kindCopyRemote || c.kind == kindAtomicRemote) && c.peer == peer
	q.unlock()
	if !ok {
		e.Logf(1, "ignored a completion for handle %d from process %d that matches no operation in flight", h, peer)
		return
	}
	var err error
	if st != StatusOK {
		ae := &AccessError{Status: st, Rank: e.rankOfPeer(peer), GA: c.src, Size: c.size}
		if atDest {
			ae.Rank, ae.GA = e.layout.Rank(c.dst), c.dst
		}
		e.hint(ae)
		err = ae
	}
	q.complete(c, err)
}
