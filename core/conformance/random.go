package conformance

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/libacp/libacp/core"
	"github.com/libacp/libacp/core/coretest"
)

// testRandomOps issues random copies and atomics, valid and invalid, from
// random ranks between random places (starter memory and a registered
// buffer of every rank, so most operations are third-party ones), and
// after every batch compares every byte the ranks own with a model, and
// the guard bytes around each registered buffer with what they held: a
// write outside registered memory, a partial write of a refused
// operation, a lost or doubled atomic all show up as a difference. The
// cases above pin down one rule each; this one finds what they did not
// think of (sizes next to a transport's packet or inline limits, offsets
// next to a region's end, operations that meet in one batch).
//
// A batch is one issuer's: an invalid operation alone (it must fail at
// the call or complete with an error, and change nothing), or up to four
// valid ones, either unordered with disjoint footprints or each ordered
// after the one before (then they may overlap, and apply in order).
//
// Now and then a rank swaps its registration for its other buffer under
// the same segment (swapRegistration).
//
// The draws are the same in every run; ACP_RANDOM_OPS_SEED=N draws
// others and ACP_RANDOM_OPS_BATCHES=N sets how many batches (a soak: run
// the suite with many seeds), and a failure names the seed.
func testRandomOps(t *testing.T, w *coretest.World, s suite) {
	seed, batches := coretest.EnvNumber(t, "ACP_RANDOM_OPS_SEED", 20261128), coretest.EnvNumber(t, "ACP_RANDOM_OPS_BATCHES", 400)
	m := newRandomModel(t, w)
	rng := rand.New(rand.NewPCG(seed, uint64(len(w.Engines))))
	var copies, atomics, third, refused, errored, swaps int
	for b := range int(batches) {
		if rng.IntN(60) == 0 {
			m.swapRegistration(rng.IntN(len(w.Engines)))
			swaps++
		}
		issuer := rng.IntN(len(w.Engines))
		ops := m.batch(rng)
		var log strings.Builder
		fmt.Fprintf(&log, "seed %d, batch %d, issued by rank %d:", seed, b, issuer)
		for _, o := range ops {
			fmt.Fprintf(&log, "\n  %s", o)
		}
		errsBefore := w.Engines[issuer].Errors()
		issueErrs := make([]error, len(ops))
		w.Run(func(r int, e *core.Engine) error {
			if r == issuer {
				hs := make([]core.Handle, 0, len(ops))
				prev := core.HandleNull
				for i, o := range ops {
					order := core.HandleNull
					if o.ordered {
						order = prev
					}
					h, err := m.issue(s.ops(e), o, order)
					issueErrs[i] = err
					if err == nil {
						hs = append(hs, h)
						prev = h
					}
				}
				for _, h := range hs {
					s.ops(e).Complete(h)
				}
			}
			return s.ops(e).Sync()
		})
		failed := w.Engines[issuer].Errors() - errsBefore
		for _, o := range ops {
			if o.atomic {
				atomics++
			} else {
				copies++
			}
			if o.dst.rank != issuer && o.src.rank != issuer {
				third++
			}
		}
		if issueErrs[0] != nil {
			refused++
		}
		errored += int(failed)
		for i, o := range ops {
			if o.valid {
				require.NoError(t, issueErrs[i], "%s\nrefused at the call", log.String())
			}
		}
		if ops[0].valid {
			require.Zero(t, failed, "%s\ncompleted with an error", log.String())
			for _, o := range ops {
				m.apply(o)
			}
		} else if ops[0].n > 0 {
			// Refused at the call or completed with an error, not both
			// and not neither.
			require.True(t, (issueErrs[0] != nil) != (failed == 1), "%s\nrefused at the call: %v; error completions: %d", log.String(), issueErrs[0], failed)
		}
		m.compare(log.String())
	}
	w.Run(func(r int, e *core.Engine) error {
		if err := e.Unregister(m.keys[r]); err != nil {
			return err
		}
		return e.Sync()
	})
	t.Logf("%d batches: %d copies, %d atomics, %d of them third-party; invalid ones: %d refused at the call, %d completed with an error; %d registrations swapped under their segment",
		batches, copies, atomics, third, refused, errored, swaps)
}

// randomEnd is one end of an operation: starter memory (reg 0) or the
// registered buffer (reg 1) of rank, at off; bad says how the GA is made
// invalid (badNone: it is valid when the range fits).
type randomEnd struct {
	rank, reg int
	off       uint64
	bad       int
}

