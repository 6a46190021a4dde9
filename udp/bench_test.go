package udp_test

import (
	"runtime"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"

	"github.com/libacp/libacp/core"
	"github.com/libacp/libacp/core/coretest"
)

// BenchmarkPutPingpong8 is the put pingpong of acpbench in one process: an
// 8-byte put and its completion, then a spin on memory for the peer's
// answer. One op is a round trip. Its allocations per op are what the
// garbage collector must make up for in a pingpong: each collection takes
// the waiting threads' CPUs for a millisecond or so.
func BenchmarkPutPingpong8(b *testing.B) {
	w := coretest.NewWorld(b, 2, "udp")
	defer w.Close()
	b.ReportAllocs()
	b.ResetTimer()
	putPingpong(w, 1, b.N)
}

// TestPutPingpongAllocations: a small put's way through the engine and
// the protocol, on both sides, allocates nothing once warm: its op and
// datagram are reused (there were sixteen allocations per round trip).
func TestPutPingpongAllocations(t *testing.T) {
	w := coretest.NewWorld(t, 2, "udp")
	defer w.Close()
	putPingpong(w, 1, 500) // warm: peers, arrays, spare datagrams
	const rounds = 2000
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	putPingpong(w, 501, rounds)
	runtime.ReadMemStats(&after)
	perRound := float64(after.Mallocs-before.Mallocs) / rounds
	t.Logf("%.2f allocations per round trip", perRound)
	assert.LessOrEqual(t, perRound, 0.5, "allocations per round trip of an 8-byte put pingpong")
}

// TestSmallGetAllocations: a small get reuses its op and datagrams too,
// and the owner its record of the request: nothing is allocated.
func TestSmallGetAllocations(t *testing.T) {
	w := coretest.NewWorld(t, 2, "udp")
	defer w.Close()
	gets := func(n int) {
		w.Run(func(rank int, e *core.Engine) error {
			if rank == 0 {
				mine, _ := e.StarterGA(0)
				peer, _ := e.StarterGA(1)
				for i := 0; i < n; i++ {
					h, err := e.Copy(mine+64, peer, 8, core.HandleNull)
					if err != nil {
						return err
					}
					e.Complete(h)
				}
			}
			return e.Sync()
		})
	}
	gets(500)
	const rounds = 2000
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	gets(rounds)
	runtime.ReadMemStats(&after)
	perGet := float64(after.Mallocs-before.Mallocs) / rounds
	t.Logf("%.2f allocations per get", perGet)
	assert.LessOrEqual(t, perGet, 0.5, "allocations per 8-byte get")
}

// putPingpong runs rounds round trips of an 8-byte put between ranks 0
// and 1, each side waiting for the other's value in its memory: first,
// first+1, ... (a value read from memory would race with the peer's first
// put).
func putPingpong(w *coretest.World, first uint32, rounds int) {
	w.Run(func(rank int, e *core.Engine) error {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		mine, _ := e.StarterGA(rank)
		peer, _ := e.StarterGA(1 - rank)
		mem := e.StarterMemory(core.SegStarter)
		flag := (*uint32)(unsafe.Pointer(&mem[0]))
		send := (*uint32)(unsafe.Pointer(&mem[64]))
		for i := first; i < first+uint32(rounds); i++ {
			if rank == 1 {
				for atomic.LoadUint32(flag) != i {
					runtime.Gosched()
				}
			}
			atomic.StoreUint32(send, i)
			h, err := e.Copy(peer, mine+64, 8, core.HandleNull)
			if err != nil {
				return err
			}
			e.Complete(h)
			if rank == 0 {
				for atomic.LoadUint32(flag) != i {
					runtime.Gosched()
				}
			}
		}
		return e.Sync()
	})
}
