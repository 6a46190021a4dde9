package ib

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/libacp/libacp/core"
	"github.com/libacp/libacp/core/conformance"
	"github.com/libacp/libacp/core/coretest"
	"github.com/libacp/libacp/internal/memwatch"
)

// These tests need an RDMA device; tests/ib/run-rxe.sh runs them inside a
// virtual machine with Soft-RoCE.

func needDevice(t *testing.T) {
	if len(sysfsDevices()) == 0 {
		t.Skip("no RDMA device here (tests/ib/run-rxe.sh runs these tests in a VM with Soft-RoCE)")
	}
}

func TestConformance(t *testing.T) {
	needDevice(t)
	conformance.Run(t, "ib")
}

// Every 8-byte atomic on the adapters (--acp-ib-atomics nic): the suite's
// atomics in every placement, contention among ranks, and its random case
// with atomics from and to every rank.
func TestConformanceNICAtomics(t *testing.T) {
	needDevice(t)
	conformance.Run(t, "ib", "ib-atomics=nic")
}

// endpointOf finds the ib endpoint of the engine with physical index me
// among the endpoints opened for world w.
func endpointsOf(t *testing.T, n int) []*endpoint {
	endpoints.Lock()
	defer endpoints.Unlock()
	list := endpoints.list[len(endpoints.list)-n:]
	out := make([]*endpoint, n)
	for _, e := range list {
		out[e.me] = e
	}
	for i, e := range out {
		require.NotNil(t, e, "no endpoint for process %d", i)
	}
	return out
}

func (e *endpoint) queuePairs() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.nconn
}

func starterGA(e *core.Engine, rank int, off uint64) core.GA {
	ga, err := e.StarterGA(rank)
	if err != nil {
		panic(err)
	}
	return ga + core.GA(off)
}

// A rank that talks to one peer creates one queue pair; ranks nobody
// talks to create none.
func TestConnectionsAreLazy(t *testing.T) {
	needDevice(t)
	w := coretest.NewWorld(t, 4, "ib", "size-smem=4096")
	eps := endpointsOf(t, 4)
	for r, ep := range eps {
		assert.Zero(t, ep.queuePairs(), "process %d has queue pairs before any contact", r)
	}
	e := w.Engines[0]
	copy(e.StarterMemory(core.SegStarter), "lazy")
	h, err := e.Copy(starterGA(e, 1, 100), starterGA(e, 0, 0), 4, core.HandleNull)
	require.NoError(t, err)
	e.Complete(h)
	assert.Equal(t, "lazy", string(w.Engines[1].StarterMemory(core.SegStarter)[100:104]))
	assert.Equal(t, []int{1, 1, 0, 0}, []int{eps[0].queuePairs(), eps[1].queuePairs(), eps[2].queuePairs(), eps[3].queuePairs()})
	// The hang report lists the one connection.
	var report strings.Builder
	eps[0].ReportState(&report)
	assert.Regexp(t, `(?m)^  rank 1, path 0: ready; work requests posted [1-9]\d*, completed [1-9]\d*; .*\n  1 connection\(s\); 0 operation\(s\) waiting`, report.String())
	w.Close()
}

// twoBuffers opens two processes over ib and maps two one-page buffers
// for them to register, a page apart.
func twoBuffers(t *testing.T, settings ...string) (w *coretest.World, eps []*endpoint, a, b []byte) {
	needDevice(t)
	w = coretest.NewWorld(t, 2, "ib", settings...)
	eps = endpointsOf(t, 2)
	mem := coretest.CMem(t, 3*4096)
	return w, eps, mem[:4096], mem[8192:]
}

