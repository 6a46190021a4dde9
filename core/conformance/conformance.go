// Package conformance is the suite every transport passes: the basic
// layer's semantics (copies between any two ranks, atomics, ordering,
// completion, error completions, back-pressure, barriers, reset) exercised
// through engines that talk over the transport under test.
//
// A transport's test calls Run with its registry name:
//
//	func TestConformance(t *testing.T) { conformance.Run(t, "udp") }
package conformance

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/libacp/libacp/core"
	"github.com/libacp/libacp/core/coretest"
	"github.com/libacp/libacp/internal/raceedge"
)

// Ops are the operations (and the barrier) the suite issues. By default the engine's own
// methods; a C fast path is tested by passing its entry points instead.
type Ops interface {
	Copy(dst, src core.GA, n uint64, order core.Handle) (core.Handle, error)
	Atomic(op core.AtomicOp, result, target core.GA, a, b uint64, order core.Handle) (core.Handle, error)
	Complete(h core.Handle)
	Inquire(h core.Handle) bool
	Sync() error
}

// suite carries what the cases share.
type suite struct {
	ops func(e *core.Engine) Ops
}

// Run runs every case over the named transport. settings ("name=value") are
// applied to every engine (a transport may pass its fault-injection knobs).
func Run(t *testing.T, transport string, settings ...string) {
	RunWithOps(t, transport, func(e *core.Engine) Ops { return e }, settings...)
}

// RunWithOps runs every case with the operations issued through ops.
func RunWithOps(t *testing.T, transport string, ops func(e *core.Engine) Ops, settings ...string) {
	s := suite{ops: ops}
	cases := []struct {
		name  string
		procs int
		extra []string
		f     func(t *testing.T, w *coretest.World, s suite)
	}{
		{"CopySizes", 2, nil, testCopySizes},
		{"ThirdPartyCopy", 3, nil, testThirdPartyCopy},
		{"AtomicsEveryPlacement", 3, nil, testAtomicsEveryPlacement},
		{"AtomicContention", 4, nil, testAtomicContention},
		{"OrderingChains", 3, nil, testOrderingChains},
		{"CompleteAndInquire", 2, nil, testCompleteAndInquire},
		{"RemoteAccessErrors", 2, nil, testRemoteAccessErrors},
		{"RegisteredMemory", 2, nil, testRegisteredMemory},
		{"ReadOnlyRegistration", 3, nil, testReadOnlyRegistration},
		{"CarriedKeys", 2, nil, testCarriedKeys},
		{"BackPressure", 2, []string{"queue-depth=8"}, testBackPressure},
		{"Barriers", 5, nil, testBarriers},
		{"PassiveTarget", 3, nil, testPassiveTarget},
		{"ConcurrentIssuers", 3, nil, testConcurrentIssuers},
		{"Reset", 3, nil, testReset},
		{"LargeCopy", 2, []string{"size-smem=0x900000"}, testLargeCopy},
		{"RandomOps", 3, nil, testRandomOps},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := coretest.NewWorld(t, c.procs, transport, append(append([]string{"size-smem=65536"}, settings...), c.extra...)...)
			c.f(t, w, s)
			w.Close()
		})
	}
}

// starter returns rank r's starter memory as seen by its own engine.
func starter(w *coretest.World, r int) []byte { return w.Engines[r].StarterMemory(core.SegStarter) }

func sga(e *core.Engine, rank int, off uint64) core.GA {
	ga, err := e.StarterGA(rank)
	if err != nil {
		panic(err)
	}
	return ga + core.GA(off)
}

func fill(b []byte, seed uint64) {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
}

func check(cond bool, format string, args ...any) error {
	if !cond {
		return fmt.Errorf(format, args...)
	}
	return nil
}

func testCopySizes(t *testing.T, w *coretest.World, s suite) {
	sizes := []uint64{0, 1, 7, 8, 1000, 1392, 1393, 4096, 9000, 30001}
	const half = 32 * 1024
	// Put: rank 0 writes rank 1's second half from its own first half;
	// get: rank 1 reads rank 0's first half into its own first half.
	for _, n := range sizes {
		fill(starter(w, 0)[:half], n+1)
		clear(starter(w, 1))
		w.Run(func(r int, e *core.Engine) error {
			if r == 0 {
				h, err := s.ops(e).Copy(sga(e, 1, half), sga(e, 0, 0), n, core.HandleNull)
				if err != nil {
					return err
				}
				s.ops(e).Complete(h)
			}
			if err := s.ops(e).Sync(); err != nil {
				return err
			}
			if r == 1 {
				h, err := s.ops(e).Copy(sga(e, 1, 0), sga(e, 0, 0), n, core.HandleNull)
				if err != nil {
					return err
				}
				s.ops(e).Complete(h)
			}
			return s.ops(e).Sync()
		})
		src := starter(w, 0)[:n]
		assert.True(t, bytes.Equal(src, starter(w, 1)[half:half+n]), "put of %d bytes", n)
		assert.True(t, bytes.Equal(src, starter(w, 1)[:n]), "get of %d bytes", n)
		assert.Zero(t, starter(w, 1)[half+n:][0], "put of %d bytes wrote past its end", n)
	}
	// Local to local.
	e := w.Engines[0]
	fill(starter(w, 0)[:100], 7)
	h, err := s.ops(e).Copy(sga(e, 0, 1000), sga(e, 0, 0), 100, core.HandleNull)
	require.NoError(t, err)
	assert.False(t, s.ops(e).Inquire(h), "a local copy completes inline")
	assert.Equal(t, starter(w, 0)[:100], starter(w, 0)[1000:1100])
	assert.Zero(t, e.Errors()+w.Engines[1].Errors())
}

