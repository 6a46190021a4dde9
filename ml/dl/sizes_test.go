// Sizes the caller gives: refused, naming themselves, when no memory
// could hold them or when a header added to them would wrap; otherwise
// read a scratch buffer at a time, also when they span several reads and
// lie in the container being changed.

package dl_test

import (
	"math"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/libacp/libacp/core"
	"github.com/libacp/libacp/ml/dl"
	"github.com/libacp/libacp/ml/heap"
)

// Sizes no registered memory can hold are refused before anything is read
// or allocated for them (the process used to die), with an error that
// names them; the containers stay as they were.
func TestSizesNoMemoryHoldsAreRefused(t *testing.T) {
	_, ls, _, gas := libs(t, 2)
	l, src := ls[0], gas[0]
	const huge = math.MaxUint64
	const hugeText = "18446744073709551615"
	for _, k := range []dl.Kind{dl.KindSet, dl.KindMultiset, dl.KindMap} {
		h, err := l.CreateHashed(k, 0, nil, 4, 0)
		require.NoError(t, err)
		bad := dl.Element{GA: src, Size: huge}
		it, err := l.FindHashed(k, h, bad)
		assert.ErrorContains(t, err, hugeText, "find in a %s", k)
		assert.Equal(t, h.End(), it, "find in a %s", k)
		_, err = l.InsertHashed(k, h, bad, dl.Element{GA: src, Size: 4})
		assert.ErrorContains(t, err, hugeText, "insert into a %s", k)
		assert.ErrorContains(t, l.RemoveHashed(k, h, bad, true), hugeText, "remove from a %s", k)
		_, err = l.InsertHashed(k, h, dl.Element{GA: src, Size: 1 << 40}, dl.Element{GA: src, Size: 4})
		assert.ErrorContains(t, err, "the key {", "insert of a 1 TiB key into a %s", k)
		n, err := l.SizeHashed(h, false)
		require.NoError(t, err)
		assert.Zero(t, n, "%s after the bad inserts", k)
		require.NoError(t, l.DestroyHashed(k, h))
	}
	m, err := l.CreateHashed(dl.KindMap, 0, nil, 4, 0)
	require.NoError(t, err)
	ok, err := l.InsertHashed(dl.KindMap, m, dl.Element{GA: src, Size: 4}, dl.Element{GA: src, Size: huge})
	assert.ErrorContains(t, err, hugeText, "a map value")
	assert.False(t, ok)
	n, err := l.RetrieveMap(m, dl.Element{GA: src, Size: huge}, dl.Element{GA: src, Size: 8})
	assert.ErrorContains(t, err, hugeText, "retrieve")
	assert.Zero(t, n)
	n, _ = l.SizeHashed(m, false)
	assert.Zero(t, n, "map after the bad insert")

	v, err := l.CreateVector(8, 1)
	require.NoError(t, err)
	_, err = l.InsertVector(dl.BeginVector(v), src, huge)
	assert.ErrorContains(t, err, hugeText, "insert into a vector")
	n, _ = l.SizeVector(v)
	assert.Equal(t, uint64(8), n, "vector size")

	d, err := l.CreateDeque(8, 1)
	require.NoError(t, err)
	_, err = l.InsertDeque(dl.BeginDeque(d), src, huge)
	assert.ErrorContains(t, err, hugeText, "insert into a deque")
	n, _ = l.SizeDeque(d)
	assert.Zero(t, n, "deque size")

	li, err := l.CreateList(1)
	require.NoError(t, err)
	require.NoError(t, l.PushBackList(li, dl.Element{GA: src, Size: 4}, 1))
	assert.ErrorContains(t, l.RemoveList(li, dl.Element{GA: src, Size: huge}), hugeText, "remove from a list")
	n, _ = l.SizeList(li)
	assert.Equal(t, uint64(1), n, "list size")
}

