package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/libacp/libacp/core"
)

// lifecycle is where the library stands between acp_init and acp_finalize.
type lifecycle int32

const (
	notInitialized lifecycle = iota
	running
	finalized
)

// lib is the process-wide library state. Operations only load the engine
// pointer (one atomic load, no lock on the per-operation path); the
// collective calls that create, re-rank or end the engine take mu so that
// two threads calling them at once do not interleave. As with any
// collective, a program stops issuing operations before it calls
// acp_finalize: a call already inside the engine when finalize starts is
// not waited for.
var lib struct {
	mu      sync.Mutex // serialises acp_init, acp_finalize, acp_reset
	state   atomic.Int32
	engine  atomic.Pointer[core.Engine]
	verbose atomic.Int32 // ACP_VERBOSE that was in force, for calls after acp_finalize
}

// engineFor returns the running engine, or nil after reporting that fn was
// called before acp_init or after acp_finalize.
func engineFor(fn string) *core.Engine {
	if e := lib.engine.Load(); e != nil {
		return e
	}
	reportNoEngine(fn)
	return nil
}

func reportNoEngine(fn string) {
	// The engine pointer is cleared after the state becomes finalized, so a
	// nil engine seen before this load is matched by the right state here.
	if lifecycle(lib.state.Load()) == finalized {
		if lib.verbose.Load() >= 1 {
			fmt.Fprintf(os.Stderr, "acp: %s: called after acp_finalize\n", fn)
		}
		return
	}
	if envVerbose() >= 1 {
		fmt.Fprintf(os.Stderr, "acp: %s: called before acp_init\n", fn)
	}
}

// envVerbose reads ACP_VERBOSE directly: before acp_init there are no
// settings yet. Values acp_init would reject count as 0.
func envVerbose() int64 {
	v, err := strconv.ParseInt(strings.TrimSpace(os.Getenv("ACP_VERBOSE")), 0, 64)
	if err != nil {
		return 0
	}
	return v
}
