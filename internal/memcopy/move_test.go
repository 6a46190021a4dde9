package memcopy

import (
	"fmt"
	"testing"
	"unsafe"

	"github.com/libacp/libacp/internal/memcopy/memcopytest"
)

// Move and the copies under it move every byte, whichever way Move takes
// (Go's copy, `rep movsb` from 1 MiB, vectors from 4 MiB).
func TestCopiesMoveEveryByte(t *testing.T) {
	ways := map[string]func(d, s []byte){
		"Move":     Move,
		"RepMovsb": func(d, s []byte) { RepMovsb(d, unsafe.Pointer(unsafe.SliceData(s))) },
	}
	if haveAssembly && vectorCopies {
		ways["vectors"] = func(d, s []byte) {
			vectors(unsafe.Pointer(unsafe.SliceData(d)), unsafe.Pointer(unsafe.SliceData(s)), uintptr(len(s)))
		}
	}
	memcopytest.CheckCopies(t, ways)
	t.Logf("ways tested: %d (rep movsb from 1 MiB: %v, vectors from 4 MiB: %v)", len(ways), haveAssembly && stringCopies, haveAssembly && vectorCopies)
}

// Overlapping ranges keep copy's meaning at every size.
func TestMoveOverlapping(t *testing.T) { memcopytest.CheckOverlapping(t, Move) }

// BenchmarkLargeCopies: Go's copy against Move, two pairs of buffers
// copied in turn (the working set of a pingpong of that size between two
// processes). go test ./internal/memcopy -run - -bench LargeCopies
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
		}{{"copy", func(d, s []byte) { copy(d, s) }}, {"Move", Move}} {
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
