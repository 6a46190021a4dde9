package core

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// The engine's copies move every byte whichever way they take (Go's copy,
// `rep movsb` from 1 MiB, vectors from 4 MiB), at every alignment of
// either end, and write nothing beside the destination.
func TestMoveBytesMovesEveryByte(t *testing.T) {
	const guard = 256
	rng := rand.New(rand.NewPCG(3, 5))
	src := make([]byte, 5<<20)
	for i := range src {
		src[i] = byte(rng.Uint32())
	}
	dst := make([]byte, len(src)+2*guard)
	ways := map[string]func(d, s []byte){"moveBytes": moveBytes}
	if haveLargeCopies {
		ways["rep movsb"] = func(d, s []byte) {
			repMovsb(unsafe.Pointer(unsafe.SliceData(d)), unsafe.Pointer(unsafe.SliceData(s)), uintptr(len(s)))
		}
		if vectorCopies {
			ways["vectors"] = func(d, s []byte) {
				vectorCopy(unsafe.Pointer(unsafe.SliceData(d)), unsafe.Pointer(unsafe.SliceData(s)), uintptr(len(s)))
			}
		}
	}
	lengths := []int{0, 1, 31, 32, 127, 128, 129, 4097, 1<<20 - 1, 1 << 20, 1<<20 + 33, 4<<20 - 1, 4 << 20, 4<<20 + 127, 5<<20 - 64}
	for name, move := range ways {
		for _, n := range lengths {
			for _, off := range [][2]int{{0, 0}, {1, 0}, {0, 1}, {31, 7}, {63, 33}} {
				so, do := off[0], guard+off[1]
				for i := range dst {
					dst[i] = 0xa5
				}
				move(dst[do:do+n], src[so:so+n])
				require.True(t, bytes.Equal(src[so:so+n], dst[do:do+n]), "%s of %d bytes, source at +%d, destination at +%d", name, n, so, off[1])
				for _, i := range []int{0, do - 1, do + n, len(dst) - 1} {
					require.Equal(t, byte(0xa5), dst[i], "%s of %d bytes wrote byte %d beside its destination", name, n, i-guard)
				}
			}
		}
	}
	t.Logf("ways tested: %d (rep movsb from 1 MiB: %v, vectors from 4 MiB: %v)", len(ways), haveLargeCopies && stringCopies, haveLargeCopies && vectorCopies)
}

// Overlapping ranges keep copy's meaning at every size.
func TestMoveBytesOverlapping(t *testing.T) {
	for _, shift := range []int{-4097, -1, 1, 64, 1 << 20} {
		n := 4<<20 + 33
		buf := make([]byte, n+2<<20)
		for i := range buf {
			buf[i] = byte(i * 7)
		}
		want := append([]byte(nil), buf...)
		from := 1 << 20
		copy(want[from+shift:from+shift+n], want[from:from+n])
		moveBytes(buf[from+shift:from+shift+n], buf[from:from+n])
		require.True(t, bytes.Equal(want, buf), "move of %d bytes by %d", n, shift)
	}
}

// A large guarded copy that runs into an inaccessible page fails instead
// of crashing, whichever way it copies (a fault in the library's
// assembly is a fault in Go code for the runtime).
func TestLargeGuardedCopiesReportFaults(t *testing.T) {
	page := unix.Getpagesize()
	for _, n := range []int{1 << 20, 4<<20 + 64} {
		np := n/page + 2
		mem := pages(t, np)
		none := mem[(np-1)*page:]
		require.NoError(t, unix.Mprotect(none, unix.PROT_NONE))
		big := make([]byte, n)
		start := len(mem) - page - n + 4096 // the last 4096 bytes fall into the inaccessible page
		assert.False(t, GuardedCopy(mem[start:start+n], big), "copy of %d bytes into memory that ends inaccessible", n)
		assert.False(t, GuardedCopy(big, mem[start:start+n]), "copy of %d bytes out of memory that ends inaccessible", n)
		assert.True(t, GuardedCopy(mem[:n], big), "copy of %d bytes into accessible memory", n)
	}
}

// BenchmarkLargeCopies: Go's copy against moveBytes, two pairs of buffers
// copied in turn (the working set of a pingpong of that size between two
// processes). go test ./core -run - -bench LargeCopies
func BenchmarkLargeCopies(b *testing.B) {
	for _, n := range []int{256 << 10, 1 << 20, 2 << 20, 4 << 20, 16 << 20} {
		pairs := [2][2][]byte{{make([]byte, n), make([]byte, n)}, {make([]byte, n), make([]byte, n)}}
		for _, p := range pairs {
			for i := range p[0] {
				p[0][i] = byte(i)
			}
		}
		for _, way := range []struct {
			name string
			move func(d, s []byte)
		}{{"copy", func(d, s []byte) { copy(d, s) }}, {"moveBytes", moveBytes}} {
			b.Run(fmt.Sprintf("%s/%dKiB", way.name, n>>10), func(b *testing.B) {
				b.SetBytes(int64(n))
				for i := 0; b.Loop(); i++ {
					p := pairs[i&1]
					way.move(p[1], p[0])
				}
			})
		}
	}
}
