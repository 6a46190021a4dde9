package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/libacp/libacp/core"
	"github.com/libacp/libacp/core/conformance"
	"github.com/libacp/libacp/core/coretest"
	"github.com/libacp/libacp/ib"
	"github.com/libacp/libacp/internal/memcopy"
	"github.com/libacp/libacp/internal/memcopy/memcopytest"
)

func viaFastPath(e *core.Engine) conformance.Ops { return fastOps{e} }

// The conformance suite through the C fast path: over shared memory most
// operations complete in C; the others, and every error, fall back to Go.
func TestConformanceThroughFastPath(t *testing.T) {
	conformance.RunWithOps(t, "shm", viaFastPath)
}

func TestConformanceThroughFastPathUDP(t *testing.T) {
	conformance.RunWithOps(t, "udp", viaFastPath)
}

// The C path must actually take the operations it can: own and mapped
// starter memory; not registered memory or what it cannot map.
// acpfast_op_done reads a handle's own done flag while the done mark is
// short of it (core's TestOpDoneIgnoresEarlierOperations runs the same
// rule through Go's queue): a fast state built by hand, 8 slots, handles
// 6..10 in flight and 7 and 9 finished.
func TestFastOpDoneReadsOneHandle(t *testing.T) {
	const depth = 8
	flagsAt := 768 + 4096*48 // fastTable + fastMaxWindow*fastEntrySize
	mem := make([]uint64, (flagsAt+4*depth)/8)
	f := unsafe.Pointer(&mem[0])
	u64 := func(off int) *uint64 { return (*uint64)(unsafe.Add(f, off)) }
	u32 := func(off int) *uint32 { return (*uint32)(unsafe.Add(f, off)) }
	*u32(192) = 1 // enabled
	*u32(240) = depth
	*u64(64) = 10 // issued
	*u64(128) = 5 // done
	*u32(flagsAt + 4*(7%depth)) = 1
	*u32(flagsAt + 4*(9%depth)) = 1
	for h, want := range map[core.Handle]bool{1: true, 5: true, 6: false, 7: true, 8: false, 9: true, 10: false, 11: false, 0: false, -3: false} {
		assert.Equal(t, want, fastOpDoneIn(f, h), "handle %d", h)
	}
	*u32(192) = 0
	assert.False(t, fastOpDoneIn(f, 7), "a disabled fast state knows nothing")
}

func TestFastPathTakesDirectMemory(t *testing.T) {
	w := coretest.NewWorld(t, 2, "shm")
	e := w.Engines[0]
	me, _ := e.StarterGA(0)
	peer, _ := e.StarterGA(1)
	// First touch of the peer goes through Go, which maps and publishes it.
	h, err := e.Copy(peer, me, 8, core.HandleNull)
	assert.NoError(t, err)
	e.Complete(h)
	assert.True(t, fastCompleted(e, me+64, me), "own starter memory")
	assert.True(t, fastCompleted(e, peer+64, me), "a mapped peer's starter memory")
	assert.False(t, fastCompleted(e, peer+1<<20, me), "beyond the peer's starter memory")
	assert.False(t, fastCompleted(e, core.GANull, me), "ACP_GA_NULL")
	w.Close()
}

// A 0-byte copy to or from a peer that is not mapped here (udp) completes
// in C: core checks only this process's ends of a no-op. A bad end of our
// own still goes to Go, which reports it.
func TestFastPathCompletesEmptyRemoteCopies(t *testing.T) {
	w := coretest.NewWorld(t, 2, "udp")
	defer w.Close()
	e := w.Engines[0]
	me, _ := e.StarterGA(0)
	peer, _ := e.StarterGA(1)
	for _, c := range []struct {
		name     string
		dst, src core.GA
	}{{"put", peer + 64, me}, {"get", me, peer + 64}, {"between peers", peer, peer + 8}} {
		h := fastCopy(e, c.dst, c.src, 0, core.HandleNull)
		require.NotEqual(t, core.HandleNull, h, c.name)
		assert.True(t, fastWaited(e, h), c.name)
		// Ordered after it, too.
		h2 := fastCopy(e, c.dst, c.src, 0, h)
		require.NotEqual(t, core.HandleNull, h2, c.name)
		assert.True(t, fastWaited(e, h2), c.name)
	}
	assert.Equal(t, core.HandleNull, fastCopy(e, peer, me+1<<40, 0, core.HandleNull), "beyond our own starter memory")
	_, err := e.Copy(peer, me+1<<40, 0, core.HandleNull)
	assert.Error(t, err, "Go reports the bad source")
	assert.Equal(t, core.HandleNull, fastCopy(e, peer, me, 8, core.HandleNull), "bytes to an unmapped peer are not the C path's over udp")
}

// Over shared memory on one host the C path runs acp_sync itself, as long
// as nothing is outstanding: both the flat dissemination and the
// hierarchical barrier (chosen when waits do not spin, as on an
// oversubscribed host).
func TestFastPathTakesSync(t *testing.T) {
	for _, c := range []struct {
		n        int
		settings []string
	}{{2, nil}, {3, nil}, {2, []string{"progress-spin=0"}}, {3, []string{"progress-spin=0"}}} {
		n := c.n
		w := coretest.NewWorld(t, n, "shm", c.settings...)
		w.Run(syncsInC(50))
		w.Close()
	}
}

