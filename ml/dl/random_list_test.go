package dl_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/libacp/libacp/core"
	"github.com/libacp/libacp/core/coretest"
	"github.com/libacp/libacp/ml/dl"
)

// Random operations on two lists (control blocks on different ranks,
// elements placed on random ranks), each called by a random rank: pushes,
// pops, inserts and erases at random places, ranges copied in from the
// other list, assignments, sorts and merges, removes, unique, reverse,
// splices of one element or of a range from the other list, swaps. After
// every operation each list, walked forwards and backwards, must hold the
// model's values in the model's order (spec §2.11, with the original's
// bugs mended: docs/).
//
// ACP_RANDOM_DL_SEED=N draws other operations; a failure names the seed
// and the operation.
func TestRandomLists(t *testing.T) {
	seed := coretest.EnvNumber(t, "ACP_RANDOM_DL_SEED", 20261128)
	for _, c := range []struct {
		transport string
		steps     int
	}{{"memnet", 300}, {"shm", 300}, {"udp", 100}} {
		t.Run(c.transport, func(t *testing.T) { randomLists(t, c.transport, seed, c.steps) })
	}
}

func randomLists(t *testing.T, transport string, seed uint64, steps int) {
	const n, nvalues, valueRoom = 3, 12, 64
	w, ls, mem, gas := libsOn(t, transport, n, "size-smem-dl=4194304")
	rng := rand.New(rand.NewPCG(seed, 29))
	// A few values (so that remove and unique find equal ones), stored at
	// the same offsets on every rank.
	values := make([][]byte, nvalues)
	for i := range values {
		values[i] = make([]byte, rng.IntN(valueRoom))
		for j := range values[i] {
			values[i][j] = byte('a' + rng.IntN(3))
		}
		for r := range n {
			copy(mem[r][valueRoom*i:], values[i])
		}
	}
	valueAt := func(i int) dl.Element {
		return dl.Element{GA: gas[rng.IntN(n)] + core.GA(valueRoom*i), Size: uint64(len(values[i]))}
	}
	comp := func(e1, e2 dl.Element) int {
		return bytes.Compare(bytesAt(t, w, e1.GA, int(e1.Size)), bytesAt(t, w, e2.GA, int(e2.Size)))
	}
	lists := make([]dl.List, 2)
	for i, r := range []int{0, 2} {
		var err error
		lists[i], err = ls[1].CreateList(r)
		require.NoError(t, err)
	}
	model := [][][]byte{nil, nil}
	// elems[i] are list i's element GAs in order, as the last walk found.
	elems := [][]core.GA{nil, nil}
	at := func(i, k int) dl.ListIt { // the iterator to element k, or the end
		if k >= len(elems[i]) {
			return dl.EndList(lists[i])
		}
		return dl.ListIt{List: lists[i], Elem: elems[i][k]}
	}
	insertAt := func(m [][]byte, k int, vs ...[]byte) [][]byte {
		return slices.Insert(slices.Clone(m), k, vs...)
	}
	sorted := func(m [][]byte) bool {
		return slices.IsSortedFunc(m, bytes.Compare)
	}

	done, longest := 0, 0
	for step := range steps {
		l := ls[rng.IntN(n)]
		i := rng.IntN(2)
		o := 1 - i
		m := model[i]
		var what string
		var err error
		switch op := rng.IntN(24); {
		case op < 6:
			v, r := rng.IntN(nvalues), rng.IntN(n)
			what = fmt.Sprintf("push_back_list %d of value %d on rank %d", i, v, r)
			if err = l.PushBackList(lists[i], valueAt(v), r); err == nil {
				model[i] = append(m, values[v])
			}
		case op < 8:
			v, r := rng.IntN(nvalues), rng.IntN(n)
			what = fmt.Sprintf("push_front_list %d of value %d on rank %d", i, v, r)
			if err = l.PushFrontList(lists[i], valueAt(v), r); err == nil {
				model[i] = insertAt(m, 0, values[v])
			}
		case op < 11:
			v, r, k := rng.IntN(nvalues), rng.IntN(n), rng.IntN(len(m)+1)
			what = fmt.Sprintf("insert_list %d before element %d of value %d on rank %d", i, k, v, r)
			var it dl.ListIt
			if it, err = l.InsertList(at(i, k), valueAt(v), r); err == nil {
				require.NotEqual(t, core.GANull, it.Elem, "seed %d, step %d: %s: iterator", seed, step, what)
				model[i] = insertAt(m, k, values[v])
			}
		case op < 12:
			k := rng.IntN(len(m) + 1)
			lo := rng.IntN(len(model[o]) + 1)
			hi := lo + rng.IntN(len(model[o])-lo+1)
			what = fmt.Sprintf("insert_range_list %d before element %d of [%d, %d) of list %d", i, k, lo, hi, o)
			if _, err = l.InsertRangeList(at(i, k), at(o, lo), at(o, hi)); err == nil {
				model[i] = insertAt(m, k, model[o][lo:hi]...)
			}
		case op < 13:
			what = fmt.Sprintf("pop_back_list %d", i)
			if err = l.PopBackList(lists[i]); err == nil && len(m) > 0 {
				model[i] = m[:len(m)-1]
			}
		case op < 14:
			what = fmt.Sprintf("pop_front_list %d", i)
			if err = l.PopFrontList(lists[i]); err == nil && len(m) > 0 {
				model[i] = m[1:]
			}
		case op < 16:
			if len(m) == 0 {
				continue
			}
			k := rng.IntN(len(m))
			what = fmt.Sprintf("erase_list %d element %d", i, k)
			if _, err = l.EraseList(at(i, k)); err == nil {
				model[i] = slices.Delete(slices.Clone(m), k, k+1)
			}
		case op < 17:
			lo := rng.IntN(len(m) + 1)
			hi := lo + rng.IntN(len(m)-lo+1)
			what = fmt.Sprintf("erase_range_list %d [%d, %d)", i, lo, hi)
			if _, err = l.EraseRangeList(at(i, lo), at(i, hi)); err == nil {
				model[i] = slices.Delete(slices.Clone(m), lo, hi)
			}
		case op < 18:
			if rng.IntN(2) == 0 {
				what = fmt.Sprintf("assign_list %d := %d", i, o)
				if err = l.AssignList(lists[i], lists[o]); err == nil {
					model[i] = slices.Clone(model[o])
				}
			} else {
				lo := rng.IntN(len(model[o]) + 1)
				hi := lo + rng.IntN(len(model[o])-lo+1)
				what = fmt.Sprintf("assign_range_list %d := [%d, %d) of %d", i, lo, hi, o)
				if err = l.AssignRangeList(lists[i], at(o, lo), at(o, hi)); err == nil {
					model[i] = slices.Clone(model[o][lo:hi])
				}
			}
		case op < 19:
			what = fmt.Sprintf("sort_list %d", i)
			if err = l.SortList(lists[i], comp); err == nil {
				model[i] = slices.Clone(m)
				slices.SortStableFunc(model[i], bytes.Compare)
			}
		case op < 20:
			if !sorted(m) || !sorted(model[o]) {
				continue
			}
			what = fmt.Sprintf("merge_list %d with %d", i, o)
			if err = l.MergeList(lists[i], lists[o], comp); err == nil {
				merged := make([][]byte, 0, len(m)+len(model[o]))
				a, b := m, model[o]
				for len(a) > 0 && len(b) > 0 {
					if bytes.Compare(b[0], a[0]) < 0 {
						merged, b = append(merged, b[0]), b[1:]
					} else {
						merged, a = append(merged, a[0]), a[1:]
					}
				}
				model[i], model[o] = append(append(merged, a...), b...), nil
			}
		case op < 21:
			v := rng.IntN(nvalues)
			switch rng.IntN(3) {
			case 0:
				what = fmt.Sprintf("remove_list %d of value %d", i, v)
				if err = l.RemoveList(lists[i], valueAt(v)); err == nil {
					model[i] = slices.DeleteFunc(slices.Clone(m), func(x []byte) bool { return bytes.Equal(x, values[v]) })
				}
			case 1:
				what = fmt.Sprintf("unique_list %d", i)
				if err = l.UniqueList(lists[i]); err == nil {
					model[i] = slices.CompactFunc(slices.Clone(m), bytes.Equal)
				}
			default:
				what = fmt.Sprintf("reverse_list %d", i)
				if err = l.ReverseList(lists[i]); err == nil {
					model[i] = slices.Clone(m)
					slices.Reverse(model[i])
				}
			}
		case op < 22:
			if len(model[o]) == 0 {
				continue
			}
			k, j := rng.IntN(len(m)+1), rng.IntN(len(model[o]))
			what = fmt.Sprintf("splice_list element %d of list %d before element %d of list %d", j, o, k, i)
			if err = l.SpliceList(at(i, k), at(o, j)); err == nil {
				model[i] = insertAt(m, k, model[o][j])
				model[o] = slices.Delete(slices.Clone(model[o]), j, j+1)
			}
		case op < 23:
			k := rng.IntN(len(m) + 1)
			lo := rng.IntN(len(model[o]) + 1)
			hi := lo + rng.IntN(len(model[o])-lo+1)
			what = fmt.Sprintf("splice_range_list [%d, %d) of list %d before element %d of list %d", lo, hi, o, k, i)
			if err = l.SpliceRangeList(at(i, k), at(o, lo), at(o, hi)); err == nil {
				model[i] = insertAt(m, k, model[o][lo:hi]...)
				model[o] = slices.Delete(slices.Clone(model[o]), lo, hi)
			}
		default:
			what = "swap_list"
			if err = l.SwapList(lists[0], lists[1]); err == nil {
				model[0], model[1] = model[1], model[0]
			}
		}
		require.NoError(t, err, "seed %d, step %d: %s", seed, step, what)
		done++
		longest = max(longest, len(model[0]), len(model[1]))
		for j := range lists {
			elems[j] = checkList(t, w, ls[rng.IntN(n)], lists[j], model[j], fmt.Sprintf("seed %d, step %d, after %s: list %d", seed, step, what, j))
		}
	}
	require.NoError(t, ls[0].DestroyList(lists[0]))
	require.NoError(t, ls[2].DestroyList(lists[1]))
	t.Logf("%d of %d steps ran an operation; the longest list had %d elements", done, steps, longest)
}

