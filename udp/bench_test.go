package udp_test

import (
	"runtime"
	"sync/atomic"
	"testing"
	"unsafe"

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
	rounds := b.N
	started := make(chan struct{}, 2)
	b.ResetTimer()
	w.Run(func(rank int, e *core.Engine) error {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		mine, _ := e.StarterGA(rank)
		peer, _ := e.StarterGA(1 - rank)
		mem := e.StarterMemory(core.SegStarter)
		flag := (*uint32)(unsafe.Pointer(&mem[0]))
		send := (*uint32)(unsafe.Pointer(&mem[64]))
		started <- struct{}{}
		for i := 1; i <= rounds; i++ {
			if rank == 1 {
				for atomic.LoadUint32(flag) != uint32(i) {
					runtime.Gosched()
				}
			}
			atomic.StoreUint32(send, uint32(i))
			h, err := e.Copy(peer, mine+64, 8, core.HandleNull)
			if err != nil {
				return err
			}
			e.Complete(h)
			if rank == 0 {
				for atomic.LoadUint32(flag) != uint32(i) {
					runtime.Gosched()
				}
			}
		}
		return e.Sync()
	})
}