// A read with the key its owner packed (core.KeyCarrier: a channel's
// rendezvous) fetches no key and leaves none to revoke: the reader's
// cache stays without it, the owner lists no fetcher, and the owner's
// unregistration sends no invalidation. An ordinary read of another
// registration, for contrast, fetches its key.
func TestCarriedKeyIsNeitherFetchedNorRevoked(t *testing.T) {
	w, eps, a, b := twoBuffers(t, "size-smem=65536")
	for i := range a {
		a[i], b[i] = byte(i*7), byte(i*11)
	}
	e0, e1 := w.Engines[0], w.Engines[1]
	keyA, err := e1.Register(unsafe.Pointer(&a[0]), 4096, 0)
	require.NoError(t, err)
	keyB, err := e1.Register(unsafe.Pointer(&b[0]), 4096, 0)
	require.NoError(t, err)
	var packed core.CarriedKey
	require.True(t, e1.PackKey(keyA, 0, &packed), "no key packed for rank 0")
	require.Equal(t, keyRepLen, int(packed.N))

	fetches := func() uint64 { eps[0].mu.Lock(); defer eps[0].mu.Unlock(); return eps[0].keyRequests }
	fetchers := func(key core.GA) int {
		eps[1].mu.Lock()
		defer eps[1].mu.Unlock()
		return len(eps[1].regs[e1.Layout().Seg(key)].fetchers)
	}
	cached := func(key core.GA) bool {
		eps[0].mu.Lock()
		defer eps[0].mu.Unlock()
		return eps[0].keys.get(1, e1.Layout().Seg(key)) != nil
	}
	mine := e0.StarterMemory(core.SegStarter)
	before, reads := fetches(), eps[0].carriedReads.Load()
	h, err := e0.CopyCarried(starterGA(e0, 0, 0), keyA+16, 4000, &packed)
	require.NoError(t, err)
	e0.Complete(h)
	require.Zero(t, e0.Errors())
	assert.Equal(t, a[16:4016], mine[:4000])
	assert.Equal(t, uint64(1), eps[0].carriedReads.Load()-reads)
	assert.Equal(t, before, fetches(), "a key was fetched for a read that carried one")
	assert.False(t, cached(keyA), "the carried key entered the cache")
	assert.Zero(t, fetchers(keyA), "the owner lists a fetcher of the carried key")

	h, err = e0.Copy(starterGA(e0, 0, 0), keyB, 4096, core.HandleNull)
	require.NoError(t, err)
	e0.Complete(h)
	assert.Equal(t, b, mine[:4096])
	assert.Equal(t, before+1, fetches(), "the ordinary read fetched no key")
	assert.True(t, cached(keyB))
	assert.Equal(t, 1, fetchers(keyB))

	// Only B's key is revoked.
	revoked := func() uint64 { eps[1].mu.Lock(); defer eps[1].mu.Unlock(); return eps[1].revocations }
	r0 := revoked()
	require.NoError(t, e1.Unregister(keyA))
	assert.Equal(t, r0, revoked(), "unregistering A revoked a key")
	require.NoError(t, e1.Unregister(keyB))
	assert.Equal(t, r0+1, revoked(), "unregistering B revoked no key")
	assert.False(t, cached(keyB), "B's key survived its unregistration")
	w.Close()
}

// A key cached by a peer must never reach freed memory: rank 1 registers
// A, rank 0 writes into it (and caches its key), rank 1 unregisters A and
// registers B, which gets A's segment number again; rank 0 then writes
// through A's old GA. The write must land in B or fail, never in A.
func TestStaleKeyNeverReachesOldMemory(t *testing.T) {
	w, eps, a, b := twoBuffers(t, "size-smem=4096")
	staleKeyNeverReachesOldMemory(t, w, eps, a, b)
	w.Close()
}

// The same in a C program's engines, whose unregistered registrations
// are kept for reuse (regCache): A's stays with the adapter, and still
// only B's key reaches memory.
func TestStaleKeyNeverReachesKeptRegistration(t *testing.T) {
	w, eps := keepingPair(t, "size-smem=4096")
	mem := coretest.CMem(t, 3*4096)
	staleKeyNeverReachesOldMemory(t, w, eps, mem[:4096], mem[8192:])
	idle, _, _ := eps[1].rc.stats()
	assert.Equal(t, 1, idle, "A's registration was not kept")
	w.Close()
}

func staleKeyNeverReachesOldMemory(t *testing.T, w *coretest.World, eps []*endpoint, a, b []byte) {
	var oldGA core.GA
	var keyA core.GA
	write := func(e *core.Engine, ga core.GA, text string) error {
		copy(e.StarterMemory(core.SegStarter)[64:], text)
		h, err := e.Copy(ga, starterGA(e, 0, 64), uint64(len(text)), core.HandleNull)
		if err != nil {
			return err
		}
		e.Complete(h)
		return nil
	}
	w.Run(func(r int, e *core.Engine) error {
		if r == 1 {
			var err error
			if keyA, err = e.Register(unsafe.Pointer(&a[0]), uint64(len(a)), 0); err != nil {
				return err
			}
			oldGA = keyA + 100
		}
		if err := e.Sync(); err != nil {
			return err
		}
		if r == 0 {
			if err := write(e, oldGA, "first write"); err != nil {
				return err
			}
			eps[0].mu.Lock()
			cached := eps[0].keys.get(1, e.Layout().Seg(oldGA)) != nil
			eps[0].mu.Unlock()
			if !cached {
				return fmt.Errorf("rank 0 did not cache the key of A")
			}
		}
		if err := e.Sync(); err != nil {
			return err
		}
		if r == 1 {
			if string(a[100:111]) != "first write" {
				return fmt.Errorf("A holds %q", a[100:111])
			}
			clear(a)
			if err := e.Unregister(keyA); err != nil {
				return err
			}
			// Cycle through the free segments until A's comes back.
			seg := e.Layout().Seg(keyA)
			for i := 0; ; i++ {
				k, err := e.Register(unsafe.Pointer(&b[0]), uint64(len(b)), 0)
				if err != nil {
					return err
				}
				if e.Layout().Seg(k) == seg {
					break
				}
				if err := e.Unregister(k); err != nil {
					return err
				}
				if i > 10000 {
					return fmt.Errorf("segment %d never came back", seg)
				}
			}
		}
		if err := e.Sync(); err != nil {
			return err
		}
		if r == 0 {
			eps[0].mu.Lock()
			cached := eps[0].keys.get(1, e.Layout().Seg(oldGA)) != nil
			eps[0].mu.Unlock()
			if cached {
				return fmt.Errorf("rank 0 still caches the key of the unregistered region")
			}
			before := e.Errors()
			if err := write(e, oldGA, "second write"); err != nil {
				return err
			}
			if e.Errors() != before {
				return fmt.Errorf("the write through the old GA failed although B covers it")
			}
		}
		return e.Sync()
	})
	assert.Equal(t, make([]byte, len(a)), a, "the unregistered buffer A was written")
	assert.Equal(t, "second write", string(b[100:112]), "B, registered under A's segment, receives the write")
}