func testThirdPartyCopy(t *testing.T, w *coretest.World, s suite) {
	const n = 20000
	fill(starter(w, 1)[:n], 11)
	fill(starter(w, 2)[40000:40000+n], 12)
	w.Run(func(r int, e *core.Engine) error {
		if r == 0 {
			// rank 1 → rank 2, and rank 2 → rank 2 (both ends on one other rank).
			h1, err := s.ops(e).Copy(sga(e, 2, 0), sga(e, 1, 0), n, core.HandleNull)
			if err != nil {
				return err
			}
			h2, err := s.ops(e).Copy(sga(e, 2, 20000), sga(e, 2, 40000), n, core.HandleNull)
			if err != nil {
				return err
			}
			s.ops(e).Complete(h1)
			s.ops(e).Complete(h2)
		}
		return s.ops(e).Sync()
	})
	assert.Equal(t, starter(w, 1)[:n], starter(w, 2)[:n], "remote-to-remote copy")
	assert.Equal(t, starter(w, 2)[40000:40000+n], starter(w, 2)[20000:20000+n], "copy within another rank")
}

func word4(b []byte, off int) uint32 { return binary.LittleEndian.Uint32(b[off:]) }
func word8(b []byte, off int) uint64 { return binary.LittleEndian.Uint64(b[off:]) }

func testAtomicsEveryPlacement(t *testing.T, w *coretest.World, s suite) {
	type tc struct {
		op        core.AtomicOp
		init, a   uint64
		b         uint64
		wantAfter uint64
	}
	cases := []tc{
		{core.OpCas4, 100, 100, 10000, 10000},
		{core.OpCas4, 100, 99, 10000, 100},
		{core.OpCas8, 1 << 40, 1 << 40, 7, 7},
		{core.OpSwap4, 100, 50, 0, 50},
		{core.OpSwap8, 1 << 50, 3, 0, 3},
		{core.OpAdd4, 0xfffffff0, 0x20, 0, 0x10},
		{core.OpAdd8, 1 << 40, 5, 0, 1<<40 + 5},
		{core.OpXor4, 0xff00, 0x0ff0, 0, 0xf0f0},
		{core.OpXor8, 1<<63 | 1, 1, 0, 1 << 63},
		{core.OpOr4, 0x100, 0x011, 0, 0x111},
		{core.OpOr8, 1 << 33, 1, 0, 1<<33 | 1},
		{core.OpAnd4, 0xf0f0, 0xff00, 0, 0xf000},
		{core.OpAnd8, 1<<40 | 0xff, 0xf, 0, 0xf},
	}
	// placements: (issuer, target owner, result owner)
	placements := [][3]int{{0, 0, 0}, {0, 1, 0}, {0, 0, 1}, {0, 1, 2}, {0, 1, 1}}
	const targetOff, resultOff = 64, 128
	for _, c := range cases {
		for _, pl := range placements {
			width := c.op.Width()
			for r := range w.Engines {
				clear(starter(w, r)[:256])
			}
			tb := starter(w, pl[1])
			if width == 4 {
				binary.LittleEndian.PutUint32(tb[targetOff:], uint32(c.init))
			} else {
				binary.LittleEndian.PutUint64(tb[targetOff:], c.init)
			}
			w.Run(func(r int, e *core.Engine) error {
				if r == pl[0] {
					h, err := s.ops(e).Atomic(c.op, sga(e, pl[2], resultOff), sga(e, pl[1], targetOff), c.a, c.b, core.HandleNull)
					if err != nil {
						return err
					}
					s.ops(e).Complete(h)
				}
				return s.ops(e).Sync()
			})
			var gotOld, gotAfter uint64
			if width == 4 {
				gotOld, gotAfter = uint64(word4(starter(w, pl[2]), resultOff)), uint64(word4(starter(w, pl[1]), targetOff))
			} else {
				gotOld, gotAfter = word8(starter(w, pl[2]), resultOff), word8(starter(w, pl[1]), targetOff)
			}
			assert.Equal(t, c.init, gotOld, "%s placement %v: fetched value", c.op, pl)
			assert.Equal(t, c.wantAfter, gotAfter, "%s placement %v: value after", c.op, pl)
		}
	}
	for r, e := range w.Engines {
		assert.Zero(t, e.Errors(), "rank %d errors", r)
	}
}

