package core

import (
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"
)

// regionAlign is the span of address bits copied into the GA offset of a
// region's first byte, so that a GA is aligned exactly when the memory
// it names is aligned (atomics can be checked at issue time).
const regionAlign = 64

// Region is one registered range of this process's memory.
type Region struct {
	Base  unsafe.Pointer // first byte
	Size  uint64         // bytes
	Color int
	Seg   int
	// OffBase is the GA offset of Base: the low address bits of Base
	// (see regionAlign).
	OffBase uint64

	users   atomic.Int64 // accesses in progress; unregister waits for 0
	dead    atomic.Bool  // set by unregister; new accesses fail
	faulted atomic.Bool  // an access faulted (read-only, or protected since): see MarkFaulted
}

// MarkFaulted records that an access to the region faulted. Transports
// that let the kernel write into a region (udp's receives in place) stop
// doing so: a fault there costs the datagram, and the guarded copy reports
// it instead.
func (r *Region) MarkFaulted() { r.faulted.Store(true) }

// Faulted reports whether an access to the region ever faulted.
func (r *Region) Faulted() bool { return r.faulted.Load() }

// acquire pins the region for one access. It fails once unregister began.
// Starter memory is never unregistered while operations run (only acp_reset
// clears it, with the job at rest), so it needs no pin: that keeps two
// atomic read-modify-writes per end off the fast path.
func (r *Region) acquire() bool {
	if r.Seg < SegFirstUser {
		return true
	}
	r.users.Add(1)
	if r.dead.Load() {
		r.users.Add(-1)
		return false
	}
	return true
}

// Release ends an access started by RegTable.Acquire.
func (r *Region) Release() {
	if r.Seg >= SegFirstUser {
		r.users.Add(-1)
	}
}

// RegTable is a process's registration table: segment number → region.
// Lookups are lock-free (they happen for every remote access); changes take
// the mutex. Freed segment numbers are reused oldest-first, so a stale GA
// keeps failing for as long as possible before it could alias new memory.
type RegTable struct {
	layout Layout
	rank   atomic.Int64 // logical rank of the owner, for GA checks

	slots []atomic.Pointer[Region]

	mu   sync.Mutex
	free []int // FIFO of free user segments
}

// maxSegments caps the table (8 bytes per slot) whatever the layout allows.
const maxSegments = 4096

// NewRegTable makes an empty table for a process with the given logical rank.
func NewRegTable(l Layout, rank int) *RegTable {
	n := min(l.Segments(), maxSegments)
	t := &RegTable{layout: l, slots: make([]atomic.Pointer[Region], n)}
	t.rank.Store(int64(rank))
	t.free = make([]int, 0, n-SegFirstUser)
	for s := SegFirstUser; s < n; s++ {
		t.free = append(t.free, s)
	}
	return t
}

// SetRank changes the owner's logical rank (acp_reset).
func (t *RegTable) SetRank(rank int) { t.rank.Store(int64(rank)) }

// Capacity is the number of user registrations the table can hold at once.
func (t *RegTable) Capacity() int { return len(t.slots) - SegFirstUser }

// Install puts a region at a fixed segment (the starter regions).
func (t *RegTable) Install(seg int, base unsafe.Pointer, size uint64, color int) *Region {
	r := &Region{Base: base, Size: size, Color: color, Seg: seg, OffBase: uint64(uintptr(base)) % regionAlign}
	t.slots[seg].Store(r)
	return r
}

// Add registers [base, base+size) and returns its region.
func (t *RegTable) Add(base unsafe.Pointer, size uint64, color int) (*Region, error) {
	if base == nil {
		return nil, fmt.Errorf("address is NULL")
	}
	if size == 0 {
		return nil, fmt.Errorf("size is 0")
	}
	if uint64(uintptr(base))+size < uint64(uintptr(base)) {
		return nil, fmt.Errorf("range %p + %d wraps around the address space", base, size)
	}
	offBase := uint64(uintptr(base)) % regionAlign
	if size > t.layout.MaxOffset()-offBase {
		return nil, fmt.Errorf("size %d exceeds the largest region a GA can address in a %d-process job (%d bytes); register smaller pieces",
			size, t.layout.NProcs, t.layout.MaxOffset()-offBase)
	}
	if err := checkMapped(base, size); err != nil {
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.free) == 0 {
		return nil, fmt.Errorf("registration table full (%d live registrations); unregister memory no longer in use", t.Capacity())
	}
	seg := t.free[0]
	t.free = t.free[1:]
	r := &Region{Base: base, Size: size, Color: color, Seg: seg, OffBase: offBase}
	t.slots[seg].Store(r)
	return r, nil
}

// Remove unregisters a user segment. It waits for accesses in progress to
// finish, so once it returns no transport touches the memory again.
func (t *RegTable) Remove(seg int) error {
	if seg < SegFirstUser || seg >= len(t.slots) {
		return fmt.Errorf("segment %d is not a user registration", seg)
	}
	t.mu.Lock()
	r := t.slots[seg].Load()
	if r == nil {
		t.mu.Unlock()
		return fmt.Errorf("segment %d is not registered (unregistered already, or never registered)", seg)
	}
	r.dead.Store(true)
	t.slots[seg].Store(nil)
	t.free = append(t.free, seg)
	t.mu.Unlock()
	for i := 0; r.users.Load() != 0; i++ {
		SpinWait(i)
	}
	return nil
}

// RemoveAll drops every user registration (acp_reset) and returns them.
func (t *RegTable) RemoveAll() []*Region {
	var gone []*Region
	for s := SegFirstUser; s < len(t.slots); s++ {
		if r := t.slots[s].Load(); r != nil && t.Remove(s) == nil {
			gone = append(gone, r)
		}
	}
	t.mu.Lock()
	t.free = t.free[:0]
	for s := SegFirstUser; s < len(t.slots); s++ {
		t.free = append(t.free, s)
	}
	t.mu.Unlock()
	return gone
}

// Lookup returns the live region for a segment, or nil.
func (t *RegTable) Lookup(seg int) *Region {
	if seg < 0 || seg >= len(t.slots) {
		return nil
	}
	return t.slots[seg].Load()
}

// Check validates [ga, ga+n) against the table without pinning it.
func (t *RegTable) Check(ga GA, n uint64) Status {
	_, r, st := t.Acquire(ga, n)
	if r != nil {
		r.Release()
	}
	return st
}

// Acquire resolves [ga, ga+n) to local memory, checking that ga belongs to
// this process and that the whole range lies inside one live registration.
// On success the region is pinned until Release; a zero-length range at the
// end of a region is allowed.
func (t *RegTable) Acquire(ga GA, n uint64) (unsafe.Pointer, *Region, Status) {
	l := t.layout
	if l.Rank(ga) != int(t.rank.Load()) {
		return nil, nil, StatusWrongRank
	}
	r := t.Lookup(l.Seg(ga))
	if r == nil || r.Color != l.Color(ga) {
		return nil, nil, StatusBadSegment
	}
	off := l.Offset(ga)
	if off < r.OffBase || off-r.OffBase > r.Size || n > r.Size-(off-r.OffBase) {
		return nil, nil, StatusOutOfBounds
	}
	if !r.acquire() {
		return nil, nil, StatusBadSegment
	}
	return unsafe.Add(r.Base, off-r.OffBase), r, StatusOK
}

// GAOf returns the GA of ptr inside region r owned by rank.
func (l Layout) GAOf(rank int, r *Region, ptr unsafe.Pointer) GA {
	return l.Encode(rank, r.Color, r.Seg, r.OffBase+uint64(uintptr(ptr)-uintptr(r.Base)))
}
