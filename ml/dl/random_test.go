package dl_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/libacp/libacp/core"
	"github.com/libacp/libacp/core/coretest"
	"github.com/libacp/libacp/ml/dl"
	_ "github.com/libacp/libacp/shm"
	_ "github.com/libacp/libacp/udp"
)

// Random operations on two vectors and two deques placed on different
// ranks, each called by a random rank, with bytes from random ranks'
// memory; after every operation each container's size and bytes must be a
// model's (spec §2.9–2.10: inserts at min(index, size), erases that
// truncate at the end, pops of at most the size, ranges from another
// container or, for vectors, from the same one). Growth, wrap-around,
// linearisation and bodies moving between ranks are all in play.
//
// ACP_RANDOM_DL_SEED=N draws other operations (a soak); a failure names
// the seed and the operation.
func TestRandomSequences(t *testing.T) {
	seed := coretest.EnvNumber(t, "ACP_RANDOM_DL_SEED", 20261128)
	for _, transport := range []string{"memnet", "shm", "udp"} {
		t.Run(transport, func(t *testing.T) { randomSequences(t, transport, seed) })
	}
}

// seqModel is what a sequence container holds.
type seqModel struct{ b []byte }

func (m *seqModel) insert(at int, p []byte) {
	at = min(at, len(m.b))
	m.b = append(m.b[:at], append(append([]byte(nil), p...), m.b[at:]...)...)
}

func (m *seqModel) erase(at int, n uint64) {
	if n >= uint64(len(m.b)-at) {
		m.b = m.b[:at]
		return
	}
	m.b = append(m.b[:at], m.b[at+int(n):]...)
}

