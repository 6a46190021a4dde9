package core

import (
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"unsafe"

	"github.com/libacp/libacp/internal/memcopy"
)

// Registered memory is the program's. It may be read-only (a constant
// table, a file mapped PROT_READ, exposed for peers to read), or stop being
// accessible after its registration (mprotect, or munmap without
// acp_unregister_memory). The copies and atomics the library performs there
// on behalf of a peer run on this process's threads: a fault must fail that
// access, not kill the process, and with it the job, for the peer's
// mistake. The guard is the runtime's panic-on-fault for the calling
// goroutine, recovered here (the runtime turns a fault in Go code into a
// panic only where that flag is set).
//
// Starter memory is the library's own, readable and writable while the
// job runs: accesses that touch only starter memory take the unguarded
// paths (a guard costs a deferred call, some nanoseconds).

// GuardedCopy copies src into dst as copy does (with memcopy.Move) and
// reports false when either faulted (some of dst may then have been
// written: the pages before the fault).
func GuardedCopy(dst, src []byte) (ok bool) {
	defer recoverFault(debug.SetPanicOnFault(true), &ok)
	memcopy.Move(dst, src)
	return true
}

// GuardedAtomic is ApplyAtomic that reports false, the word unchanged,
// when the word cannot be read and written.
func GuardedAtomic(op AtomicOp, p unsafe.Pointer, a, b uint64) (old uint64, ok bool) {
	defer recoverFault(debug.SetPanicOnFault(true), &ok)
	return ApplyAtomic(op, p, a, b), true
}

// Writable reports whether the word of width bytes at p can be written,
// without changing it: an atomic or with 0 needs write access, and stays
// atomic with whatever else writes the word meanwhile.
func Writable(p unsafe.Pointer, width uint64) (ok bool) {
	defer recoverFault(debug.SetPanicOnFault(true), &ok)
	if width == 4 {
		atomic.OrUint32((*uint32)(p), 0)
	} else {
		atomic.OrUint64((*uint64)(p), 0)
	}
	return true
}

// Readable reports whether the n bytes at p can be read: one byte of
// every page they touch is (the kernel reads what a system call sends
// from that memory; a fault there is EFAULT, not a signal, but at a point
// where the operation is hard to fail alone).
func Readable(p unsafe.Pointer, n uint64) (ok bool) {
	if n == 0 {
		return true
	}
	defer recoverFault(debug.SetPanicOnFault(true), &ok)
	const page = 4096 // the smallest page Linux uses: a probe per page at least
	var sink byte
	for off := uint64(0); off < n; off += page - (uint64(uintptr(p))+off)%page {
		sink |= *(*byte)(unsafe.Add(p, off))
	}
	sink |= *(*byte)(unsafe.Add(p, n-1))
	readSink.Store(uint32(sink))
	return true
}

// readSink keeps Readable's loads from being optimised away.
var readSink atomic.Uint32

// guardedStore is storeWord reporting a fault as false.
func guardedStore(p unsafe.Pointer, width, v uint64) (ok bool) {
	defer recoverFault(debug.SetPanicOnFault(true), &ok)
	storeWord(p, width, v)
	return true
}

// recoverFault ends a guarded access: it restores the goroutine's earlier
// panic-on-fault setting and turns a memory fault into ok = false. Any
// other panic goes on.
func recoverFault(was bool, ok *bool) {
	debug.SetPanicOnFault(was)
	if r := recover(); r != nil {
		// A fault is a runtime error (with the address, or without it for
		// the first page); copies and atomics raise no other kind.
		if _, fault := r.(runtime.Error); !fault {
			panic(r)
		}
		*ok = false
	}
}

// UserMemory reports whether r is a registration of the program (nil, a
// peer's memory mapped here, and starter memory are the library's).
func (r *Region) UserMemory() bool { return r != nil && r.Seg >= SegFirstUser }

// atomicIn applies op to the word at p of region r (nil: a peer's memory
// mapped here), guarded when r is the program's memory; false: it faulted,
// the word unchanged.
func atomicIn(r *Region, op AtomicOp, p unsafe.Pointer, a, b uint64) (uint64, bool) {
	if r.UserMemory() {
		return GuardedAtomic(op, p, a, b)
	}
	return ApplyAtomic(op, p, a, b), true
}

// storeIn writes an atomic's old value at p of region r, guarded when r is
// the program's memory; false: it faulted.
func storeIn(r *Region, p unsafe.Pointer, width, v uint64) bool {
	if r.UserMemory() {
		return guardedStore(p, width, v)
	}
	storeWord(p, width, v)
	return true
}

// writableIn reports whether the word at p of region r can take an
// atomic's old value: the library's memory always can, the program's is
// probed (Writable).
func writableIn(r *Region, p unsafe.Pointer, width uint64) bool {
	return !r.UserMemory() || Writable(p, width)
}

// CopyInto copies src into dst, a range of region r (a transport writing a
// peer's data there), guarded when r is the program's memory; false: it
// faulted, and r is marked (MarkFaulted).
func (r *Region) CopyInto(dst, src []byte) bool {
	if !r.UserMemory() {
		copy(dst, src)
		return true
	}
	if GuardedCopy(dst, src) {
		return true
	}
	r.MarkFaulted()
	return false
}

// copyRegions copies n bytes from s to d, guarded when either end is the
// program's memory.
func copyRegions(d, s unsafe.Pointer, n uint64, dr, sr *Region) bool {
	if dr.UserMemory() || sr.UserMemory() {
		return GuardedCopy(bytesAt(d, n), bytesAt(s, n))
	}
	memcopy.Move(bytesAt(d, n), bytesAt(s, n))
	return true
}
