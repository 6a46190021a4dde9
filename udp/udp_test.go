package udp_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/libacp/libacp/core"
	"github.com/libacp/libacp/core/conformance"
	"github.com/libacp/libacp/core/coretest"
	_ "github.com/libacp/libacp/udp"
)

// faults is the bad network the protocol must survive.
const faults = "udp-faults=loss=0.1,dup=0.05,reorder=0.1,seed=7"

func TestConformance(t *testing.T) { conformance.Run(t, "udp") }

func TestConformanceSmallDatagrams(t *testing.T) { conformance.Run(t, "udp", "udp-mtu=1472") }

func TestConformanceUnderFaults(t *testing.T) { conformance.Run(t, "udp", faults) }

// TestExactlyOnceUnderFaults: 10,000 add8 from each of 4 ranks into one
// counter give the exact sum, and a 64 MiB copy arrives bit-exact, while
// datagrams are lost, duplicated and reordered.
func TestExactlyOnceUnderFaults(t *testing.T) {
	const adds = 10000
	const big = 64 << 20
	w := coretest.NewWorld(t, 4, "udp", faults, "size-smem=0x4100000")
	src := w.Engines[1].StarterMemory(core.SegStarter)
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < big; i += 8 {
		binary.LittleEndian.PutUint64(src[i:], r.Uint64())
	}
	w.Run(func(rank int, e *core.Engine) error {
		counter, _ := e.StarterGA(0)
		counter += big
		res, _ := e.StarterGA(rank)
		res += big + 64
		for i := 0; i < adds; i++ {
			if _, err := e.Atomic(core.OpAdd8, res, counter, 1, 0, core.HandleNull); err != nil {
				return err
			}
		}
		if rank == 2 {
			// 64 MiB from rank 1 to rank 3, issued by rank 2.
			dst, _ := e.StarterGA(3)
			from, _ := e.StarterGA(1)
			if _, err := e.Copy(dst, from, big, core.HandleNull); err != nil {
				return err
			}
		}
		e.Complete(core.HandleAll)
		return e.Sync()
	})
	for r, e := range w.Engines {
		assert.Zero(t, e.Errors(), "rank %d had failed operations: %s", r, w.Stderr.String())
	}
	got := binary.LittleEndian.Uint64(w.Engines[0].StarterMemory(core.SegStarter)[big:])
	assert.Equal(t, uint64(4*adds), got, "sum of add8 under faults")
	assert.True(t, bytes.Equal(src[:big], w.Engines[3].StarterMemory(core.SegStarter)[:big]), "64 MiB copy under faults")
	w.Close()
}

// TestConcurrentCopiesUnderFaults: every rank gets 3 MiB from every other
// rank and puts 3 MiB into every other rank at once, round after round,
// while datagrams are lost, duplicated and reordered. Retransmissions and
// acknowledgements then meet in one batch: a datagram's buffer must never
// be reused while a queued retransmission still points at it (it would
// carry another peer's datagram to this peer).
func TestConcurrentCopiesUnderFaults(t *testing.T) {
	const n, size, rounds = 4, 3 << 20, 6
	// Starter layout: my pattern | a slot per source of gets | a slot per source of puts.
	getSlot := func(p int) uint64 { return uint64(1+p) * size }
	putSlot := func(p int) uint64 { return uint64(1+n+p) * size }
	w := coretest.NewWorld(t, n, "udp", faults, fmt.Sprintf("size-smem=%d", (2*n+1)*size))
	// A stall (data that never comes) must fail the test, not hang it.
	stall := time.AfterFunc(2*time.Minute, func() { panic("copies under faults did not finish within 2 minutes") })
	defer stall.Stop()
	pattern := func(r int) []byte {
		b := make([]byte, size)
		rng := rand.New(rand.NewPCG(uint64(r), 99))
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	for r, e := range w.Engines {
		copy(e.StarterMemory(core.SegStarter), pattern(r))
	}
	w.Run(func(r int, e *core.Engine) error {
		mine, _ := e.StarterGA(r)
		for round := 0; round < rounds; round++ {
			for p := 0; p < n; p++ {
				if p == r {
					continue
				}
				theirs, _ := e.StarterGA(p)
				if _, err := e.Copy(mine+core.GA(getSlot(p)), theirs, size, core.HandleNull); err != nil {
					return err
				}
				if _, err := e.Copy(theirs+core.GA(putSlot(r)), mine, size, core.HandleNull); err != nil {
					return err
				}
			}
			e.Complete(core.HandleAll)
		}
		return e.Sync()
	})
	for r, e := range w.Engines {
		assert.Zero(t, e.Errors(), "rank %d had failed operations", r)
		mem := e.StarterMemory(core.SegStarter)
		for p := 0; p < n; p++ {
			if p == r {
				continue
			}
			want := pattern(p)
			assert.True(t, bytes.Equal(want, mem[getSlot(p):getSlot(p)+size]), "rank %d: data got from rank %d", r, p)
			assert.True(t, bytes.Equal(want, mem[putSlot(p):putSlot(p)+size]), "rank %d: data put by rank %d", r, p)
		}
	}
	w.Close()
}

// A copy issued while both progress goroutines sleep with nothing due
// (up to idleSleep) and never waited for still lands soon when its
// datagrams are lost: arming the retransmission timer wakes the sleeping
// goroutine, which would otherwise look again only after idleSleep.
func TestIdleProgressRetransmitsAtOnce(t *testing.T) {
	w := coretest.NewWorld(t, 2, "udp", "udp-faults=loss=0.5,seed=11")
	defer w.Close()
	e0 := w.Engines[0]
	src, err := e0.StarterGA(0)
	require.NoError(t, err)
	dst, err := e0.StarterGA(1)
	require.NoError(t, err)
	mine, theirs := e0.StarterMemory(0), w.Engines[1].StarterMemory(0)
	for i := 1; i <= 10; i++ {
		time.Sleep(20 * time.Millisecond) // past the spin: both goroutines sleep
		mine[0] = byte(i)
		h, err := e0.Copy(dst+64, src, 1, core.HandleNull)
		require.NoError(t, err)
		// Nobody waits in the library: only the progress goroutines run.
		// Woken, the goroutines land it within a few retransmission
		// timeouts: 1-60 ms with three busy loops on 2 CPUs. Asleep, it
		// would wait for the end of the idle sleep, about a second away.
		coretest.AwaitByte(t, theirs, 64, byte(i), 600*time.Millisecond)
		e0.Complete(h)
	}
}

// A peer's puts over udp land when a thread of ours receives them; our own
// rank and ranks that do not exist are not such peers.
func TestLandsOnReceipt(t *testing.T) {
	w := coretest.NewWorld(t, 3, "udp")
	defer w.Close()
	e := w.Engines[0]
	assert.True(t, e.LandsOnReceipt(1))
	assert.True(t, e.LandsOnReceipt(2))
	for _, r := range []int{-1, 0, 3} {
		assert.False(t, e.LandsOnReceipt(r), "rank %d", r)
	}
}

// A barrier that waits past the hang-report setting for a rank lists the
// transport's peers and what is in flight to them.
func TestHangReportListsThePeers(t *testing.T) {
	w := coretest.NewWorld(t, 2, "udp", "hang-report=0.05")
	defer w.Close()
	w.LateSync(400 * time.Millisecond)
	out := w.Stderr.String()
	assert.Contains(t, out, "acp[0]: hang report: transport udp:\n")
	assert.Regexp(t, `acp\[0\]: hang report:   1 peer\(s\) contacted, [01] with data in flight; 0 operation\(s\) waiting for a peer\n`, out)
}