// testAtomicContention has every rank add to one counter perRank times and
// increment another through compare-and-swap loops perRank/2 times.
// ACP_CONTENTION_OPS=N sets perRank (2000; even): over an emulated adapter
// each operation is tens of microseconds.
func testAtomicContention(t *testing.T, w *coretest.World, s suite) {
	perRank := int(coretest.EnvNumber(t, "ACP_CONTENTION_OPS", 2000)) &^ 1
	w.Run(func(r int, e *core.Engine) error {
		var hs []core.Handle
		for i := 0; i < perRank; i++ {
			h, err := s.ops(e).Atomic(core.OpAdd8, sga(e, r, 1024+8*uint64(i%32)), sga(e, 0, 0), 1, 0, core.HandleNull)
			if err != nil {
				return err
			}
			hs = append(hs, h)
			if i%2 == 0 {
				// 4-byte counter at offset 8 through cas loops: exercises
				// fetch, compare, retry across ranks.
				for {
					h, err := s.ops(e).Atomic(core.OpAdd4, sga(e, r, 600), sga(e, 0, 8), 0, 0, core.HandleNull)
					if err != nil {
						return err
					}
					s.ops(e).Complete(h)
					cur := word4(e.StarterMemory(core.SegStarter), 600)
					h, err = s.ops(e).Atomic(core.OpCas4, sga(e, r, 604), sga(e, 0, 8), uint64(cur), uint64(cur+1), core.HandleNull)
					if err != nil {
						return err
					}
					s.ops(e).Complete(h)
					if word4(e.StarterMemory(core.SegStarter), 604) == cur {
						break
					}
				}
			}
		}
		s.ops(e).Complete(core.HandleAll)
		return s.ops(e).Sync()
	})
	assert.Equal(t, uint64(perRank*len(w.Engines)), word8(starter(w, 0), 0), "add8 sum")
	assert.Equal(t, uint32(perRank/2*len(w.Engines)), word4(starter(w, 0), 8), "cas4 increments")
}

func testOrderingChains(t *testing.T, w *coretest.World, s suite) {
	const n = 5000
	for _, mode := range []string{"handle", "all", "cont"} {
		for r := range w.Engines {
			clear(starter(w, r))
		}
		fill(starter(w, 0)[:n], 99)
		w.Run(func(r int, e *core.Engine) error {
			if r != 0 {
				return s.ops(e).Sync()
			}
			// 0 → 1 → 2 → 1 (second region) → 0 (second region): each step
			// must start after the previous one completed.
			h, err := s.ops(e).Copy(sga(e, 1, 0), sga(e, 0, 0), n, core.HandleNull)
			if err != nil {
				return err
			}
			steps := [][2]core.GA{
				{sga(e, 2, 0), sga(e, 1, 0)},
				{sga(e, 1, 10000), sga(e, 2, 0)},
				{sga(e, 0, 10000), sga(e, 1, 10000)},
			}
			for _, step := range steps {
				order := h
				switch mode {
				case "all":
					order = core.HandleAll
				case "cont":
					order = core.HandleCont
				}
				if h, err = s.ops(e).Copy(step[0], step[1], n, order); err != nil {
					return err
				}
			}
			s.ops(e).Complete(h)
			if err := check(!s.ops(e).Inquire(core.HandleAll), "complete(last) left earlier handles incomplete"); err != nil {
				return err
			}
			return s.ops(e).Sync()
		})
		assert.Equal(t, starter(w, 0)[:n], starter(w, 0)[10000:10000+n], "chain with order=%s", mode)
	}
}

func testCompleteAndInquire(t *testing.T, w *coretest.World, s suite) {
	w.Run(func(r int, e *core.Engine) error {
		if err := check(!s.ops(e).Inquire(core.HandleNull), "inquire(NULL) must be 0"); err != nil {
			return err
		}
		s.ops(e).Complete(core.HandleNull)
		last := e.LastIssued()
		s.ops(e).Complete(last + 1000) // never issued: must return
		if err := check(!s.ops(e).Inquire(last+1000), "inquire(never issued) must be 0"); err != nil {
			return err
		}
		var hs []core.Handle
		for i := 0; i < 50; i++ {
			h, err := s.ops(e).Copy(sga(e, 1-r, uint64(i)*8), sga(e, r, 0), 8, core.HandleNull)
			if err != nil {
				return err
			}
			if len(hs) > 0 && h != hs[len(hs)-1]+1 {
				return fmt.Errorf("handles not consecutive: %d after %d", h, hs[len(hs)-1])
			}
			hs = append(hs, h)
		}
		s.ops(e).Complete(hs[25])
		for _, h := range hs[:26] {
			if s.ops(e).Inquire(h) {
				return fmt.Errorf("handle %d incomplete after complete(%d)", h, hs[25])
			}
		}
		s.ops(e).Complete(core.HandleAll)
		if s.ops(e).Inquire(core.HandleAll) || s.ops(e).Inquire(hs[49]) {
			return fmt.Errorf("incomplete after complete(ALL)")
		}
		return s.ops(e).Sync()
	})
}

