package core

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// heapBytes is what f allocates on the Go heap, averaged over runs calls.
// The counter is the whole process's: goroutines left by earlier tests
// (and the race detector's slower runs give them time) can only add to
// it, so the least of a few measurements is taken.
func heapBytes(runs int, f func()) float64 {
	least := -1.0
	for range 3 {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for range runs {
			f()
		}
		runtime.ReadMemStats(&after)
		if b := float64(after.TotalAlloc-before.TotalAlloc) / float64(runs); least < 0 || b < least {
			least = b
		}
	}
	return least
}

func TestMemoryUseMatchesRegTable(t *testing.T) {
	for _, n := range []int{2, 1000, 1_000_000} {
		l, err := NewLayout(n, 1)
		require.NoError(t, err)
		keep := make([]*RegTable, 0, 20)
		got := heapBytes(20, func() {
			tab := NewRegTable(l, 0)
			for s := range SegFirstUser {
				tab.Install(s, nil, 0, 0) // the starter regions
			}
			keep = append(keep, tab)
		})
		assert.InEpsilon(t, got, float64(regTableBytes(l)), 0.15, "%d processes: measured %.0f bytes, estimated %d", n, got, regTableBytes(l))
	}
}

func TestMemoryUseMatchesQueue(t *testing.T) {
	const depth = 4096
	var q queue
	e := &Engine{}
	heap := heapBytes(1, func() { require.NoError(t, q.init(e, depth)) })
	mapped := uint64(len(q.fast.mem))
	unmap(q.fast.mem)
	assert.InEpsilon(t, float64(queueBytes(depth)), heap+float64(pageRound(mapped)), 0.05,
		"command queue: %.0f bytes on the heap + %d mapped, estimated %d", heap, mapped, queueBytes(depth))
}

func TestMemoryUseTables(t *testing.T) {
	s := NewSettings(BaseSettings)
	require.NoError(t, s.Set("transports", "manual", "test")) // queue_test.go's, with no fixed address size
	items, err := MemoryUse(s, 1_000_000)
	require.NoError(t, err)
	byName := map[string]MemoryItem{}
	for _, it := range items {
		byName[it.Table] = it
		assert.NotEmpty(t, it.How, it.Table)
	}
	assert.Equal(t, uint64(1_000_000*(recordHead+1)), byName["start-up records"].Bytes)
	assert.Equal(t, uint64(1_000_000), byName["routes"].Bytes)
	assert.Equal(t, uint64(3*12288+engineAreaSize), byName["starter memories"].Bytes, "3 × 10240 bytes, rounded to pages, and the engine area")
	// 512 slots at a million processes (9 segment bits).
	assert.Less(t, byName["registration table"].Bytes, uint64(16*1024))

	require.NoError(t, s.Set("transports", "nosuch", "test"))
	_, err = MemoryUse(s, 4)
	assert.ErrorContains(t, err, `unknown transport "nosuch"`)
}
