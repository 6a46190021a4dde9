package ch

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// hasERMS: `rep movsb` is the CPU's fast string copy.
var hasERMS = cpu.X86.HasERMS

// repMovsb copies n bytes from src to dst with `rep movsb`.
//
//go:noescape
func repMovsb(dst, src unsafe.Pointer, n uintptr)

func copyToRing(dst []byte, src unsafe.Pointer) {
	if hasERMS && len(dst) >= movsbMin {
		repMovsb(unsafe.Pointer(&dst[0]), src, uintptr(len(dst)))
		return
	}
	copy(dst, unsafe.Slice((*byte)(src), len(dst)))
}