const (
	badNone     = iota
	badSegment  // a segment nobody registered
	badRank     // a rank beyond the job
	badGANull   // ACP_GA_NULL
	badMisalign // atomics: an offset that is not a multiple of the width
)

type randomOp struct {
	atomic   bool
	op       core.AtomicOp
	dst, src randomEnd // atomics: dst is the result, src the target
	n        uint64
	a, b     uint64
	valid    bool
	ordered  bool // after the batch's previous operation
}

func (e randomEnd) String() string {
	where := [...]string{"starter", "registered"}[e.reg]
	bad := [...]string{"", " (unknown segment)", " (rank beyond the job)", " (ACP_GA_NULL)", " (misaligned)"}[e.bad]
	return fmt.Sprintf("rank %d %s+%d%s", e.rank, where, e.off, bad)
}

func (o randomOp) String() string {
	s := fmt.Sprintf("copy %d bytes to %v from %v", o.n, o.dst, o.src)
	if o.atomic {
		s = fmt.Sprintf("%s on %v, result to %v, a=%#x b=%#x", o.op, o.src, o.dst, o.a, o.b)
	}
	if !o.valid {
		s += " [invalid]"
	}
	if o.ordered {
		s += " [ordered after the previous]"
	}
	return s
}

// randomModel holds what every byte should be: each rank's starter
// memory, and its two buffers with guardBytes on either side, of which
// one is registered at a time.
type randomModel struct {
	t      *testing.T
	w      *coretest.World
	layout core.Layout
	keys   []core.GA   // each rank's registration
	cur    []int       // which buffer of the rank's it is
	allocs [][2][]byte // [rank][buffer]: guard, buffer, guard
	want   [][3][]byte // [rank]: starter memory, then the two allocations
}

const (
	guardBytes = 64
	regBytes   = 4000 // not a multiple of 8 or of a page: its end is an odd place
	// Offsets in starter memory are drawn from its first starterSpan
	// bytes, or from its last ones (to meet its end).
	starterSpan = 16384
)

func newRandomModel(t *testing.T, w *coretest.World) *randomModel {
	n := len(w.Engines)
	m := &randomModel{t: t, w: w, layout: w.Engines[0].Layout(), keys: make([]core.GA, n), cur: make([]int, n),
		allocs: make([][2][]byte, n), want: make([][3][]byte, n)}
	for r := range n {
		fill(starter(w, r), uint64(1000+r))
		for i := range m.allocs[r] {
			m.allocs[r][i] = coretest.CMem(t, guardBytes+regBytes+guardBytes)
			fill(m.allocs[r][i], uint64(2000+10*r+i))
		}
	}
	w.Run(func(r int, e *core.Engine) error {
		key, err := e.Register(unsafe.Pointer(&m.allocs[r][0][guardBytes]), regBytes, 0)
		m.keys[r] = key
		if err != nil {
			return err
		}
		return e.Sync()
	})
	for r := range n {
		m.want[r][0] = append([]byte(nil), starter(w, r)...)
		m.want[r][1] = append([]byte(nil), m.allocs[r][0]...)
		m.want[r][2] = append([]byte(nil), m.allocs[r][1]...)
	}
	return m
}

// swapRegistration has rank r unregister its buffer and register its
// other one under the same segment, so under the same GAs (the table
// hands segments out first in, first out: it registers and unregisters
// until the old one comes round). A peer that still used the old
// registration's key or mapping would now reach memory that nobody
// registered, and the comparison would see it.
func (m *randomModel) swapRegistration(r int) {
	m.w.Run(func(rank int, e *core.Engine) error {
		if rank == r {
			old := m.layout.Seg(m.keys[r])
			if err := e.Unregister(m.keys[r]); err != nil {
				return err
			}
			m.cur[r] = 1 - m.cur[r]
			for {
				key, err := e.Register(unsafe.Pointer(&m.allocs[r][m.cur[r]][guardBytes]), regBytes, 0)
				if err != nil {
					return err
				}
				if m.layout.Seg(key) == old {
					m.keys[r] = key
					break
				}
				if err := e.Unregister(key); err != nil {
					return err
				}
			}
		}
		return e.Sync()
	})
}

// size of region reg of rank r.
func (m *randomModel) size(r, reg int) uint64 {
	if reg == 0 {
		return uint64(len(m.want[r][0]))
	}
	return regBytes
}

