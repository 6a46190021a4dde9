package core

import (
	"fmt"
	"unsafe"
)

// Copy issues acp_copy(dst, src, n, order). Either end, or both, may belong
// to another rank. Problems visible here (invalid ranks, local ranges that
// are not registered, a bad order handle) return an error and no handle;
// problems only the owner can see complete the handle with an error.
//
// An end is "direct" when this thread can touch it: our own memory, or a
// peer's memory mapped here by its transport (shared memory). A copy with
// both ends direct runs in the calling thread.
func (e *Engine) Copy(dst, src GA, n uint64, order Handle) (Handle, error) {
	return e.CopyFor(nil, dst, src, n, order)
}

// ProgramCopy is Copy for the program (acp_copy). It also refuses GAs in
// the library's own memories, which only the communication library and
// the engine address: a program's write there would break a channel or
// the barrier (a hang, not an error), and no GA the API hands out names
// them.
func (e *Engine) ProgramCopy(dst, src GA, n uint64, order Handle) (Handle, error) {
	if err := e.programGA("destination", dst); err != nil {
		return HandleNull, err
	}
	if err := e.programGA("source", src); err != nil {
		return HandleNull, err
	}
	return e.CopyFor(nil, dst, src, n, order)
}

// ProgramAtomic is Atomic for the program (acp_cas4 ... acp_and8), with
// ProgramCopy's check.
func (e *Engine) ProgramAtomic(op AtomicOp, result, target GA, a, b uint64, order Handle) (Handle, error) {
	if err := e.programGA(op.String()+" result", result); err != nil {
		return HandleNull, err
	}
	if err := e.programGA(op.String()+" target", target); err != nil {
		return HandleNull, err
	}
	return e.AtomicFor(nil, op, result, target, a, b, order)
}

// programGA refuses a GA of the communication library's starter memory or
// of the engine's own words, whichever rank it names.
func (e *Engine) programGA(what string, ga GA) error {
	switch seg := e.layout.Seg(ga); seg {
	case SegStarterCL, SegEngine:
		owner := "the communication library's starter memory"
		if seg == SegEngine {
			owner = "the library's own words (barrier)"
		}
		return fmt.Errorf("%s GA %#x names %s (segment %d), which programs cannot address; GAs come from acp_query_starter_ga, acp_query_ga and acp_malloc", what, uint64(ga), owner, seg)
	}
	return nil
}

// CopyFor is Copy that also records a failure at the owner in r (nil:
// nowhere); failures visible at the call are returned as by Copy.
func (e *Engine) CopyFor(r *Report, dst, src GA, n uint64, order Handle) (Handle, error) {
	return e.copyFor(r, dst, src, n, order, nil)
}

// copyFor is CopyFor with the source owner's packed key, if any (k may be
// nil), which a read from that owner uses (CopyCarried).
func (e *Engine) copyFor(r *Report, dst, src GA, n uint64, order Handle, k *CarriedKey) (Handle, error) {
	l := e.layout
	dr, sr := l.Rank(dst), l.Rank(src)
	if dr < 0 {
		return HandleNull, e.badGA("destination", dst)
	}
	if sr < 0 {
		return HandleNull, e.badGA("source", src)
	}
	me := e.Rank()
	if n > 0 && e.q.readyNow(order) {
		if h, err := e.copyNow(dst, src, n, dr, sr, me); h != HandleNull || err != nil {
			return h, err
		}
	}
	c := cmd{dst: dst, src: src, size: n, report: r}
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
	dDirect := dr == me || e.mapped(e.peerOf(dr), dst, n) != nil
	sDirect := sr == me || e.mapped(e.peerOf(sr), src, n) != nil
	switch {
	case n == 0:
		c.kind = kindNop
	case dDirect && sDirect:
		c.kind = kindLocalCopy
	case sDirect:
		c.kind, c.peer = kindPut, e.peerOf(dr)
	case dDirect:
		c.kind, c.peer = kindGet, e.peerOf(sr)
		if len(k.Bytes()) > 0 {
			c.carried = k
		}
	default:
		c.kind, c.peer = kindCopyRemote, e.peerOf(sr)
	}
	return e.q.issue(c, order)
}

