package dl_test

import (
	"encoding/binary"
	"fmt"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/libacp/libacp/core"
	"github.com/libacp/libacp/core/coretest"
	_ "github.com/libacp/libacp/core/memnet"
	"github.com/libacp/libacp/ml/dl"
)

// libs starts n engines, each with its data library; src is a registered
// buffer per rank for values. settings add to (or override) the defaults.
func libs(t *testing.T, n int, settings ...string) (*coretest.World, []*dl.Library, [][]byte, []core.GA) {
	return libsOn(t, "memnet", n, settings...)
}

// libsOn is libs over the named transport.
func libsOn(t *testing.T, transport string, n int, settings ...string) (*coretest.World, []*dl.Library, [][]byte, []core.GA) {
	w := coretest.NewWorld(t, n, transport, append([]string{"size-smem-dl=1048576", "size-smem=4096"}, settings...)...)
	ls := make([]*dl.Library, n)
	bufs := make([][]byte, n)
	gas := make([]core.GA, n)
	w.Run(func(r int, e *core.Engine) (err error) {
		ls[r], err = dl.Start(e)
		bufs[r] = e.StarterMemory(core.SegStarter)
		gas[r], _ = e.StarterGA(r)
		return err
	})
	t.Cleanup(func() {
		w.Run(func(r int, e *core.Engine) error { ls[r].Stop(); return nil })
		w.Close()
	})
	return w, ls, bufs, gas
}

// bytesAt copies n bytes at ga out of its owner's memory.
func bytesAt(t *testing.T, w *coretest.World, ga core.GA, n int) []byte {
	if n == 0 {
		return nil
	}
	p, err := w.Engines[w.Engines[0].QueryRank(ga)].QueryAddress(ga)
	require.NoError(t, err)
	return append([]byte(nil), unsafe.Slice((*byte)(p), n)...)
}

func wordAt(t *testing.T, w *coretest.World, ga core.GA) uint64 {
	return binary.LittleEndian.Uint64(bytesAt(t, w, ga, 8))
}

func TestHashMatchesTheOriginal(t *testing.T) {
	// Spec C.1: keys "A".."ABCDEFGHIJKLMNOP" in 4 slots.
	want := []int{3, 0, 0, 2, 1, 2, 2, 1, 1, 0, 3, 2, 1, 0, 0, 0}
	key := "ABCDEFGHIJKLMNOP"
	for i, s := range want {
		assert.Equal(t, uint64(s), dl.Hash([]byte(key[:i+1]))%4, "key %q", key[:i+1])
	}
	// CRC-64/XZ check value, shifted.
	assert.Equal(t, uint64(0x995DC9BBDF1939FA)>>16, dl.Hash([]byte("123456789")))
}

// listValues walks li from its first element to its end and returns
// value of each element.
func listValues(t *testing.T, l *dl.Library, li dl.List, value func(dl.Element) int32) []int32 {
	t.Helper()
	var got []int32
	it, err := l.BeginList(li)
	require.NoError(t, err)
	for it != dl.EndList(li) {
		e, err := l.DereferenceListIt(it)
		require.NoError(t, err)
		got = append(got, value(e))
		it, err = l.IncrementListIt(it)
		require.NoError(t, err)
	}
	return got
}

func readInts(t *testing.T, l *dl.Library, e *core.Engine, ga core.GA, n int) []int32 {
	p, err := e.QueryAddress(ga)
	require.NoError(t, err)
	return append([]int32(nil), unsafe.Slice((*int32)(p), n)...)
}

func TestVectorAcrossRanks(t *testing.T) {
	w, ls, bufs, gas := libs(t, 2)
	for i := 0; i < 8; i++ {
		*(*int32)(unsafe.Pointer(&bufs[1][4*i])) = int32(100 + i)
	}
	l := ls[0]
	v, err := l.CreateVector(0, 1)
	require.NoError(t, err)
	caps := []uint64{8, 8, 16, 16, 24, 24, 32}
	for i := 0; i < 7; i++ {
		require.NoError(t, l.PushBackVector(v, gas[1]+core.GA(4*i), 4))
		c, err := l.CapacityVector(v)
		require.NoError(t, err)
		assert.Equal(t, caps[i], c)
	}
	_, err = l.InsertVector(dl.VectorIt{Vector: v, Index: 4}, gas[1]+28, 4)
	require.NoError(t, err)
	body, err := l.AtVector(v, 0)
	require.NoError(t, err)
	assert.Equal(t, []int32{100, 107, 101, 102, 103, 104, 105, 106}, readInts(t, l, w.Engines[1], body, 8))
	_, err = l.EraseRangeVector(dl.VectorIt{Vector: v, Index: 0}, dl.VectorIt{Vector: v, Index: 8})
	require.NoError(t, err)
	body, _ = l.AtVector(v, 0)
	assert.Equal(t, []int32{101, 102, 103, 104, 105, 106}, readInts(t, l, w.Engines[1], body, 6))
	_, err = l.AtVector(v, 24)
	assert.Error(t, err, "at the size")
	require.NoError(t, l.DestroyVector(v))
	assert.Error(t, l.PushBackVector(dl.Vector{}, gas[1], 4), "a NULL vector")
}

