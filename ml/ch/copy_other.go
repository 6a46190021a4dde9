//go:build !amd64

package ch

import "unsafe"

const ringByMovsb = false

func copyToRing(dst []byte, src unsafe.Pointer) {
	copy(dst, unsafe.Slice((*byte)(src), len(dst)))
}
