package memcopy

import "unsafe"

// Go's copy switches to non-temporal stores from 1 MiB: on the Intel Xeon
// this library is measured on it moved 3.0 GB/s at 1 MiB and 3.1 at 4 MiB
// (two pairs of buffers copied in turn) where `rep movsb` moved 12.4 and
// the vector loop 6.1 (BENCHMARKS.md, 2026-11-28, fifth section). The
// engine's copies of registered memory and the transports' copies into
// mapped memory go through Move, which copies as the C fast path does:
// `rep movsb` from stringCopyMin on CPUs with ERMS (as glibc's memcpy),
// vectors from VectorCopyMin where LargeByVectors says they pay (the C
// fast path too), Go's copy otherwise.
const (
	stringCopyMin = 1 << 20
	VectorCopyMin = 4 << 20
)

var (
	stringCopies = HasERMS()
	vectorCopies = LargeByVectors()
)

// Move copies src into dst (the shorter of the two lengths, as copy
// does), overlapping or not. A fault in it is a fault in Go code: under
// debug.SetPanicOnFault it panics like one in copy. Under the race
// detector it is copy.
func Move(dst, src []byte) {
	n := min(len(dst), len(src))
	if n < stringCopyMin || !haveAssembly || raceDetector {
		copy(dst, src)
		return
	}
	d, s := unsafe.Pointer(unsafe.SliceData(dst)), unsafe.Pointer(unsafe.SliceData(src))
	if uintptr(d) < uintptr(s)+uintptr(n) && uintptr(s) < uintptr(d)+uintptr(n) {
		copy(dst, src) // overlapping: memmove's direction rules
		return
	}
	switch {
	case n >= VectorCopyMin && vectorCopies:
		vectors(d, s, uintptr(n))
	case stringCopies:
		repMovsb(d, s, uintptr(n))
	default:
		copy(dst, src)
	}
}

// RepMovsb copies len(dst) bytes from src to dst with `rep movsb` where
// the CPU has the instruction (amd64), with Go's copy elsewhere.
func RepMovsb(dst []byte, src unsafe.Pointer) {
	if !haveAssembly {
		copy(dst, unsafe.Slice((*byte)(src), len(dst)))
		return
	}
	if len(dst) > 0 {
		repMovsb(unsafe.Pointer(&dst[0]), src, uintptr(len(dst)))
	}
}
