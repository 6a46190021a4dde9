package core

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/libacp/libacp/internal/raceedge"
)

// pages maps n pages readable and writable, unmapped when the test ends.
func pages(t *testing.T, n int) []byte {
	t.Helper()
	b, err := unix.Mmap(-1, 0, n*unix.Getpagesize(), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	require.NoError(t, err)
	t.Cleanup(func() { _ = unix.Munmap(b) })
	return b
}

func TestGuardsReportFaultsInsteadOfCrashing(t *testing.T) {
	page := unix.Getpagesize()
	mem := pages(t, 3)
	ro, none, rw := mem[:page], mem[page:2*page], mem[2*page:]
	for i := range ro {
		ro[i] = byte(i)
	}
	require.NoError(t, unix.Mprotect(ro, unix.PROT_READ))
	require.NoError(t, unix.Mprotect(none, unix.PROT_NONE))
	src := make([]byte, 64)
	for i := range src {
		src[i] = 0xee
	}

	assert.False(t, GuardedCopy(ro[8:72], src), "copy into read-only memory")
	assert.False(t, GuardedCopy(none[:64], src), "copy into inaccessible memory")
	assert.False(t, GuardedCopy(rw[:64], none[:64]), "copy out of inaccessible memory")
	assert.True(t, GuardedCopy(rw[:64], ro[:64]), "copy out of read-only memory")
	assert.Equal(t, ro[:64], rw[:64])
	for i := range ro {
		require.Equal(t, byte(i), ro[i], "read-only byte %d changed", i)
	}

	if raceedge.Enabled {
		t.Log("race detector: the guarded atomics' faults are not tested (they happen in its C runtime)")
		return
	}
	for op := OpCas4; op <= OpAnd8; op++ {
		// a cas that would succeed (one that fails writes nothing)
		cur := *(*uint64)(unsafe.Pointer(&ro[64]))
		if op.Width() == 4 {
			cur = uint64(*(*uint32)(unsafe.Pointer(&ro[64])))
		}
		_, ok := GuardedAtomic(op, unsafe.Pointer(&ro[64]), cur, cur+1)
		assert.False(t, ok, "%s on read-only memory", op)
		_, ok = GuardedAtomic(op, unsafe.Pointer(&none[64]), 0, 1)
		assert.False(t, ok, "%s on inaccessible memory", op)
	}
	old, ok := GuardedAtomic(OpAdd8, unsafe.Pointer(&rw[64]), 5, 0)
	assert.True(t, ok)
	assert.Zero(t, old)
	old, ok = GuardedAtomic(OpAdd8, unsafe.Pointer(&rw[64]), 5, 0)
	assert.True(t, ok)
	assert.EqualValues(t, 5, old)

	assert.False(t, Writable(unsafe.Pointer(&ro[64]), 8))
	assert.False(t, Writable(unsafe.Pointer(&none[64]), 4))
	assert.True(t, Writable(unsafe.Pointer(&rw[64]), 8))
	assert.EqualValues(t, 10, *(*uint64)(unsafe.Pointer(&rw[64])), "Writable changed the word")

	assert.True(t, Readable(unsafe.Pointer(&ro[0]), uint64(page)))
	assert.False(t, Readable(unsafe.Pointer(&ro[page-8]), 16), "a range running into an inaccessible page")
	assert.True(t, Readable(unsafe.Pointer(&rw[0]), uint64(page)))
	assert.True(t, Readable(nil, 0))

	assert.False(t, guardedStore(unsafe.Pointer(&ro[64]), 4, 1))
	assert.True(t, guardedStore(unsafe.Pointer(&rw[72]), 4, 1))

	// Other panics are not swallowed, and the goroutine's setting is
	// restored afterwards.
	assert.Panics(t, func() {
		defer recoverFault(false, new(bool))
		panic("not a fault")
	})
}

// A remote put into, and an atomic on, memory that became read-only or
// inaccessible after its registration fail with StatusFault at the owner,
// which lives on.
func TestOwnerRefusesWritesIntoProtectedMemory(t *testing.T) {
	if raceedge.Enabled {
		t.Skip("race detector: atomics run in its C runtime, where a fault cannot be recovered")
	}
	e := newManualEngine(t)
	page := unix.Getpagesize()
	mem := pages(t, 2)
	ro, none := mem[:page], mem[page:]
	kro, err := e.Register(unsafe.Pointer(&ro[0]), uint64(page), 0)
	require.NoError(t, err)
	kna, err := e.Register(unsafe.Pointer(&none[0]), uint64(page), 0)
	require.NoError(t, err)
	require.NoError(t, unix.Mprotect(ro, unix.PROT_READ))
	require.NoError(t, unix.Mprotect(none, unix.PROT_NONE))

	_, st := e.ApplyAtomic(OpAdd8, kro+8, 1, 0)
	assert.Equal(t, StatusFault, st)
	_, st = e.ApplyAtomic(OpCas4, kna+4, 0, 1)
	assert.Equal(t, StatusFault, st)
	// Local copies and atomics: the handle completes, failed.
	me, _ := e.StarterGA(0)
	h, err := e.Copy(kro+8, me, 8, HandleNull)
	require.NoError(t, err)
	e.Complete(h)
	assert.True(t, e.Failed(h), "a local copy into read-only memory")
	h, err = e.Copy(me, kna, 8, HandleNull)
	require.NoError(t, err)
	e.Complete(h)
	assert.True(t, e.Failed(h), "a local copy out of inaccessible memory")
	h, err = e.Copy(me+64, kro, 8, HandleNull)
	require.NoError(t, err)
	e.Complete(h)
	assert.False(t, e.Failed(h), "a local copy out of read-only memory")
	h, err = e.Atomic(OpAdd8, me, kro+16, 1, 0, HandleNull)
	require.NoError(t, err)
	e.Complete(h)
	assert.True(t, e.Failed(h), "a local atomic on read-only memory")
	h, err = e.Atomic(OpAdd8, kro+16, me+8, 1, 0, HandleNull)
	require.NoError(t, err)
	e.Complete(h)
	assert.True(t, e.Failed(h), "a local atomic whose result location is read-only")
	ptr, err := e.QueryAddress(me + 8)
	require.NoError(t, err)
	assert.Zero(t, *(*uint64)(ptr), "the target of an atomic whose result location is read-only changed")

	_, r, st := e.Acquire(kro, 16)
	require.Equal(t, StatusOK, st)
	assert.True(t, r.UserMemory())
	r.Release()
}

// An atomic that waits for an earlier operation runs later from the queue
// (kindLocalAtomic) and stores its old value like one that runs at once:
// the guarded paths for the program's memory must leave starter memory's
// store in place (a version stored nothing there, and t_allpairs across
// two hosts fetched zeros).
func TestDeferredLocalAtomicStoresItsResult(t *testing.T) {
	e := newManualEngine(t)
	me, _ := e.StarterGA(0)
	peer, _ := e.StarterGA(1)
	target, err := e.QueryAddress(me + 128)
	require.NoError(t, err)
	result, err := e.QueryAddress(me + 64)
	require.NoError(t, err)
	*(*uint64)(target) = 7

	h1, err := e.Copy(peer, me, 8, HandleNull) // held by the manual transport
	require.NoError(t, err)
	h2, err := e.Atomic(OpAdd8, me+64, me+128, 5, 0, h1)
	require.NoError(t, err)
	assert.True(t, e.Inquire(h2), "the atomic ran before the put it is ordered after")
	manual.finish(0, nil)
	e.Complete(h2)
	assert.False(t, e.Failed(h2))
	assert.EqualValues(t, 12, *(*uint64)(target), "target")
	assert.EqualValues(t, 7, *(*uint64)(result), "old value at the result location")
}

// A large guarded copy that runs into an inaccessible page fails instead
// of crashing, whichever way memcopy.Move copies it (a fault in its
// assembly is a fault in Go code for the runtime).
func TestLargeGuardedCopiesReportFaults(t *testing.T) {
	page := unix.Getpagesize()
	for _, n := range []int{1 << 20, 4<<20 + 64} {
		np := n/page + 2
		mem := pages(t, np)
		none := mem[(np-1)*page:]
		require.NoError(t, unix.Mprotect(none, unix.PROT_NONE))
		big := make([]byte, n)
		start := len(mem) - page - n + 4096 // the last 4096 bytes fall into the inaccessible page
		assert.False(t, GuardedCopy(mem[start:start+n], big), "copy of %d bytes into memory that ends inaccessible", n)
		assert.False(t, GuardedCopy(big, mem[start:start+n]), "copy of %d bytes out of memory that ends inaccessible", n)
		assert.True(t, GuardedCopy(mem[:n], big), "copy of %d bytes into accessible memory", n)
	}
}