// A dissemination over more than 256 processes (9 rounds here) is still
// the C path's: its table of rounds holds every job's (2^32 processes).
func TestFastPathTakesSyncOfManyProcesses(t *testing.T) {
	w := coretest.NewWorld(t, 260, "shm")
	defer w.Close()
	w.Run(syncsInC(3))
}

// syncsInC is a rank's part of a test: count barriers, each of which the
// C path must take (finishing in Go is fine, starting there is not).
func syncsInC(count int) func(r int, e *core.Engine) error {
	return func(r int, e *core.Engine) error {
		for i := range count {
			took, err := fastSynced(e)
			if err != nil {
				return err
			}
			if !took {
				return fmt.Errorf("rank %d: barrier %d went through Go", r, i)
			}
		}
		return nil
	}
}

// The queries the C path answers agree with the engine's for every kind of
// GA: starter memory of each segment at its edges, peers', registered
// memory, GAs with bad rank fields, and random bits.
func TestFastQueriesMatchEngine(t *testing.T) {
	for _, tr := range []string{"shm", "udp"} {
		t.Run(tr, func(t *testing.T) {
			w := coretest.NewWorld(t, 3, tr)
			defer w.Close()
			buf := make([]byte, 4096)
			for me, e := range w.Engines {
				rank, ok := fastRank(e)
				require.True(t, ok, "acp_rank in C")
				assert.Equal(t, me, rank)
				procs, ok := fastProcs(e)
				require.True(t, ok, "acp_procs in C")
				assert.Equal(t, 3, procs)
				for r := -2; r <= 4; r++ {
					ga, ok := fastStarterGA(e, r)
					want, err := e.StarterGA(r)
					if err != nil {
						assert.False(t, ok, "starter GA of rank %d: Go's error path", r)
						continue
					}
					assert.True(t, ok, "starter GA of rank %d in C", r)
					assert.Equal(t, want, ga, "starter GA of rank %d", r)
				}
				// Touch every peer: over shm their starter memories are then
				// mapped here, and must still have no address.
				mine, _ := e.StarterGA(me)
				for r := range 3 {
					peer, _ := e.StarterGA(r)
					h, err := e.Copy(peer+64, mine, 8, core.HandleNull)
					require.NoError(t, err)
					e.Complete(h)
				}
				key, err := e.Register(unsafe.Pointer(&buf[0]), uint64(len(buf)), 0)
				require.NoError(t, err)
				l := e.Layout()
				gas := []core.GA{core.GANull, ^core.GA(0), key, key + 4095, key + 4096}
				for r := -1; r <= 3; r++ {
					for seg := 0; seg <= core.SegFirstUser+1; seg++ {
						size := uint64(0)
						if r == me && seg < core.SegEngine {
							size = uint64(len(e.StarterMemory(seg)))
						}
						for _, off := range []uint64{0, 1, size - 1, size, size + 1, 1 << 20} {
							if off < l.MaxOffset() {
								gas = append(gas, l.Encode(r, 0, seg, off))
							}
						}
					}
				}
				rng := rand.New(rand.NewPCG(1, uint64(me)))
				for range 2000 {
					gas = append(gas, core.GA(rng.Uint64()), core.GA(rng.Uint64()>>rng.IntN(64)))
				}
				taken := 0
				for _, ga := range gas {
					r, ok := fastQueryRank(e, ga)
					require.True(t, ok)
					assert.Equal(t, e.QueryRank(ga), r, "acp_query_rank(%#x)", uint64(ga))
					c, ok := fastQueryColor(e, ga)
					require.True(t, ok)
					assert.Equal(t, e.QueryColor(ga), c, "acp_query_color(%#x)", uint64(ga))
					p, ok := fastQueryAddress(e, ga)
					want, err := e.QueryAddress(ga)
					if ok {
						taken++
						assert.NoError(t, err, "C answered acp_query_address(%#x), Go refuses it", uint64(ga))
						assert.Equal(t, want, p, "acp_query_address(%#x)", uint64(ga))
					}
					if l.Rank(ga) == me && l.Seg(ga) < core.SegEngine && err == nil {
						assert.True(t, ok, "own starter memory %#x in C", uint64(ga))
					}
				}
				assert.Positive(t, taken)
				require.NoError(t, e.Unregister(key))
			}
		})
	}
}

