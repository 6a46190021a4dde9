package udp_test

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"

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