// The C fast path's work with a peer's key, or with a registration of
// ours, holds up the unregistration until it ends: the owner frees the
// memory only once the C side's last work request with the key completed
// (the revocation's confirmation waits for it), and our own
// unregistration waits for the C side's work with the region.
func TestUnregistrationWaitsForFastPathWork(t *testing.T) {
	needDevice(t)
	w := coretest.NewWorld(t, 2, "ib", "size-smem=4096")
	eps := endpointsOf(t, 2)
	mem := coretest.CMem(t, 2*4096)
	a, own := mem[:4096], mem[4096:]
	var keyA core.GA
	var unregistered atomic.Bool
	w.Run(func(r int, e *core.Engine) error {
		if r == 1 {
			var err error
			if keyA, err = e.Register(unsafe.Pointer(&a[0]), uint64(len(a)), 0); err != nil {
				return err
			}
		}
		if err := e.Sync(); err != nil {
			return err
		}
		var release func()
		if r == 0 {
			h, err := e.Copy(keyA, starterGA(e, 0, 0), 8, core.HandleNull) // learns the key
			if err != nil {
				return err
			}
			e.Complete(h)
			var ok bool
			if release, ok = eps[0].holdFast(true, 1, e.Layout().Seg(keyA)); !ok {
				return fmt.Errorf("the C side does not hold the key of A after its first use")
			}
		}
		if err := e.Sync(); err != nil {
			return err
		}
		switch r {
		case 0:
			time.Sleep(300 * time.Millisecond)
			if unregistered.Load() {
				release()
				return fmt.Errorf("rank 1 unregistered A while the C side here still used its key")
			}
			release()
		case 1:
			if err := e.Unregister(keyA); err != nil {
				return err
			}
			unregistered.Store(true)
		}
		if err := e.Sync(); err != nil {
			return err
		}
		if r != 0 {
			return nil
		}
		if !unregistered.Load() {
			return fmt.Errorf("rank 1 did not unregister A")
		}
		key, err := e.Register(unsafe.Pointer(&own[0]), uint64(len(own)), 0)
		if err != nil {
			return err
		}
		release, ok := eps[0].holdFast(false, 0, e.Layout().Seg(key))
		if !ok {
			return fmt.Errorf("the C side does not hold our registration")
		}
		done := make(chan error, 1)
		go func() { done <- e.Unregister(key) }()
		select {
		case err := <-done:
			release()
			return fmt.Errorf("our unregistration returned (%v) while the C side still used the region", err)
		case <-time.After(300 * time.Millisecond):
		}
		release()
		select {
		case err := <-done:
			return err
		case <-time.After(10 * time.Second):
			return fmt.Errorf("our unregistration did not return once the C side's work ended")
		}
	})
	w.Close()
}

