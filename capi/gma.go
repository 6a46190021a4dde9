package main

/*
#include "acp.h"
*/
import "C"

import (
	"unsafe"

	"github.com/libacp/libacp/core"
)

//export goacp_copy
func goacp_copy(dst, src C.acp_ga_t, size C.size_t, order C.acp_handle_t) C.acp_handle_t {
	e := engineFor("acp_copy")
	if e == nil {
		return C.ACP_HANDLE_NULL
	}
	h, err := e.ProgramCopy(core.GA(dst), core.GA(src), uint64(size), core.Handle(order))
	if err != nil {
		e.Logf(1, "acp_copy(%#x, %#x, %#x, %#x): %v", uint64(dst), uint64(src), uint64(size), uint64(order), err)
		return C.ACP_HANDLE_NULL
	}
	return C.acp_handle_t(h)
}

// fetchOp issues one of the twelve atomics: op on the word at src, its old
// value stored at dst. a is the operand (the expected value for cas), b the
// new value for cas and 0 otherwise.
func fetchOp(op core.AtomicOp, dst, src C.acp_ga_t, a, b uint64, order C.acp_handle_t) C.acp_handle_t {
	e := lib.engine.Load()
	if e == nil {
		reportNoEngine("acp_" + op.String()) // named only here: it allocates
		return C.ACP_HANDLE_NULL
	}
	h, err := e.ProgramAtomic(op, core.GA(dst), core.GA(src), a, b, core.Handle(order))
	if err != nil {
		if op == core.OpCas4 || op == core.OpCas8 {
			e.Logf(1, "acp_%s(%#x, %#x, %#x, %#x, %#x): %v", op, uint64(dst), uint64(src), a, b, uint64(order), err)
		} else {
			e.Logf(1, "acp_%s(%#x, %#x, %#x, %#x): %v", op, uint64(dst), uint64(src), a, uint64(order), err)
		}
		return C.ACP_HANDLE_NULL
	}
	return C.acp_handle_t(h)
}

//export goacp_cas4
func goacp_cas4(dst, src C.acp_ga_t, oldval, newval C.uint32_t, order C.acp_handle_t) C.acp_handle_t {
	return fetchOp(core.OpCas4, dst, src, uint64(oldval), uint64(newval), order)
}

//export goacp_cas8
func goacp_cas8(dst, src C.acp_ga_t, oldval, newval C.uint64_t, order C.acp_handle_t) C.acp_handle_t {
	return fetchOp(core.OpCas8, dst, src, uint64(oldval), uint64(newval), order)
}

//export goacp_swap4
func goacp_swap4(dst, src C.acp_ga_t, value C.uint32_t, order C.acp_handle_t) C.acp_handle_t {
	return fetchOp(core.OpSwap4, dst, src, uint64(value), 0, order)
}

//export goacp_swap8
func goacp_swap8(dst, src C.acp_ga_t, value C.uint64_t, order C.acp_handle_t) C.acp_handle_t {
	return fetchOp(core.OpSwap8, dst, src, uint64(value), 0, order)
}

//export goacp_add4
func goacp_add4(dst, src C.acp_ga_t, value C.uint32_t, order C.acp_handle_t) C.acp_handle_t {
	return fetchOp(core.OpAdd4, dst, src, uint64(value), 0, order)
}

//export goacp_add8
func goacp_add8(dst, src C.acp_ga_t, value C.uint64_t, order C.acp_handle_t) C.acp_handle_t {
	return fetchOp(core.OpAdd8, dst, src, uint64(value), 0, order)
}

//export goacp_xor4
func goacp_xor4(dst, src C.acp_ga_t, value C.uint32_t, order C.acp_handle_t) C.acp_handle_t {
	return fetchOp(core.OpXor4, dst, src, uint64(value), 0, order)
}

//export goacp_xor8
func goacp_xor8(dst, src C.acp_ga_t, value C.uint64_t, order C.acp_handle_t) C.acp_handle_t {
	return fetchOp(core.OpXor8, dst, src, uint64(value), 0, order)
}

//export goacp_or4
func goacp_or4(dst, src C.acp_ga_t, value C.uint32_t, order C.acp_handle_t) C.acp_handle_t {
	return fetchOp(core.OpOr4, dst, src, uint64(value), 0, order)
}

//export goacp_or8
func goacp_or8(dst, src C.acp_ga_t, value C.uint64_t, order C.acp_handle_t) C.acp_handle_t {
	return fetchOp(core.OpOr8, dst, src, uint64(value), 0, order)
}

//export goacp_and4
func goacp_and4(dst, src C.acp_ga_t, value C.uint32_t, order C.acp_handle_t) C.acp_handle_t {
	return fetchOp(core.OpAnd4, dst, src, uint64(value), 0, order)
}

//export goacp_and8
func goacp_and8(dst, src C.acp_ga_t, value C.uint64_t, order C.acp_handle_t) C.acp_handle_t {
	return fetchOp(core.OpAnd8, dst, src, uint64(value), 0, order)
}

//export goacp_complete
func goacp_complete(handle C.acp_handle_t) {
	if e := engineFor("acp_complete"); e != nil {
		e.Complete(core.Handle(handle))
	}
}

// goacp_fast_finished finishes a handle whose operation a transport's C
// code ran (capi/fastpath.c), when operations wait for their start
// condition: only the engine starts those.
//
//export goacp_fast_finished
func goacp_fast_finished(state unsafe.Pointer, handle C.int64_t) {
	if e := core.FastEngine(state); e != nil {
		e.FinishFast(core.Handle(handle), 0, false, 0, 0, nil)
	}
}

//export goacp_inquire
func goacp_inquire(handle C.acp_handle_t) C.int {
	e := engineFor("acp_inquire")
	if e == nil {
		return 0
	}
	if e.Inquire(core.Handle(handle)) {
		return 1 // still running
	}
	return 0
}
