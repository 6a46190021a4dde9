// Handles that hold no container: GAs of other memory, of freed blocks,
// hashed-container handles whose shape is not their container's, list
// iterators whose element is none. Refused before anything changes, and
// the containers they were made from stay as they were.

package dl_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/libacp/libacp/core"
	"github.com/libacp/libacp/ml/dl"
)

// canary fills starter bytes [off, off+n) of rank r with 0xc3, which read
// as words are neither GAs nor sizes any heap holds.
func canary(bufs [][]byte, r, off, n int) []byte {
	b := bufs[r][off : off+n]
	for i := range b {
		b[i] = 0xc3
	}
	return append([]byte(nil), b...)
}

// Registered memory outside the heaps is no container: a list there used
// to be believed (its count returned, an element linked in and its control
// block written), and so was an element there.
func TestMemoryOutsideTheHeapsIsNoContainer(t *testing.T) {
	_, ls, bufs, gas := libs(t, 2)
	l := ls[0]
	want := canary(bufs, 1, 1024, 1024)
	fake := gas[1] + 1024 + 64
	v4 := dl.Element{GA: gas[0], Size: 4}

	li := dl.List{GA: fake}
	_, err := l.SizeList(li)
	assert.ErrorContains(t, err, "not in a data-library heap")
	it, err := l.InsertList(dl.EndList(li), v4, 1)
	assert.Error(t, err)
	assert.Equal(t, core.GANull, it.Elem)
	_, err = l.SizeVector(dl.Vector{GA: fake})
	assert.ErrorContains(t, err, "is no vector")
	_, err = l.SizeDeque(dl.Deque{GA: fake})
	assert.ErrorContains(t, err, "is no deque")
	_, err = l.SizeHashed(dl.Hashed{GA: fake, NumRanks: 2, NumSlots: 4}, false)
	assert.ErrorContains(t, err, "is no container")

	live, err := l.CreateList(1)
	require.NoError(t, err)
	require.NoError(t, l.PushBackList(live, v4, 1))
	_, err = l.DereferenceListIt(dl.ListIt{List: live, Elem: fake})
	assert.ErrorContains(t, err, "is no list element")
	// A splice before an element that is none must not unlink anything.
	first, err := l.BeginList(live)
	require.NoError(t, err)
	assert.Error(t, l.SpliceList(dl.ListIt{List: live, Elem: fake}, first))
	n, err := l.SizeList(live)
	require.NoError(t, err)
	assert.Equal(t, uint64(1), n, "the list after the refused splice")
	assert.True(t, bytes.Equal(want, bufs[1][1024:2048]), "the memory taken for containers changed")
}

// A freed control block and the middle of a block are no containers.
func TestFreedOrInnerBlocksAreNoContainers(t *testing.T) {
	_, ls, _, _ := libs(t, 2)
	l := ls[0]
	v, err := l.CreateVector(16, 1)
	require.NoError(t, err)
	_, err = l.SizeVector(dl.Vector{GA: v.GA + 8})
	assert.ErrorContains(t, err, "heap block header")
	require.NoError(t, l.DestroyVector(v))
	_, err = l.SizeVector(v)
	assert.ErrorContains(t, err, "heap block header")
}

// A hashed handle whose num_ranks or num_slots exceeds its container's is
// refused: its tables' neighbours used to be summed as slot counts, locked
// (for ever, when they held no rank) and written. Moves and assigns check
// both containers before they change either.
func TestHashedHandlesOfAnotherShapeAreRefused(t *testing.T) {
	_, ls, _, gas := libs(t, 2)
	l := ls[0]
	h, err := l.CreateHashed(dl.KindSet, 0, nil, 4, 1)
	require.NoError(t, err)
	key := dl.Element{GA: gas[0], Size: 4}
	_, err = l.InsertHashed(dl.KindSet, h, key, dl.Element{})
	require.NoError(t, err)
	src, err := l.CreateHashed(dl.KindSet, 0, nil, 4, 0)
	require.NoError(t, err)
	_, err = l.InsertHashed(dl.KindSet, src, key, dl.Element{})
	require.NoError(t, err)

	for _, bad := range []dl.Hashed{
		{GA: h.GA, NumRanks: h.NumRanks + 1, NumSlots: 4},
		{GA: h.GA, NumRanks: h.NumRanks, NumSlots: 5},
		{GA: h.GA, NumRanks: h.NumRanks, NumSlots: 1 << 32},
	} {
		_, err := l.SizeHashed(bad, false)
		assert.Error(t, err, "size with %d ranks, %d slots", bad.NumRanks, bad.NumSlots)
		_, err = l.BeginHashed(bad)
		assert.Error(t, err, "begin with %d ranks, %d slots", bad.NumRanks, bad.NumSlots)
		_, err = l.InsertHashed(dl.KindSet, bad, dl.Element{GA: gas[0] + 4, Size: 4}, dl.Element{})
		assert.Error(t, err, "insert with %d ranks, %d slots", bad.NumRanks, bad.NumSlots)
		assert.Error(t, l.MoveHashed(dl.KindSet, bad, src, false), "move into %d ranks, %d slots", bad.NumRanks, bad.NumSlots)
		assert.Error(t, l.AssignHashed(dl.KindSet, h, dl.Hashed{GA: gas[1]}, false), "assign from no container")
		assert.Error(t, l.DestroyHashed(dl.KindSet, bad))
	}
	for _, s := range []dl.Hashed{h, src} {
		n, err := l.SizeHashed(s, false)
		require.NoError(t, err)
		assert.Equal(t, uint64(1), n, "the sets after the refused calls")
	}
}

// A table's size is read once per process and remembered; a handle that
// asks for more slots than remembered reads it again (the address may now
// hold a larger table), and is refused only by what it reads.
func TestTableSizesAreRememberedAndReadAgainWhenTooSmall(t *testing.T) {
	w, ls, _, gas := libs(t, 2)
	l, e := ls[0], w.Engines[0]
	h, err := l.CreateHashed(dl.KindSet, 0, nil, 64, 1)
	require.NoError(t, err)
	tables, err := l.Tables(h)
	require.NoError(t, err)
	key := dl.Element{GA: gas[0], Size: 4}
	_, err = l.InsertHashed(dl.KindSet, h, key, dl.Element{})
	require.NoError(t, err)
	remembered := 0
	for _, tb := range tables {
		if room, ok := dl.TableRoom(e, tb); ok {
			remembered++
			assert.GreaterOrEqual(t, room, uint64(64*32))
		}
	}
	require.Equal(t, 1, remembered, "a keyed call remembers the table it used")

	for _, tb := range tables {
		dl.RememberTableRoom(e, tb, 32) // one slot: stale
	}
	it, err := l.FindHashed(dl.KindSet, h, key)
	require.NoError(t, err, "the handle's 64 slots are more than remembered: read again")
	assert.NotEqual(t, core.GANull, it.Elem)
	_, err = l.InsertHashed(dl.KindSet, dl.Hashed{GA: h.GA, NumRanks: h.NumRanks, NumSlots: 65}, dl.Element{GA: gas[0] + 4, Size: 4}, dl.Element{})
	assert.ErrorContains(t, err, "num_slots is not the container's", "remembered or read, 65 slots do not fit")

	require.NoError(t, l.DestroyHashed(dl.KindSet, h))
	for _, tb := range tables {
		_, ok := dl.TableRoom(e, tb)
		assert.False(t, ok, "a destroyed container's tables are forgotten")
	}
}
