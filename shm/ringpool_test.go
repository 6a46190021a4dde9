package shm_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/libacp/libacp/core"
	"github.com/libacp/libacp/core/coretest"
	_ "github.com/libacp/libacp/core/memnet"
)

// Processes of one host map each other's starter memory, so the
// communication library's region gets the ring pool on top of the size
// asked for, and a peer's pool is reachable with plain stores.
func TestCLStarterGetsTheRingPool(t *testing.T) {
	w := coretest.NewWorld(t, 2, "shm", "size-smem-cl=1024", "size-cl-rings=65536")
	defer w.Close()
	w.Run(func(rank int, e *core.Engine) error {
		assert.Len(t, e.StarterMemory(core.SegStarterCL), 1024+65536)
		assert.EqualValues(t, 1024, e.StarterSetting(core.SegStarterCL))
		peer, err := e.StarterGACL(1 - rank)
		require.NoError(t, err)
		assert.NotNil(t, e.Direct(peer+1024+65536-8, 8), "the end of the peer's pool is mapped here")
		return nil
	})
}

// No communication library, no pool.
func TestNoRingPoolWithoutTheCommunicationLibrary(t *testing.T) {
	w := coretest.NewWorld(t, 2, "shm", "size-smem-cl=0")
	defer w.Close()
	w.Run(func(rank int, e *core.Engine) error {
		assert.Empty(t, e.StarterMemory(core.SegStarterCL))
		return nil
	})
}

// The estimate acp_info prints knows, without opening shm, that it maps
// starter memory, and counts the ring pool where the engine allocates it.
func TestMemoryEstimateCountsTheRingPool(t *testing.T) {
	info, ok := core.LookupTransport("shm")
	require.True(t, ok)
	assert.True(t, info.SharesStarters, "shm is a core.StarterProvider")
	starters := func(transports string) uint64 {
		s := coretest.NewSettings(t, transports, "size-smem-cl=4096", "size-cl-rings=65536")
		items, err := core.MemoryUse(s, 4)
		require.NoError(t, err)
		for _, it := range items {
			if it.Table == "starter memories" {
				return it.Bytes
			}
		}
		t.Fatal("no starter memories in the estimate")
		return 0
	}
	assert.Equal(t, uint64(65536), starters("shm")-starters("memnet"))
}
