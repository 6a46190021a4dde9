package main

/*
#include "fastpath.h"
*/
import "C"

import (
	"math"
	"unsafe"

	"github.com/libacp/libacp/core"
	"github.com/libacp/libacp/internal/memcopy"
)

// The C fast path serves the running engine: it starts right after the
// engine and stops before anything else does.
func init() {
	registerLayer(layer{
		name:  "fast path",
		order: 0,
		start: func(e *core.Engine) error {
			setLargeCopiesByVectors(memcopy.LargeByVectors())
			C.acpfast_set(e.FastState())
			return nil
		},
		stop: func(*core.Engine) error { C.acpfast_set(nil); return nil },
	})
}

// fastOps issues operations the way the exported acp_* functions do: the C
// fast path first, the engine when it declines. The tests run the
// transport conformance suite through it, so that both paths are held to
// the same semantics. (Unused by the library itself; the linker drops it.)
type fastOps struct{ e *core.Engine }

func (o fastOps) state() unsafe.Pointer { return o.e.FastState() }

func (o fastOps) Copy(dst, src core.GA, n uint64, order core.Handle) (core.Handle, error) {
	if h := fastCopy(o.e, dst, src, n, order); h != 0 {
		return h, nil
	}
	return o.e.ProgramCopy(dst, src, n, order)
}

func (o fastOps) Atomic(op core.AtomicOp, result, target core.GA, a, b uint64, order core.Handle) (core.Handle, error) {
	if h := fastAtomic(o.e, op, result, target, a, b, order); h != 0 {
		return h, nil
	}
	return o.e.ProgramAtomic(op, result, target, a, b, order)
}

func (o fastOps) Complete(h core.Handle) {
	if C.acpfast_wait(o.state(), C.acp_handle_t(h)) == 0 {
		o.e.Complete(h)
	}
}

func (o fastOps) Inquire(h core.Handle) bool {
	if C.acpfast_test(o.state(), C.acp_handle_t(h)) != 0 {
		return false
	}
	return o.e.Inquire(h)
}

func (o fastOps) Sync() error {
	switch ep := C.acpfast_sync(o.state()); {
	case ep == 0:
		return nil
	case ep > 0:
		return o.e.FinishSync(uint64(ep))
	}
	return o.e.Sync()
}

// fastCompleted reports whether the C path completed an 8-byte copy (tests).
func fastCompleted(e *core.Engine, dst, src core.GA) bool {
	return C.acpfast_copy(e.FastState(), C.acp_ga_t(dst), C.acp_ga_t(src), 8, 0) != 0
}

// fastAtomic issues an atomic through the C path only: 0 where it
// declines (tests).
func fastAtomic(e *core.Engine, op core.AtomicOp, result, target core.GA, a, b uint64, order core.Handle) core.Handle {
	return core.Handle(C.acpfast_atomic(e.FastState(), C.int(op), C.acp_ga_t(result), C.acp_ga_t(target), C.uint64_t(a), C.uint64_t(b), C.acp_handle_t(order)))
}

// fastMove is the C path's memmove (tests).
func fastMove(dst, src []byte) {
	C.acpfast_move(unsafe.Pointer(unsafe.SliceData(dst)), unsafe.Pointer(unsafe.SliceData(src)), C.size_t(len(src)))
}

// setLargeCopiesByVectors switches the C path's copies from
// memcopy.VectorCopyMin to vector loads and stores (on) or memmove.
func setLargeCopiesByVectors(on bool) {
	n := C.size_t(math.MaxUint64)
	if on {
		n = memcopy.VectorCopyMin
	}
	C.acpfast_vector_copies_from(n)
}

// fastVectorCopy is the C path's large copy on any CPU with AVX2; false
// where it has none (tests).
func fastVectorCopy(dst, src []byte) bool {
	return C.acpfast_vector_copy(unsafe.Pointer(unsafe.SliceData(dst)), unsafe.Pointer(unsafe.SliceData(src)), C.size_t(len(src))) != 0
}

// fastCopy issues a copy through the C path only: 0 where it declines
// (tests).
func fastCopy(e *core.Engine, dst, src core.GA, n uint64, order core.Handle) core.Handle {
	return core.Handle(C.acpfast_copy(e.FastState(), C.acp_ga_t(dst), C.acp_ga_t(src), C.size_t(n), C.acp_handle_t(order)))
}

// fastWaited waits for h through the C path only, as acp_complete would
// before it enters Go, and reports whether h completed there (tests).
func fastWaited(e *core.Engine, h core.Handle) bool {
	return C.acpfast_wait(e.FastState(), C.acp_handle_t(h)) != 0
}

// fastSynced runs acp_sync through the C path only and reports whether it
// took the barrier (tests).
func fastSynced(e *core.Engine) (bool, error) {
	switch ep := C.acpfast_sync(e.FastState()); {
	case ep == 0:
		return true, nil
	case ep > 0:
		return true, e.FinishSync(uint64(ep))
	}
	return false, e.Sync()
}

// The queries through the C path only; ok is false where it declines
// (tests).

func fastRank(e *core.Engine) (rank int, ok bool) {
	var r C.int
	ok = C.acpfast_rank(e.FastState(), &r) != 0
	return int(r), ok
}

func fastProcs(e *core.Engine) (procs int, ok bool) {
	var n C.int
	ok = C.acpfast_procs(e.FastState(), &n) != 0
	return int(n), ok
}

func fastStarterGA(e *core.Engine, rank int) (core.GA, bool) {
	var ga C.acp_ga_t
	ok := C.acpfast_starter_ga(e.FastState(), C.int(rank), &ga) != 0
	return core.GA(ga), ok
}

func fastQueryRank(e *core.Engine, ga core.GA) (int, bool) {
	var r C.int
	ok := C.acpfast_query_rank(e.FastState(), C.acp_ga_t(ga), &r) != 0
	return int(r), ok
}

func fastQueryColor(e *core.Engine, ga core.GA) (int, bool) {
	var c C.int
	ok := C.acpfast_query_color(e.FastState(), C.acp_ga_t(ga), &c) != 0
	return int(c), ok
}

func fastQueryAddress(e *core.Engine, ga core.GA) (unsafe.Pointer, bool) {
	var p unsafe.Pointer
	ok := C.acpfast_query_address(e.FastState(), C.acp_ga_t(ga), &p) != 0
	return p, ok
}

func stateQueryRank(f unsafe.Pointer, ga core.GA) int {
	var r C.int
	C.acpfast_query_rank(f, C.acp_ga_t(ga), &r)
	return int(r)
}

func stateQueryColor(f unsafe.Pointer, ga core.GA) int {
	var c C.int
	C.acpfast_query_color(f, C.acp_ga_t(ga), &c)
	return int(c)
}

func stateStarterGA(f unsafe.Pointer, rank int) (core.GA, bool) {
	var ga C.acp_ga_t
	ok := C.acpfast_starter_ga(f, C.int(rank), &ga) != 0
	return core.GA(ga), ok
}

// fastOpDoneIn is acpfast_op_done on the fast state at f (its test builds
// one by hand).
func fastOpDoneIn(f unsafe.Pointer, h core.Handle) bool {
	return C.acpfast_op_done(f, C.acp_handle_t(h)) != 0
}
