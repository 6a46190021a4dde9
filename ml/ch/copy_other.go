//go:build !amd64

package ch

import "unsafe"

// copyToRing copies a payload into a ring written in place.
func copyToRing(dst []byte, src unsafe.Pointer) {
	copy(dst, unsafe.Slice((*byte)(src), len(dst)))
}
