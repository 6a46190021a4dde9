package memwatch

import (
	"errors"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func newWatcher(t *testing.T) *Watcher {
	w, err := New()
	if errors.Is(err, ErrUnavailable) {
		t.Skipf("no userfaultfd here: %v", err)
	}
	require.NoError(t, err)
	t.Cleanup(w.Close)
	return w
}

func mapAnon(t *testing.T, n int) []byte {
	b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	require.NoError(t, err)
	for i := range b {
		b[i] = byte(i)
	}
	return b
}

// covered reports whether some range of gone covers [p, p+n).
func covered(gone []Gone, p unsafe.Pointer, n int) bool {
	for _, g := range gone {
		if g.Start <= uintptr(p) && uintptr(p)+uintptr(n) <= g.End {
			return true
		}
	}
	return false
}

// Each way memory stops being the same pages is reported by the first
// Take after the call that did it returned.
func TestEveryWayMemoryGoesIsReported(t *testing.T) {
	w := newWatcher(t)
	page := unix.Getpagesize()

	// munmap
	b := mapAnon(t, 4*page)
	p := unsafe.Pointer(&b[0])
	require.NoError(t, w.Watch(uintptr(p)+100, uint64(2*page)))
	require.NoError(t, unix.Munmap(b))
	gone := w.Take()
	assert.True(t, covered(gone, unsafe.Add(p, 100), 2*page), "munmap of a watched range: %v", gone)
	assert.Empty(t, w.Take(), "a range reported twice")

	// madvise(MADV_DONTNEED): the same address, other pages from now on
	b = mapAnon(t, 4*page)
	p = unsafe.Pointer(&b[0])
	require.NoError(t, w.Watch(uintptr(p), uint64(4*page)))
	require.NoError(t, unix.Madvise(b[page:2*page], unix.MADV_DONTNEED))
	gone = w.Take()
	assert.True(t, covered(gone, unsafe.Add(p, page), page), "MADV_DONTNEED: %v", gone)
	assert.False(t, covered(gone, p, page), "a page nobody dropped was reported: %v", gone)
	assert.Equal(t, byte(0), b[page], "the dropped page reads as zeros again (no fault was held)")
	b[page] = 7 // and writes go on: nothing is write-protected

	// an mmap over it (MAP_FIXED)
	_, err := unix.MmapPtr(-1, 0, unsafe.Add(p, 2*page), uintptr(page), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_FIXED)
	require.NoError(t, err)
	gone = w.Take()
	assert.True(t, covered(gone, unsafe.Add(p, 2*page), page), "mmap MAP_FIXED over a watched page: %v", gone)

	// mremap moves the first two pages away (the third is another mapping
	// now)
	q, err := unix.MremapPtr(p, uintptr(2*page), nil, uintptr(64*page), unix.MREMAP_MAYMOVE)
	require.NoError(t, err)
	gone = w.Take()
	if q != p {
		assert.True(t, covered(gone, p, 2*page), "mremap that moved the range: %v", gone)
	}
	_ = unix.MunmapPtr(q, uintptr(64*page))
	_ = unix.MunmapPtr(unsafe.Add(p, 2*page), uintptr(2*page))
}

// The reader thread reads events while nobody calls Take: a munmap returns
// (it would wait for the read otherwise), and the next Take reports it.
func TestEventsReadWithoutTake(t *testing.T) {
	w := newWatcher(t)
	var ps []unsafe.Pointer
	for i := 0; i < 10; i++ {
		b := mapAnon(t, 1<<16)
		ps = append(ps, unsafe.Pointer(&b[0]))
		require.NoError(t, w.Watch(uintptr(ps[i]), 1<<16))
		require.NoError(t, unix.Munmap(b))
	}
	gone := w.Take()
	for _, p := range ps {
		assert.True(t, covered(gone, p, 1<<16), "%p: %v", p, gone)
	}
}

// More events than the ring holds before a Take: reported as Everything.
func TestLostEventsMeanEverything(t *testing.T) {
	w := newWatcher(t)
	page := unix.Getpagesize()
	b := mapAnon(t, 1100*page)
	require.NoError(t, w.Watch(uintptr(unsafe.Pointer(&b[0])), uint64(len(b))))
	for i := 0; i < 1100; i += 2 { // 550 separate events
		require.NoError(t, unix.Madvise(b[i*page:(i+1)*page], unix.MADV_DONTNEED))
	}
	assert.Equal(t, []Gone{Everything}, w.Take())
	assert.Empty(t, w.Take())
	require.NoError(t, unix.Munmap(b))
}

// Memory that is not watched is not reported, and watching what cannot be
// watched (not mapped) fails.
func TestOnlyWatchedMemory(t *testing.T) {
	w := newWatcher(t)
	b := mapAnon(t, 1<<16)
	require.NoError(t, unix.Munmap(b))
	assert.Empty(t, w.Take())
	assert.Error(t, w.Watch(uintptr(unsafe.Pointer(&b[0])), 1<<16), "unmapped memory")
	assert.Error(t, w.Watch(0, 0))
}

// Unwatch ends the reports for a range; Close drops every watch, after
// which the memory behaves as before and nothing is reported.
func TestUnwatchAndClose(t *testing.T) {
	w, err := New()
	if errors.Is(err, ErrUnavailable) {
		t.Skipf("no userfaultfd here: %v", err)
	}
	require.NoError(t, err)
	b := mapAnon(t, 1<<16)
	c := mapAnon(t, 1<<16)
	require.NoError(t, w.Watch(uintptr(unsafe.Pointer(&b[0])), 1<<16))
	require.NoError(t, w.Watch(uintptr(unsafe.Pointer(&c[0])), 1<<16))
	w.Unwatch(uintptr(unsafe.Pointer(&b[0])), 1<<16)
	require.NoError(t, unix.Munmap(b))
	assert.Empty(t, w.Take())
	w.Close()
	w.Close()
	assert.Empty(t, w.Take())
	assert.Error(t, w.Watch(uintptr(unsafe.Pointer(&c[0])), 1<<16))
	require.NoError(t, unix.Madvise(c, unix.MADV_DONTNEED))
	require.NoError(t, unix.Munmap(c))
}

// Two watchers in one process (two engines in a test) watch different
// memory; one range cannot be watched by both.
func TestTwoWatchers(t *testing.T) {
	w1, w2 := newWatcher(t), newWatcher(t)
	b := mapAnon(t, 1<<16)
	c := mapAnon(t, 1<<16)
	require.NoError(t, w1.Watch(uintptr(unsafe.Pointer(&b[0])), 1<<16))
	require.NoError(t, w2.Watch(uintptr(unsafe.Pointer(&c[0])), 1<<16))
	assert.Error(t, w2.Watch(uintptr(unsafe.Pointer(&b[0])), 1<<16), "another watcher's range")
	require.NoError(t, unix.Munmap(b))
	require.NoError(t, unix.Munmap(c))
	g1, g2 := w1.Take(), w2.Take()
	assert.True(t, covered(g1, unsafe.Pointer(&b[0]), 1<<16))
	assert.False(t, covered(g1, unsafe.Pointer(&c[0]), 1<<16))
	assert.True(t, covered(g2, unsafe.Pointer(&c[0]), 1<<16))
}
