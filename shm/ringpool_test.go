package shm_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/libacp/libacp/core"
	"github.com/libacp/libacp/core/coretest"
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