// Out-of-bounds accesses to a registered region fail at the initiator and
// leave the owner's memory, including the bytes around the region, alone;
// two registrations of one range have independent keys.
func TestRegisteredBoundsAndDoubleRegistration(t *testing.T) {
	needDevice(t)
	w := coretest.NewWorld(t, 2, "ib", "size-smem=65536")
	mem := coretest.CMem(t, 3*4096)
	region := mem[4096:8192]
	var k1, k2 core.GA
	w.Run(func(r int, e *core.Engine) error {
		if r == 1 {
			for i := range mem {
				mem[i] = 0xee
			}
			var err error
			if k1, err = e.Register(unsafe.Pointer(&region[0]), uint64(len(region)), 0); err != nil {
				return err
			}
			if k2, err = e.Register(unsafe.Pointer(&region[0]), uint64(len(region)), 0); err != nil {
				return err
			}
			if k1 == k2 {
				return fmt.Errorf("two registrations of one range share the key %#x", uint64(k1))
			}
		}
		if err := e.Sync(); err != nil {
			return err
		}
		if r == 0 {
			src := starterGA(e, 0, 0)
			for _, bad := range []struct {
				ga core.GA
				n  uint64
			}{{k1 + 4090, 7}, {k1 + 4096, 1}, {k1, 4097}, {k2 + 4000, 200}} {
				before := e.Errors()
				h, err := e.Copy(bad.ga, src, bad.n, core.HandleNull)
				if err != nil {
					return err
				}
				e.Complete(h)
				if e.Errors() != before+1 {
					return fmt.Errorf("a put of %d bytes at %#x (region of 4096 bytes) succeeded", bad.n, uint64(bad.ga))
				}
				h, err = e.Copy(starterGA(e, 0, 8192), bad.ga, bad.n, core.HandleNull)
				if err != nil {
					return err
				}
				e.Complete(h)
				if e.Errors() != before+2 {
					return fmt.Errorf("a get of %d bytes at %#x (region of 4096 bytes) succeeded", bad.n, uint64(bad.ga))
				}
			}
			copy(e.StarterMemory(core.SegStarter)[64:], "via k1via k2")
			h1, err := e.Copy(k1+10, starterGA(e, 0, 64), 6, core.HandleNull)
			if err != nil {
				return err
			}
			h2, err := e.Copy(k2+20, starterGA(e, 0, 70), 6, core.HandleNull)
			if err != nil {
				return err
			}
			e.Complete(h1)
			e.Complete(h2)
		}
		if err := e.Sync(); err != nil {
			return err
		}
		if r == 1 {
			if err := e.Unregister(k1); err != nil {
				return err
			}
		}
		if err := e.Sync(); err != nil {
			return err
		}
		if r == 0 {
			copy(e.StarterMemory(core.SegStarter)[64:], "still")
			before := e.Errors()
			h, err := e.Copy(k2+30, starterGA(e, 0, 64), 5, core.HandleNull)
			if err != nil {
				return err
			}
			e.Complete(h)
			if e.Errors() != before {
				return fmt.Errorf("the second key stopped working when the first was unregistered")
			}
			h, err = e.Copy(k1+40, starterGA(e, 0, 64), 5, core.HandleNull)
			if err != nil {
				return err
			}
			e.Complete(h)
			if e.Errors() != before+1 {
				return fmt.Errorf("the unregistered key still works")
			}
		}
		return e.Sync()
	})
	assert.Equal(t, bytes.Repeat([]byte{0xee}, 4096), mem[:4096], "bytes before the region")
	assert.Equal(t, bytes.Repeat([]byte{0xee}, 4096), mem[8192:], "bytes after the region")
	assert.Equal(t, "via k1", string(region[10:16]))
	assert.Equal(t, "via k2", string(region[20:26]))
	assert.Equal(t, "still", string(region[30:35]))
	assert.Equal(t, bytes.Repeat([]byte{0xee}, 5), region[40:45], "write through the unregistered key")
	w.Close()
}

// Several ranks hammer one counter through every path at once: the
// owner's own atomics (local), atomics fetched to the issuer (remote), and
// atomics whose result goes to a third rank (delegated to the owner).
func TestOneCounterEveryPath(t *testing.T) {
	needDevice(t)
	hammerOneCounter(t, false)
}

// The same with --acp-ib-atomics nic: every 8-byte atomic on the adapters,
// the owner's own through its loopback connection, the xor through
// compare-and-swap loops; the 4-byte ones on the owner's CPU.
func TestOneCounterEveryPathNICAtomics(t *testing.T) {
	needDevice(t)
	hammerOneCounter(t, true)
}