// Atomic issues a fetch-and-op: op on the word at target (any rank), its
// old value stored at result (any rank; the API documents the caller's own
// memory, and accepting others is a superset).
func (e *Engine) Atomic(op AtomicOp, result, target GA, a, b uint64, order Handle) (Handle, error) {
	return e.AtomicFor(nil, op, result, target, a, b, order)
}

// AtomicFor is Atomic that also records a failure at the owner in r (nil:
// nowhere), as CopyFor does.
func (e *Engine) AtomicFor(r *Report, op AtomicOp, result, target GA, a, b uint64, order Handle) (Handle, error) {
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
	dev := e.deviceAtomic(op)
	if !dev && e.q.readyNow(order) {
		if h, err := e.atomicNow(op, result, target, a, b, dr, sr, me); h != HandleNull || err != nil {
			return h, err
		}
	}
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
	// A target mapped here is updated with CPU atomics by this thread, which
	// are atomic with the owner's (and every other process's) CPU atomics on
	// the same word.
	dDirect := dr == me || e.mapped(e.peerOf(dr), result, w) != nil
	sDirect := sr == me || e.mapped(e.peerOf(sr), target, w) != nil
	c := cmd{op: op, dst: result, src: target, size: w, a: a, b: b, report: r}
	switch {
	case dev && dDirect:
		// The device executes it wherever the target is, here included.
		c.kind, c.peer = kindAtomicFetch, e.peerOf(sr)
	case dev:
		c.kind, c.peer = kindDevAtomicPush, e.peerOf(dr)
	case dDirect && sDirect:
		c.kind = kindLocalAtomic
	case sDirect:
		c.kind, c.peer = kindAtomicPush, e.peerOf(dr)
	case dDirect:
		c.kind, c.peer = kindAtomicFetch, e.peerOf(sr)
	default:
		c.kind, c.peer = kindAtomicRemote, e.peerOf(sr)
	}
	return e.q.issue(c, order)
}

// copyNow is the fast path of Copy: when this thread can touch both ends
// and nothing has to finish first, it copies and returns a completed
// handle. HandleNull without an error: take the ordinary path.
func (e *Engine) copyNow(dst, src GA, n uint64, dr, sr, me int) (Handle, error) {
	d, dreg, err := e.reach(dst, n, dr, me)
	if err != nil {
		return HandleNull, fmt.Errorf("destination: %v", err)
	}
	if d == nil {
		return HandleNull, nil
	}
	s, sreg, err := e.reach(src, n, sr, me)
	if err != nil || s == nil {
		release(dreg)
		if err != nil {
			return HandleNull, fmt.Errorf("source: %v", err)
		}
		return HandleNull, nil
	}
	ok := copyRegions(d, s, n, dreg, sreg)
	release(sreg)
	release(dreg)
	if !ok {
		return HandleNull, nil // the ordinary path fails the handle
	}
	return e.q.completed(), nil
}

// atomicNow is the fast path of Atomic, like copyNow.
func (e *Engine) atomicNow(op AtomicOp, result, target GA, a, b uint64, dr, sr, me int) (Handle, error) {
	w := op.Width()
	t, treg, err := e.reach(target, w, sr, me)
	if err != nil {
		return HandleNull, fmt.Errorf("%s target: %v", op, err)
	}
	if t == nil {
		return HandleNull, nil
	}
	d, dreg, err := e.reach(result, w, dr, me)
	if err != nil || d == nil {
		release(treg)
		if err != nil {
			return HandleNull, fmt.Errorf("%s result: %v", op, err)
		}
		return HandleNull, nil
	}
	if uintptr(t)%uintptr(w) != 0 || uintptr(d)%uintptr(w) != 0 {
		release(treg)
		release(dreg)
		return HandleNull, fmt.Errorf("%s: target or result memory is not %d-byte aligned", op, w)
	}
	if treg.UserMemory() || dreg.UserMemory() {
		// The program's memory may fault; then nothing was applied and
		// the ordinary path fails the handle, saying why.
		ok := writableIn(dreg, d, w)
		var old uint64
		if ok {
			old, ok = atomicIn(treg, op, t, a, b)
		}
		if ok {
			// Only the program's own mprotect since writableIn can make
			// this store fault: the atomic stands.
			storeIn(dreg, d, w, old)
		}
		release(treg)
		release(dreg)
		if !ok {
			return HandleNull, nil
		}
		return e.q.completed(), nil
	}
	storeWord(d, w, ApplyAtomic(op, t, a, b))
	release(treg)
	release(dreg)
	return e.q.completed(), nil
}

