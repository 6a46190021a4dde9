// Package memcopytest checks copies of memory the way the library's copy
// tests do: every byte arrives, at every alignment of either end and
// lengths around the sizes where the copies change their way, and nothing
// beside the destination changes.
package memcopytest

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// Lengths around the thresholds of memcopy.Move and the C fast path (1
// MiB, 4 MiB) and of the vector loop's 32-byte alignment and 128-byte
// turns.
var Lengths = []int{0, 1, 31, 32, 127, 128, 129, 4097, 1<<20 - 1, 1 << 20, 1<<20 + 33, 4<<20 - 1, 4 << 20, 4<<20 + 127, 5<<20 - 64}

// CheckCopies runs each way (a function copying len(src) bytes of src
// into dst) over Lengths at five pairs of alignments, with guard bytes on
// both sides of the destination.
func CheckCopies(t *testing.T, ways map[string]func(dst, src []byte)) {
	t.Helper()
	const guard = 256
	rng := rand.New(rand.NewPCG(3, 5))
	src := make([]byte, 5<<20)
	for i := range src {
		src[i] = byte(rng.Uint32())
	}
	dst := make([]byte, len(src)+2*guard)
	fill := bytes.Repeat([]byte{0xa5}, len(dst)) // one copy resets dst (a loop is slow under -race)
	for name, move := range ways {
		for _, n := range Lengths {
			for _, off := range [][2]int{{0, 0}, {1, 0}, {0, 1}, {31, 7}, {63, 33}} {
				so, do := off[0], guard+off[1]
				copy(dst, fill)
				move(dst[do:do+n], src[so:so+n])
				require.True(t, bytes.Equal(src[so:so+n], dst[do:do+n]), "%s of %d bytes, source at +%d, destination at +%d", name, n, so, off[1])
				for _, i := range []int{0, do - 1, do + n, len(dst) - 1} {
					require.Equal(t, byte(0xa5), dst[i], "%s of %d bytes wrote byte %d beside its destination", name, n, i-guard)
				}
			}
		}
	}
}

// CheckOverlapping holds move (dst, src) to copy's meaning for ranges that
// overlap, shifted either way by a byte to a MiB, over 4 MiB + 33 bytes.
func CheckOverlapping(t *testing.T, move func(dst, src []byte)) {
	t.Helper()
	for _, shift := range []int{-4097, -1, 1, 64, 1 << 20} {
		n := 4<<20 + 33
		buf := make([]byte, n+2<<20)
		for i := range buf {
			buf[i] = byte(i * 7)
		}
		want := append([]byte(nil), buf...)
		from := 1 << 20
		copy(want[from+shift:from+shift+n], want[from:from+n])
		move(buf[from+shift:from+shift+n], buf[from:from+n])
		require.True(t, bytes.Equal(want, buf), "move of %d bytes by %d", n, shift)
	}
}