func testRemoteAccessErrors(t *testing.T, w *coretest.World, s suite) {
	const size = 65536
	fill(starter(w, 1), 5)
	before := append([]byte(nil), starter(w, 1)...)
	fill(starter(w, 0), 6)
	w.Run(func(r int, e *core.Engine) error {
		if r == 0 {
			l := e.Layout()
			bad := []struct {
				what string
				dst  core.GA
				n    uint64
			}{
				{"beyond the region", sga(e, 1, size-10), 11},
				{"far beyond the region", sga(e, 1, 40000), 60000},
				{"unknown segment", l.Encode(1, 0, 100, 0), 8},
			}
			for _, b := range bad {
				errsBefore := e.Errors()
				h, err := s.ops(e).Copy(b.dst, sga(e, 0, 0), b.n, core.HandleNull)
				if err != nil {
					return fmt.Errorf("%s: issue failed, want an error completion: %v", b.what, err)
				}
				s.ops(e).Complete(h)
				if e.Errors() != errsBefore+1 {
					return fmt.Errorf("%s: put completed without an error", b.what)
				}
				// get from a bad range must fail too, and leave our memory alone
				errsBefore = e.Errors()
				h, err = s.ops(e).Copy(sga(e, 0, 0), b.dst, min(b.n, 1000), core.HandleNull)
				if err != nil {
					return err
				}
				s.ops(e).Complete(h)
				if b.n <= 1000 && e.Errors() != errsBefore+1 {
					return fmt.Errorf("%s: get completed without an error", b.what)
				}
			}
			// atomics on bad targets
			errsBefore := e.Errors()
			h, err := s.ops(e).Atomic(core.OpAdd8, sga(e, 0, 0), sga(e, 1, size), 1, 0, core.HandleNull)
			if err != nil {
				return err
			}
			s.ops(e).Complete(h)
			if e.Errors() != errsBefore+1 {
				return fmt.Errorf("atomic beyond the region completed without an error")
			}
			// Atomics whose result location the owner refuses fail whole:
			// the target keeps its value (rank 1's is compared below).
			mine := binary.LittleEndian.Uint64(starter(w, 0)[8:])
			for _, tgt := range []core.GA{sga(e, 1, 0), sga(e, 0, 8)} {
				for _, op := range []core.AtomicOp{core.OpAdd8, core.OpSwap4, core.OpXor8} {
					errsBefore := e.Errors()
					h, err := s.ops(e).Atomic(op, sga(e, 1, size), tgt, 0x5a5a5a5a, 0, core.HandleNull)
					if err != nil {
						return fmt.Errorf("%s with a refused result location: issue failed, want an error completion: %v", op, err)
					}
					s.ops(e).Complete(h)
					if e.Errors() != errsBefore+1 {
						return fmt.Errorf("%s with a refused result location completed without an error", op)
					}
				}
			}
			if got := binary.LittleEndian.Uint64(starter(w, 0)[8:]); got != mine {
				return fmt.Errorf("atomics whose result location was refused changed their target here: %#x, was %#x", got, mine)
			}
			// issue-time errors
			if _, err := s.ops(e).Copy(core.GANull, sga(e, 0, 0), 1, core.HandleNull); err == nil {
				return fmt.Errorf("copy to ACP_GA_NULL accepted")
			}
			if _, err := s.ops(e).Copy(sga(e, 1, 0), sga(e, 0, size-1), 2, core.HandleNull); err == nil {
				return fmt.Errorf("copy from beyond the local region accepted")
			}
			if _, err := s.ops(e).Atomic(core.OpAdd8, sga(e, 0, 0), sga(e, 1, 4), 1, 0, core.HandleNull); err == nil {
				return fmt.Errorf("misaligned atomic accepted")
			}
			if _, err := s.ops(e).Copy(sga(e, 1, 0), sga(e, 0, 0), 1, e.LastIssued()+5); err == nil {
				return fmt.Errorf("order on a future handle accepted")
			}
		}
		return s.ops(e).Sync()
	})
	assert.Equal(t, before, starter(w, 1), "rejected accesses changed the owner's memory")
}