// A header plus a size near 2^64 must not wrap around to a small block
// that the header then overruns (the next block's boundary tag).
func TestSizesThatWrapAreRefused(t *testing.T) {
	w, ls, _, gas := libs(t, 1)
	l, src := ls[0], gas[0]
	li, err := l.CreateList(0)
	require.NoError(t, err)
	probe, err := l.Malloc(8, 0)
	require.NoError(t, err)
	next := wordAt(t, w, probe+16) // the header of the block after probe's
	require.NoError(t, l.Free(probe))
	for _, size := range []uint64{math.MaxUint64 - 16, heap.MaxSize - 8} {
		err = l.PushBackList(li, dl.Element{GA: src, Size: size}, 0)
		assert.ErrorContains(t, err, strconv.FormatUint(size, 10), "push_back of %d bytes", size)
		it, err := l.InsertList(dl.EndList(li), dl.Element{GA: src, Size: size}, 0)
		assert.ErrorContains(t, err, strconv.FormatUint(size, 10), "insert of %d bytes", size)
		assert.Equal(t, core.GANull, it.Elem)
		assert.Equal(t, next, wordAt(t, w, probe+16), "the next block's header after %d bytes", size)
	}
	n, _ := l.SizeList(li)
	assert.Zero(t, n, "list size")

	v, err := l.CreateVector(8, 0)
	require.NoError(t, err)
	assert.Error(t, l.PushBackVector(v, src, math.MaxUint64-7), "push_back_vector")
	assert.Error(t, l.ReserveVector(v, math.MaxUint64), "reserve_vector")
	c, _ := l.CapacityVector(v)
	n, _ = l.SizeVector(v)
	assert.Equal(t, []uint64{8, 8}, []uint64{n, c}, "vector size and capacity")

	d, err := l.CreateDeque(8, 0)
	require.NoError(t, err)
	assert.Error(t, l.PushBackDeque(d, src, math.MaxUint64-7), "push_back_deque")
	assert.Error(t, l.PushFrontDeque(d, src, math.MaxUint64-7), "push_front_deque")
	n, _ = l.SizeDeque(d)
	assert.Zero(t, n, "deque size")

	g, err := l.Malloc(100, 0)
	require.NoError(t, err, "the heap still allocates")
	assert.NoError(t, l.Free(g))
}

// Bytes that cannot be read (beyond a peer's starter memory) fail an
// insert, in place or into a new body, before anything changes.
func TestUnreadableBytesChangeNothing(t *testing.T) {
	w, ls, bufs, gas := libs(t, 2)
	l := ls[0]
	copy(bufs[0], "abcdefgh")
	bad := gas[1] + 1<<20
	v, err := l.CreateVector(0, 1)
	require.NoError(t, err)
	require.NoError(t, l.ReserveVector(v, 64))
	require.NoError(t, l.PushBackVector(v, gas[0], 8))
	d, err := l.CreateDeque(64, 1)
	require.NoError(t, err)
	require.NoError(t, l.PushBackDeque(d, gas[0], 8))
	containers := []struct {
		name    string
		insert  func(n uint64) error
		content func() (core.GA, uint64, error)
	}{
		{"vector", func(n uint64) error { _, err := l.InsertVector(dl.BeginVector(v), bad, n); return err },
			func() (core.GA, uint64, error) { g, err := l.AtVector(v, 0); n, _ := l.SizeVector(v); return g, n, err }},
		{"deque", func(n uint64) error { _, err := l.InsertDeque(dl.BeginDeque(d), bad, n); return err },
			func() (core.GA, uint64, error) { g, err := l.AtDeque(d, 0); n, _ := l.SizeDeque(d); return g, n, err }},
	}
	for _, c := range containers {
		assert.ErrorIs(t, c.insert(8), heap.ErrFailed, "%s: insert in place", c.name)
		assert.ErrorIs(t, c.insert(100), heap.ErrFailed, "%s: insert into a new body", c.name)
		g, n, err := c.content()
		require.NoError(t, err)
		assert.Equal(t, "abcdefgh", string(bytesAt(t, w, g, int(n))), c.name)
	}
}

// Values larger than a read through the scratch buffer go through in
// pieces; these sizes span several.
const big = 3*heap.ReadArea + 123

func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*131+i/251) + seed
	}
	return b
}

