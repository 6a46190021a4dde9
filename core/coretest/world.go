package coretest

import (
	"bytes"
	"fmt"
	"regexp"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/libacp/libacp/core"
)

// World is N engines in one process, one per simulated rank.
type World struct {
	T       testing.TB
	Engines []*core.Engine
	Group   *Group
	Stderr  *SyncBuffer
	// Exits receives the status of every rank that exits (NewWorldExits);
	// nil in a world whose ranks panic when they exit.
	Exits chan int
	// foreign: the engines are told that no registered memory is Go's
	// heap (core.Config.ForeignMemory), as in a C program.
	foreign bool
}

// SyncBuffer is a bytes.Buffer safe for concurrent writers.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns what was written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// NewWorld starts n engines over the given transport. settings are extra
// "name=value" pairs applied to every engine. A rank that exits (a fatal
// error) panics.
func NewWorld(t testing.TB, n int, transport string, settings ...string) *World {
	return newPanicking(t, n, false, transport, settings)
}

// NewForeignWorld is NewWorld whose engines are told, as a C program's
// is, that no memory registered with them is Go's heap
// (core.Config.ForeignMemory): the test must register only memory it
// mapped (CMem).
func NewForeignWorld(t testing.TB, n int, transport string, settings ...string) *World {
	return newPanicking(t, n, true, transport, settings)
}

// newPanicking starts a world whose exiting ranks panic.
func newPanicking(t testing.TB, n int, foreign bool, transport string, settings []string) *World {
	w := &World{T: t, Group: NewGroup(n), Engines: make([]*core.Engine, n), Stderr: &SyncBuffer{}, foreign: foreign}
	return w.start(transport, settings, func(r, code int) {
		panic(fmt.Sprintf("rank %d exited with %d: %s", r, code, w.Stderr.String()))
	})
}

// NewWorldExits is NewWorld for tests of fatal errors: a rank that exits
// sends its status to w.Exits instead, and its engine stays as it is (a
// process would have ended there).
func NewWorldExits(t testing.TB, n int, transport string, settings ...string) *World {
	w := &World{T: t, Group: NewGroup(n), Engines: make([]*core.Engine, n), Stderr: &SyncBuffer{}, Exits: make(chan int, 4*n)}
	return w.start(transport, settings, func(_, code int) {
		select {
		case w.Exits <- code:
		default:
		}
	})
}

// start starts the engines. Besides settings of the library, settings
// may hold "hosts=K": the ranks are then spread over K hosts in blocks
// (rank r on host r*K/n), which share memory only within themselves
// (--acp-host-group), as processes of K machines would.
func (w *World) start(transport string, settings []string, exit func(rank, code int)) *World {
	t, n := w.T, len(w.Engines)
	hosts := 0
	var common []string
	for _, kv := range settings {
		if v, ok := strings.CutPrefix(kv, "hosts="); ok {
			k, err := strconv.Atoi(v)
			if err != nil || k < 1 {
				t.Fatalf("coretest: %q: want hosts=K, K >= 1", kv)
			}
			hosts = k
			continue
		}
		common = append(common, kv)
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := 0; r < n; r++ {
		wg.Add(1)
		go func(r int) {
			defer wg.Done()
			mine := common
			if hosts > 0 {
				mine = append(slices.Clip(common), fmt.Sprintf("host-group=host%d", r*hosts/n))
			}
			s := NewSettings(t, transport, mine...)
			e, err := core.New(core.Config{
				Settings:  s,
				Exchanger: w.Group.Member(r),
				Stderr:    w.Stderr,
				Exit:      func(code int) { exit(r, code) },

				ForeignMemory: w.foreign,
			})
			errs[r] = err
			w.Engines[r] = e
		}(r)
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: init: %v", r, err)
		}
	}
	return w
}

// NewSettings builds a settings set with every registered transport's
// settings, the transport forced, and extra "name=value" pairs.
func NewSettings(t testing.TB, transport string, kv ...string) *core.Settings {
	defs := [][]core.Setting{core.BaseSettings}
	for _, tr := range core.Transports() {
		defs = append(defs, tr.Settings)
	}
	s := core.NewSettings(defs...)
	if transport != "" {
		if err := s.Set("transports", transport, "test"); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range kv {
		name, val, ok := strings.Cut(p, "=")
		if !ok {
			t.Fatalf("setting %q is not name=value", p)
		}
		if err := s.Set(name, val, "test"); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// LateSync runs one barrier that the last rank enters delay after the
// others, which wait that long in it (tests of what long waits do).
func (w *World) LateSync(delay time.Duration) {
	w.T.Helper()
	w.Run(func(rank int, e *core.Engine) error {
		if rank == len(w.Engines)-1 {
			time.Sleep(delay)
		}
		return e.Sync()
	})
}

// Run runs f on every rank concurrently and fails the test with every
// rank's error. A panic on one rank is reported as that rank's error. When
// one rank fails, the others may be stuck in a collective forever: Run
// waits a few seconds more for them and then gives up.
func (w *World) Run(f func(rank int, e *core.Engine) error) {
	w.T.Helper()
	type result struct {
		rank int
		err  error
	}
	results := make(chan result, len(w.Engines))
	for r, e := range w.Engines {
		go func(r int, e *core.Engine) {
			var err error
			defer func() {
				if p := recover(); p != nil {
					err = fmt.Errorf("panic: %v\n%s", p, debug.Stack())
				}
				results <- result{r, err}
			}()
			err = f(r, e)
		}(r, e)
	}
	var grace <-chan time.Time
	for left := len(w.Engines); left > 0; {
		select {
		case res := <-results:
			left--
			if res.err != nil {
				w.T.Errorf("rank %d: %v", res.rank, res.err)
				if grace == nil {
					grace = time.After(5 * time.Second)
				}
			}
		case <-grace:
			w.T.Fatalf("%d rank(s) still blocked after another rank failed; stderr:\n%s", left, w.Stderr.String())
		}
	}
	if w.T.Failed() {
		w.T.FailNow()
	}
}

// AwaitFatal waits up to limit for a rank of a NewWorldExits world to exit
// with a fatal error and checks that stderr then matches pattern; it
// returns how long that took.
func (w *World) AwaitFatal(limit time.Duration, pattern string) time.Duration {
	w.T.Helper()
	start := time.Now()
	select {
	case code := <-w.Exits:
		if code != 255 {
			w.T.Errorf("exit status %d, want 255", code)
		}
	case <-time.After(limit):
		w.T.Fatalf("no fatal error within %v; stderr: %s", limit, w.Stderr.String())
	}
	if !regexp.MustCompile(pattern).MatchString(w.Stderr.String()) {
		w.T.Errorf("stderr does not match %q: %s", pattern, w.Stderr.String())
	}
	return time.Since(start)
}

// Close finalizes every engine.
func (w *World) Close() {
	w.T.Helper()
	w.Run(func(_ int, e *core.Engine) error { return e.Finalize() })
}
