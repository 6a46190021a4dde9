package ib

import (
	"fmt"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/libacp/libacp/internal/memwatch"
)

// regCache keeps the adapter registrations of unregistered user regions
// and gives them to a later registration of the same range: a channel
// registers each large message's buffer at both ends, and a registration
// and unregistration of 1 MiB took 0.15-1.1 ms in a Soft-RoCE guest, 23-38
// us kept (BENCHMARKS.md, 2026-11-29, seventh section).
//
// A registration holds the physical pages it was made on; memory that the
// program unmaps and maps again at the same address is other pages, which
// a kept registration would not reach. So every cached range is watched
// (memwatch): unmapped, moved or dropped, its registration goes. Only in a
// C program (core.Config.ForeignMemory), where no registered memory is
// Go's heap, and only where userfaultfd is allowed; otherwise nothing is
// kept. Keys: a reused registration keeps its rkey, but a new registration
// has a new serial, and every peer that was given the old one's key was
// made to forget it before the old one was unregistered (revocation), so
// only the new key reaches the memory again.
type regCache struct {
	mu       sync.Mutex
	w        *memwatch.Watcher // nil: no cache
	max      int               // idle registrations kept
	maxBytes uint64
	idle     []*idleReg // oldest first
	bytes    uint64
	live     map[*localRegion]struct{} // watched registrations in use: an event makes them stale
	closed   bool
	// counts for the state report
	hits, parked, dropped, evicted, unwatched, stale uint64
}

// idleReg is the adapter registration of an unregistered region.
type idleReg struct {
	base uintptr
	size uint64
	mrs  []*vmr
}

// init opens the cache with room for max registrations (0: none).
func (c *regCache) init(max int, foreign bool, logf func(string, ...any)) {
	c.live = map[*localRegion]struct{}{}
	if max == 0 || !foreign {
		return
	}
	w, err := memwatch.New()
	if err != nil {
		logf("ib: registrations are not reused (--acp-ib-reg-cache): %v", err)
		return
	}
	c.w, c.max, c.maxBytes = w, max, ^uint64(0)
	// Kept registrations pin memory that counts against the locked-memory
	// limit: keep at most half of it.
	var lim unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_MEMLOCK, &lim) == nil && lim.Cur != unix.RLIM_INFINITY {
		c.maxBytes = lim.Cur / 2
	}
}

func (c *regCache) on() bool { return c.w != nil }

// take gives lr the registration kept for exactly its range, if there is
// one, and counts lr as a watched region in use (it still is watched).
func (c *regCache) take(lr *localRegion) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.apply(c.w.Take()) // what was unmapped before this call counts
	for i := len(c.idle) - 1; i >= 0; i-- {
		x := c.idle[i]
		if x.base == lr.base && x.size == lr.size {
			c.idle = append(c.idle[:i], c.idle[i+1:]...)
			c.bytes -= x.size
			c.hits++
			lr.mrs, lr.watched = x.mrs, true
			c.live[lr] = struct{}{}
			return true
		}
	}
	return false
}

// watch starts watching the memory of lr, a region about to be
// registered, and counts it as a watched region in use, before its
// registration takes the pages: whatever happens to the memory from now
// on makes it stale. False where it cannot be watched (it is then never
// kept). Under the lock, so that no unwatch of a neighbour that shares
// a page with it comes between the two.
func (c *regCache) watch(lr *localRegion, logf func(string, ...any)) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	if err := c.w.Watch(lr.base, lr.size); err != nil {
		logf("ib: the registration of %#x + %d bytes will not be kept for reuse: %v", lr.base, lr.size, err)
		c.unwatched++
		return false
	}
	lr.watched = true
	c.live[lr] = struct{}{}
	return true
}

// unwatch stops watching [base, base+size) unless a kept or watched
// registration shares one of its pages. Locked. A watch splits the
// memory's mapping at its pages; left behind, the splits of many ranges
// would add up.
func (c *regCache) unwatch(base uintptr, size uint64) {
	first, end := memwatch.PageSpan(base, size)
	shares := func(b uintptr, n uint64) bool {
		f, e := memwatch.PageSpan(b, n)
		return f < end && first < e
	}
	for _, x := range c.idle {
		if shares(x.base, x.size) {
			return
		}
	}
	for lr := range c.live {
		if shares(lr.base, lr.size) {
			return
		}
	}
	c.w.Unwatch(base, size)
}