func cat(parts ...[]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func TestLargeKeysAndValues(t *testing.T) {
	w, ls, bufs, gas := libs(t, 2, "size-smem=262144")
	l := ls[1]
	k1, k2, val := pattern(big, 1), pattern(big, 1), pattern(big+1000, 7)
	k2[big-1]++ // differs in its last byte only
	copy(bufs[0], k1)
	copy(bufs[0][big:], k2)
	copy(bufs[0][2*big:], val)
	key1 := dl.Element{GA: gas[0], Size: big}
	key2 := dl.Element{GA: gas[0] + big, Size: big}
	value := dl.Element{GA: gas[0] + 2*big, Size: uint64(len(val))}
	out := dl.Element{GA: gas[1], Size: uint64(len(val))}

	m, err := l.CreateHashed(dl.KindMap, 0, nil, 1, 0) // one slot: the keys share a chain
	require.NoError(t, err)
	ok, err := l.InsertHashed(dl.KindMap, m, key1, value)
	require.NoError(t, err)
	assert.True(t, ok)
	it, err := l.FindHashed(dl.KindMap, m, key2)
	require.NoError(t, err)
	assert.Equal(t, core.GANull, it.Elem, "a key that differs in its last byte")
	n, err := l.RetrieveMap(m, key1, out)
	require.NoError(t, err)
	assert.Equal(t, uint64(len(val)), n)
	assert.Equal(t, val, bytesAt(t, w, out.GA, len(val)), "the value retrieved")
	ok, err = l.InsertHashed(dl.KindMap, m, key2, dl.Element{GA: gas[0], Size: 10})
	require.NoError(t, err)
	assert.True(t, ok)

	m2, err := l.CreateHashed(dl.KindMap, 0, nil, 3, 1)
	require.NoError(t, err)
	require.NoError(t, l.MergeHashed(dl.KindMap, m2, m, false))
	n, err = l.RetrieveMap(m2, key1, out)
	require.NoError(t, err)
	assert.Equal(t, uint64(len(val)), n)
	assert.Equal(t, val, bytesAt(t, w, out.GA, len(val)), "the value merged")
	require.NoError(t, l.RemoveHashed(dl.KindMap, m2, key1, true))
	size, _ := l.SizeHashed(m2, false)
	assert.Equal(t, uint64(1), size, "key2 stays")
	it, err = l.FindHashed(dl.KindMap, m2, key2)
	require.NoError(t, err)
	p, err := l.DereferenceHashedIt(dl.KindMap, it)
	require.NoError(t, err)
	assert.Equal(t, k2, bytesAt(t, w, p.First.GA, big), "key2 as stored")
	require.NoError(t, l.DestroyHashed(dl.KindMap, m))
	require.NoError(t, l.DestroyHashed(dl.KindMap, m2))
}

// insertOwnRanges inserts, with insert, ranges [lo, hi) of a container's
// own bytes at pos ({pos, lo, hi} in steps), and checks its content
// against the model after each; it returns the model.
func insertOwnRanges(t *testing.T, model []byte, content func() []byte, insert func(pos, lo, hi int) error, steps ...[3]int) []byte {
	for _, s := range steps {
		pos, lo, hi := s[0], s[1], s[2]
		require.NoError(t, insert(pos, lo, hi), "insert [%d, %d) at %d", lo, hi, pos)
		model = cat(model[:pos], model[lo:hi], model[pos:])
		require.Equal(t, model, content(), "after inserting [%d, %d) at %d", lo, hi, pos)
	}
	return model
}

func TestVectorInsertsOfItsOwnBytes(t *testing.T) {
	w, ls, bufs, gas := libs(t, 2, "size-smem=262144")
	l := ls[0]
	model := pattern(big, 3)
	copy(bufs[1], model)
	v, err := l.CreateVector(0, 1)
	require.NoError(t, err)
	content := func() []byte {
		n, err := l.SizeVector(v)
		require.NoError(t, err)
		body, err := l.AtVector(v, 0)
		require.NoError(t, err)
		return bytesAt(t, w, body, int(n))
	}
	require.NoError(t, l.PushBackVector(v, gas[1], big))
	at := func(i int) dl.VectorIt { return dl.VectorIt{Vector: v, Index: i} }
	insertRange := func(pos, lo, hi int) error {
		_, err := l.InsertRangeVector(at(pos), at(lo), at(hi))
		return err
	}

	// A new body: the range is read from the old one.
	model = insertOwnRanges(t, model, content, insertRange, [3]int{100, 0, 30000})
	// In place: part of the range lies in the bytes that move, then all.
	require.NoError(t, l.ReserveVector(v, 200000))
	model = insertOwnRanges(t, model, content, insertRange, [3]int{30000, 20000, 50000}, [3]int{1000, 20000, 50000})
	c, _ := l.CapacityVector(v)
	assert.Equal(t, uint64(200000), c, "no new body")

	// The caller's bytes, in place.
	_, err = l.InsertVector(at(5), gas[1]+7, 20000)
	require.NoError(t, err)
	model = cat(model[:5], pattern(big, 3)[7:20007], model[5:])
	require.Equal(t, model, content(), "insert in place")

	_, err = l.EraseVector(at(1000), 40000)
	require.NoError(t, err)
	model = cat(model[:1000], model[41000:])
	require.Equal(t, model, content(), "erase")

	require.NoError(t, l.AssignRangeVector(v, at(333), at(len(model)-10)))
	model = model[333 : len(model)-10]
	require.Equal(t, model, content(), "assign_range of its own bytes")
	require.NoError(t, l.DestroyVector(v))
}

func TestDequeInsertsAcrossTheWrap(t *testing.T) {
	w, ls, bufs, gas := libs(t, 2, "size-smem=262144")
	l := ls[0]
	src := pattern(2*big, 5)
	copy(bufs[0], src)
	d, err := l.CreateDeque(120000, 1)
	require.NoError(t, err)
	content := func() []byte {
		n, err := l.SizeDeque(d)
		require.NoError(t, err)
		p, err := l.DereferenceDequeIt(dl.BeginDeque(d), n)
		require.NoError(t, err)
		return cat(bytesAt(t, w, p.First.GA, int(p.First.Size)), bytesAt(t, w, p.Second.GA, int(p.Second.Size)))
	}
	at := func(i int) dl.DequeIt { return dl.DequeIt{Deque: d, Index: i} }
	require.NoError(t, l.PushBackDeque(d, gas[0], 60000))
	require.NoError(t, l.PopFrontDeque(d, 50000))
	require.NoError(t, l.PushBackDeque(d, gas[0]+1000, 70000)) // wraps at logical 70000
	model := cat(src[50000:60000], src[1000:71000])
	require.Equal(t, model, content())

	// In place: a range across the wrap, then one that fills the capacity.
	model = insertOwnRanges(t, model, content, func(pos, lo, hi int) error {
		_, err := l.InsertRangeDeque(at(pos), at(lo), at(hi))
		return err
	}, [3]int{65000, 60000, 75000}, [3]int{10000, 5000, 30000})
	c, _ := l.CapacityDeque(d)
	assert.Equal(t, uint64(120000), c, "no new body")

	_, err = l.InsertDeque(at(20000), gas[0]+3, 30000)
	require.NoError(t, err)
	model = cat(model[:20000], src[3:30003], model[20000:])
	require.Equal(t, model, content(), "insert into a new body")

	_, err = l.EraseDeque(at(7), 35000)
	require.NoError(t, err)
	model = cat(model[:7], model[35007:])
	require.Equal(t, model, content(), "erase")
	require.NoError(t, l.DestroyDeque(d))
}

func TestListCompareLargeValues(t *testing.T) {
	_, ls, bufs, gas := libs(t, 2, "size-smem=262144")
	l := ls[0]
	a, b := pattern(big, 9), pattern(big, 9)
	b[big/2]++
	copy(bufs[0], a)
	copy(bufs[0][big:], b)
	va, vb := dl.Element{GA: gas[0], Size: big}, dl.Element{GA: gas[0] + big, Size: big}
	li, err := l.CreateList(1)
	require.NoError(t, err)
	for _, v := range []dl.Element{va, va, vb, va} {
		require.NoError(t, l.PushBackList(li, v, 1))
	}
	require.NoError(t, l.UniqueList(li))
	n, _ := l.SizeList(li)
	assert.Equal(t, uint64(3), n, "a, b, a")
	first, err := l.BeginList(li)
	require.NoError(t, err)
	own, err := l.DereferenceListIt(first)
	require.NoError(t, err)
	require.NoError(t, l.RemoveList(li, own), "remove by the first element's own value")
	n, _ = l.SizeList(li)
	assert.Equal(t, uint64(1), n, "b")
	require.NoError(t, l.RemoveList(li, va))
	n, _ = l.SizeList(li)
	assert.Equal(t, uint64(1), n, "b is not a")
	require.NoError(t, l.RemoveList(li, vb))
	n, _ = l.SizeList(li)
	assert.Zero(t, n)
}
