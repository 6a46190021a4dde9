package udp

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestReceiveWindowAgainstASet drives a peer's receive window with random
// arrivals (new, duplicate, beyond the window) and checks accept, rxNext,
// inOrder and the selective-acknowledgement bits against a plain set, across
// many wraps of the window.
func TestReceiveWindowAgainstASet(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	p := &peer{}
	seen := map[uint64]bool{}
	next := uint64(0)
	for step := 0; step < 200000; step++ {
		var seq uint64
		switch r := rng.IntN(10); {
		case r < 5: // the next one, or close behind it
			seq = next + uint64(rng.IntN(3))
		case r < 8: // somewhere in the window
			seq = next + uint64(rng.IntN(rxWindow))
		case r < 9: // an old duplicate
			seq = next - uint64(rng.IntN(int(min(next, 100))+1))
		default: // beyond the window
			seq = next + rxWindow + uint64(rng.IntN(100))
		}
		want := seq >= next && seq-next < rxWindow && !seen[seq]
		require.Equal(t, want, p.fresh(seq), "fresh(%d) at rxNext %d", seq, next)
		require.Equal(t, want, p.accept(seq), "accept(%d) at rxNext %d", seq, next)
		if want {
			seen[seq] = true
			for seen[next] {
				delete(seen, next)
				next++
			}
		}
		require.Equal(t, next, p.rxNext)
		var bits uint64
		for i := uint64(0); i < 64; i++ {
			if seen[next+1+i] {
				bits |= 1 << i
			}
		}
		require.Equal(t, bits, p.sack(), "sack at rxNext %d", next)
		require.Equal(t, len(seen) == 0, p.inOrder())
	}
	require.Greater(t, next, uint64(10*rxWindow), "the window wrapped")
}