// The C decoding of ranks and colours against core.Layout, for layouts
// with several colours (only ib with more than one device makes those).
func TestFastDecodingMatchesLayout(t *testing.T) {
	for _, c := range []struct{ nprocs, colors int }{{1, 1}, {3, 2}, {100, 4}, {5000, 256}, {core.MaxProcs, 3}} {
		l, err := core.NewLayout(c.nprocs, c.colors)
		require.NoError(t, err)
		f, release, err := core.FastStateFor(l, 0)
		require.NoError(t, err)
		rng := rand.New(rand.NewPCG(uint64(c.nprocs), uint64(c.colors)))
		for i := range 5000 {
			var ga core.GA
			switch i % 3 {
			case 0:
				ga = core.GA(rng.Uint64())
			case 1:
				ga = core.GA(rng.Uint64() >> rng.IntN(64))
			default:
				ga = l.Encode(rng.IntN(c.nprocs+2)-1, rng.IntN(c.colors), rng.IntN(l.Segments()), rng.Uint64N(l.MaxOffset()))
			}
			require.Equal(t, l.Rank(ga), stateQueryRank(f, ga), "rank of %#x in %v", uint64(ga), l)
			want := -1
			if l.Rank(ga) >= 0 {
				want = l.Color(ga)
			}
			require.Equal(t, want, stateQueryColor(f, ga), "colour of %#x in %v", uint64(ga), l)
		}
		for _, r := range []int{-1, 0, c.nprocs - 1, c.nprocs} {
			ga, ok := stateStarterGA(f, r)
			assert.Equal(t, r >= 0 && r < c.nprocs, ok, "starter GA of rank %d", r)
			if ok {
				assert.Equal(t, l.Encode(r, 0, core.SegStarter, 0), ga)
			}
		}
		release()
	}
}

// needRDMA skips where no verbs device exists (tests/ib/run-rxe.sh runs
// these tests in a VM with Soft-RoCE).
func needRDMA(t *testing.T) {
	if devs, _ := os.ReadDir("/sys/class/infiniband"); len(devs) == 0 {
		t.Skip("no RDMA device here (tests/ib/run-rxe.sh runs these tests in a VM with Soft-RoCE)")
	}
}

// Processes of two hosts ("hosts=2": --acp-host-group), most conformance
// cases with two of them on one: copies between a process and a peer of
// its host go through shared memory, to and from the other host over the
// network, and a copy may have one end of each kind (a same-host peer's
// memory the local end of a network transfer); the barrier is
// hierarchical, its leaders' rounds network puts.
func TestConformanceThroughFastPathTwoHostsUDP(t *testing.T) {
	conformance.RunWithOps(t, "shm,udp", viaFastPath, "hosts=2")
}

// The same over ib, whose adapter needs the local end registered: a
// same-host peer's memory too (the ib transport registers it on first
// use), and whose C code posts the leaders' barrier rounds.
func TestConformanceThroughFastPathTwoHostsIB(t *testing.T) {
	needRDMA(t)
	conformance.RunWithOps(t, "shm,ib", viaFastPath, "hosts=2")
}

// ... and through Go alone.
func TestConformanceTwoHostsIB(t *testing.T) {
	needRDMA(t)
	conformance.Run(t, "shm,ib", "hosts=2")
}

// Over ib, copies between starter memories of two processes are posted
// and completed by the ib transport's C code; the suite holds them to the
// same semantics (ordering chains mix them with operations the engine
// starts, errors fall back to Go).
func TestConformanceThroughFastPathIB(t *testing.T) {
	needRDMA(t)
	conformance.RunWithOps(t, "ib", viaFastPath)
}

// With --acp-ib-atomics nic the ib transport's C code also posts 8-byte
// fetch-and-add and compare-and-swap on starter memory, the caller's own
// through its loopback connection, and leaves the other atomics to Go.
func TestConformanceThroughFastPathNICAtomicsIB(t *testing.T) {
	needRDMA(t)
	conformance.RunWithOps(t, "ib", viaFastPath, "ib-atomics=nic")
}

// Same-host ranks copy through shared memory while the adapter executes
// every 8-byte atomic (--acp-ib-atomics nic), on mapped starter memory
// too: the C fast path must leave those atomics to Go, which sends them to
// ib.
func TestConformanceNICAtomicsWithShmIB(t *testing.T) {
	needRDMA(t)
	conformance.RunWithOps(t, "shm,ib", viaFastPath, "ib-atomics=nic")
}

// ibPair starts two engines over ib with 3 MiB of starter memory each
// (and the settings given) and returns them, their starter GAs and their
// starter memories (rank 0's first); they close when the test ends.
func ibPair(t *testing.T, settings ...string) (e, peerE *core.Engine, me, peer core.GA, mine, theirs []byte) {
	needRDMA(t)
	w := coretest.NewWorld(t, 2, "ib", append([]string{"size-smem=0x300000"}, settings...)...)
	t.Cleanup(w.Close)
	e, peerE = w.Engines[0], w.Engines[1]
	me, _ = e.StarterGA(0)
	peer, _ = e.StarterGA(1)
	return e, peerE, me, peer, e.StarterMemory(core.SegStarter), peerE.StarterMemory(core.SegStarter)
}

// registerAll registers the whole of b with eng and returns its key and
// the GA of its first byte.
func registerAll(t *testing.T, eng *core.Engine, b []byte) (atkey, ga core.GA) {
	atkey, err := eng.Register(unsafe.Pointer(&b[0]), uint64(len(b)), 0)
	require.NoError(t, err)
	ga, err = eng.QueryGA(atkey, unsafe.Pointer(&b[0]))
	require.NoError(t, err)
	return atkey, ga
}

