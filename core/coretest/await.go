package coretest

import (
	"sync/atomic"
	"testing"
	"time"
	"unsafe"
)

// AwaitByte polls mem[off] (which another process's writes may change at
// any moment, as a passive target's memory does) until it holds want, and
// fails t if that takes longer than within. off must be a multiple of 4.
func AwaitByte(t testing.TB, mem []byte, off int, want byte, within time.Duration) {
	t.Helper()
	if off%4 != 0 || off+4 > len(mem) {
		t.Fatalf("AwaitByte: offset %d is not a word of a %d-byte region", off, len(mem))
	}
	word := (*uint32)(unsafe.Pointer(&mem[off]))
	at := func() byte { return byte(atomic.LoadUint32(word)) } // little-endian: the byte at off
	if !WaitFor(within, func() bool { return at() == want }) {
		t.Fatalf("byte %d is %d, not %d, after %v", off, at(), want, within)
	}
}

// WaitFor polls cond until it holds and reports whether it did within the
// given time: for a test's rank goroutines, which report an error of their
// own rather than fail t from another goroutine.
func WaitFor(within time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(100 * time.Microsecond)
	}
	return true
}
