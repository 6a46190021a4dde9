package main

/*
#include <stdio.h>
#include <stdlib.h>
#include "acp.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"

	"github.com/libacp/libacp/core"
)

//export goacp_init
func goacp_init(argc *C.int, argv ***C.char) C.int {
	lib.mu.Lock()
	defer lib.mu.Unlock()
	switch lifecycle(lib.state.Load()) {
	case running:
		return initFailed(errors.New("already initialized (acp_init was called before without acp_finalize)"))
	case finalized:
		return initFailed(errors.New("called after acp_finalize: initializing again is not supported; use acp_reset to start over instead of acp_finalize + acp_init"))
	}

	minProcs()
	s := newSettings()
	args := goArgs(argc, argv)
	// Option errors are the user's to fix: always say what was wrong.
	if err := s.LoadEnv(nil); err != nil {
		fmt.Fprintf(os.Stderr, "acp: %v\n", err)
		return -1
	}
	var kept []string
	if len(args) > 1 {
		var err error
		if kept, err = s.ParseArgs(args[1:]); err != nil {
			fmt.Fprintf(os.Stderr, "acp: %v\n", err)
			return -1
		}
	}
	rewriteArgs(argc, argv, args, kept)
	programStarterSizeDL(s) // before core.New sizes the starter memories (ml_dl.go)
	programStarterSizeCL(s) // likewise (ml_cl.go)
	if err := s.ApplyLauncherDefaults(); err != nil {
		return initFailed(err)
	}

	b, err := openBootstrap(s)
	if err != nil {
		return initFailed(fmt.Errorf("start-up: %v", err))
	}
	e, err := core.New(core.Config{Settings: s, Exchanger: b, Exit: exitProcess, ForeignMemory: true})
	if err != nil {
		_ = b.Close()
		return initFailed(err)
	}
	if err := startLayers(e); err != nil {
		_ = e.Finalize()
		return initFailed(err)
	}
	lib.verbose.Store(int32(e.Verbose()))
	lib.engine.Store(e)
	lib.state.Store(int32(running))
	return 0
}

// initFailed prints why acp_init failed, always: a program that cannot
// start must say why.
func initFailed(err error) C.int {
	fmt.Fprintf(os.Stderr, "acp: acp_init: %v\n", err)
	return -1
}

// newSettings declares the core's settings and those of every linked
// transport, at their defaults.
func newSettings() *core.Settings {
	defs := [][]core.Setting{core.BaseSettings}
	for _, t := range core.Transports() {
		defs = append(defs, t.Settings)
	}
	return core.NewSettings(defs...)
}

// exitProcess ends the process through C's exit rather than os.Exit, so that
// the application's stdio buffers are flushed and its atexit handlers run,
// as they were when the original library exited.
func exitProcess(code int) {
	C.exit(C.int(code))
}

//export goacp_finalize
func goacp_finalize() C.int {
	lib.mu.Lock()
	defer lib.mu.Unlock()
	e := lib.engine.Load()
	if e == nil {
		reportNoEngine("acp_finalize")
		return -1
	}
	// Callers from now on are told the library is finalized, while this
	// thread brings the job to rest.
	lib.state.Store(int32(finalized))
	lib.engine.Store(nil)
	lerr := stopLayers(e, len(layers))
	if err := e.Finalize(); err != nil {
		e.Logf(1, "acp_finalize(): %v", err)
		return -1
	}
	if lerr != nil {
		e.Logf(1, "acp_finalize(): %v", lerr)
		return -1
	}
	return 0
}

//export goacp_reset
func goacp_reset(rank C.int) C.int {
	lib.mu.Lock()
	defer lib.mu.Unlock()
	e := engineFor("acp_reset")
	if e == nil {
		return -1
	}
	plan, err := e.PlanReset(int(rank))
	if err != nil {
		e.Logf(1, "acp_reset(%d): %v", int(rank), err)
		return -1
	}
	// The layers above stop and restart around the re-ranking, so that they
	// start over with cleared starter memory and the new ranks.
	if err := stopLayers(e, len(layers)); err != nil {
		e.Logf(1, "acp_reset(%d): %v", int(rank), err)
	}
	if err := e.ApplyReset(plan); err != nil {
		e.Logf(1, "acp_reset(%d): %v", int(rank), err)
		return -1
	}
	if err := startLayers(e); err != nil {
		e.Logf(1, "acp_reset(%d): %v", int(rank), err)
		return -1
	}
	return 0
}

// goacp_abort takes no lock: it must work while another thread is blocked
// inside acp_init or acp_finalize.
//
//export goacp_abort
func goacp_abort(str *C.char) {
	msg := "(no message)"
	if str != nil {
		msg = C.GoString(str)
	}
	// What the program printed goes out before the launcher stops the job.
	C.fflush(nil)
	if e := lib.engine.Load(); e != nil {
		e.Abort(msg) // exits
	}
	fmt.Fprintf(os.Stderr, "acp: acp_abort: %s\n", msg)
	exitProcess(255)
}

//export goacp_sync
func goacp_sync() C.int {
	e := engineFor("acp_sync")
	if e == nil {
		return -1
	}
	if err := e.Sync(); err != nil {
		e.Logf(1, "acp_sync(): %v", err)
		return -1
	}
	return 0
}

// goacp_sync_finish completes barrier ep, which the C fast path entered
// and arrived in but stopped waiting for.
//
//export goacp_sync_finish
func goacp_sync_finish(ep C.int64_t) C.int {
	e := lib.engine.Load()
	if e == nil {
		return -1
	}
	if err := e.FinishSync(uint64(ep)); err != nil {
		e.Logf(1, "acp_sync(): %v", err)
		return -1
	}
	return 0
}

//export goacp_rank
func goacp_rank() C.int {
	e := engineFor("acp_rank")
	if e == nil {
		return -1
	}
	return C.int(e.Rank())
}

//export goacp_procs
func goacp_procs() C.int {
	e := engineFor("acp_procs")
	if e == nil {
		return -1
	}
	return C.int(e.Procs())
}

// minProcs gives the Go scheduler one P more than it would have, or two
// where it would have one. A rank pinned to one CPU (acprun --acp-bind,
// mpirun's binding) starts with GOMAXPROCS 1, and then an application
// thread entering Go queued for the only P behind the library's own
// goroutines (progress, transports) until they blocked or were preempted:
// channel bandwidth halved. A third P on that one CPU only woke more
// threads to share it: the atomics an ib rank's progress goroutine serves
// took twice as long in the Soft-RoCE VM with 3 Ps (7 of 7 alternated
// rounds), shm channels were the same. On several CPUs a thread that
// returns from the library to C keeps its P, as if in a system call; with
// no P idle, the runtime's monitor takes that P back every 20 us tick and
// hands it on, waking threads that find nothing to do, while both ranks'
// CPUs are busy: a udp put
// pingpong of 1 MiB took a median 681 us one way with 2 Ps (2 CPUs), 393
// with 3 (8 alternated rounds; 4 MiB: 1742 against 1047; BENCHMARKS.md,
// 2026-11-27, later). The spare P costs nothing while idle; the progress
// loops hand their P over only every 16th idle turn (core.YieldTurn), as
// each hand-over now wakes a thread for it. An explicit GOMAXPROCS is
// respected. Once per process: a test process initialises many times.
func minProcs() {
	procsOnce.Do(func() {
		if n := procsFor(runtime.GOMAXPROCS(0), os.Getenv("GOMAXPROCS")); n != runtime.GOMAXPROCS(0) {
			runtime.GOMAXPROCS(n)
		}
	})
}

var procsOnce sync.Once

// procsFor is the GOMAXPROCS minProcs sets, from the runtime's choice and
// the GOMAXPROCS variable.
func procsFor(current int, env string) int {
	if env != "" {
		return current
	}
	if current <= 1 {
		return 2
	}
	return current + 1
}