// checkList walks l forwards and backwards, compares its values with
// want, and returns its element GAs in order.
func checkList(t *testing.T, w *coretest.World, lb *dl.Library, l dl.List, want [][]byte, what string) []core.GA {
	size, err := lb.SizeList(l)
	require.NoError(t, err, what)
	require.Equal(t, uint64(len(want)), size, "%s: size", what)
	var gas []core.GA
	it, err := lb.BeginList(l)
	require.NoError(t, err, what)
	for k := 0; it != dl.EndList(l); k++ {
		require.Less(t, k, len(want), "%s: more elements than the size", what)
		e, err := lb.DereferenceListIt(it)
		require.NoError(t, err, what)
		require.True(t, bytes.Equal(want[k], bytesAt(t, w, e.GA, int(e.Size))), "%s: value of element %d", what, k)
		gas = append(gas, it.Elem)
		it, err = lb.IncrementListIt(it)
		require.NoError(t, err, what)
	}
	require.Len(t, gas, len(want), "%s: elements", what)
	// Backwards: every element's prev link.
	it = dl.EndList(l)
	for k := len(gas) - 1; k >= 0; k-- {
		it, err = lb.DecrementListIt(it)
		require.NoError(t, err, what)
		require.Equal(t, gas[k], it.Elem, "%s: element %d walking backwards", what, k)
	}
	return gas
}