func randomSequences(t *testing.T, transport string, seed uint64) {
	const n, steps = 3, 400
	w, ls, src, gas := libsOn(t, transport, n, "size-smem-dl=4194304")
	srcBytes := len(src[0]) // the starter memory: where operations read from
	rng := rand.New(rand.NewPCG(seed, 17))
	for r := range n {
		for i := range src[r] {
			src[r][i] = byte(rng.Uint32())
		}
	}
	vs := []dl.Vector{}
	ds := []dl.Deque{}
	for _, r := range []int{0, 2} {
		v, err := ls[1].CreateVector(0, r)
		require.NoError(t, err)
		vs = append(vs, v)
	}
	for _, r := range []int{1, 2} {
		d, err := ls[0].CreateDeque(16, r)
		require.NoError(t, err)
		ds = append(ds, d)
	}
	vm := []*seqModel{{}, {}}
	dm := []*seqModel{{}, {}}

	// bytesFrom draws a source: k bytes of some rank's memory.
	bytesFrom := func() (core.GA, []byte) {
		r := rng.IntN(n)
		k := rng.IntN(120)
		if rng.IntN(8) == 0 {
			k = rng.IntN(srcBytes)
		}
		off := rng.IntN(srcBytes - k + 1)
		return gas[r] + core.GA(off), src[r][off : off+k]
	}
	index := func(size int) int { return rng.IntN(size + 3) }

	for step := range steps {
		l := ls[rng.IntN(n)]
		var what string
		var err error
		if rng.IntN(2) == 0 {
			i := rng.IntN(2)
			v, m := vs[i], vm[i]
			switch k := rng.IntN(12); k {
			case 0, 1, 2:
				ga, p := bytesFrom()
				what = fmt.Sprintf("push_back_vector %d of %d bytes", i, len(p))
				if err = l.PushBackVector(v, ga, uint64(len(p))); err == nil {
					m.insert(len(m.b), p)
				}
			case 3:
				k := uint64(rng.IntN(len(m.b) + 10))
				what = fmt.Sprintf("pop_back_vector %d of %d bytes", i, k)
				if err = l.PopBackVector(v, k); err == nil {
					m.b = m.b[:len(m.b)-int(min(k, uint64(len(m.b))))]
				}
			case 4, 5:
				ga, p := bytesFrom()
				at := index(len(m.b))
				what = fmt.Sprintf("insert_vector %d at %d of %d bytes", i, at, len(p))
				if _, err = l.InsertVector(dl.VectorIt{Vector: v, Index: at}, ga, uint64(len(p))); err == nil {
					m.insert(at, p)
				}
			case 6, 7:
				if len(m.b) == 0 {
					continue
				}
				at, k := rng.IntN(len(m.b)), uint64(rng.IntN(len(m.b)+5))
				what = fmt.Sprintf("erase_vector %d at %d, %d bytes", i, at, k)
				if _, err = l.EraseVector(dl.VectorIt{Vector: v, Index: at}, k); err == nil {
					m.erase(at, k)
				}
			case 8:
				j := rng.IntN(2) // the same vector or the other
				sm := vm[j]
				lo := rng.IntN(len(sm.b) + 1)
				hi := lo + rng.IntN(len(sm.b)-lo+1)
				at := index(len(m.b))
				what = fmt.Sprintf("insert_range_vector %d at %d, bytes [%d, %d) of vector %d", i, at, lo, hi, j)
				p := append([]byte(nil), sm.b[lo:hi]...)
				if _, err = l.InsertRangeVector(dl.VectorIt{Vector: v, Index: at}, dl.VectorIt{Vector: vs[j], Index: lo}, dl.VectorIt{Vector: vs[j], Index: hi}); err == nil {
					m.insert(at, p)
				}
			case 9:
				what = fmt.Sprintf("assign_vector %d := %d", i, 1-i)
				if err = l.AssignVector(v, vs[1-i]); err == nil {
					m.b = append([]byte(nil), vm[1-i].b...)
				}
			case 10:
				what = "swap_vector"
				if err = l.SwapVector(vs[0], vs[1]); err == nil {
					vm[0], vm[1] = vm[1], vm[0]
				}
			case 11:
				k := uint64(rng.IntN(3000))
				what = fmt.Sprintf("reserve_vector %d of %d bytes", i, k)
				err = l.ReserveVector(v, k)
			}
		} else {
			i := rng.IntN(2)
			d, m := ds[i], dm[i]
			switch k := rng.IntN(13); k {
			case 0, 1:
				ga, p := bytesFrom()
				what = fmt.Sprintf("push_back_deque %d of %d bytes", i, len(p))
				if err = l.PushBackDeque(d, ga, uint64(len(p))); err == nil {
					m.insert(len(m.b), p)
				}
			case 2, 3:
				ga, p := bytesFrom()
				what = fmt.Sprintf("push_front_deque %d of %d bytes", i, len(p))
				if err = l.PushFrontDeque(d, ga, uint64(len(p))); err == nil {
					m.insert(0, p)
				}
			case 4:
				k := uint64(rng.IntN(len(m.b) + 10))
				what = fmt.Sprintf("pop_back_deque %d of %d bytes", i, k)
				if err = l.PopBackDeque(d, k); err == nil {
					m.b = m.b[:len(m.b)-int(min(k, uint64(len(m.b))))]
				}
			case 5:
				k := uint64(rng.IntN(len(m.b) + 10))
				what = fmt.Sprintf("pop_front_deque %d of %d bytes", i, k)
				if err = l.PopFrontDeque(d, k); err == nil {
					m.b = m.b[min(k, uint64(len(m.b))):]
				}
			case 6, 7:
				ga, p := bytesFrom()
				at := index(len(m.b))
				what = fmt.Sprintf("insert_deque %d at %d of %d bytes", i, at, len(p))
				if _, err = l.InsertDeque(dl.DequeIt{Deque: d, Index: at}, ga, uint64(len(p))); err == nil {
					m.insert(at, p)
				}
			case 8, 9:
				if len(m.b) == 0 {
					continue
				}
				at, k := rng.IntN(len(m.b)), uint64(rng.IntN(len(m.b)+5))
				what = fmt.Sprintf("erase_deque %d at %d, %d bytes", i, at, k)
				if _, err = l.EraseDeque(dl.DequeIt{Deque: d, Index: at}, k); err == nil {
					m.erase(at, k)
				}
			case 10:
				sm := dm[1-i]
				lo := rng.IntN(len(sm.b) + 1)
				hi := lo + rng.IntN(len(sm.b)-lo+1)
				at := index(len(m.b))
				what = fmt.Sprintf("insert_range_deque %d at %d, bytes [%d, %d) of deque %d", i, at, lo, hi, 1-i)
				p := append([]byte(nil), sm.b[lo:hi]...)
				if _, err = l.InsertRangeDeque(dl.DequeIt{Deque: d, Index: at}, dl.DequeIt{Deque: ds[1-i], Index: lo}, dl.DequeIt{Deque: ds[1-i], Index: hi}); err == nil {
					m.insert(at, p)
				}
			case 11:
				what = fmt.Sprintf("assign_deque %d := %d", i, 1-i)
				if err = l.AssignDeque(d, ds[1-i]); err == nil {
					m.b = append([]byte(nil), dm[1-i].b...)
				}
			case 12:
				what = "swap_deque"
				if err = l.SwapDeque(ds[0], ds[1]); err == nil {
					dm[0], dm[1] = dm[1], dm[0]
				}
			}
		}
		require.NoError(t, err, "seed %d, step %d: %s", seed, step, what)
		for i, v := range vs {
			checkVector(t, w, ls[rng.IntN(n)], v, vm[i].b, fmt.Sprintf("seed %d, step %d, after %s: vector %d", seed, step, what, i))
		}
		for i, d := range ds {
			checkDeque(t, w, ls[rng.IntN(n)], d, dm[i].b, fmt.Sprintf("seed %d, step %d, after %s: deque %d", seed, step, what, i))
		}
	}
	for i := range vs {
		require.NoError(t, ls[i].DestroyVector(vs[i]))
		require.NoError(t, ls[2-i].DestroyDeque(ds[i]))
	}
}

func checkVector(t *testing.T, w *coretest.World, l *dl.Library, v dl.Vector, want []byte, what string) {
	size, err := l.SizeVector(v)
	require.NoError(t, err, what)
	require.Equal(t, uint64(len(want)), size, "%s: size", what)
	if size == 0 {
		return
	}
	ga, err := l.AtVector(v, 0)
	require.NoError(t, err, what)
	got := bytesAt(t, w, ga, len(want))
	require.True(t, bytes.Equal(want, got), "%s: bytes differ from byte %d", what, firstDiff(want, got))
}

func checkDeque(t *testing.T, w *coretest.World, l *dl.Library, d dl.Deque, want []byte, what string) {
	size, err := l.SizeDeque(d)
	require.NoError(t, err, what)
	require.Equal(t, uint64(len(want)), size, "%s: size", what)
	if size == 0 {
		return
	}
	p, err := l.DereferenceDequeIt(dl.DequeIt{Deque: d, Index: 0}, size)
	require.NoError(t, err, what)
	require.Equal(t, size, p.First.Size+p.Second.Size, "%s: pieces", what)
	got := append(bytesAt(t, w, p.First.GA, int(p.First.Size)), bytesAt(t, w, p.Second.GA, int(p.Second.Size))...)
	require.True(t, bytes.Equal(want, got), "%s: bytes differ from byte %d", what, firstDiff(want, got))
}

func firstDiff(a, b []byte) int {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	return i
}