// waitFast waits for h through the C path, then, for a slow completion,
// through the ordinary wait.
func waitFast(e *core.Engine, h core.Handle) {
	if !fastWaited(e, h) {
		e.Complete(h)
	}
}

// Over ib the C path runs acp_sync as well: its rounds are writes that the
// ib transport's C code posts into the peers' engine areas (signals). The
// first barrier goes to Go, which connects the queue pairs its rounds
// need; from then on its rounds are posted here. Each barrier must still
// separate: a put completed before it is seen by its target after it.
func TestFastPathTakesSyncOverIB(t *testing.T) {
	needRDMA(t)
	for _, n := range []int{2, 3, 4} {
		w := coretest.NewWorld(t, n, "ib")
		rounds := bits.Len(uint(n - 1))
		const syncs = 40
		before := ib.FastSignals()
		w.Run(func(r int, e *core.Engine) error {
			mine, err := e.StarterGA(r)
			if err != nil {
				return err
			}
			next, err := e.StarterGA((r + 1) % n)
			if err != nil {
				return err
			}
			mem := e.StarterMemory(core.SegStarter)
			for i := 1; i <= syncs; i++ {
				binary.LittleEndian.PutUint64(mem[8:], uint64(i))
				h := fastCopy(e, next, mine+8, 8, core.HandleNull)
				if h == core.HandleNull {
					if h, err = e.Copy(next, mine+8, 8, core.HandleNull); err != nil {
						return err
					}
				}
				waitFast(e, h)
				took, err := fastSynced(e)
				if err != nil {
					return err
				}
				if !took {
					return fmt.Errorf("rank %d: barrier %d went through Go", r, i)
				}
				if got := binary.LittleEndian.Uint64(mem[0:]); got != uint64(i) {
					return fmt.Errorf("rank %d: after barrier %d the put before it holds %d", r, i, got)
				}
				// Nobody writes again before everybody has read.
				if _, err := fastSynced(e); err != nil {
					return err
				}
			}
			return nil
		})
		// Round 0 of every barrier after the first is posted here; a later
		// round is too unless a wait before it outlasted its spinning and
		// yielding and handed the barrier to Go (more processes than CPUs).
		posted := ib.FastSignals() - before
		t.Logf("%d processes: %d of at most %d barrier rounds posted from C", n, posted, n*rounds*2*syncs)
		first := uint64(n * (2*syncs - 1))
		if rounds == 1 {
			assert.GreaterOrEqual(t, posted, first, "%d processes: barriers posted from C", n)
		} else {
			assert.Greater(t, posted, first, "%d processes: barriers whose later rounds were posted from C", n)
		}
		assert.LessOrEqual(t, posted, uint64(n*rounds*2*syncs), "%d processes", n)
		w.Close()
	}
}

// On two hosts with shared memory within each ("hosts=2") the barrier is
// hierarchical: the others arrive at their host's leader, and the leaders
// disseminate among themselves over ib. The C path runs a leader's part
// too: it waits for its host's arrivals, posts its rounds, releases.
func TestFastPathTakesLeadersSyncOverIB(t *testing.T) {
	needRDMA(t)
	w := coretest.NewWorld(t, 4, "shm,ib", "hosts=2")
	defer w.Close()
	const syncs = 40
	w.Run(func(_ int, e *core.Engine) error { return e.Sync() }) // connects the leaders
	before := ib.FastSignals()
	w.Run(syncsInC(syncs))
	// One round between the two leaders, unless a leader's wait for its
	// host handed the barrier to Go before it (more processes than CPUs).
	posted := ib.FastSignals() - before
	t.Logf("%d of at most %d leaders' rounds posted from C", posted, 2*syncs)
	assert.Positive(t, posted, "leaders' rounds posted from C")
	assert.LessOrEqual(t, posted, uint64(2*syncs))
}

// A barrier's put that the Go side sent and whose completion it has not
// seen yet may still be queued there, and could land after the next
// barrier's write to the same slot, undoing it; so the C path runs no
// barrier while one is pending. A Go barrier therefore waits for its puts
// where the C path could run the next one: otherwise the barrier after a
// Go one would often be Go's too (whenever the peer's write arrived
// before our put's acknowledgement), and so on.
func TestGoBarrierWaitsForItsPutsIB(t *testing.T) {
	needRDMA(t)
	w := coretest.NewWorld(t, 2, "ib")
	defer w.Close()
	const rounds = 50
	w.Run(func(_ int, e *core.Engine) error { return e.Sync() }) // connects
	before := ib.FastSignals()
	w.Run(func(r int, e *core.Engine) error {
		for range rounds {
			if err := e.Sync(); err != nil {
				return err
			}
			if _, err := fastSynced(e); err != nil {
				return err
			}
		}
		return nil
	})
	assert.Equal(t, uint64(2*rounds), ib.FastSignals()-before, "barriers posted from C, each after a Go one")
}

