package shm

import (
	"runtime"
	"sync/atomic"
	"unsafe"

	"github.com/libacp/libacp/core"
)

// mirror is a copy of a process's registration table in shared memory, so
// that a peer on the same host can check an access and find the owner's
// address without asking it, then copy with process_vm_readv/writev.
//
// Entry (32 bytes): state (u64) | base | size | colour<<32 | offset base.
// state's top bit says the slot is free (or being unregistered); the rest
// counts peers copying right now. Unregistering sets the bit, then waits
// for the count to drain, so once it returns no peer touches the memory.
type mirror struct {
	mem   []byte
	slots int
}

const (
	mirrorEntrySize = 32
	slotFree        = uint64(1) << 63
)

func newMirror(mem []byte, slots int) mirror { return mirror{mem: mem, slots: slots} }

func (m mirror) state(seg int) *uint64 {
	return (*uint64)(unsafe.Pointer(&m.mem[seg*mirrorEntrySize]))
}

func (m mirror) word(seg, i int) *uint64 {
	return (*uint64)(unsafe.Pointer(&m.mem[seg*mirrorEntrySize+8*i]))
}

func (m mirror) clearAll() {
	for s := 0; s < m.slots; s++ {
		atomic.StoreUint64(m.state(s), slotFree)
	}
}

// publish makes a region visible to peers (owner side).
func (m mirror) publish(r *core.Region) {
	if r.Seg >= m.slots {
		return
	}
	atomic.StoreUint64(m.word(r.Seg, 1), uint64(uintptr(r.Base)))
	atomic.StoreUint64(m.word(r.Seg, 2), r.Size)
	atomic.StoreUint64(m.word(r.Seg, 3), uint64(r.Color)<<32|r.OffBase)
	atomic.StoreUint64(m.state(r.Seg), 0)
}

// withdraw hides a region and waits until no peer copies to or from it.
func (m mirror) withdraw(seg int) {
	if seg >= m.slots {
		return
	}
	st := m.state(seg)
	for {
		old := atomic.LoadUint64(st)
		if atomic.CompareAndSwapUint64(st, old, old|slotFree) {
			break
		}
	}
	for i := 0; atomic.LoadUint64(st)&^slotFree != 0; i++ {
		if i > 100 {
			runtime.Gosched()
		}
	}
}

// acquire pins a live region of the owner for one copy (peer side) and
// returns the owner's address of [ga, ga+n).
func (m mirror) acquire(l core.Layout, ga core.GA, n uint64) (uintptr, core.Status) {
	seg := l.Seg(ga)
	if seg >= m.slots {
		return 0, core.StatusBadSegment
	}
	st := m.state(seg)
	for {
		old := atomic.LoadUint64(st)
		if old&slotFree != 0 {
			return 0, core.StatusBadSegment
		}
		if atomic.CompareAndSwapUint64(st, old, old+1) {
			break
		}
	}
	base := uintptr(atomic.LoadUint64(m.word(seg, 1)))
	size := atomic.LoadUint64(m.word(seg, 2))
	co := atomic.LoadUint64(m.word(seg, 3))
	color, offBase := int(co>>32), co&0xffffffff
	off := l.Offset(ga)
	switch {
	case color != l.Color(ga):
		m.release(seg)
		return 0, core.StatusBadSegment
	case off < offBase || off-offBase > size || n > size-(off-offBase):
		m.release(seg)
		return 0, core.StatusOutOfBounds
	}
	return base + uintptr(off-offBase), core.StatusOK
}

func (m mirror) release(seg int) { atomic.AddUint64(m.state(seg), ^uint64(0)) }

// RegisterRegion implements core.Registrar.
func (e *endpoint) RegisterRegion(r *core.Region) error {
	if e.seg != nil {
		e.mirror.publish(r)
	}
	return nil
}

// UnregisterRegion implements core.Registrar.
func (e *endpoint) UnregisterRegion(r *core.Region) {
	if e.seg != nil {
		e.mirror.withdraw(r.Seg)
	}
}