func TestDequeWraps(t *testing.T) {
	w, ls, bufs, gas := libs(t, 2)
	for i := 0; i < 8; i++ {
		*(*int32)(unsafe.Pointer(&bufs[0][4*i])) = int32(i)
	}
	l := ls[1]
	d, err := l.CreateDeque(16, 0)
	require.NoError(t, err)
	for i := 0; i < 4; i++ {
		require.NoError(t, l.PushBackDeque(d, gas[0]+core.GA(4*i), 4))
	}
	require.NoError(t, l.PopFrontDeque(d, 8))
	require.NoError(t, l.PushBackDeque(d, gas[0]+16, 8)) // wraps
	p, err := l.DereferenceDequeIt(dl.DequeIt{Deque: d, Index: 0}, 16)
	require.NoError(t, err)
	assert.Equal(t, uint64(8), p.First.Size)
	assert.Equal(t, uint64(8), p.Second.Size)
	assert.Equal(t, []int32{2, 3}, readInts(t, l, w.Engines[0], p.First.GA, 2))
	assert.Equal(t, []int32{4, 5}, readInts(t, l, w.Engines[0], p.Second.GA, 2))
	c, _ := l.CapacityDeque(d)
	assert.Equal(t, uint64(16), c, "no growth while there is room")
}

func TestListAndSort(t *testing.T) {
	w, ls, bufs, gas := libs(t, 3)
	vals := []int32{5, 3, 9, 1, 7}
	for i, v := range vals {
		*(*int32)(unsafe.Pointer(&bufs[2][4*i])) = v
	}
	l := ls[0]
	li, err := l.CreateList(1)
	require.NoError(t, err)
	for i := range vals {
		require.NoError(t, l.PushBackList(li, dl.Element{GA: gas[2] + core.GA(4*i), Size: 4}, i%3))
	}
	value := func(e dl.Element) int32 {
		r := w.Engines[0].QueryRank(e.GA)
		return readInts(t, l, w.Engines[r], e.GA, 1)[0]
	}
	require.NoError(t, l.SortList(li, func(a, b dl.Element) int { return int(value(a) - value(b)) }))
	assert.Equal(t, []int32{1, 3, 5, 7, 9}, listValues(t, l, li, value))
	n, _ := l.SizeList(li)
	assert.Equal(t, uint64(5), n)
	require.NoError(t, l.DestroyList(li))
}

func TestHashedInsertFindMove(t *testing.T) {
	w, ls, bufs, gas := libs(t, 3)
	l := ls[2]
	key := func(i int) dl.Element {
		s := fmt.Sprintf("key-%02d", i)
		copy(bufs[2][64*i:], s)
		return dl.Element{GA: gas[2] + core.GA(64*i), Size: uint64(len(s))}
	}
	h, err := l.CreateHashed(dl.KindMultiset, 0, nil, 3, 0)
	require.NoError(t, err)
	assert.Equal(t, uint64(3), h.NumRanks)
	for i := 0; i < 20; i++ {
		ok, err := l.InsertHashed(dl.KindMultiset, h, key(i%10), dl.Element{})
		require.NoError(t, err)
		assert.True(t, ok)
	}
	n, err := l.SizeHashed(h, false)
	require.NoError(t, err)
	assert.Equal(t, uint64(10), n)
	c, err := l.RetrieveMultiset(h, key(3))
	require.NoError(t, err)
	assert.Equal(t, uint64(2), c)
	it, err := l.FindHashed(dl.KindMultiset, h, key(7))
	require.NoError(t, err)
	assert.NotEqual(t, core.GANull, it.Elem)
	assert.Equal(t, it.Rank, w.Engines[0].QueryRank(it.Elem), "element lives with its table")
	h2, err := l.CreateHashed(dl.KindMultiset, 1, []int{1}, 2, 1)
	require.NoError(t, err)
	require.NoError(t, l.MoveHashed(dl.KindMultiset, h2, h, false))
	n, _ = l.SizeHashed(h, false)
	assert.Equal(t, uint64(0), n)
	c, _ = l.RetrieveMultiset(h2, key(3))
	assert.Equal(t, uint64(2), c, "counters move along")
	count := 0
	for it, err := l.BeginHashed(h2); it.Elem != core.GANull; it, err = l.IncrementHashedIt(it) {
		require.NoError(t, err)
		count++
	}
	assert.Equal(t, 10, count)
	require.NoError(t, l.DestroyHashed(dl.KindMultiset, h))
	require.NoError(t, l.DestroyHashed(dl.KindMultiset, h2))
	_, err = l.CreateHashed(dl.KindSet, -1, nil, 3, 0)
	assert.Error(t, err)
}

