package core

import (
	"fmt"
	"unsafe"
)

// Copy issues acp_copy(dst, src, n, order). Either end, or both, may belong
// to another rank. Problems visible here (invalid ranks, local ranges that
// are not registered, a bad order handle) return an error and no handle;
// problems only the owner can see complete the handle with an error.
func (e *Engine) Copy(dst, src GA, n uint64, order Handle) (Handle, error) {
	l := e.layout
	dr, sr := l.Rank(dst), l.Rank(src)
	if dr < 0 {
		return HandleNull, e.badGA("destination", dst)
	}
	if sr < 0 {
		return HandleNull, e.badGA("source", src)
	}
	me := e.Rank()
	c := cmd{dst: dst, src: src, size: n}
	// Check what is local now, so that mistakes fail at the call.
	if dr == me {
		if st := e.regs.Check(dst, n); st != StatusOK {
			return HandleNull, fmt.Errorf("destination: %v", e.accessErr(st, dst, n, -1))
		}
	}
	if sr == me {
		if st := e.regs.Check(src, n); st != StatusOK {
			return HandleNull, fmt.Errorf("source: %v", e.accessErr(st, src, n, -1))
		}
	}
	switch {
	case n == 0:
		c.kind = kindNop
	case dr == me && sr == me:
		c.kind = kindLocalCopy
	case sr == me:
		c.kind, c.peer = kindPut, e.peerOf(dr)
	case dr == me:
		c.kind, c.peer = kindGet, e.peerOf(sr)
	default:
		c.kind, c.peer = kindCopyRemote, e.peerOf(sr)
	}
	return e.q.issue(c, order)
}

// Atomic issues a fetch-and-op: op on the word at target (any rank), its
// old value stored at result (any rank; the API documents the caller's own
// memory, and accepting others is a superset).
func (e *Engine) Atomic(op AtomicOp, result, target GA, a, b uint64, order Handle) (Handle, error) {
	if !op.Valid() {
		return HandleNull, fmt.Errorf("unknown atomic operation %d", op)
	}
	l := e.layout
	w := op.Width()
	dr, sr := l.Rank(result), l.Rank(target)
	if dr < 0 {
		return HandleNull, e.badGA("result", result)
	}
	if sr < 0 {
		return HandleNull, e.badGA("target", target)
	}
	// GA offsets carry the low address bits of the memory (see
	// regionAlign), so alignment is checked here for every rank.
	if uint64(target)%w != 0 {
		return HandleNull, fmt.Errorf("%s target GA %#x is not %d-byte aligned", op, uint64(target), w)
	}
	if uint64(result)%w != 0 {
		return HandleNull, fmt.Errorf("%s result GA %#x is not %d-byte aligned", op, uint64(result), w)
	}
	me := e.Rank()
	if dr == me {
		if st := e.regs.Check(result, w); st != StatusOK {
			return HandleNull, fmt.Errorf("%s result: %v", op, e.accessErr(st, result, w, -1))
		}
	}
	if sr == me {
		if st := e.regs.Check(target, w); st != StatusOK {
			return HandleNull, fmt.Errorf("%s target: %v", op, e.accessErr(st, target, w, -1))
		}
	}
	c := cmd{op: op, dst: result, src: target, size: w, a: a, b: b}
	switch {
	case dr == me && sr == me:
		c.kind = kindLocalAtomic
	case sr == me:
		c.kind, c.peer = kindAtomicPush, e.peerOf(dr)
	case dr == me:
		c.kind, c.peer = kindAtomicFetch, e.peerOf(sr)
	default:
		c.kind, c.peer = kindAtomicRemote, e.peerOf(sr)
	}
	return e.q.issue(c, order)
}

func (e *Engine) badGA(what string, ga GA) error {
	if ga == GANull {
		return fmt.Errorf("%s GA is ACP_GA_NULL", what)
	}
	return fmt.Errorf("%s GA %#x names rank %d, outside 0..%d", what, uint64(ga),
		int(uint64(ga)>>(e.layout.ColorBits+e.layout.SegBits+e.layout.OffsetBits))-1, e.nprocs-1)
}

// start begins c. It reports finished=true when c completed inline (then
// err is its outcome); otherwise a completion will arrive later.
func (e *Engine) start(c *cmd) (err error, finished bool) {
	switch c.kind {
	case kindNop:
		return nil, true

	case kindLocalCopy:
		d, dr, err := e.resolveLocal(c.dst, c.size)
		if err != nil {
			return err, true
		}
		s, sr, err := e.resolveLocal(c.src, c.size)
		if err != nil {
			dr.Release()
			return err, true
		}
		copy(bytesAt(d, c.size), bytesAt(s, c.size))
		sr.Release()
		dr.Release()
		return nil, true

	case kindPut:
		s, sr, err := e.resolveLocal(c.src, c.size)
		if err != nil {
			return err, true
		}
		c.pin = sr
		e.transportTo(c.peer).Put(c.peer, c.dst, s, c.size, c)
		return nil, false

	case kindGet:
		d, dr, err := e.resolveLocal(c.dst, c.size)
		if err != nil {
			return err, true
		}
		c.pin = dr
		e.transportTo(c.peer).Get(c.peer, c.src, d, c.size, c)
		return nil, false

	case kindLocalAtomic:
		old, st := e.ApplyAtomic(c.op, c.src, c.a, c.b)
		if st != StatusOK {
			return e.accessErr(st, c.src, c.size, -1), true
		}
		d, dr, err := e.resolveLocal(c.dst, c.size)
		if err != nil {
			return err, true
		}
		storeWord(d, c.size, old)
		dr.Release()
		return nil, true

	case kindAtomicPush:
		old, st := e.ApplyAtomic(c.op, c.src, c.a, c.b)
		if st != StatusOK {
			return e.accessErr(st, c.src, c.size, -1), true
		}
		c.word = old
		e.transportTo(c.peer).Put(c.peer, c.dst, unsafe.Pointer(&c.word), c.size, c)
		return nil, false

	case kindAtomicFetch:
		e.transportTo(c.peer).Atomic(c.peer, c.op, c.src, c.a, c.b, c)
		return nil, false

	case kindCopyRemote, kindAtomicRemote:
		e.transportTo(c.peer).Send(c.peer, encodeDelegation(c))
		return nil, false
	}
	return fmt.Errorf("internal error: unknown command kind %d", c.kind), true
}

// Acquire implements Host.
func (e *Engine) Acquire(ga GA, n uint64) (unsafe.Pointer, *Region, Status) {
	return e.regs.Acquire(ga, n)
}

// ApplyAtomic implements Host: a checked fetch-and-op on this process's
// memory.
func (e *Engine) ApplyAtomic(op AtomicOp, ga GA, a, b uint64) (uint64, Status) {
	if !op.Valid() {
		return 0, StatusBadRequest
	}
	w := op.Width()
	p, r, st := e.regs.Acquire(ga, w)
	if st != StatusOK {
		return 0, st
	}
	defer r.Release()
	if uintptr(p)%uintptr(w) != 0 {
		return 0, StatusMisaligned
	}
	return ApplyAtomic(op, p, a, b), StatusOK
}
