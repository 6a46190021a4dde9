//go:build !amd64

package core

import "unsafe"

const haveLargeCopies = false

func repMovsb(dst, src unsafe.Pointer, n uintptr)   { panic("unreachable") }
func vectorCopy(dst, src unsafe.Pointer, n uintptr) { panic("unreachable") }