// reach resolves [ga, ga+n) of rank for this thread: our own memory
// (checked and pinned), a peer's memory mapped here, or nil when neither.
func (e *Engine) reach(ga GA, n uint64, rank, me int) (unsafe.Pointer, *Region, error) {
	if rank == me {
		p, r, st := e.regs.Acquire(ga, n)
		if st != StatusOK {
			return nil, nil, e.accessErr(st, ga, n, -1)
		}
		return p, r, nil
	}
	return e.mapped(e.peerOf(rank), ga, n), nil, nil
}

// direct resolves a range this thread can touch: our own registered
// memory (pinned until Release) or a peer's memory mapped here (never
// unregistered while the job runs, so nothing to pin).
func (e *Engine) direct(ga GA, n uint64) (unsafe.Pointer, *Region, error) {
	r := e.layout.Rank(ga)
	if r == e.Rank() {
		return e.resolveLocal(ga, n)
	}
	if r >= 0 {
		if p := e.mapped(e.peerOf(r), ga, n); p != nil {
			return p, nil, nil
		}
	}
	return nil, nil, e.accessErr(StatusOutOfBounds, ga, n, -1)
}

// release unpins a region from direct (nil for mapped memory).
func release(r *Region) {
	if r != nil {
		r.Release()
	}
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
		d, dr, err := e.direct(c.dst, c.size)
		if err != nil {
			return err, true
		}
		s, sr, err := e.direct(c.src, c.size)
		if err != nil {
			release(dr)
			return err, true
		}
		ok := copyRegions(d, s, c.size, dr, sr)
		release(sr)
		release(dr)
		if !ok {
			return StatusFault.Err(), true
		}
		return nil, true

	case kindPut:
		s, sr, err := e.direct(c.src, c.size)
		if err != nil {
			return err, true
		}
		if sr.UserMemory() && readsSourceLater(e.transportTo(c.peer)) && !Readable(s, c.size) {
			// Protected or unmapped since its registration.
			release(sr)
			return fmt.Errorf("source: %v", e.accessErr(StatusFault, c.src, c.size, -1)), true
		}
		c.pin = sr
		e.transportTo(c.peer).Put(c.peer, c.dst, s, c.size, c)
		return nil, false

	case kindGet:
		d, dr, err := e.direct(c.dst, c.size)
		if err != nil {
			return err, true
		}
		c.pin = dr
		t := e.transportTo(c.peer)
		if k := c.carried; k != nil {
			c.carried = nil // the caller's, read during the call (CopyCarried)
			if kc, ok := t.(KeyCarrier); ok {
				kc.GetCarried(c.peer, c.src, d, c.size, k.Bytes(), c)
				return nil, false
			}
		}
		t.Get(c.peer, c.src, d, c.size, c)
		return nil, false

	case kindLocalAtomic:
		// The result location first: an atomic whose old value cannot be
		// stored is not applied (an operation fails whole).
		d, dr, err := e.direct(c.dst, c.size)
		if err != nil {
			return err, true
		}
		if !writableIn(dr, d, c.size) {
			release(dr)
			return fmt.Errorf("%s result: %v", c.op, e.accessErr(StatusFault, c.dst, c.size, -1)), true
		}
		old, err := e.directAtomic(c.op, c.src, c.a, c.b)
		if err != nil {
			release(dr)
			return err, true
		}
		ok := storeIn(dr, d, c.size, old)
		release(dr)
		if !ok {
			return fmt.Errorf("%s result: %v", c.op, e.accessErr(StatusFault, c.dst, c.size, -1)), true
		}
		return nil, true

	case kindAtomicPush:
		// The result goes to a peer, which may refuse the range: read it
		// there first (the owner checks it) and apply the atomic only then
		// (resultChecked), so that a refused result location leaves the
		// target unchanged. A round trip more, for result locations outside
		// the caller's memory only (the API documents the caller's own).
		e.transportTo(c.peer).Get(c.peer, c.dst, unsafe.Pointer(&c.word), c.size, resultChecked{c})
		return nil, false

	case kindAtomicFetch:
		// The result location is resolved and pinned now, until the old
		// value is stored there (OnComplete): an unregister meanwhile
		// waits for it, as for any access in progress.
		d, dr, err := e.direct(c.dst, c.size)
		if err != nil {
			return err, true
		}
		if !writableIn(dr, d, c.size) {
			release(dr)
			return fmt.Errorf("%s result: %v", c.op, e.accessErr(StatusFault, c.dst, c.size, -1)), true
		}
		c.at, c.pin = d, dr
		if e.deviceAtomic(c.op) {
			e.devAtom.Atomic(c.peer, c.op, c.src, c.a, c.b, c)
		} else {
			e.transportTo(c.peer).Atomic(c.peer, c.op, c.src, c.a, c.b, c)
		}
		return nil, false

	case kindDevAtomicPush:
		// As kindAtomicPush: the result location is checked first.
		e.transportTo(c.peer).Get(c.peer, c.dst, unsafe.Pointer(&c.word), c.size, devResultChecked{c})
		return nil, false

	case kindCopyRemote, kindAtomicRemote:
		e.transportTo(c.peer).Send(c.peer, encodeDelegation(c))
		return nil, false
	}
	return fmt.Errorf("internal error: unknown command kind %d", c.kind), true
}

