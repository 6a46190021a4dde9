// Package memwatch tells when ranges of this process's memory stop being
// the memory they were: unmapped (munmap, an mmap over them, a shrinking
// brk), moved (mremap) or dropped (madvise MADV_DONTNEED, MADV_REMOVE,
// MADV_FREE). A cache of adapter registrations needs that: a registration
// holds the physical pages it was made on, and memory that the program
// freed and mapped again at the same address is other pages.
//
// It uses a userfaultfd registered in write-protect mode on each watched
// range. Nothing is ever write-protected, so no page fault is reported or
// held up; the kernel only reports the events above, and the thread that
// caused one waits until the event is read. A thread of the package's own
// (memwatch.c, not one of Go's) reads them into a ring as they come, and
// Take reads what is queued besides: a Take that begins after a munmap
// returned reports it.
//
// Watch only memory outside Go's heap: the runtime's own madvise of its
// heap would be reported too, and would wait for the reader meanwhile.
// Where userfaultfd is refused (seccomp, an old kernel, a sysctl) New
// fails and the owner does without.
package memwatch

/*
#cgo CFLAGS: -O2 -Wall
#cgo LDFLAGS: -lpthread
#include <stdlib.h>
#include "memwatch.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Watcher reports when watched memory goes.
type Watcher struct {
	mu     sync.Mutex // Close against Take
	c      *C.struct_memwatch
	closed bool
}

// ErrUnavailable wraps the reason userfaultfd cannot be used here.
var ErrUnavailable = errors.New("userfaultfd is not available")

// New opens a watcher and starts its reader thread.
func New() (*Watcher, error) {
	var api C.int
	fd := C.memwatch_open(&api)
	if fd < 0 {
		if api != 0 {
			return nil, fmt.Errorf("%w: UFFDIO_API with unmap, remove and remap events: %v", ErrUnavailable, syscall.Errno(-fd))
		}
		return nil, fmt.Errorf("%w: userfaultfd(2): %v", ErrUnavailable, syscall.Errno(-fd))
	}
	// The reader thread uses it: C's memory, not Go's.
	c := (*C.struct_memwatch)(C.calloc(1, C.size_t(unsafe.Sizeof(C.struct_memwatch{}))))
	c.uffd = fd
	// Started from a goroutine of its own: the caller may be the
	// application's thread, pinned to one CPU (acprun --acp-bind thread),
	// whose mask a new thread inherits; the runtime's other threads keep
	// every CPU the process has (core.PinCallingThread).
	started := make(chan C.int)
	go func() { started <- C.memwatch_start(c) }()
	if rc := <-started; rc != 0 {
		unix.Close(int(fd))
		C.free(unsafe.Pointer(c))
		return nil, fmt.Errorf("%w: cannot start its reader thread: %v", ErrUnavailable, syscall.Errno(rc))
	}
	return &Watcher{c: c}, nil
}

// pageSize is this system's page size: watches cover whole pages.
var pageSize = uintptr(unix.Getpagesize())

// PageSpan is [p, p+n) widened to whole pages: what a watch covers.
func PageSpan(p uintptr, n uint64) (first, end uintptr) {
	return p &^ (pageSize - 1), (p + uintptr(n) + pageSize - 1) &^ (pageSize - 1)
}

// pages is the kernel's range for [p, p+n): start and length.
func pages(p uintptr, n uint64) (C.uint64_t, C.uint64_t) {
	s, e := PageSpan(p, n)
	return C.uint64_t(s), C.uint64_t(e - s)
}

// Watch starts reporting the pages of [p, p+n) (addresses of this
// process's memory). It fails for memory the
// kernel cannot watch this way (file mappings other than shared memory,
// on older kernels shared memory too; memory another userfaultfd
// watches), which the owner then must not rely on.
func (w *Watcher) Watch(p uintptr, n uint64) error {
	if n == 0 || p == 0 {
		return errors.New("empty range")
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return errors.New("the watcher is closed")
	}
	start, length := pages(p, n)
	if rc := C.memwatch_watch(w.c, start, length); rc != 0 {
		return fmt.Errorf("UFFDIO_REGISTER of %#x + %d bytes: %v", uint64(start), uint64(length), syscall.Errno(rc))
	}
	return nil
}

// Unwatch stops reporting the pages of [p, p+n) (they may be gone).
func (w *Watcher) Unwatch(p uintptr, n uint64) {
	if n == 0 || p == 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return
	}
	start, length := pages(p, n)
	C.memwatch_unwatch(w.c, start, length)
}

// Gone is a range [Start, End) that is not the memory it was.
type Gone struct{ Start, End uintptr }

// Everything is the range Take reports when events were lost (more than
// the ring holds came before a Take): whatever was watched counts as gone.
var Everything = Gone{0, ^uintptr(0)}

// Take returns the ranges reported since the last Take, including every
// event of a munmap (or madvise, mremap) that returned before Take began.
// They may cover more than was watched, or memory never watched.
func (w *Watcher) Take() []Gone {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	var out []Gone
	var buf [64][2]C.uint64_t
	for {
		n := int(C.memwatch_take(w.c, &buf[0], C.int(len(buf))))
		if n < 0 {
			return []Gone{Everything}
		}
		for _, r := range buf[:n] {
			out = append(out, Gone{uintptr(r[0]), uintptr(r[1])})
		}
		if n < len(buf) {
			return out
		}
	}
}

// Close stops the reader and drops every watch (the kernel drops them
// with the descriptor).
func (w *Watcher) Close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return
	}
	w.closed = true
	C.memwatch_stop(w.c)
	unix.Close(int(w.c.uffd))
	C.free(unsafe.Pointer(w.c))
}