// testCarriedKeys: a read with the key its owner packed (Engine.PackKey,
// CopyCarried) copies what an ordinary read copies and stays within the
// registration; a key that names another registration is ignored, and so
// is none. Over transports without keys to carry (PackKey reports none)
// every such copy is an ordinary one.
func testCarriedKeys(t *testing.T, w *coretest.World, s suite) {
	const size = 4096
	mem := coretest.CMem(t, 3*size)
	a, b := mem[:size], mem[2*size:] // rank 1's, a page apart
	fill(a, 11)
	fill(b, 12)
	// Registered and packed before the ranks run (w.Run orders it before
	// their reads).
	owner := w.Engines[1]
	keyA, err := owner.Register(unsafe.Pointer(&a[0]), size, 0)
	require.NoError(t, err)
	keyB, err := owner.Register(unsafe.Pointer(&b[0]), size, 0)
	require.NoError(t, err)
	var packed core.CarriedKey
	require.False(t, owner.PackKey(keyA, 1, &packed), "a key was packed for its owner itself")
	owner.PackKey(keyA, 0, &packed)
	w.Run(func(r int, e *core.Engine) error {
		if r == 0 {
			mine := e.StarterMemory(core.SegStarter)
			read := func(what string, src core.GA, n uint64, k *core.CarriedKey, want []byte) error {
				clear(mine[:2*size])
				errs := e.Errors()
				h, err := e.CopyCarried(sga(e, 0, 0), src, n, k)
				if err != nil {
					return fmt.Errorf("%s: %v", what, err)
				}
				e.Complete(h)
				if want == nil {
					if e.Errors() != errs+1 {
						return fmt.Errorf("%s: completed without an error", what)
					}
					return check(bytes.Equal(mine[:2*size], make([]byte, 2*size)), "%s: the refused read wrote our memory", what)
				}
				if e.Errors() != errs {
					return fmt.Errorf("%s: completed with an error", what)
				}
				return check(bytes.Equal(mine[:n], want) && bytes.Equal(mine[n:2*size], make([]byte, 2*size-int(n))), "%s: wrong bytes", what)
			}
			if err := read("the whole registration", keyA, size, &packed, a); err != nil {
				return err
			}
			if err := read("1000 bytes at offset 100", keyA+100, 1000, &packed, a[100:1100]); err != nil {
				return err
			}
			if err := read("beyond the registration", keyA+size-100, 200, &packed, nil); err != nil {
				return err
			}
			if err := read("another registration with A's key", keyB, size, &packed, b); err != nil {
				return err
			}
			if err := read("no key", keyA+8, 8, &core.CarriedKey{}, a[8:16]); err != nil {
				return err
			}
			if err := read("a nil key", keyB+16, 16, nil, b[16:32]); err != nil {
				return err
			}
		}
		return nil
	})
	require.NoError(t, owner.Unregister(keyA))
	require.NoError(t, owner.Unregister(keyB))
}

func testRegisteredMemory(t *testing.T, w *coretest.World, s suite) {
	// Rank 1 registers a C-like buffer (outside the Go heap), publishes its
	// GA in its starter memory; rank 0 writes into it; rank 1 unregisters;
	// a later write must fail and leave the memory alone.
	buf := make([]byte, 4096) // Go memory is fine here: engines only use pointers
	var key core.GA
	w.Run(func(r int, e *core.Engine) error {
		if r == 1 {
			var err error
			key, err = e.Register(unsafe.Pointer(&buf[0]), uint64(len(buf)), 0)
			if err != nil {
				return err
			}
			ga, err := e.QueryGA(key, unsafe.Pointer(&buf[100]))
			if err != nil {
				return err
			}
			if ga != key+100 {
				return fmt.Errorf("QueryGA not linear: %#x vs key %#x", ga, key)
			}
			p, err := e.QueryAddress(ga)
			if err != nil || p != unsafe.Pointer(&buf[100]) {
				return fmt.Errorf("QueryAddress(%#x) = %p, %v", ga, p, err)
			}
			binary.LittleEndian.PutUint64(e.StarterMemory(core.SegStarter), uint64(ga))
		}
		if err := s.ops(e).Sync(); err != nil {
			return err
		}
		if r == 0 {
			h, err := s.ops(e).Copy(sga(e, 0, 8), sga(e, 1, 0), 8, core.HandleNull)
			if err != nil {
				return err
			}
			s.ops(e).Complete(h)
			ga := core.GA(word8(e.StarterMemory(core.SegStarter), 8))
			copy(e.StarterMemory(core.SegStarter)[64:], "registered memory reached")
			if h, err = s.ops(e).Copy(ga, sga(e, 0, 64), 25, core.HandleNull); err != nil {
				return err
			}
			s.ops(e).Complete(h)
		}
		if err := s.ops(e).Sync(); err != nil {
			return err
		}
		if r == 1 {
			if string(buf[100:125]) != "registered memory reached" {
				return fmt.Errorf("registered buffer holds %q", buf[100:125])
			}
			if err := e.Unregister(key); err != nil {
				return err
			}
			if err := e.Unregister(key); err == nil {
				return fmt.Errorf("second unregister of the same key succeeded")
			}
			clear(buf)
		}
		if err := s.ops(e).Sync(); err != nil {
			return err
		}
		if r == 0 {
			ga := core.GA(word8(e.StarterMemory(core.SegStarter), 8))
			before := e.Errors()
			h, err := s.ops(e).Copy(ga, sga(e, 0, 64), 25, core.HandleNull)
			if err != nil {
				return err
			}
			s.ops(e).Complete(h)
			if e.Errors() != before+1 {
				return fmt.Errorf("write to unregistered memory completed without an error")
			}
		}
		return s.ops(e).Sync()
	})
	assert.Equal(t, make([]byte, 4096), buf, "unregistered buffer was written")
}

