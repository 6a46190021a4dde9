//go:build !amd64

package memcopy

import "unsafe"

const haveAssembly = false

func repMovsb(dst, src unsafe.Pointer, n uintptr) { panic("unreachable") }
func vectors(dst, src unsafe.Pointer, n uintptr)  { panic("unreachable") }
