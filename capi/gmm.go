package main

/*
#include "acp.h"
*/
import "C"

import (
	"unsafe"

	"github.com/libacp/libacp/core"
)

//export goacp_query_starter_ga
func goacp_query_starter_ga(rank C.int) C.acp_ga_t {
	e := engineFor("acp_query_starter_ga")
	if e == nil {
		return C.ACP_GA_NULL
	}
	ga, err := e.StarterGA(int(rank))
	if err != nil {
		e.Logf(1, "acp_query_starter_ga(%#x): %v", int(rank), err)
		return C.ACP_GA_NULL
	}
	return C.acp_ga_t(ga)
}

//export goacp_register_memory
func goacp_register_memory(addr unsafe.Pointer, size C.size_t, color C.int) C.acp_atkey_t {
	e := engineFor("acp_register_memory")
	if e == nil {
		return C.ACP_ATKEY_NULL
	}
	key, err := e.Register(addr, uint64(size), int(color))
	if err != nil {
		e.Logf(1, "acp_register_memory(%p, %#x, %#x): %v", addr, uint64(size), int(color), err)
		return C.ACP_ATKEY_NULL
	}
	return C.acp_atkey_t(key)
}

//export goacp_unregister_memory
func goacp_unregister_memory(atkey C.acp_atkey_t) C.int {
	e := engineFor("acp_unregister_memory")
	if e == nil {
		return -1
	}
	if err := e.Unregister(core.GA(atkey)); err != nil {
		e.Logf(1, "acp_unregister_memory(%#x): %v", uint64(atkey), err)
		return -1
	}
	return 0
}

//export goacp_query_ga
func goacp_query_ga(atkey C.acp_atkey_t, addr unsafe.Pointer) C.acp_ga_t {
	e := engineFor("acp_query_ga")
	if e == nil {
		return C.ACP_GA_NULL
	}
	ga, err := e.QueryGA(core.GA(atkey), addr)
	if err != nil {
		e.Logf(1, "acp_query_ga(%#x, %p): %v", uint64(atkey), addr, err)
		return C.ACP_GA_NULL
	}
	return C.acp_ga_t(ga)
}

//export goacp_query_address
func goacp_query_address(ga C.acp_ga_t) unsafe.Pointer {
	e := engineFor("acp_query_address")
	if e == nil {
		return nil
	}
	p, err := e.QueryAddress(core.GA(ga))
	if err != nil {
		e.Logf(1, "acp_query_address(%#x): %v", uint64(ga), err)
		return nil
	}
	return p
}

// acp_query_rank and acp_query_color are queries: -1 for an invalid GA is an
// answer, not a failure, so they print nothing.

//export goacp_query_rank
func goacp_query_rank(ga C.acp_ga_t) C.int {
	e := engineFor("acp_query_rank")
	if e == nil {
		return -1
	}
	return C.int(e.QueryRank(core.GA(ga)))
}

//export goacp_query_color
func goacp_query_color(ga C.acp_ga_t) C.int {
	e := engineFor("acp_query_color")
	if e == nil {
		return -1
	}
	return C.int(e.QueryColor(core.GA(ga)))
}

//export goacp_colors
func goacp_colors() C.int {
	e := engineFor("acp_colors")
	if e == nil {
		return -1
	}
	return C.int(e.Colors())
}