// testReadOnlyRegistration: memory that is read-only when registered (a
// constant table, a file mapped PROT_READ) is registered all the same.
// Every rank reads it, the owner too, and a third party copies out of it;
// every write into it and every atomic on it, and every read into it by
// its owner, completes with an error and leaves it unchanged; afterwards
// each rank's traffic to the owner still works (over ib a write the
// adapter refused would have ended the connection).
func testReadOnlyRegistration(t *testing.T, w *coretest.World, s suite) {
	const size = 2 * 4096
	ro := coretest.CMem(t, size)
	fill(ro, 77)
	want := append([]byte(nil), ro...)
	require.NoError(t, unix.Mprotect(ro, unix.PROT_READ))
	key, err := w.Engines[1].Register(unsafe.Pointer(&ro[0]), size, 0)
	require.NoError(t, err, "registering memory mapped read-only")
	w.Run(func(r int, e *core.Engine) error {
		failed := func(what string, issue func() (core.Handle, error)) error {
			before := e.Errors()
			h, err := issue()
			if err != nil {
				return fmt.Errorf("%s: issue failed, want an error completion: %v", what, err)
			}
			s.ops(e).Complete(h)
			return check(e.Errors() == before+1, "rank %d: %s completed without an error", r, what)
		}
		mine := e.StarterMemory(core.SegStarter)
		// Reads: whole, and a piece at an odd offset.
		clear(mine[:size])
		h, err := s.ops(e).Copy(sga(e, r, 0), key, size, core.HandleNull)
		if err != nil {
			return err
		}
		s.ops(e).Complete(h)
		if !bytes.Equal(mine[:size], want) {
			return fmt.Errorf("rank %d read other bytes than the read-only region holds", r)
		}
		clear(mine[:size])
		if h, err = s.ops(e).Copy(sga(e, r, 3), key+4093, 300, core.HandleNull); err != nil {
			return err
		}
		s.ops(e).Complete(h)
		if !bytes.Equal(mine[3:303], want[4093:4393]) {
			return fmt.Errorf("rank %d read other bytes than the read-only region holds (300 at offset 4093)", r)
		}
		// Writes of several sizes, one of them two at once.
		fill(mine[:size], uint64(100+r))
		for _, n := range []uint64{8, 1, 4096, size} {
			if err := failed(fmt.Sprintf("a copy of %d bytes into read-only memory", n), func() (core.Handle, error) {
				return s.ops(e).Copy(key+core.GA((size-n)/2), sga(e, r, 0), n, core.HandleNull)
			}); err != nil {
				return err
			}
		}
		before := e.Errors()
		for i := uint64(0); i < 2; i++ {
			if _, err := s.ops(e).Copy(key+core.GA(512*i), sga(e, r, 0), 512, core.HandleNull); err != nil {
				return err
			}
		}
		s.ops(e).Complete(core.HandleAll)
		if e.Errors() != before+2 {
			return fmt.Errorf("rank %d: two copies into read-only memory at once: %d errors, want 2", r, e.Errors()-before)
		}
		// Atomics of every width, kind and path (a compare-and-swap that
		// would succeed: one that fails writes nothing). Not under the
		// race detector, which runs atomics in its C runtime, where a
		// fault cannot be recovered.
		if !raceedge.Enabled {
			for op := core.OpCas4; op <= core.OpAnd8; op++ {
				off := uint64(64 + 8*int(op))
				cur := binary.LittleEndian.Uint64(want[off:])
				if op.Width() == 4 {
					cur = uint64(binary.LittleEndian.Uint32(want[off:]))
				}
				if err := failed(fmt.Sprintf("%s on read-only memory", op), func() (core.Handle, error) {
					return s.ops(e).Atomic(op, sga(e, r, size+8), key+core.GA(off), cur, cur+1, core.HandleNull)
				}); err != nil {
					return err
				}
			}
		}
		switch r {
		case 0:
			// A third party copies out of it, and into it (rank 2's
			// memory beyond what rank 2 uses itself).
			if h, err = s.ops(e).Copy(sga(e, 2, 3*size), key+100, 64, core.HandleNull); err != nil {
				return err
			}
			s.ops(e).Complete(h)
			if err := failed("a third party's copy into read-only memory", func() (core.Handle, error) {
				return s.ops(e).Copy(key+200, sga(e, 2, 3*size+64), 64, core.HandleNull)
			}); err != nil {
				return err
			}
		case 1:
			// The owner reads into it: from a peer and from itself.
			for _, src := range []core.GA{sga(e, 0, 0), sga(e, 1, 0)} {
				for _, n := range []uint64{8, size} {
					if err := failed(fmt.Sprintf("a read of %d bytes into the owner's read-only memory", n), func() (core.Handle, error) {
						return s.ops(e).Copy(key, src, n, core.HandleNull)
					}); err != nil {
						return err
					}
				}
			}
		}
		if err := s.ops(e).Sync(); err != nil {
			return err
		}
		if r == 2 {
			if !bytes.Equal(mine[3*size:3*size+64], want[100:164]) {
				return fmt.Errorf("a third party's copy out of read-only memory delivered other bytes")
			}
		}
		// The owner is reached as before.
		if r != 1 {
			binary.LittleEndian.PutUint64(mine[size:], uint64(0xabc0+r))
			if h, err = s.ops(e).Copy(sga(e, 1, size+16+8*uint64(r)), sga(e, r, size), 8, core.HandleNull); err != nil {
				return err
			}
			s.ops(e).Complete(h)
		}
		if err := s.ops(e).Sync(); err != nil {
			return err
		}
		if r == 1 {
			for _, p := range []int{0, 2} {
				if got := binary.LittleEndian.Uint64(mine[size+16+8*p:]); got != uint64(0xabc0+p) {
					return fmt.Errorf("rank %d's copy after the refused ones delivered %#x", p, got)
				}
			}
			if err := e.Unregister(key); err != nil {
				return err
			}
		}
		return s.ops(e).Sync()
	})
	assert.True(t, bytes.Equal(want, ro), "read-only memory changed")
}