// On two hosts, a copy between a same-host peer's memory (mapped here)
// and a process of the other host goes over ib with that memory as its
// local end: once Go has registered it (at the first such copy), the C
// path posts these copies itself, puts and gets.
func TestFastPathPostsFromSameHostPeerIB(t *testing.T) {
	needRDMA(t)
	w := coretest.NewWorld(t, 4, "shm,ib", "hosts=2", "size-smem=0x40000")
	defer w.Close()
	e := w.Engines[0]
	near, err := e.StarterGA(1) // this host: mapped here
	require.NoError(t, err)
	far, err := e.StarterGA(2) // the other host
	require.NoError(t, err)
	nearMem, farMem := w.Engines[1].StarterMemory(core.SegStarter), w.Engines[2].StarterMemory(core.SegStarter)
	for i := range 8192 {
		nearMem[i] = byte(i*13 + 1)
		farMem[65536+i] = byte(i*5 + 3)
	}
	h, err := e.Copy(far, near, 4096, core.HandleNull) // through Go: registers it
	require.NoError(t, err)
	e.Complete(h)
	require.Equal(t, nearMem[:4096], farMem[:4096])
	h = fastCopy(e, far+4096, near+4096, 4096, core.HandleNull)
	require.NotZero(t, h, "a put from a same-host peer's memory went through Go")
	waitFast(e, h)
	require.Equal(t, nearMem[4096:8192], farMem[4096:8192])
	h = fastCopy(e, near+32768, far+65536, 8192, core.HandleNull)
	require.NotZero(t, h, "a get into a same-host peer's memory went through Go")
	waitFast(e, h)
	require.Equal(t, farMem[65536:65536+8192], nearMem[32768:32768+8192])
}

// The C path must actually take puts and gets of starter memory over ib,
// small (inline) and large (a local key), complete them itself, and leave
// out what it cannot check: bounds, registered memory. Zero bytes need no
// work request: they complete at once.
func TestFastPathPostsOverIB(t *testing.T) {
	e, peerE, me, peer, mine, theirs := ibPair(t)
	// First contact goes through Go: it makes the connection.
	h, err := e.Copy(peer, me, 8, core.HandleNull)
	require.NoError(t, err)
	e.Complete(h)
	wait := func(h core.Handle) { waitFast(e, h) }
	for i, n := range []uint64{1, 8, 64, 4096, 1 << 20} {
		for j := range n {
			mine[j] = byte(i*7 + int(j))
		}
		h := fastCopy(e, peer+4096, me, n, core.HandleNull)
		require.NotZero(t, h, "put of %d bytes went through Go", n)
		wait(h)
		require.Equal(t, mine[:n], theirs[4096:4096+n], "put of %d bytes", n)
		clear(mine[2<<20 : 2<<20+n])
		h = fastCopy(e, me+2<<20, peer+4096, n, h)
		require.NotZero(t, h, "get of %d bytes went through Go", n)
		wait(h)
		require.Equal(t, theirs[4096:4096+n], mine[2<<20:2<<20+n], "get of %d bytes", n)
	}
	size := uint64(len(theirs))
	assert.Zero(t, fastCopy(e, peer+core.GA(size)-4, me, 8, core.HandleNull), "beyond the peer's starter memory")
	h0 := fastCopy(e, peer, me, 0, core.HandleNull)
	assert.NotZero(t, h0, "zero bytes went through Go")
	assert.True(t, fastWaited(e, h0), "zero bytes")
	atkey, err := peerE.Register(unsafe.Pointer(&theirs[0]), 4096, 0)
	require.NoError(t, err)
	reg, err := peerE.QueryGA(atkey, unsafe.Pointer(&theirs[0]))
	require.NoError(t, err)
	assert.Zero(t, fastCopy(e, reg, me, 8, core.HandleNull), "registered memory")
	// An operation that waits for a C-posted one is started by the engine
	// once the C side finishes the first.
	mine[0] = 42
	h1 := fastCopy(e, peer+8192, me, 1<<20, core.HandleNull)
	require.NotZero(t, h1)
	h2, err := e.Copy(peer+8192+(1<<20), me, 1, h1)
	require.NoError(t, err)
	wait(h2)
	assert.Equal(t, byte(42), theirs[8192+1<<20])

	// Both sides take entries of the queue pair from one count: work of
	// the Go side (registered memory) waits while the C side holds them
	// all, and goes out once they free.
	resume := ib.PausePolling()
	posted := map[int]core.Handle{}
	for i := range 48 {
		mine[i] = byte(100 + i)
		if h := fastCopy(e, peer+16384+core.GA(i), me+core.GA(i), 1, core.HandleNull); h != 0 {
			posted[i] = h
		}
	}
	assert.Len(t, posted, 32, "copies the C side posted to a queue pair of 32 entries")
	h, err = e.Copy(reg+64, me, 8, core.HandleNull)
	require.NoError(t, err)
	resume()
	wait(h)
	assert.Equal(t, mine[:8], theirs[64:72])
	for i, h := range posted {
		wait(h)
		assert.Equal(t, mine[i], theirs[16384+i], "copy %d", i)
	}

	// A window beyond the queue pair's 32 entries stays in C: a copy that
	// finds the queue full polls for the completions that free an entry.
	var window []core.Handle
	for i := range 96 {
		mine[4096+i*64] = byte(7 + i)
		h := fastCopy(e, peer+32768+core.GA(i*64), me+core.GA(4096+i*64), 64, core.HandleNull)
		require.NotZero(t, h, "copy %d of a window of 96 went through Go", i)
		window = append(window, h)
	}
	for i, h := range window {
		wait(h)
		assert.Equal(t, mine[4096+i*64:4096+i*64+64], theirs[32768+i*64:32768+i*64+64], "copy %d of the window", i)
	}
}

