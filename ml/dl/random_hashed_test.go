package dl_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/libacp/libacp/core"
	"github.com/libacp/libacp/core/coretest"
	"github.com/libacp/libacp/ml/dl"
)

// Random operations on two sets, two multisets and two maps of different
// shapes (tables on every rank or on two, 3 or 5 slots), each called by a
// random rank: inserts (a map's empty value removes), removes, and merges,
// moves, assignments, clears and swaps between the two of a kind, whole
// or of the caller's local tables. After every operation each
// container's elements, walked with its iterators, must be the model's
// keys (map values, multiset counters), its size and local size the
// model's (spec §2.12–2.14; acp_assign_local_* clears only the caller's
// tables, docs Q-DL-5).
//
// ACP_RANDOM_DL_SEED=N draws other operations; a failure names the seed
// and the operation.
func TestRandomHashed(t *testing.T) {
	seed := coretest.EnvNumber(t, "ACP_RANDOM_DL_SEED", 20261128)
	// Over udp every step is some hundred round trips: fewer steps.
	for _, c := range []struct {
		transport string
		steps     int
	}{{"memnet", 300}, {"shm", 300}, {"udp", 100}} {
		t.Run(c.transport, func(t *testing.T) { randomHashed(t, c.transport, seed, c.steps) })
	}
}

// hashedModel is one container's entries: key → multiset counter (1 for
// sets and maps) and map value.
type hashedModel struct {
	count map[string]uint64
	value map[string][]byte
}

func newHashedModel() *hashedModel {
	return &hashedModel{count: map[string]uint64{}, value: map[string][]byte{}}
}

// hashedUnderTest is a container, its shape and its model.
type hashedUnderTest struct {
	kind  dl.Kind
	h     dl.Hashed
	ranks []int // where directory entry i's table lives
	m     *hashedModel
}

// local: whether key's table lives on rank r.
func (c *hashedUnderTest) local(key string, r int) bool {
	h := dl.Hash([]byte(key))
	return c.ranks[(h/c.h.NumSlots)%c.h.NumRanks] == r
}

// insert is the model's insert semantics of the kind.
func (c *hashedUnderTest) insert(key string, count uint64, value []byte) {
	switch c.kind {
	case dl.KindSet:
		c.m.count[key] = 1
	case dl.KindMultiset:
		c.m.count[key] += count
	case dl.KindMap:
		if _, ok := c.m.count[key]; !ok {
			c.m.count[key] = 1
			c.m.value[key] = append([]byte(nil), value...)
		}
	}
}

func (c *hashedUnderTest) remove(key string) {
	delete(c.m.count, key)
	delete(c.m.value, key)
}

// mergeFrom inserts src's entries (those on rank r's tables of src when
// local) and returns their keys.
func (c *hashedUnderTest) mergeFrom(src *hashedUnderTest, local bool, r int) []string {
	var keys []string
	for k, n := range src.m.count {
		if !local || src.local(k, r) {
			keys = append(keys, k)
			c.insert(k, n, src.m.value[k])
		}
	}
	return keys
}

