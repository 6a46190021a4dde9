package ib

import (
	"bytes"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/libacp/libacp/core"
	"github.com/libacp/libacp/core/coretest"
	"github.com/libacp/libacp/internal/memwatch"
)

// A registration of user memory is kept after its unregistration and
// given to the next registration of the same range, and let go as soon as
// the memory is not what it was: unmapped and mapped again at the same
// address (other pages, which a kept registration would not reach),
// dropped with MADV_DONTNEED, or unmapped while still registered. After
// each, a peer's read through the new registration sees what the program
// wrote into the memory it has now.
func TestRegistrationKeptUntilMemoryGoes(t *testing.T) {
	needDevice(t)
	w := coretest.NewForeignWorld(t, 2, "ib", "size-smem=262144")
	defer w.Close()
	eps := endpointsOf(t, 2)
	rc := &eps[1].rc
	if !rc.on() {
		t.Skip("no userfaultfd here: registrations are not kept")
	}
	e0, e1 := w.Engines[0], w.Engines[1]
	const n = 64 << 10
	mem := coretest.CMem(t, n)
	p := unsafe.Pointer(&mem[0])

	fill := func(v byte) {
		for i := range mem {
			mem[i] = v + byte(i%251)
		}
	}
	// read has rank 0 copy the whole registration into its starter memory
	// and compares it with what the memory holds now.
	read := func(key core.GA, what string) {
		t.Helper()
		h, err := e0.Copy(starterGA(e0, 0, 0), key, n, core.HandleNull)
		require.NoError(t, err)
		e0.Complete(h)
		got := e0.StarterMemory(core.SegStarter)[:n]
		require.True(t, bytes.Equal(got, mem), "%s: the peer read other bytes than the memory holds", what)
	}
	register := func() core.GA {
		t.Helper()
		key, err := e1.Register(p, n, 0)
		require.NoError(t, err)
		return key
	}
	remap := func() {
		t.Helper()
		q, err := unix.MmapPtr(-1, 0, p, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_FIXED)
		require.NoError(t, err)
		require.Equal(t, p, q)
	}

	fill(1)
	key := register()
	read(key, "first registration")
	require.NoError(t, e1.Unregister(key))
	idle, hits, dropped := rc.stats()
	assert.Equal(t, 1, idle, "the registration was not kept")

	// The same range again: the kept registration, the same pages.
	key = register()
	_, hits2, _ := rc.stats()
	assert.Equal(t, hits+1, hits2, "the kept registration was not reused")
	fill(2)
	read(key, "reused registration")
	require.NoError(t, e1.Unregister(key))

	// Unmapped and mapped again at the same address while kept.
	remap()
	fill(3)
	idle, _, dropped2 := rc.stats()
	assert.Equal(t, 0, idle, "a registration of unmapped memory is still kept")
	assert.Greater(t, dropped2, dropped)
	key = register()
	_, hits3, _ := rc.stats()
	assert.Equal(t, hits2, hits3, "a registration of other pages was reused")
	read(key, "after munmap and mmap")
	require.NoError(t, e1.Unregister(key))

	// Dropped pages (the same address, fresh zero pages).
	require.NoError(t, unix.Madvise(mem[4096:8192], unix.MADV_DONTNEED))
	fill(4)
	key = register()
	_, hits4, _ := rc.stats()
	assert.Equal(t, hits3, hits4, "a registration of dropped pages was reused")
	read(key, "after MADV_DONTNEED")

	// Unmapped while registered (the program's error): never kept.
	remap()
	fill(5)
	require.NoError(t, e1.Unregister(key))
	idle, _, _ = rc.stats()
	assert.Equal(t, 0, idle, "a registration whose memory went while registered was kept")
	key = register()
	read(key, "after an unmap while registered")
	require.NoError(t, e1.Unregister(key))

	// A kept registration whose memory the program unmaps goes without
	// another registration call: its pages are not held.
	key = register()
	require.NoError(t, e1.Unregister(key))
	rc.mu.Lock()
	kept := len(rc.idle)
	rc.mu.Unlock()
	require.Equal(t, 1, kept)
	remap()
	deadline := time.Now().Add(5 * time.Second)
	for {
		rc.mu.Lock()
		kept = len(rc.idle)
		rc.mu.Unlock()
		if kept == 0 {
			break
		}
		require.False(t, time.Now().After(deadline), "the registration of unmapped memory is still kept after 5 s")
		time.Sleep(10 * time.Millisecond)
	}
	key = register()
	require.NoError(t, e1.Unregister(key))

	var report bytes.Buffer
	eps[1].ReportState(&report)
	assert.Contains(t, report.String(), "registrations kept for reuse: 1")
}

// A range stops being watched once no kept or watched registration
// shares its pages (pushed out of the cache, or let go as its pages were
// dropped), so that watches do not pile up: another watcher (a second
// userfaultfd) can watch it then, and cannot while it is kept.
func TestEvictedAndDroppedRangesUnwatched(t *testing.T) {
	needDevice(t)
	w := coretest.NewForeignWorld(t, 2, "ib", "ib-reg-cache=1")
	defer w.Close()
	eps := endpointsOf(t, 2)
	rc := &eps[1].rc
	if !rc.on() {
		t.Skip("no userfaultfd here: registrations are not kept")
	}
	other, err := memwatch.New()
	require.NoError(t, err)
	defer other.Close()
	e1 := w.Engines[1]
	const n = 4 * 4096
	mem := coretest.CMem(t, 3*n)
	pa, pb := unsafe.Pointer(&mem[0]), unsafe.Pointer(&mem[2*n])
	a, b := uintptr(pa), uintptr(pb)
	cycle := func(p unsafe.Pointer) {
		t.Helper()
		key, err := e1.Register(p, n, 0)
		require.NoError(t, err)
		require.NoError(t, e1.Unregister(key))
	}
	cycle(pa)
	assert.Error(t, other.Watch(a, n), "a kept range is not watched")
	cycle(pb) // pushes a out (room for one)
	assert.NoError(t, other.Watch(a, n), "a range pushed out of the cache is still watched")
	other.Unwatch(a, n)
	assert.Error(t, other.Watch(b, n), "a kept range is not watched")
	require.NoError(t, unix.Madvise(mem[2*n:3*n], unix.MADV_DONTNEED))
	idle, _, _ := rc.stats()
	assert.Equal(t, 0, idle)
	assert.NoError(t, other.Watch(b, n), "a range let go as its pages were dropped is still watched")
}