func testBackPressure(t *testing.T, w *coretest.World, s suite) {
	// queue depth 8: issuing 500 operations without completing must make
	// progress by itself, drop nothing and not deadlock.
	w.Run(func(r int, e *core.Engine) error {
		for i := 0; i < 500; i++ {
			if _, err := s.ops(e).Atomic(core.OpAdd8, sga(e, r, 1024), sga(e, 1-r, 8*uint64(r)), 1, 0, core.HandleNull); err != nil {
				return err
			}
			if i%7 == 0 {
				if _, err := s.ops(e).Copy(sga(e, 1-r, 4096+uint64(r)*8), sga(e, r, 1024), 8, core.HandleAll); err != nil {
					return err
				}
			}
		}
		return s.ops(e).Sync()
	})
	for r := range w.Engines {
		assert.Equal(t, uint64(500), word8(starter(w, 1-r), 8*r))
	}
}

func testBarriers(t *testing.T, w *coretest.World, s suite) {
	// Each rank bumps a counter on every rank before each barrier; after
	// barrier k every counter must be exactly k*N. In the last rounds the
	// second barrier follows a pause with nothing issued: the progress
	// threads fall asleep, and a barrier's puts (core.PolledPutter) are
	// seen complete by the next barrier's own polling, not by them.
	const rounds, paused = 20, 3
	w.Run(func(r int, e *core.Engine) error {
		n := e.Procs()
		for k := 1; k <= rounds+paused; k++ {
			for p := 0; p < n; p++ {
				if _, err := s.ops(e).Atomic(core.OpAdd8, sga(e, r, 2048), sga(e, p, 0), 1, 0, core.HandleNull); err != nil {
					return err
				}
			}
			if err := s.ops(e).Sync(); err != nil {
				return err
			}
			if got := word8(e.StarterMemory(core.SegStarter), 0); got != uint64(k*n) {
				return fmt.Errorf("after barrier %d the counter is %d, want %d", k, got, k*n)
			}
			if k > rounds {
				time.Sleep(time.Duration(10+10*r) * time.Millisecond)
			}
			if err := s.ops(e).Sync(); err != nil {
				return err
			}
		}
		return nil
	})
}

func testPassiveTarget(t *testing.T, w *coretest.World, s suite) {
	// The other ranks' atomics on rank 0's memory, first while rank 0
	// waits in a barrier (its progress thread may then sleep differently,
	// leaving the arrivals to the polling wait), then while rank 0 does not
	// call the library: those must be served by its progress thread alone,
	// and each rank says so with a put that rank 0 watches for with plain
	// loads. The limit is generous: under injected loss on a loaded
	// machine, retransmissions have taken over a second.
	const perRank, limit = 20, 30 * time.Second
	w.Run(func(r int, e *core.Engine) error {
		n := e.Procs()
		if err := s.ops(e).Sync(); err != nil {
			return err
		}
		add := func(phase int) error {
			for i := 0; i < perRank; i++ {
				h, err := s.ops(e).Atomic(core.OpAdd8, sga(e, r, 1024), sga(e, 0, 0), 1, 0, core.HandleNull)
				if err != nil {
					return err
				}
				s.ops(e).Complete(h)
				if got := word8(e.StarterMemory(core.SegStarter), 1024); got >= uint64(phase*perRank*(n-1)) {
					return fmt.Errorf("add8 %d of phase %d fetched %d from a counter that cannot exceed %d yet", i, phase, got, phase*perRank*(n-1)-1)
				}
			}
			return nil
		}
		if r != 0 {
			if err := add(1); err != nil {
				return err
			}
		}
		if err := s.ops(e).Sync(); err != nil {
			return err
		}
		if r == 0 {
			mem := e.StarterMemory(core.SegStarter)
			deadline := time.Now().Add(limit)
			for p := 1; p < n; p++ {
				for atomic.LoadUint64((*uint64)(unsafe.Pointer(&mem[64+8*p]))) != 1 && time.Now().Before(deadline) {
					time.Sleep(time.Millisecond)
				}
				if got := atomic.LoadUint64((*uint64)(unsafe.Pointer(&mem[64+8*p]))); got != 1 {
					return fmt.Errorf("rank %d had not completed its %d atomics on rank 0 after %v in which rank 0 did not call the library (mark %d)", p, perRank, limit, got)
				}
			}
		} else {
			if err := add(2); err != nil {
				return err
			}
			binary.LittleEndian.PutUint64(e.StarterMemory(core.SegStarter)[2048:], 1)
			h, err := s.ops(e).Copy(sga(e, 0, 64+8*uint64(r)), sga(e, r, 2048), 8, core.HandleNull)
			if err != nil {
				return err
			}
			s.ops(e).Complete(h)
		}
		return s.ops(e).Sync()
	})
	assert.Equal(t, uint64(2*perRank*(len(w.Engines)-1)), word8(starter(w, 0), 0), "add8 sum on the passive rank")
}