func hammerOneCounter(t *testing.T, nic bool) {
	const per = 300
	mode := "ib-atomics=cpu"
	if nic {
		mode = "ib-atomics=nic"
	}
	w := coretest.NewWorld(t, 4, "ib", "size-smem=65536", mode)
	w.Run(func(r int, e *core.Engine) error {
		n := e.Procs()
		counter := starterGA(e, 0, 0)
		counter4 := starterGA(e, 0, 8)
		bits := starterGA(e, 0, 16)
		for i := 0; i < per; i++ {
			// every rank toggles bits of its own in one word
			if _, err := e.Atomic(core.OpXor8, starterGA(e, r, 3072+8*uint64(i%16)), bits, 1<<(16*r+i%16), 0, core.HandleNull); err != nil {
				return err
			}
			// result here: local for rank 0, remote for the others
			if _, err := e.Atomic(core.OpAdd8, starterGA(e, r, 1024+8*uint64(i%16)), counter, 1, 0, core.HandleNull); err != nil {
				return err
			}
			// result at another rank: third-party unless it is rank 0's
			third := (r + 1 + i%(n-1)) % n
			if _, err := e.Atomic(core.OpAdd8, starterGA(e, third, 4096+8*uint64(r)), counter, 1, 0, core.HandleNull); err != nil {
				return err
			}
			if _, err := e.Atomic(core.OpAdd4, starterGA(e, third, 8192+8*uint64(r)), counter4, 2, 0, core.HandleNull); err != nil {
				return err
			}
			if i%10 == 0 {
				// a compare-and-swap increment loop on the same word
				for {
					h, err := e.Atomic(core.OpCas8, starterGA(e, r, 2048), counter, 0, 0, core.HandleNull)
					if err != nil {
						return err
					}
					e.Complete(h)
					cur := binary.LittleEndian.Uint64(e.StarterMemory(core.SegStarter)[2048:])
					h, err = e.Atomic(core.OpCas8, starterGA(e, r, 2056), counter, cur, cur+1, core.HandleNull)
					if err != nil {
						return err
					}
					e.Complete(h)
					if binary.LittleEndian.Uint64(e.StarterMemory(core.SegStarter)[2056:]) == cur {
						break
					}
				}
			}
		}
		e.Complete(core.HandleAll)
		return e.Sync()
	})
	n := uint64(len(w.Engines))
	s := w.Engines[0].StarterMemory(core.SegStarter)
	assert.Equal(t, n*(2*per+per/10), binary.LittleEndian.Uint64(s), "add8 and cas8 on one counter from every path")
	assert.Equal(t, uint32(n*per*2), binary.LittleEndian.Uint32(s[8:]), "add4 from every path")
	var bits uint64
	for r := range n {
		for i := range per {
			bits ^= 1 << (16*r + uint64(i%16))
		}
	}
	assert.Equal(t, bits, binary.LittleEndian.Uint64(s[16:]), "xor8 from every rank")
	for r, e := range w.Engines {
		assert.Zero(t, e.Errors(), "rank %d", r)
	}
	eps := endpointsOf(t, len(w.Engines))
	eps[0].mu.Lock()
	loop := eps[0].conns[0]
	eps[0].mu.Unlock()
	if nic {
		require.NotNil(t, loop, "rank 0's atomics on its own counter need a loopback connection")
		assert.Equal(t, connReady, loop.state)
	} else {
		assert.Nil(t, loop, "CPU atomics need no loopback connection")
	}
	w.Close()
}

// The NIC's own fetch-and-add and compare-and-swap (used on devices with
// IBV_ATOMIC_GLOB), exercised here on Soft-RoCE with remote issuers only:
// values, fetched results and a contended sum.
func TestNICAtomics(t *testing.T) {
	needDevice(t)
	testForceNICAtomics = true
	defer func() { testForceNICAtomics = false }()
	const per = 500
	w := coretest.NewWorld(t, 3, "ib", "size-smem=65536")
	binary.LittleEndian.PutUint64(w.Engines[0].StarterMemory(core.SegStarter)[64:], 41)
	w.Run(func(r int, e *core.Engine) error {
		if r == 0 {
			return e.Sync()
		}
		mine := e.StarterMemory(core.SegStarter)
		for i := 0; i < per; i++ {
			h, err := e.Atomic(core.OpAdd8, starterGA(e, r, 1024), starterGA(e, 0, 0), 3, 0, core.HandleNull)
			if err != nil {
				return err
			}
			e.Complete(h)
			if old := binary.LittleEndian.Uint64(mine[1024:]); old%3 != 0 || old >= 3*2*per {
				return fmt.Errorf("fetch-and-add returned %d", old)
			}
		}
		if r == 1 {
			h, err := e.Atomic(core.OpCas8, starterGA(e, r, 1032), starterGA(e, 0, 64), 41, 1<<40, core.HandleNull)
			if err != nil {
				return err
			}
			e.Complete(h)
			if old := binary.LittleEndian.Uint64(mine[1032:]); old != 41 {
				return fmt.Errorf("compare-and-swap fetched %d, want 41", old)
			}
		}
		e.Complete(core.HandleAll)
		return e.Sync()
	})
	s := w.Engines[0].StarterMemory(core.SegStarter)
	assert.Equal(t, uint64(3*2*per), binary.LittleEndian.Uint64(s))
	assert.Equal(t, uint64(1<<40), binary.LittleEndian.Uint64(s[64:]))
	w.Close()
}

// A range beyond the allocation is refused before the device sees it
// (core checks that it is all mapped); one ibv_reg_mr refuses (mapped,
// partly inaccessible) fails registration with the device's message. Both
// leave nothing registered.
func TestHugeRegistrationFails(t *testing.T) {
	needDevice(t)
	w := coretest.NewWorld(t, 2, "ib", "size-smem=4096")
	mem := coretest.CMem(t, 2<<20)
	require.NoError(t, unix.Mprotect(mem[1<<20:], unix.PROT_NONE))
	e := w.Engines[1]
	// Beyond the allocation: refused before the device sees it.
	_, err := e.Register(unsafe.Pointer(&mem[0]), 1<<40, 0)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not all mapped memory")
	t.Log(err)
	// Mapped, but half of it inaccessible: the device cannot pin it for
	// writing, and it is not registered for reads only either (a kernel
	// before 6.2 would pin the inaccessible pages for that).
	_, err = e.Register(unsafe.Pointer(&mem[0]), 2<<20, 0)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "ibv_reg_mr of 2097152 bytes")
	t.Log(err)
	k, err := e.Register(unsafe.Pointer(&mem[0]), 1<<20, 0)
	require.NoError(t, err, "registration still works afterwards")
	require.NoError(t, e.Unregister(k))
	w.Close()
}