// park keeps the registration of the unregistered watched region lr,
// unless its memory went meanwhile; false: deregister it. Registrations
// pushed out by it are deregistered here.
func (c *regCache) park(lr *localRegion) bool {
	c.mu.Lock()
	c.apply(c.w.Take())
	delete(c.live, lr)
	// A registration for reads only (read-only memory) is never kept: a
	// later registration of the range may expect write access.
	if c.closed || lr.stale || lr.readOnly || lr.size > c.maxBytes {
		if lr.stale {
			c.stale++
		}
		if !c.closed {
			c.unwatch(lr.base, lr.size)
		}
		c.mu.Unlock()
		return false
	}
	c.idle = append(c.idle, &idleReg{base: lr.base, size: lr.size, mrs: lr.mrs})
	c.bytes += lr.size
	c.parked++
	var out []*idleReg
	for len(c.idle) > c.max || c.bytes > c.maxBytes {
		out = append(out, c.idle[0])
		c.bytes -= c.idle[0].size
		c.idle = c.idle[1:]
		c.evicted++
	}
	for _, x := range out {
		c.unwatch(x.base, x.size)
	}
	c.mu.Unlock()
	for _, x := range out {
		deregAll(x.mrs)
	}
	return true
}

// reap lets go of kept registrations whose memory went, without waiting
// for the next registration: their pages stay pinned until then, and a
// program that freed a large buffer expects the memory back. The progress
// goroutine calls it with its timers.
func (c *regCache) reap() {
	if !c.on() {
		return
	}
	c.mu.Lock()
	if !c.closed {
		c.apply(c.w.Take())
	}
	c.mu.Unlock()
}

// forget drops a watched region whose registration failed.
func (c *regCache) forget(lr *localRegion) {
	c.mu.Lock()
	delete(c.live, lr)
	if !c.closed {
		c.unwatch(lr.base, lr.size)
	}
	c.mu.Unlock()
}

// apply lets go of what the memory watch reported gone: kept
// registrations of it are deregistered, registrations in use become stale
// (never kept). Locked.
func (c *regCache) apply(gone []memwatch.Gone) {
	for _, g := range gone {
		overlaps := func(base uintptr, size uint64) bool { return base < g.End && g.Start < base+uintptr(size) }
		kept := c.idle[:0]
		var dropped []*idleReg
		for _, x := range c.idle {
			if overlaps(x.base, x.size) {
				deregAll(x.mrs)
				c.bytes -= x.size
				c.dropped++
				dropped = append(dropped, x)
				continue
			}
			kept = append(kept, x)
		}
		clear(c.idle[len(kept):])
		c.idle = kept
		for _, x := range dropped {
			c.unwatch(x.base, x.size) // pages still mapped (dropped, not unmapped) stay watched otherwise
		}
		for lr := range c.live {
			if overlaps(lr.base, lr.size) {
				lr.stale = true
			}
		}
	}
}

// flush deregisters every kept registration (a registration failed for
// want of lockable memory, or the endpoint closes).
func (c *regCache) flush() (n int) {
	if !c.on() {
		return 0
	}
	c.mu.Lock()
	idle := c.idle
	c.idle, c.bytes = nil, 0
	if !c.closed {
		// As with every range let go: its watch would split the mapping
		// for nothing (close ends every watch at once).
		for _, x := range idle {
			c.unwatch(x.base, x.size)
		}
	}
	c.mu.Unlock()
	for _, x := range idle {
		deregAll(x.mrs)
	}
	return len(idle)
}

// close stops watching and deregisters what is kept.
func (c *regCache) close() {
	if !c.on() {
		return
	}
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.flush()
	c.w.Close()
}

// summary is the cache's line of the state report.
func (c *regCache) summary() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return fmt.Sprintf("registrations kept for reuse: %d (%d bytes) of at most %d; %d reused, %d kept, %d let go as their memory went, %d pushed out; %d not kept as their memory went while registered, %d not watchable",
		len(c.idle), c.bytes, c.max, c.hits, c.parked, c.dropped, c.evicted, c.stale, c.unwatched)
}

func deregAll(mrs []*vmr) {
	for _, mr := range mrs {
		_ = deregMR(mr)
	}
}
