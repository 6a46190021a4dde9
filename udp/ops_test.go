package udp

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestOpTableAgainstAMap adds operations with rising ids and finishes them
// in random order, some long after many younger ones (so that their slot in
// the ring is wanted again and the younger ones spill), reusing finished
// operations as the endpoint does, and checks every lookup against a map.
func TestOpTableAgainstAMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var tab opTable
	model := map[uint64]*op{}
	var free []*op
	var live []*op
	next := uint64(0)
	for step := 0; step < 100000; step++ {
		if len(live) == 0 || (len(live) < 3*opRing && rng.IntN(2) == 0) {
			next++
			var o *op
			if n := len(free); n > 0 {
				o, free = free[n-1], free[:n-1]
			} else {
				o = &op{}
			}
			*o = op{id: next}
			tab.add(o)
			model[o.id] = o
			live = append(live, o)
		} else {
			// Mostly the oldest few, sometimes any.
			i := rng.IntN(min(len(live), 4))
			if rng.IntN(8) == 0 {
				i = rng.IntN(len(live))
			}
			o := live[i]
			live = append(live[:i], live[i+1:]...)
			tab.remove(o)
			delete(model, o.id)
			free = append(free, o)
		}
		require.Equal(t, len(model), tab.len())
		for k := 0; k < 4; k++ {
			id := uint64(rng.IntN(int(next) + 2))
			require.Same(t, model[id], tab.get(id), "id %d", id)
		}
		for _, o := range live[:min(len(live), 3)] {
			require.Same(t, o, tab.get(o.id))
		}
	}
	seen := 0
	tab.each(func(o *op) {
		require.Same(t, model[o.id], o)
		seen++
	})
	require.Equal(t, len(model), seen)
	require.NotEmpty(t, tab.spill, "no operation spilled: the test missed the map")
}
