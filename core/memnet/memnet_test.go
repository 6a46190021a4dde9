package memnet_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/libacp/libacp/core"
	"github.com/libacp/libacp/core/conformance"
	"github.com/libacp/libacp/core/coretest"
	"github.com/libacp/libacp/core/memnet"
)

func TestConformance(t *testing.T) {
	before := memnet.CarriedGets()
	conformance.Run(t, "memnet")
	// The carried-key case read with the keys it packed (three reads).
	assert.GreaterOrEqual(t, memnet.CarriedGets()-before, int64(3))
}

func TestConformanceShuffled(t *testing.T) { conformance.Run(t, "memnet", "memnet-shuffle=1") }

// A transport that does not map starter memory gets no ring pool: the
// rings could not be written with stores anyway.
func TestNoRingPoolWithoutSharedStarters(t *testing.T) {
	w := coretest.NewWorld(t, 2, "memnet", "size-smem-cl=1024")
	defer w.Close()
	w.Run(func(rank int, e *core.Engine) error {
		assert.Len(t, e.StarterMemory(core.SegStarterCL), 1024)
		return nil
	})
}

// Every 8-byte atomic on the emulated device, whose atomics are not
// atomic with CPU atomics: a placement that still ran a CPU atomic would
// lose updates in the contention case.
func TestConformanceDeviceAtomics(t *testing.T) {
	conformance.Run(t, "memnet", "memnet-device-atomics=1")
}

func TestConformanceDeviceAtomicsShuffled(t *testing.T) {
	conformance.Run(t, "memnet", "memnet-device-atomics=1", "memnet-shuffle=1")
}
