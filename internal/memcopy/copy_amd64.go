package memcopy

import "unsafe"

const haveAssembly = true

// repMovsb copies n bytes from src to dst with `rep movsb`.
//
//go:noescape
func repMovsb(dst, src unsafe.Pointer, n uintptr)

// vectors copies n bytes from src to dst with 32-byte AVX2 loads and
// stores, the destination aligned first (the caller checked AVX2).
//
//go:noescape
func vectors(dst, src unsafe.Pointer, n uintptr)