// model is the model's copy of the n bytes at e.
func (m *randomModel) model(e randomEnd, n uint64) []byte {
	if e.reg == 0 {
		return m.want[e.rank][0][e.off : e.off+n]
	}
	return m.want[e.rank][1+m.cur[e.rank]][guardBytes+e.off : guardBytes+e.off+n]
}

func (m *randomModel) ga(e randomEnd) core.GA {
	switch e.bad {
	case badSegment:
		return m.layout.Encode(e.rank, 0, m.layout.Segments()-1, e.off)
	case badRank:
		return m.layout.Encode(len(m.w.Engines), 0, core.SegStarter, e.off)
	case badGANull:
		return core.GANull
	}
	if e.reg == 0 {
		return m.layout.Encode(e.rank, 0, core.SegStarter, e.off)
	}
	return m.keys[e.rank] + core.GA(e.off)
}

// end draws a valid end for n bytes aligned to align.
func (m *randomModel) end(rng *rand.Rand, n, align uint64) randomEnd {
	e := randomEnd{rank: rng.IntN(len(m.w.Engines)), reg: rng.IntN(2)}
	size := m.size(e.rank, e.reg)
	if n > size {
		e.reg = 0
		size = m.size(e.rank, 0)
	}
	last := size - n // the highest offset that fits
	switch {
	case e.reg == 0 && rng.IntN(8) == 0: // near the end
		e.off = last - min(last, rng.Uint64N(64))
	case e.reg == 0:
		e.off = rng.Uint64N(min(last, starterSpan) + 1)
	default:
		e.off = rng.Uint64N(last + 1)
	}
	e.off -= e.off % align
	return e
}

// spoil makes a valid end for n bytes invalid.
func (m *randomModel) spoil(rng *rand.Rand, e *randomEnd, n, align uint64) {
	switch k := rng.IntN(10); {
	case k < 5 && n > 0: // crosses the region's end
		size := m.size(e.rank, e.reg)
		e.off = size - n + 1 + rng.Uint64N(16)*align
		e.off += (align - e.off%align) % align
	case k < 7:
		e.bad = badSegment
	case k < 8:
		e.bad = badRank
	case k < 9:
		e.bad = badGANull
	default:
		if align > 1 {
			e.bad, e.off = badMisalign, e.off+1+rng.Uint64N(align-1)
		} else {
			e.bad = badSegment
		}
	}
}

func (m *randomModel) randomOp(rng *rand.Rand, valid bool) randomOp {
	var o randomOp
	if rng.IntN(10) < 3 {
		o.atomic = true
		o.op = core.AtomicOp(1 + rng.IntN(12))
		o.n = o.op.Width()
		o.src, o.dst = m.end(rng, o.n, o.n), m.end(rng, o.n, o.n)
		o.a, o.b = rng.Uint64(), rng.Uint64()
		if (o.op == core.OpCas4 || o.op == core.OpCas8) && rng.IntN(2) == 0 {
			o.a = m.word(o.src, o.n) // a compare that succeeds
		}
	} else {
		switch k := rng.IntN(100); {
		case k < 3:
			o.n = 0
		case k < 35:
			o.n = 1 + rng.Uint64N(16)
		case k < 65:
			o.n = 17 + rng.Uint64N(496)
		case k < 93:
			o.n = 513 + rng.Uint64N(2500)
		default:
			o.n = 3001 + rng.Uint64N(6000)
		}
		o.dst, o.src = m.end(rng, o.n, 1), m.end(rng, o.n, 1)
	}
	o.valid = valid
	if !valid {
		align := uint64(1)
		if o.atomic {
			align = o.n
		}
		if rng.IntN(2) == 0 {
			m.spoil(rng, &o.dst, o.n, align)
		} else {
			m.spoil(rng, &o.src, o.n, align)
		}
	}
	return o
}

// word is the model's current value of the n-byte word at e.
func (m *randomModel) word(e randomEnd, n uint64) uint64 {
	if n == 4 {
		return uint64(binary.LittleEndian.Uint32(m.model(e, 4)))
	}
	return binary.LittleEndian.Uint64(m.model(e, 8))
}

// overlap: whether two valid ends' ranges of n and k bytes share a byte.
func overlap(a randomEnd, n uint64, b randomEnd, k uint64) bool {
	return a.rank == b.rank && a.reg == b.reg && a.off < b.off+k && b.off < a.off+n
}