// An operation ordered behind a copy the C side posted starts although
// nobody waits for either, while the application is active (its copies
// then leave the progress goroutine in its long sleep): the engine tells
// the transport that an operation waits, and the goroutine looks for the
// first copy's completion within its short timer period. Without that it
// would start only when the long sleep (a second) ended.
func TestOrderedBehindUnwatchedFastCopyStartsIB(t *testing.T) {
	e, _, me, peer, mine, theirs := ibPair(t)
	h, err := e.Copy(peer, me, 8, core.HandleNull) // connect first
	require.NoError(t, err)
	e.Complete(h)
	for i := 1; i <= 5; i++ {
		for range 20 { // the application is active
			waitFast(e, fastCopy(e, peer+64, me+64, 8, core.HandleNull))
		}
		time.Sleep(100 * time.Millisecond) // past the spin: the goroutine sleeps
		mine[8] = byte(i)
		first := fastCopy(e, peer+8192, me+8192, 1<<20, core.HandleNull)
		require.NotZero(t, first, "the first copy went through Go")
		second, err := e.Copy(peer+16, me+8, 1, first)
		require.NoError(t, err)
		coretest.AwaitByte(t, theirs, 16, byte(i), 250*time.Millisecond) // a quarter of the long sleep
		e.Complete(second)
		waitFast(e, first)
	}
}

// Registered memory over ib: once the Go side has learnt a peer's key
// (the first access), the C path posts copies to and from that
// registration, and from and to registrations of ours, and leaves out what
// it cannot check. A revoked key leaves the C side: the next access goes
// through Go, which fetches the key of the registration that took the
// segment number, and the old memory is never written again.
func TestFastPathPostsRegisteredOverIB(t *testing.T) {
	e, peerE, me, peer, mine, theirs := ibPair(t)
	wait := func(h core.Handle) { waitFast(e, h) }
	goCopy := func(dst, src core.GA, n uint64) {
		h, err := e.Copy(dst, src, n, core.HandleNull)
		require.NoError(t, err)
		e.Complete(h)
	}
	fill := func(b []byte, seed int) {
		for i := range b {
			b[i] = byte(seed + i*13)
		}
	}
	goCopy(peer, me, 8) // connects

	a := coretest.CMem(t, 2<<20)
	keyA, regA := registerAll(t, peerE, a)
	assert.Zero(t, fastCopy(e, regA, me, 8, core.HandleNull), "a registration whose key is not known here yet")
	goCopy(regA, me, 8) // learns the key

	ours := coretest.CMem(t, 2<<20)
	keyOurs, regOurs := registerAll(t, e, ours)
	// A put of n bytes from local to remote through the C path, then a
	// get of them back into back, each checked.
	roundTrip := func(what string, local []byte, localGA core.GA, remote []byte, remoteGA core.GA, back []byte, backGA core.GA, n uint64, seed int) {
		fill(local[:n], seed)
		h := fastCopy(e, remoteGA, localGA, n, core.HandleNull)
		require.NotZero(t, h, "%s: put of %d bytes went through Go", what, n)
		wait(h)
		require.Equal(t, local[:n], remote[:n], "%s: put of %d bytes", what, n)
		clear(back[:n])
		h = fastCopy(e, backGA, remoteGA, n, core.HandleNull)
		require.NotZero(t, h, "%s: get of %d bytes went through Go", what, n)
		wait(h)
		require.Equal(t, remote[:n], back[:n], "%s: get of %d bytes", what, n)
	}
	for i, n := range []uint64{1, 8, 64, 4096, 1 << 20} {
		roundTrip("starter memory and a peer's registration", mine, me, a[4096:], regA+4096, mine[2<<20:], me+2<<20, n, i)
		roundTrip("our registration and a peer's starter memory", ours, regOurs, theirs[8192:], peer+8192, ours[1<<20:], regOurs+1<<20, n, 50+i)
		roundTrip("our registration and a peer's registration", ours, regOurs, a[64:], regA+64, ours[1<<20:], regOurs+1<<20, n, 90+i)
	}
	size := core.GA(len(a))
	assert.Zero(t, fastCopy(e, regA+size-4, me, 8, core.HandleNull), "beyond the peer's registration")
	assert.Zero(t, fastCopy(e, me, regA+size-4, 8, core.HandleNull), "beyond the peer's registration (get)")
	assert.Zero(t, fastCopy(e, peer, regOurs+size-4, 8, core.HandleNull), "beyond our registration")
	assert.Zero(t, fastCopy(e, regOurs+size-4, peer, 8, core.HandleNull), "beyond our registration (get)")
	assert.Zero(t, fastCopy(e, regOurs, regOurs+64, 8, core.HandleNull), "both ends ours")

	// Revocation: A goes, B takes its segment number.
	clear(a)
	require.NoError(t, peerE.Unregister(keyA))
	assert.Zero(t, fastCopy(e, regA, me, 8, core.HandleNull), "the revoked key of A")
	b := coretest.CMem(t, 2<<20)
	seg := e.Layout().Seg(keyA)
	var keyB, regB core.GA
	for i := 0; ; i++ {
		keyB, regB = registerAll(t, peerE, b)
		if e.Layout().Seg(keyB) == seg {
			break
		}
		require.NoError(t, peerE.Unregister(keyB))
		require.Less(t, i, 10000, "segment %d never came back", seg)
	}
	fill(mine[:64], 7)
	goCopy(regB+128, me, 64) // fetches B's key
	h := fastCopy(e, regB+256, me, 64, core.HandleNull)
	require.NotZero(t, h, "B's key went through Go")
	wait(h)
	assert.Equal(t, mine[:64], b[128:192])
	assert.Equal(t, mine[:64], b[256:320])
	assert.Equal(t, make([]byte, len(a)), a, "the unregistered buffer A was written")

	// Our registration gone: the C side no longer finds it, Go reports it.
	require.NoError(t, e.Unregister(keyOurs))
	assert.Zero(t, fastCopy(e, peer, regOurs, 8, core.HandleNull), "our unregistered buffer")
	_, err := e.Copy(peer, regOurs, 8, core.HandleNull)
	assert.Error(t, err, "a copy from our unregistered buffer")
	require.NoError(t, peerE.Unregister(keyB))
}

