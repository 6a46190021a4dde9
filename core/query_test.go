package core_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/libacp/libacp/core"
	"github.com/libacp/libacp/core/coretest"
	_ "github.com/libacp/libacp/core/memnet"
)

// A GA that names no process is refused as such, not as another rank's
// memory.
func TestQueryAddressOfNoGA(t *testing.T) {
	w := coretest.NewWorld(t, 2, "memnet")
	defer w.Close()
	e := w.Engines[0]
	_, err := e.QueryAddress(core.GANull)
	assert.ErrorContains(t, err, "ACP_GA_NULL")
	mine, err := e.StarterGA(0)
	require.NoError(t, err)
	rankField := uint64(mine) &^ (uint64(mine) - 1) // rank 0's field: 1
	_, err = e.QueryAddress(core.GA(3*rankField + 64))
	assert.ErrorContains(t, err, "names rank 2, outside 0..1")
	other, err := e.StarterGA(1)
	require.NoError(t, err)
	_, err = e.QueryAddress(other)
	assert.ErrorContains(t, err, "another rank")
}

// Over a transport that delivers by itself (memnet's goroutines, like
// shm's stores and ib's adapter), a peer's writes do not wait for us to
// receive them.
func TestLandsOnReceiptOverMemnet(t *testing.T) {
	w := coretest.NewWorld(t, 2, "memnet")
	defer w.Close()
	for _, r := range []int{-1, 0, 1, 2} {
		assert.False(t, w.Engines[0].LandsOnReceipt(r), "rank %d", r)
	}
}