func testConcurrentIssuers(t *testing.T, w *coretest.World, s suite) {
	const threads, per = 4, 300
	w.Run(func(r int, e *core.Engine) error {
		var wg sync.WaitGroup
		errs := make(chan error, threads)
		for th := 0; th < threads; th++ {
			wg.Add(1)
			go func(th int) {
				defer wg.Done()
				for i := 0; i < per; i++ {
					peer := (r + 1 + i) % e.Procs()
					h, err := s.ops(e).Atomic(core.OpAdd8, sga(e, r, 4096+uint64(th)*8), sga(e, peer, 0), 1, 0, core.HandleNull)
					if err != nil {
						errs <- err
						return
					}
					if i%3 == 0 {
						s.ops(e).Complete(h)
					}
					if _, err := s.ops(e).Copy(sga(e, peer, 1024+uint64(r*threads+th)*8), sga(e, r, 4096+uint64(th)*8), 8, core.HandleNull); err != nil {
						errs <- err
						return
					}
					s.ops(e).Inquire(h)
				}
				s.ops(e).Complete(core.HandleAll)
			}(th)
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			return err
		}
		return s.ops(e).Sync()
	})
	var total uint64
	for r := range w.Engines {
		total += word8(starter(w, r), 0)
	}
	assert.Equal(t, uint64(threads*per*len(w.Engines)), total)
}

func testReset(t *testing.T, w *coretest.World, s suite) {
	n := len(w.Engines)
	// Not a permutation: everybody fails, nothing changes.
	w.Run(func(r int, e *core.Engine) error {
		starter := e.StarterMemory(core.SegStarter)
		starter[0] = 42
		if err := e.Reset(0); err == nil {
			return fmt.Errorf("reset to a non-permutation succeeded")
		}
		if e.Rank() != r || starter[0] != 42 {
			return fmt.Errorf("failed reset changed rank or memory")
		}
		return s.ops(e).Sync()
	})
	// Reverse the ranks.
	w.Run(func(r int, e *core.Engine) error {
		if _, err := s.ops(e).Copy(sga(e, (r+1)%n, 8), sga(e, r, 0), 8, core.HandleNull); err != nil {
			return err
		}
		if err := e.Reset(n - 1 - r); err != nil {
			return err
		}
		if e.Rank() != n-1-r {
			return fmt.Errorf("rank %d after reset, want %d", e.Rank(), n-1-r)
		}
		if e.LastIssued() != 0 {
			return fmt.Errorf("handles did not restart: last issued %d", e.LastIssued())
		}
		for i, b := range e.StarterMemory(core.SegStarter) {
			if b != 0 {
				return fmt.Errorf("starter memory byte %d is %d after reset", i, b)
			}
		}
		if err := s.ops(e).Sync(); err != nil {
			return err
		}
		// Write our new rank into the starter memory of new rank (me+1).
		me := e.Rank()
		binary.LittleEndian.PutUint64(e.StarterMemory(core.SegStarter)[256:], uint64(me)+1000)
		h, err := s.ops(e).Copy(sga(e, (me+1)%n, 0), sga(e, me, 256), 8, core.HandleNull)
		if err != nil {
			return err
		}
		if h != 1 {
			return fmt.Errorf("first handle after reset is %d, want 1", h)
		}
		return s.ops(e).Sync()
	})
	for r := range w.Engines {
		newRank := n - 1 - r
		from := (newRank - 1 + n) % n
		assert.Equal(t, uint64(from)+1000, word8(starter(w, r), 0), "process %d (new rank %d)", r, newRank)
	}
}

func testLargeCopy(t *testing.T, w *coretest.World, s suite) {
	const n = 4<<20 + 13
	fill(starter(w, 0)[:n], 77)
	w.Run(func(r int, e *core.Engine) error {
		if r == 1 {
			// get then put back to a second place
			h, err := s.ops(e).Copy(sga(e, 1, 0), sga(e, 0, 0), n, core.HandleNull)
			if err != nil {
				return err
			}
			if _, err = s.ops(e).Copy(sga(e, 0, 4<<20+100), sga(e, 1, 0), 100000, h); err != nil {
				return err
			}
			s.ops(e).Complete(core.HandleAll)
		}
		return s.ops(e).Sync()
	})
	assert.True(t, bytes.Equal(starter(w, 0)[:n], starter(w, 1)[:n]), "4 MiB get")
	assert.True(t, bytes.Equal(starter(w, 0)[:100000], starter(w, 0)[4<<20+100:4<<20+100100]), "ordered put back")
}