// resultChecked continues a kindAtomicPush once the peer accepted a read
// of the result location: apply the atomic here, then put the old value
// there.
type resultChecked struct{ c *cmd }

func (r resultChecked) OnComplete(_ uint64, err error) {
	c := r.c
	if err != nil {
		c.OnComplete(0, err) // names the refused range, completes
		return
	}
	old, err := c.e.directAtomic(c.op, c.src, c.a, c.b)
	if err != nil {
		c.e.q.complete(c, err)
		return
	}
	c.word = old
	c.e.transportTo(c.peer).Put(c.peer, c.dst, unsafe.Pointer(&c.word), c.size, c)
}

// devResultChecked continues a kindDevAtomicPush once the result's owner
// accepted a read of the result location: the device executes the atomic
// at the target's owner (devApplied), then the old value is put there.
type devResultChecked struct{ c *cmd }

func (r devResultChecked) OnComplete(_ uint64, err error) {
	c := r.c
	if err != nil {
		c.OnComplete(0, err)
		return
	}
	c.e.devAtom.Atomic(c.e.peerOf(c.e.layout.Rank(c.src)), c.op, c.src, c.a, c.b, devApplied{c})
}

type devApplied struct{ c *cmd }

func (r devApplied) OnComplete(val uint64, err error) {
	c, e := r.c, r.c.e
	if err != nil {
		if ae, ok := err.(*AccessError); ok && ae.Rank < 0 {
			ae.Rank, ae.GA, ae.Size = e.layout.Rank(c.src), c.src, c.size
			e.hint(ae)
		}
		e.q.complete(c, err)
		return
	}
	c.word = val
	e.transportTo(c.peer).Put(c.peer, c.dst, unsafe.Pointer(&c.word), c.size, c)
}

// directAtomic applies op to a word this thread can touch.
func (e *Engine) directAtomic(op AtomicOp, ga GA, a, b uint64) (uint64, error) {
	w := op.Width()
	p, r, err := e.direct(ga, w)
	if err != nil {
		return 0, err
	}
	defer release(r)
	if uintptr(p)%uintptr(w) != 0 {
		return 0, e.accessErr(StatusMisaligned, ga, w, -1)
	}
	old, ok := atomicIn(r, op, p, a, b)
	if !ok {
		return 0, e.accessErr(StatusFault, ga, w, -1)
	}
	return old, nil
}

// Acquire implements Host.
func (e *Engine) Acquire(ga GA, n uint64) (unsafe.Pointer, *Region, Status) {
	return e.regs.Acquire(ga, n)
}

// ApplyAtomic implements Host: a checked fetch-and-op on this process's
// memory.
func (e *Engine) ApplyAtomic(op AtomicOp, ga GA, a, b uint64) (uint64, Status) {
	e.served.Add(1)
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
	old, ok := atomicIn(r, op, p, a, b)
	if !ok {
		return 0, StatusFault
	}
	return old, StatusOK
}

// readsSourceLater reports whether t reads a put's source where a fault
// cannot fail the put alone (SourceReader).
func readsSourceLater(t Transport) bool {
	r, ok := t.(SourceReader)
	return ok && r.ReadsSourceLater()
}