func randomHashed(t *testing.T, transport string, seed uint64, steps int) {
	const n, nkeys, keyRoom, valueBase = 3, 40, 32, 2048
	w, ls, mem, gas := libsOn(t, transport, n, "size-smem-dl=4194304")
	rng := rand.New(rand.NewPCG(seed, 23))
	// The same keys at the same offsets on every rank; values above.
	keys := make([]string, nkeys)
	for i := range keys {
		b := make([]byte, 1+rng.IntN(keyRoom-1))
		for j := range b {
			b[j] = byte('a' + rng.IntN(26))
		}
		keys[i] = string(b)
	}
	for r := range n {
		for i, k := range keys {
			copy(mem[r][keyRoom*i:], k)
		}
		for i := valueBase; i < len(mem[r]); i++ {
			mem[r][i] = byte(rng.Uint32())
		}
	}
	keyAt := func(i int) dl.Element {
		return dl.Element{GA: gas[rng.IntN(n)] + core.GA(keyRoom*i), Size: uint64(len(keys[i]))}
	}
	var cs [3][2]*hashedUnderTest
	for _, k := range []dl.Kind{dl.KindSet, dl.KindMultiset, dl.KindMap} {
		a, err := ls[0].CreateHashed(k, 0, nil, 3, 0)
		require.NoError(t, err)
		b, err := ls[1].CreateHashed(k, 2, []int{2, 1}, 5, 1)
		require.NoError(t, err)
		cs[k][0] = &hashedUnderTest{kind: k, h: a, ranks: []int{0, 1, 2}, m: newHashedModel()}
		cs[k][1] = &hashedUnderTest{kind: k, h: b, ranks: []int{2, 1}, m: newHashedModel()}
	}

	for step := range steps {
		caller := rng.IntN(n)
		l := ls[caller]
		kind := dl.Kind(rng.IntN(3))
		i := rng.IntN(2)
		c, o := cs[kind][i], cs[kind][1-i]
		local := rng.IntN(3) == 0
		var what string
		var err error
		switch op := rng.IntN(14); {
		case op < 6:
			ki := rng.IntN(nkeys)
			var val dl.Element
			var vb []byte
			if kind == dl.KindMap {
				vr, vo, vn := rng.IntN(n), valueBase+rng.IntN(1000), rng.IntN(41)
				val, vb = dl.Element{GA: gas[vr] + core.GA(vo), Size: uint64(vn)}, mem[vr][vo:vo+vn]
			}
			what = fmt.Sprintf("insert %q (value %d bytes) into %s %d", keys[ki], len(vb), kind, i)
			var ok bool
			ok, err = l.InsertHashed(kind, c.h, keyAt(ki), val)
			if err == nil {
				_, had := c.m.count[keys[ki]]
				switch {
				case kind == dl.KindMap && len(vb) == 0:
					require.False(t, ok, "seed %d, step %d: %s: reported inserted", seed, step, what)
					c.remove(keys[ki])
				case kind == dl.KindMap:
					require.Equal(t, !had, ok, "seed %d, step %d: %s: inserted", seed, step, what)
					c.insert(keys[ki], 1, vb)
				default:
					require.True(t, ok, "seed %d, step %d: %s: inserted", seed, step, what)
					c.insert(keys[ki], 1, nil)
				}
			}
		case op < 9:
			ki := rng.IntN(nkeys)
			all := rng.IntN(2) == 0
			what = fmt.Sprintf("remove %q (all %v) from %s %d", keys[ki], all, kind, i)
			if err = l.RemoveHashed(kind, c.h, keyAt(ki), all); err == nil {
				if kind == dl.KindMultiset && !all && c.m.count[keys[ki]] >= 2 {
					c.m.count[keys[ki]]--
				} else {
					c.remove(keys[ki])
				}
			}
		case op < 10:
			what = fmt.Sprintf("merge %s %d into %d (local %v, rank %d)", kind, 1-i, i, local, caller)
			if err = l.MergeHashed(kind, c.h, o.h, local); err == nil {
				c.mergeFrom(o, local, caller)
			}
		case op < 11:
			what = fmt.Sprintf("move %s %d into %d (local %v, rank %d)", kind, 1-i, i, local, caller)
			if err = l.MoveHashed(kind, c.h, o.h, local); err == nil {
				for _, k := range c.mergeFrom(o, local, caller) {
					o.remove(k)
				}
			}
		case op < 12:
			what = fmt.Sprintf("assign %s %d := %d (local %v, rank %d)", kind, i, 1-i, local, caller)
			if err = l.AssignHashed(kind, c.h, o.h, local); err == nil {
				for k := range c.m.count {
					if !local || c.local(k, caller) {
						c.remove(k)
					}
				}
				c.mergeFrom(o, local, caller)
			}
		case op < 13:
			what = fmt.Sprintf("clear %s %d (local %v, rank %d)", kind, i, local, caller)
			if err = l.ClearHashed(kind, c.h, local); err == nil {
				for k := range c.m.count {
					if !local || c.local(k, caller) {
						c.remove(k)
					}
				}
			}
		default:
			what = fmt.Sprintf("swap %s 0 and 1", kind)
			if err = l.SwapHashed(kind, cs[kind][0].h, cs[kind][1].h); err == nil {
				cs[kind][0].m, cs[kind][1].m = cs[kind][1].m, cs[kind][0].m
			}
		}
		require.NoError(t, err, "seed %d, step %d: %s", seed, step, what)
		// The two of the kind the operation touched.
		for j, x := range cs[kind] {
			checkHashed(t, w, ls[rng.IntN(n)], x, keys, keyAt, rng, fmt.Sprintf("seed %d, step %d, after %s: %s %d", seed, step, what, x.kind, j))
		}
	}
	var sizes []int
	for _, pair := range cs {
		for _, x := range pair {
			sizes = append(sizes, len(x.m.count))
			require.NoError(t, ls[0].DestroyHashed(x.kind, x.h))
		}
	}
	t.Logf("%d steps; keys held at the end (set, set, multiset, multiset, map, map): %v", steps, sizes)
}

// checkHashed walks the container and compares it with its model.
func checkHashed(t *testing.T, w *coretest.World, l *dl.Library, c *hashedUnderTest, keys []string, keyAt func(int) dl.Element, rng *rand.Rand, what string) {
	var got []string
	values := map[string][]byte{}
	it, err := l.BeginHashed(c.h)
	require.NoError(t, err, what)
	for it.Elem != core.GANull {
		p, err := l.DereferenceHashedIt(c.kind, it)
		require.NoError(t, err, what)
		k := string(bytesAt(t, w, p.First.GA, int(p.First.Size)))
		got = append(got, k)
		if c.kind == dl.KindMap {
			values[k] = bytesAt(t, w, p.Second.GA, int(p.Second.Size))
		}
		it, err = l.IncrementHashedIt(it)
		require.NoError(t, err, what)
	}
	var want []string
	for k := range c.m.count {
		want = append(want, k)
	}
	sort.Strings(got)
	sort.Strings(want)
	require.Equal(t, want, got, "%s: keys", what)
	size, err := l.SizeHashed(c.h, false)
	require.NoError(t, err, what)
	require.Equal(t, uint64(len(want)), size, "%s: size", what)
	for i, k := range keys {
		_, held := c.m.count[k]
		switch {
		case c.kind == dl.KindMap && held:
			require.True(t, bytes.Equal(c.m.value[k], values[k]), "%s: value of %q", what, k)
		case c.kind == dl.KindMultiset && (held || rng.IntN(10) == 0):
			n, err := l.RetrieveMultiset(c.h, keyAt(i))
			require.NoError(t, err, what)
			require.Equal(t, c.m.count[k], n, "%s: counter of %q", what, k)
		}
	}
}
