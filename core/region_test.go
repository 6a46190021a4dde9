package core

import (
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func newTable(t *testing.T) (*RegTable, Layout) {
	l, err := NewLayout(4, 1)
	require.NoError(t, err)
	return NewRegTable(l, 2), l
}

func TestRegTableAcquireBounds(t *testing.T) {
	tab, l := newTable(t)
	buf := make([]byte, 1000)
	r, err := tab.Add(unsafe.Pointer(&buf[0]), 1000, 0)
	require.NoError(t, err)
	base := l.GAOf(2, r, r.Base)

	p, reg, st := tab.Acquire(base+10, 990)
	require.Equal(t, StatusOK, st)
	assert.Equal(t, unsafe.Pointer(&buf[10]), p)
	reg.Release()

	assert.Equal(t, StatusOK, tab.Check(base+1000, 0), "zero bytes at the end are inside")
	assert.Equal(t, StatusOutOfBounds, tab.Check(base+1000, 1))
	assert.Equal(t, StatusOutOfBounds, tab.Check(base+10, 991))
	assert.Equal(t, StatusOutOfBounds, tab.Check(base, ^uint64(0)), "huge sizes must not wrap")
	if r.OffBase > 0 {
		assert.Equal(t, StatusOutOfBounds, tab.Check(base-1, 1), "before the region")
	}
	assert.Equal(t, StatusWrongRank, tab.Check(l.Encode(1, 0, r.Seg, r.OffBase), 1))
	assert.Equal(t, StatusBadSegment, tab.Check(l.Encode(2, 0, r.Seg+1, 0), 1))
}

func TestRegTableGAAlignmentFollowsMemory(t *testing.T) {
	tab, l := newTable(t)
	buf := make([]byte, 256)
	for skew := 0; skew < 9; skew++ {
		r, err := tab.Add(unsafe.Pointer(&buf[skew]), 64, 0)
		require.NoError(t, err)
		ga := l.GAOf(2, r, r.Base)
		assert.Equal(t, uintptr(unsafe.Pointer(&buf[skew]))%8, uintptr(ga)%8, "skew %d", skew)
	}
}

func TestRegTableRejectsBadRanges(t *testing.T) {
	tab, _ := newTable(t)
	buf := make([]byte, 8)
	_, err := tab.Add(nil, 8, 0)
	assert.Error(t, err)
	_, err = tab.Add(unsafe.Pointer(&buf[0]), 0, 0)
	assert.Error(t, err)
	_, err = tab.Add(unsafe.Pointer(&buf[0]), ^uint64(0)-4, 0)
	assert.Error(t, err, "a wrapping range")
}

// A range with an unmapped page is refused (a peer's access there would
// fault in the owner); the mapped pages alone are accepted.
func TestRegTableRejectsUnmappedRanges(t *testing.T) {
	tab, _ := newTable(t)
	page := uint64(unix.Getpagesize())
	m, err := mapAnon(4 * page) // pages 1 and 3 are unmapped below
	require.NoError(t, err)
	// unix.Munmap only takes whole mappings: unmap pages directly.
	munmap := func(b []byte) error {
		if _, _, errno := unix.Syscall(unix.SYS_MUNMAP, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), 0); errno != 0 {
			return errno
		}
		return nil
	}
	defer func() { _ = munmap(m[:page]); _ = munmap(m[2*page : 3*page]) }()
	require.NoError(t, munmap(m[page:2*page]))
	require.NoError(t, munmap(m[3*page:]))
	_, err = tab.Add(unsafe.Pointer(&m[0]), 3*page, 0)
	assert.ErrorContains(t, err, "not all mapped memory")
	_, err = tab.Add(unsafe.Pointer(&m[page-8]), 16, 0)
	assert.ErrorContains(t, err, "not all mapped memory")
	_, err = tab.Add(unsafe.Pointer(&m[2*page]), 2*page, 0)
	assert.Error(t, err, "past the end of the mapping")
	r, err := tab.Add(unsafe.Pointer(&m[2*page]), page, 0)
	require.NoError(t, err)
	require.NoError(t, tab.Remove(r.Seg))
}

func TestRegTableReusesOldestSegmentFirst(t *testing.T) {
	tab, _ := newTable(t)
	buf := make([]byte, 8)
	a, _ := tab.Add(unsafe.Pointer(&buf[0]), 8, 0)
	b, _ := tab.Add(unsafe.Pointer(&buf[0]), 8, 0)
	assert.NotEqual(t, a.Seg, b.Seg, "overlapping registrations are independent")
	require.NoError(t, tab.Remove(a.Seg))
	assert.Error(t, tab.Remove(a.Seg), "double unregister")
	c, _ := tab.Add(unsafe.Pointer(&buf[0]), 8, 0)
	assert.NotEqual(t, a.Seg, c.Seg, "a freed segment goes to the back of the queue")
}

func TestRegTableFull(t *testing.T) {
	tab, _ := newTable(t)
	buf := make([]byte, 8)
	for i := 0; i < tab.Capacity(); i++ {
		_, err := tab.Add(unsafe.Pointer(&buf[0]), 8, 0)
		require.NoError(t, err)
	}
	_, err := tab.Add(unsafe.Pointer(&buf[0]), 8, 0)
	assert.ErrorContains(t, err, "full")
}

func TestRegTableRemoveWaitsForAccesses(t *testing.T) {
	tab, l := newTable(t)
	buf := make([]byte, 64)
	r, _ := tab.Add(unsafe.Pointer(&buf[0]), 64, 0)
	_, pinned, st := tab.Acquire(l.GAOf(2, r, r.Base), 8)
	require.Equal(t, StatusOK, st)
	removed := make(chan struct{})
	go func() {
		_ = tab.Remove(r.Seg)
		close(removed)
	}()
	select {
	case <-removed:
		t.Fatal("unregister returned while an access was in progress")
	case <-time.After(50 * time.Millisecond):
	}
	assert.Equal(t, StatusBadSegment, tab.Check(l.GAOf(2, r, r.Base), 8), "no new access once unregister began")
	pinned.Release()
	<-removed
}

func TestRegTableConcurrentUse(t *testing.T) {
	tab, l := newTable(t)
	buf := make([]byte, 4096)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 500; i++ {
				r, err := tab.Add(unsafe.Pointer(&buf[i%64]), 64, 0)
				if err != nil {
					t.Error(err)
					return
				}
				if st := tab.Check(l.GAOf(2, r, r.Base), 64); st != StatusOK {
					t.Error(st)
				}
				if err := tab.Remove(r.Seg); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
}