// TestMemoryReport prints what a process spends on the transport and on
// N contacted peers (bench/ib_compare.sh shows it): rank 0 of a 1+N-process
// world talks to every peer. The queues the verbs provider maps into the
// process (from /dev/infiniband) are counted per endpoint; connection
// state on the Go heap is estimated from the allocation counter. The
// figures must agree with what MemoryUse (acp_info) tells, and rank 0
// must hold one queue pair per peer it talked to.
func TestMemoryReport(t *testing.T) {
	needDevice(t)
	peerCounts := []int{1, 8}
	if os.Getenv("ACP_IB_MEMORY_REPORT") != "" {
		peerCounts = []int{1, 8, 32}
	}
	for _, peers := range peerCounts {
		maps0 := verbsMappings()
		w := coretest.NewWorld(t, 1+peers, "ib", "size-smem=4096")
		eps := endpointsOf(t, 1+peers)
		maps1 := verbsMappings()
		// Two collections: the first may leave garbage of the world's
		// set-up behind (finalizers run after it), which the second
		// would otherwise subtract from what the contacts keep.
		var ms0, ms1 runtime.MemStats
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&ms0)
		e := w.Engines[0]
		for p := 1; p <= peers; p++ {
			h, err := e.Copy(starterGA(e, p, 0), starterGA(e, 0, 0), 8, core.HandleNull)
			require.NoError(t, err)
			e.Complete(h)
		}
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&ms1)
		maps2 := verbsMappings()
		t.Logf("%2d peers contacted: %d queue pair(s) at rank 0; per open endpoint %d KiB of verbs queues mapped + %d KiB message buffers; per connection (two queue pairs, one at each end) %.1f KiB of queues mapped; Go heap per peer (both ends): %.0f bytes allocated, %.0f kept",
			peers, eps[0].queuePairs(), (maps1-maps0)/1024/uint64(1+peers), (sendSlots+srqDepth)*msgSize/1024,
			float64(maps2-maps1)/1024/float64(peers), float64(ms1.TotalAlloc-ms0.TotalAlloc)/float64(peers),
			float64(int64(ms1.HeapAlloc)-int64(ms0.HeapAlloc))/float64(peers))
		assert.Equal(t, peers, eps[0].queuePairs(), "queue pairs at rank 0 after talking to %d peers", peers)
		perDevice, perQP := float64(maps1-maps0)/float64(1+peers), float64(maps2-maps1)/float64(2*peers)
		assert.InDelta(t, mappedPerDevice, perDevice, mappedPerDevice/2, "verbs queues mapped per endpoint: MemoryUse's figure is off")
		assert.InDelta(t, mappedPerQP, perQP, mappedPerQP/2, "verbs queues mapped per queue pair: MemoryUse's figure is off")
		w.Close()
	}
}

// verbsMappings is the size of the memory the verbs provider mapped from
// /dev/infiniband into this process (queues shared with the kernel driver).
func verbsMappings() uint64 {
	b, _ := os.ReadFile("/proc/self/maps")
	var total uint64
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.Contains(line, "/dev/infiniband") {
			continue
		}
		var lo, hi uint64
		if _, err := fmt.Sscanf(line, "%x-%x", &lo, &hi); err == nil {
			total += hi - lo
		}
	}
	return total
}

func memStatus() (rss, pinned uint64) {
	b, _ := os.ReadFile("/proc/self/status")
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		v, _ := strconv.ParseUint(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			rss = v * 1024
		case "VmPin:":
			pinned = v * 1024
		}
	}
	return rss, pinned
}

