package core

import (
	"unsafe"

	"github.com/libacp/libacp/internal/copychoice"
)

// Go's copy switches to non-temporal stores from 1 MiB: on the Intel Xeon
// this library is measured on it moved 3.7 GB/s at 1 MiB and 3.0 at 4 MiB
// (two pairs of buffers copied in turn) where glibc's memcpy, `rep movsb`
// there, moved 12 and 4.5, and the vector loop of internal/copychoice's
// judgement 12 and 5.4 (BENCHMARKS.md, 2026-11-28, fifth section). The
// engine's copies of registered memory and the transports' copies into
// mapped memory go through moveBytes, which copies as the C fast path
// does: `rep movsb` from stringCopyMin on CPUs with ERMS, vectors from
// vectorCopyMin where copychoice says they pay, Go's copy otherwise.
const (
	stringCopyMin = 1 << 20
	vectorCopyMin = 4 << 20 // capi/fastpath.c VECTOR_COPY_MIN
)

var (
	stringCopies = copychoice.HasERMS()
	vectorCopies = copychoice.LargeByVectors()
)

// moveBytes copies src into dst (min of both lengths, as copy does),
// overlapping or not.
func moveBytes(dst, src []byte) {
	n := min(len(dst), len(src))
	if n < stringCopyMin || !haveLargeCopies {
		copy(dst, src)
		return
	}
	d, s := unsafe.Pointer(unsafe.SliceData(dst)), unsafe.Pointer(unsafe.SliceData(src))
	if uintptr(d) < uintptr(s)+uintptr(n) && uintptr(s) < uintptr(d)+uintptr(n) {
		copy(dst, src) // overlapping: memmove's direction rules
		return
	}
	switch {
	case n >= vectorCopyMin && vectorCopies:
		vectorCopy(d, s, uintptr(n))
	case stringCopies:
		repMovsb(d, s, uintptr(n))
	default:
		copy(dst, src)
	}
}
