package ch

import (
	"unsafe"

	"github.com/libacp/libacp/internal/copychoice"
)

// ringByMovsb: `rep movsb` is this CPU's fastest copy into lines another
// CPU read last (internal/copychoice).
var ringByMovsb = copychoice.RingByMovsb()

// repMovsb copies n bytes from src to dst with `rep movsb`.
//
//go:noescape
func repMovsb(dst, src unsafe.Pointer, n uintptr)

func copyToRing(dst []byte, src unsafe.Pointer) {
	if ringByMovsb && len(dst) >= movsbMin {
		repMovsb(unsafe.Pointer(&dst[0]), src, uintptr(len(dst)))
		return
	}
	copy(dst, unsafe.Slice((*byte)(src), len(dst)))
}