// TestLatencyProbe prints the cost of the pieces of a put (set
// ACP_IB_PROBE=1); a diagnostic, not a test.
func TestLatencyProbe(t *testing.T) {
	needDevice(t)
	if os.Getenv("ACP_IB_PROBE") == "" {
		t.Skip("set ACP_IB_PROBE=1")
	}
	const n = 2000
	start := time.Now()
	for i := 0; i < n; i++ {
		_ = time.Now()
	}
	t.Logf("time.Now: %v", time.Since(start)/n)
	w := coretest.NewWorld(t, 2, "ib", "size-smem=4096")
	eps := endpointsOf(t, 2)
	start = time.Now()
	for i := 0; i < n; i++ {
		eps[0].progress()
	}
	t.Logf("progress (empty CQ): %v", time.Since(start)/n)
	d := eps[0].devs[0]
	start = time.Now()
	for i := 0; i < n; i++ {
		channelFD(d.v)
	}
	t.Logf("trivial cgo call: %v", time.Since(start)/n)
	var wcs [pollBatch]wc
	start = time.Now()
	for i := 0; i < n; i++ {
		pollCQ(d.v, &wcs)
	}
	t.Logf("pollCQ (empty): %v", time.Since(start)/n)
	e := w.Engines[0]
	// warm up the connection, then the raw floor: one work request posted
	// and its completion polled, no engine, no locks
	h0, _ := e.Copy(starterGA(e, 1, 0), starterGA(e, 0, 0), 8, core.HandleNull)
	e.Complete(h0)
	ep := eps[0]
	ep.mu.Lock()
	c := ep.conns[1*len(ep.paths)]
	ep.mu.Unlock()
	raw := func(n int) time.Duration {
		var wcs [pollBatch]wc
		var pw, tp time.Duration
		for i := 0; i < n; i++ {
			for !atomic.CompareAndSwapInt32(ep.pollLock, 0, 1) {
			}
			ep.mu.Lock()
			src := uint64(uintptr(unsafe.Pointer(&e.StarterMemory(core.SegStarter)[0])))
			w := sendWR{id: 1023, opcode: opWrite, laddr: src, len: 8, flags: flagInline,
				raddr: c.remote.starters[0].base, rkey: c.remote.starters[0].rkey}
			t0 := time.Now()
			err := postSend(c.qp, &w)
			t1 := time.Now()
			for pollCQ(ep.devs[0].v, &wcs) == 0 {
			}
			tp += time.Since(t1)
			pw += t1.Sub(t0)
			ep.mu.Unlock()
			atomic.StoreInt32(ep.pollLock, 0)
			if err != nil {
				t.Fatal(err)
			}
		}
		t.Logf("raw post %v, then completion after %v", pw/time.Duration(n), tp/time.Duration(n))
		return (pw + tp) / time.Duration(n)
	}
	t.Logf("raw write 8 bytes + completion: %v", raw(n))
	for _, size := range []uint64{8, 4096} {
		for i := 0; i < 100; i++ {
			h, _ := e.Copy(starterGA(e, 1, 0), starterGA(e, 0, 0), size, core.HandleNull)
			e.Complete(h)
		}
		start = time.Now()
		for i := 0; i < n; i++ {
			h, _ := e.Copy(starterGA(e, 1, 0), starterGA(e, 0, 0), size, core.HandleNull)
			e.Complete(h)
		}
		t.Logf("put %d bytes + complete: %v", size, time.Since(start)/n)
	}
	start = time.Now()
	for i := 0; i < n; i++ {
		h, _ := e.Atomic(core.OpAdd8, starterGA(e, 0, 64), starterGA(e, 1, 8), 1, 0, core.HandleNull)
		e.Complete(h)
	}
	t.Logf("remote add8 + complete: %v", time.Since(start)/n)
	w.Close()
}

// A peer whose queue pairs are gone (its process died) stops acknowledging;
// the next operation to it ends the job with a fatal error naming it, not
// a hang: from the adapter's retry limit (hardware) or, where the adapter
// keeps retrying (Soft-RoCE), from --acp-peer-timeout.
func TestPeerGoneIsFatal(t *testing.T) {
	needDevice(t)
	w := coretest.NewWorldExits(t, 2, "ib", "size-smem=4096", "peer-timeout=2")
	e := w.Engines[0]
	h, err := e.Copy(starterGA(e, 1, 0), starterGA(e, 0, 0), 8, core.HandleNull)
	require.NoError(t, err)
	e.Complete(h)
	require.NoError(t, CloseEndpointOf(w.Engines[1]))
	_, err = e.Copy(starterGA(e, 1, 0), starterGA(e, 0, 0), 8, core.HandleNull)
	require.NoError(t, err)
	took := w.AwaitFatal(30*time.Second, `fatal: .*rank 1 is unreachable`)
	t.Logf("after %v: %s", took.Round(time.Millisecond), strings.TrimSpace(w.Stderr.String()))
}

// Registering more than the locked-memory limit allows fails with a
// message that names the limit and the `ulimit -l` value needed. Run by
// tests/ib/run-rxe.sh without CAP_IPC_LOCK (which lifts the limit) and
// with ulimit -l 4096; skipped otherwise.
func TestMemlockLimitNamed(t *testing.T) {
	needDevice(t)
	if os.Getenv("ACP_IB_MEMLOCK_TEST") == "" {
		t.Skip("run by tests/ib/run-rxe.sh with a low ulimit -l and without CAP_IPC_LOCK")
	}
	w := coretest.NewWorld(t, 2, "ib", "size-smem=4096")
	mem := coretest.CMem(t, 64<<20)
	for i := 0; i < len(mem); i += 4096 {
		mem[i] = 1
	}
	_, err := w.Engines[1].Register(unsafe.Pointer(&mem[0]), uint64(len(mem)), 0)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "ulimit -l")
	assert.Regexp(t, `limit \(ulimit -l\) is 4096 KiB and this process needs at least \d+ KiB`, err.Error())
	t.Log(err)
	w.Close()
}