// Goroutines of one process pushing onto one vector, deque and list at once
// lose nothing: the calls on one such container take turns. (They each
// wrote back the control block they had read, and elements were lost.)
// Two more swap two vectors in opposite argument orders, which must not
// deadlock.
func TestSequencesTakeTurnsBetweenThreads(t *testing.T) {
	w, ls, bufs, gas := libs(t, 2)
	const workers, each = 4, 40
	for i := 0; i < workers*each; i++ {
		*(*int32)(unsafe.Pointer(&bufs[0][4*i%4096])) = int32(i)
	}
	l := ls[0]
	v, err := l.CreateVector(0, 1)
	require.NoError(t, err)
	d, err := l.CreateDeque(0, 1)
	require.NoError(t, err)
	li, err := l.CreateList(1)
	require.NoError(t, err)
	a, err := l.CreateVector(4, 0)
	require.NoError(t, err)
	b, err := l.CreateVector(8, 1)
	require.NoError(t, err)
	errs := make(chan error, workers+2)
	for g := 0; g < workers; g++ {
		go func() {
			var err error
			for i := 0; i < each && err == nil; i++ {
				src := gas[0] + core.GA(4*((g*each+i)%1024))
				err = l.PushBackVector(v, src, 4)
				if err == nil {
					err = l.PushFrontDeque(d, src, 4)
				}
				if err == nil {
					err = l.PushBackList(li, dl.Element{GA: src, Size: 4}, i%2)
				}
			}
			errs <- err
		}()
	}
	for g := 0; g < 2; g++ {
		go func() {
			var err error
			for i := 0; i < 10 && err == nil; i++ {
				if g == 0 {
					err = l.SwapVector(a, b)
				} else {
					err = l.SwapVector(b, a)
				}
			}
			errs <- err
		}()
	}
	for g := 0; g < workers+2; g++ {
		require.NoError(t, <-errs)
	}
	n, err := l.SizeVector(v)
	require.NoError(t, err)
	assert.Equal(t, uint64(4*workers*each), n, "vector bytes")
	n, err = l.SizeDeque(d)
	require.NoError(t, err)
	assert.Equal(t, uint64(4*workers*each), n, "deque bytes")
	n, err = l.SizeList(li)
	require.NoError(t, err)
	assert.Equal(t, uint64(workers*each), n, "list elements")
	body, err := l.AtVector(v, 0)
	require.NoError(t, err)
	seen := map[int32]int{}
	for _, x := range readInts(t, l, w.Engines[1], body, workers*each) {
		seen[x]++
	}
	assert.Len(t, seen, workers*each, "distinct values in the vector")
	n, err = l.SizeVector(a)
	require.NoError(t, err)
	assert.Equal(t, uint64(4), n, "the first swapped vector's size after an even number of swaps")
}

// A comparator that changes the list it sorts (here: pushes onto it and
// onto the list merged in, once each) makes sort and merge start again:
// the pushed elements stay, and the result is in order.
func TestSortAndMergeAfterComparatorChangedTheList(t *testing.T) {
	w, ls, bufs, gas := libs(t, 1)
	vals := []int32{5, 3, 9, 1, 7, 4}
	for i, v := range vals {
		*(*int32)(unsafe.Pointer(&bufs[0][4*i])) = v
	}
	l := ls[0]
	elem := func(i int) dl.Element { return dl.Element{GA: gas[0] + core.GA(4*i), Size: 4} }
	value := func(e dl.Element) int32 { return readInts(t, l, w.Engines[0], e.GA, 1)[0] }
	contents := func(li dl.List) []int32 { return listValues(t, l, li, value) }
	l1, err := l.CreateList(0)
	require.NoError(t, err)
	l2, err := l.CreateList(0)
	require.NoError(t, err)
	for i := 0; i < 3; i++ {
		require.NoError(t, l.PushBackList(l1, elem(i), 0))
	}
	require.NoError(t, l.PushBackList(l2, elem(3), 0))

	calls := 0
	comp := func(a, b dl.Element) int {
		calls++
		if calls == 1 { // the library may be called: no lock is held
			require.NoError(t, l.PushBackList(l1, elem(4), 0))
		}
		return int(value(a) - value(b))
	}
	require.NoError(t, l.SortList(l1, comp))
	assert.Equal(t, []int32{3, 5, 7, 9}, contents(l1))

	calls = 0
	comp2 := func(a, b dl.Element) int {
		calls++
		if calls == 1 {
			require.NoError(t, l.PushBackList(l2, elem(5), 0))
		}
		return int(value(a) - value(b))
	}
	require.NoError(t, l.MergeList(l1, l2, comp2))
	assert.Equal(t, []int32{1, 3, 4, 5, 7, 9}, contents(l1))
	n, err := l.SizeList(l2)
	require.NoError(t, err)
	assert.Zero(t, n)
}