// With --acp-ib-atomics nic the C path also posts atomics on registered
// memory: a peer's once the Go side learnt its key, and our own through
// the loopback connection, with our registration's own key. It declines
// what it cannot check (a key not learnt, out of bounds, an unregistered
// buffer), and Go serves or refuses those.
func TestFastPathNICAtomicsOnRegistrationsIB(t *testing.T) {
	e, peerE, me, peer, mine, _ := ibPair(t, "ib-atomics=nic")
	goAtomic := func(op core.AtomicOp, target core.GA, a, b uint64) {
		h, err := e.Atomic(op, me, target, a, b, core.HandleNull)
		require.NoError(t, err)
		e.Complete(h)
	}
	word := func(b []byte, off int) uint64 { return binary.LittleEndian.Uint64(b[off:]) }

	ours := coretest.CMem(t, 1<<20)
	keyOurs, regOurs := registerAll(t, e, ours)
	theirs := coretest.CMem(t, 1<<20)
	keyTheirs, regTheirs := registerAll(t, peerE, theirs)
	goAtomic(core.OpAdd8, peer, 0, 0) // connects to the peer

	assert.Zero(t, fastAtomic(e, core.OpAdd8, me, regTheirs+64, 1, 0, core.HandleNull), "a registration whose key is not known here yet")
	goAtomic(core.OpAdd8, regTheirs+64, 1, 0) // learns the key
	assert.Zero(t, fastAtomic(e, core.OpAdd8, me, regOurs+64, 1, 0, core.HandleNull), "ours, before the loopback connection")
	goAtomic(core.OpAdd8, regOurs+64, 1, 0) // makes the loopback connection

	for _, c := range []struct {
		what   string
		target core.GA
		mem    []byte
	}{{"a peer's registration", regTheirs, theirs}, {"our registration", regOurs, ours}} {
		for i := range 20 {
			binary.LittleEndian.PutUint64(mine[8:], 0xdead)
			h := fastAtomic(e, core.OpAdd8, me+8, c.target+64, 3, 0, core.HandleNull)
			require.NotZero(t, h, "%s: add8 went through Go", c.what)
			waitFast(e, h)
			assert.Equal(t, uint64(1+3*i), word(mine, 8), "%s: add8's old value", c.what)
		}
		h := fastAtomic(e, core.OpCas8, me+16, c.target+64, 61, 7, core.HandleNull)
		require.NotZero(t, h, "%s: cas8 went through Go", c.what)
		waitFast(e, h)
		assert.Equal(t, uint64(61), word(mine, 16), "%s: cas8's old value", c.what)
		assert.Equal(t, uint64(7), word(c.mem, 64), "%s: cas8 swapped", c.what)
		h = fastAtomic(e, core.OpCas8, me+16, c.target+64, 61, 9, core.HandleNull)
		require.NotZero(t, h, "%s: a failing cas8 went through Go", c.what)
		waitFast(e, h)
		assert.Equal(t, uint64(7), word(mine, 16), "%s: a failing cas8's old value", c.what)
		assert.Equal(t, uint64(7), word(c.mem, 64), "%s: a failing cas8 changed the word", c.what)
		assert.Zero(t, fastAtomic(e, core.OpAdd8, me, c.target+core.GA(len(c.mem)), 1, 0, core.HandleNull), "%s: beyond its end", c.what)
		assert.Zero(t, fastAtomic(e, core.OpXor8, me, c.target+64, 1, 0, core.HandleNull), "%s: xor8 (a compare-and-swap loop in Go)", c.what)
	}

	// The result in our registration, the target too.
	h := fastAtomic(e, core.OpAdd8, regOurs+128, regOurs+64, 1, 0, core.HandleNull)
	require.NotZero(t, h, "target and result in our registration")
	waitFast(e, h)
	assert.Equal(t, uint64(7), word(ours, 128))
	assert.Equal(t, uint64(8), word(ours, 64))

	// Unregistered: the C path no longer finds ours, Go refuses it.
	require.NoError(t, e.Unregister(keyOurs))
	assert.Zero(t, fastAtomic(e, core.OpAdd8, me, regOurs+64, 1, 0, core.HandleNull), "our unregistered buffer")
	_, err := e.Atomic(core.OpAdd8, me, regOurs+64, 1, 0, core.HandleNull)
	assert.Error(t, err, "an atomic on our unregistered buffer")
	assert.Zero(t, e.Errors())
	require.NoError(t, peerE.Unregister(keyTheirs))
}