// Work issued while the progress goroutine sleeps with nothing in flight,
// and never waited for, is still seen through: issuing wakes it. An
// ordered pair shows it: the second copy starts only once the first has
// completed, which the progress goroutine must notice when nobody waits
// (its sleep then asked for events of solicited messages only).
func TestIdleProgressSeesIssuedWork(t *testing.T) {
	needDevice(t)
	w := coretest.NewWorld(t, 2, "ib", "size-smem=4096")
	defer w.Close()
	e := w.Engines[0]
	mine, theirs := e.StarterMemory(core.SegStarter), w.Engines[1].StarterMemory(core.SegStarter)
	h, err := e.Copy(starterGA(e, 1, 0), starterGA(e, 0, 0), 8, core.HandleNull) // connect first
	require.NoError(t, err)
	e.Complete(h)
	for i := 1; i <= 5; i++ {
		time.Sleep(100 * time.Millisecond) // past the spin: the goroutines sleep
		mine[0], mine[1] = byte(i), byte(i)
		first, err := e.Copy(starterGA(e, 1, 200), starterGA(e, 0, 0), 1, core.HandleNull)
		require.NoError(t, err)
		second, err := e.Copy(starterGA(e, 1, 300), starterGA(e, 0, 1), 1, first)
		require.NoError(t, err)
		coretest.AwaitByte(t, theirs, 300, byte(i), 250*time.Millisecond) // a quarter of the idle sleep
		e.Complete(second)
	}
}

// stats reports the cache's counts, after what the memory watch reported.
func (c *regCache) stats() (idle int, hits, dropped uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed {
		c.apply(c.w.Take())
	}
	return len(c.idle), c.hits, c.dropped
}

// keepingPair starts two engines that keep registrations for reuse, as a
// C program's do, or skips the test where userfaultfd is not allowed.
func keepingPair(t *testing.T, settings ...string) (*coretest.World, []*endpoint) {
	needDevice(t)
	w := coretest.NewForeignWorld(t, 2, "ib", settings...)
	eps := endpointsOf(t, 2)
	if !eps[1].rc.on() {
		w.Close()
		t.Skip("no userfaultfd here: registrations are not kept")
	}
	return w, eps
}

// A registration of user memory is kept after its unregistration and
// given to the next registration of the same range, and let go as soon as
// the memory is not what it was: unmapped and mapped again at the same
// address (other pages, which a kept registration would not reach),
// dropped with MADV_DONTNEED, or unmapped while still registered. After
// each, a peer's read through the new registration sees what the program
// wrote into the memory it has now.
func TestRegistrationKeptUntilMemoryGoes(t *testing.T) {
	w, eps := keepingPair(t, "size-smem=262144")
	defer w.Close()
	rc := &eps[1].rc
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
// shares its pages (pushed out of the cache, let go as its pages were
// dropped, or flushed), so that watches do not pile up: another watcher (a second
// userfaultfd) can watch it then, and cannot while it is kept.
func TestEvictedAndDroppedRangesUnwatched(t *testing.T) {
	w, eps := keepingPair(t, "ib-reg-cache=1")
	defer w.Close()
	rc := &eps[1].rc
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
	other.Unwatch(b, n)
	cycle(pa)
	assert.Equal(t, 1, rc.flush(), "a kept registration flushed")
	assert.NoError(t, other.Watch(a, n), "a range flushed from the cache (registration refused for want of lockable memory) is still watched")
}

// chanDone sends an operation's outcome to a channel.
type chanDone chan error

func (c chanDone) OnComplete(_ uint64, err error) { c <- err }

// Local memory the adapter cannot use (neither registered nor a same-host
// peer's memory that could be: here Go's heap) still moves, through the
// slots' scratch areas, msgSize bytes per work request: the path of a
// same-host peer's memory whose registration was refused. Before, such a
// copy over msgSize bytes failed with an internal error.
func TestUnregisteredLocalEndBounces(t *testing.T) {
	needDevice(t)
	w := coretest.NewWorld(t, 2, "ib", "size-smem=0x20000")
	defer w.Close()
	eps := endpointsOf(t, 2)
	theirs := w.Engines[1].StarterMemory(core.SegStarter)
	at := starterGA(w.Engines[0], 1, 16)
	for _, n := range []int{msgSize + 1, 5003, 70001} {
		src := make([]byte, n)
		for i := range src {
			src[i] = byte(i*7 + n)
		}
		done := make(chanDone, 1)
		eps[0].Put(1, at, unsafe.Pointer(&src[0]), uint64(n), done)
		require.NoError(t, <-done, "put of %d bytes", n)
		require.Equal(t, src, theirs[16:16+n], "put of %d bytes", n)
		dst := make([]byte, n)
		eps[0].Get(1, at, unsafe.Pointer(&dst[0]), uint64(n), done)
		require.NoError(t, <-done, "get of %d bytes", n)
		require.Equal(t, src, dst, "get of %d bytes", n)
		runtime.KeepAlive(src)
	}
}