// span is a range an operation touches; write: it changes it.
type span struct {
	end   randomEnd
	n     uint64
	write bool
}

// footprint: what an operation reads and writes (an atomic writes both
// its target and its result).
func (o randomOp) footprint() []span {
	return []span{{o.dst, o.n, true}, {o.src, o.n, o.atomic}}
}

// conflict: whether two footprints share a byte that one of them writes.
func conflict(a, b []span) bool {
	for _, x := range a {
		for _, y := range b {
			if (x.write || y.write) && overlap(x.end, x.n, y.end, y.n) {
				return true
			}
		}
	}
	return false
}

// batch draws the next batch (see testRandomOps).
func (m *randomModel) batch(rng *rand.Rand) []randomOp {
	if rng.IntN(7) == 0 {
		return []randomOp{m.randomOp(rng, false)}
	}
	chain := rng.IntN(3) == 0
	var ops []randomOp
	for n := 1 + rng.IntN(4); len(ops) < n; {
		o := m.randomOp(rng, true)
		fp := o.footprint()
		if overlap(o.dst, o.n, o.src, o.n) {
			continue // a copy onto itself, a result onto its own target
		}
		ok := true
		for _, p := range ops {
			if !chain && conflict(fp, p.footprint()) {
				ok = false
			}
		}
		if !ok {
			continue
		}
		o.ordered = chain && len(ops) > 0
		ops = append(ops, o)
	}
	return ops
}

func (m *randomModel) issue(ops Ops, o randomOp, order core.Handle) (core.Handle, error) {
	if o.atomic {
		return ops.Atomic(o.op, m.ga(o.dst), m.ga(o.src), o.a, o.b, order)
	}
	return ops.Copy(m.ga(o.dst), m.ga(o.src), o.n, order)
}

// apply does a valid operation to the model.
func (m *randomModel) apply(o randomOp) {
	if !o.atomic {
		copy(m.model(o.dst, o.n), m.model(o.src, o.n))
		return
	}
	target, result := m.model(o.src, o.n), m.model(o.dst, o.n)
	old := m.word(o.src, o.n)
	mask := ^uint64(0)
	if o.n == 4 {
		mask = 0xffffffff
	}
	a, b := o.a&mask, o.b&mask
	next := old
	switch o.op {
	case core.OpCas4, core.OpCas8:
		if old == a {
			next = b
		}
	case core.OpSwap4, core.OpSwap8:
		next = a
	case core.OpAdd4, core.OpAdd8:
		next = (old + a) & mask
	case core.OpXor4, core.OpXor8:
		next = old ^ a
	case core.OpOr4, core.OpOr8:
		next = old | a
	case core.OpAnd4, core.OpAnd8:
		next = old & a
	}
	if o.n == 4 {
		binary.LittleEndian.PutUint32(target, uint32(next))
		binary.LittleEndian.PutUint32(result, uint32(old))
	} else {
		binary.LittleEndian.PutUint64(target, next)
		binary.LittleEndian.PutUint64(result, old)
	}
}

// compare fails the test at the first byte that differs from the model.
func (m *randomModel) compare(log string) {
	for r := range m.w.Engines {
		for reg, got := range [][]byte{starter(m.w, r), m.allocs[r][0], m.allocs[r][1]} {
			want := m.want[r][reg]
			if bytes.Equal(got, want) {
				continue
			}
			i := 0
			for got[i] == want[i] {
				i++
			}
			what := fmt.Sprintf("rank %d starter memory at %d", r, i)
			if reg > 0 && reg-1 != m.cur[r] {
				what = fmt.Sprintf("rank %d: byte %d of its buffer that is no longer registered", r, i)
			} else if reg > 0 {
				switch {
				case i < guardBytes:
					what = fmt.Sprintf("rank %d: %d bytes before its registered buffer", r, guardBytes-i)
				case i >= guardBytes+regBytes:
					what = fmt.Sprintf("rank %d: %d bytes after the end of its registered buffer", r, i-guardBytes-regBytes)
				default:
					what = fmt.Sprintf("rank %d registered buffer at %d", r, i-guardBytes)
				}
			}
			require.FailNow(m.t, "memory differs from the model", "%s\n%s: %#x, want %#x", log, what, got[i], want[i])
		}
	}
}