// A put the C path posted to a peer that vanished meanwhile ends the job
// with a fatal error naming the peer, as the Go path's puts do (ib's
// TestPeerGoneIsFatal), never a hang: Soft-RoCE retries such a request
// for ever, so here --acp-peer-timeout ends the wait of acp_complete.
func TestPeerGoneIsFatalThroughFastPathIB(t *testing.T) {
	needRDMA(t)
	w := coretest.NewWorldExits(t, 2, "ib", "size-smem=4096", "peer-timeout=2")
	e := w.Engines[0]
	me, _ := e.StarterGA(0)
	peer, _ := e.StarterGA(1)
	h, err := e.Copy(peer, me, 8, core.HandleNull) // connects
	require.NoError(t, err)
	e.Complete(h)
	require.NoError(t, ib.CloseEndpointOf(w.Engines[1]))
	h = fastCopy(e, peer+64, me, 8, core.HandleNull)
	require.NotZero(t, h, "the C path takes a put to the peer's starter memory")
	go fastOps{e}.Complete(h) // acp_complete's wait: in C, then in Go
	took := w.AwaitFatal(30*time.Second, `fatal: .*rank 1 is unreachable`)
	t.Logf("after %v: %s", took.Round(time.Millisecond), strings.TrimSpace(w.Stderr.String()))
}

// Large copies between memories of this node may take the vector copy
// (fastpath.c, from memcopy.VectorCopyMin): every byte arrives, at every alignment of
// either end and any length, and nothing beside the destination changes,
// through memmove, the loop itself (any CPU with AVX2) and the way this
// CPU's judgement picks.
func TestLargeCopiesMoveEveryByte(t *testing.T) {
	defer setLargeCopiesByVectors(memcopy.LargeByVectors())
	ways := map[string]func(d, s []byte){
		"memmove": func(d, s []byte) { setLargeCopiesByVectors(false); fastMove(d, s) },
		"move as this CPU chooses": func(d, s []byte) {
			setLargeCopiesByVectors(memcopy.LargeByVectors())
			fastMove(d, s)
		},
	}
	if fastVectorCopy(make([]byte, 1), make([]byte, 1)) {
		ways["vector loop"] = func(d, s []byte) { fastVectorCopy(d, s) }
	} else {
		t.Log("no AVX2 here: the vector loop is not tested")
	}
	memcopytest.CheckCopies(t, ways)
}

// Overlapping ranges keep memmove's meaning whatever the size.
func TestLargeOverlappingMoves(t *testing.T) {
	defer setLargeCopiesByVectors(memcopy.LargeByVectors())
	setLargeCopiesByVectors(true)
	memcopytest.CheckOverlapping(t, fastMove)
}

// A put of starter memory over shm larger than memcopy.VectorCopyMin, at odd
// ends, completes in C with every byte in place.
func TestFastPathLargePuts(t *testing.T) {
	setLargeCopiesByVectors(memcopy.LargeByVectors()) // as the library starts
	w := coretest.NewWorld(t, 2, "shm", "size-smem=8388608")
	defer w.Close()
	e := w.Engines[0]
	me, _ := e.StarterGA(0)
	peer, _ := e.StarterGA(1)
	h, err := e.Copy(peer, me, 8, core.HandleNull) // maps the peer's memory
	require.NoError(t, err)
	e.Complete(h)
	mine, theirs := e.StarterMemory(core.SegStarter), w.Engines[1].StarterMemory(core.SegStarter)
	n := 5<<20 + 5
	for i := 0; i < n; i++ {
		mine[3+i] = byte(i*13 + 1)
	}
	h = fastCopy(e, peer+5, me+3, uint64(n), core.HandleNull)
	require.NotZero(t, h, "the C path declined the put")
	assert.True(t, fastWaited(e, h))
	assert.True(t, bytes.Equal(mine[3:3+n], theirs[5:5+n]))
	assert.Equal(t, byte(0), theirs[4])
	assert.Equal(t, byte(0), theirs[5+n])
}
