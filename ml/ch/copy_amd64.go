package ch

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// repMovsb copies n bytes from src to dst with `rep movsb`.
//
//go:noescape
func repMovsb(dst, src unsafe.Pointer, n uintptr)

// copyToRing copies a payload into a ring written in place. The receiver
// read those lines last; vector stores (Go's copy) first take each one
// back from its CPU, where `rep movsb` on a CPU with ERMS writes them whole
// (capi/chfast.c does the same for the messages C sends).
func copyToRing(dst []byte, src unsafe.Pointer) {
	if cpu.X86.HasERMS && len(dst) >= 512 {
		repMovsb(unsafe.Pointer(&dst[0]), src, uintptr(len(dst)))
		return
	}
	copy(dst, unsafe.Slice((*byte)(src), len(dst)))
}
