package core

import (
	"fmt"
	"slices"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/libacp/libacp/internal/raceedge"
)

// The barrier is a dissemination barrier made of one-sided writes: in
// round k every process writes the barrier's epoch into slot k of the
// engine area of process (p + 2^k) mod N, then waits until its own slot k
// holds that epoch (or a later one), so it takes ceil(log2 N) rounds and
// has no root. Between processes of one host the write is a plain store
// into memory mapped from the peer; elsewhere it is a transport put.
//
// Epochs only grow, so a slot that already holds a later epoch (a faster
// peer entered the next barrier) satisfies the wait: that peer could not
// have left this barrier without our earlier rounds, and its write for
// this epoch came before.

// Within a host whose processes map each other's memory the barrier is
// hierarchical: every process adds one to a counter of the host's leader
// (its lowest process) and waits for the leader's release word. On the
// only host the process whose arrival completes the count releases; with
// several hosts the leader waits for the count, runs the dissemination
// barrier with the other hosts' leaders, and releases. A process then only
// has to run once to arrive and once to leave, and nobody has to run after
// the last arrival before the others may leave, which matters when a host
// has more processes than CPUs.

// engineAreaSize is the size of every process's engine area (SegEngine).
const engineAreaSize = 4096

// Engine area layout: dissemination slots, then the leader's words and the
// hand-off word (HandoffGA), each on a cache line of its own.
const (
	areaArrive  = 8 * maxRounds     // leader: arrivals of the host's processes
	areaRelease = 8*maxRounds + 64  // leader: last barrier epoch released
	areaHandoff = 8*maxRounds + 128 // a value the libraries above hand to the other ranks
)

// maxRounds bounds the rounds of a barrier (2^64 processes).
const maxRounds = 64

type barrier struct {
	// The lock (one barrier at a time per process) and the epoch live in
	// the fast state, so that the C fast path and Go take turns.
	f *fastState

	// Hierarchical plan (hier false: a flat dissemination over everybody).
	hier    bool
	leader  int            // physical index of our host's leader
	locals  int            // processes on our host
	leaders []int          // every host's leader, by physical index
	arrive  unsafe.Pointer // the leader's arrival counter (mapped here, or ours)
	release unsafe.Pointer // the leader's release word (mapped here, or ours)
	// words are the sources of puts to peers that are not mapped; a word
	// is rewritten only after its previous put completed (pending).
	words [maxRounds]uint64
}

// pending counts the barrier's puts through a transport not yet complete.
// It lives in the fast state: the C side runs no barrier while one is
// pending, for a put still queued in a transport's Go side could land
// after a later barrier's write to the same slot and take its epoch back.
func (b *barrier) pending() *atomic.Int64 {
	return (*atomic.Int64)(unsafe.Pointer(&b.f.mem[fastBarPending]))
}

// lock takes the barrier's lock, shared with the C side. It may be held
// for a whole barrier, so waiters let other goroutines and threads run.
func (b *barrier) lock() {
	w := (*int32)(unsafe.Pointer(&b.f.mem[fastBarLock]))
	for i := 0; !atomic.CompareAndSwapInt32(w, 0, 1); i++ {
		if i > 64 {
			Yield()
		}
	}
	raceedge.Acquire()
}

func (b *barrier) unlock() {
	raceedge.Release()
	atomic.StoreInt32((*int32)(unsafe.Pointer(&b.f.mem[fastBarLock])), 0)
}

func (b *barrier) epoch() *atomic.Uint64 { return b.f.u64(fastBarEpoch) }

// barrierPut completes one barrier write sent through a transport.
type barrierPut struct{ b *barrier }

func (p barrierPut) OnComplete(_ uint64, err error) { p.b.pending().Add(-1) }

// slot is where round r's arrivals land in our own engine area.
func (e *Engine) slot(r int) *uint64 {
	return (*uint64)(unsafe.Pointer(&e.starters[SegEngine][8*r]))
}

// plan decides, collectively at start-up, between the hierarchical and the
// flat barrier: hierarchical when every process maps the engine area of its
// host's leader (all must agree, so the answers are exchanged).
func (b *barrier) plan(e *Engine, book AddressBook) error {
	node := func(p int) string { return string(book.At(p)[10 : 10+nodeIDSize]) }
	first := map[string]int{}
	b.leaders = b.leaders[:0]
	for p := 0; p < e.nprocs; p++ {
		if _, seen := first[node(p)]; !seen {
			first[node(p)] = p
			b.leaders = append(b.leaders, p)
		}
		if node(p) == node(e.phys) {
			b.locals++
		}
	}
	b.leader = first[node(e.phys)]
	ok := byte(1)
	b.arrive = unsafe.Pointer(&e.starters[SegEngine][areaArrive])
	b.release = unsafe.Pointer(&e.starters[SegEngine][areaRelease])
	if b.leader != e.phys {
		area := e.layout.Encode(e.rankOfPeer(b.leader), 0, SegEngine, 0)
		b.arrive = e.mapped(b.leader, area+areaArrive, 8)
		b.release = e.mapped(b.leader, area+areaRelease, 8)
		if b.arrive == nil || b.release == nil {
			ok = 0
		}
	}
	// On one host with a CPU for every process a flat dissemination whose
	// rounds are plain stores into mapped slots is quickest: each round is
	// one cache line from one process to another, all in parallel, where
	// the hierarchical barrier passes the leader's lines from each process
	// to the next. With more processes than CPUs the hierarchical barrier,
	// which needs every process to run only once to arrive, wins.
	flat := byte(0)
	if len(b.leaders) == 1 && e.spin > 0 {
		flat = 1
		for round := 0; ; round++ {
			to, ga, ok := e.roundSlot(nil, e.phys, round)
			if !ok {
				break
			}
			if e.mapped(to, ga, 8) == nil {
				flat = 0
				break
			}
		}
	}
	all, err := e.ex.AllGather([]byte{ok, flat})
	if err != nil {
		return fmt.Errorf("start-up exchange failed: %v", err)
	}
	b.hier = true
	allFlat := true
	for p := 0; p < e.nprocs; p++ {
		b.hier = b.hier && all[2*p] == 1
		allFlat = allFlat && all[2*p+1] == 1
	}
	if allFlat {
		b.hier = false
	}
	e.Logf(2, "barrier: %s (%d host(s), %d process(es) on this one)", map[bool]string{true: "hierarchical", false: "dissemination over all processes"}[b.hier], len(b.leaders), b.locals)
	b.publish(e)
	return nil
}

// publish tells the C fast path whether it may run the barrier, and how:
// when our part of it is stores into memory mapped here, writes through a
// transport's C code (core/fastremote.h's signal), and waits in our own
// memory. That is a flat dissemination over everybody, an arrival and a
// wait at our host's leader, or, for the leader of one of several hosts,
// the arrivals, the dissemination among the leaders and the release.
func (b *barrier) publish(e *Engine) {
	f := b.f
	f.u32(fastBarOn).Store(0)
	f.u64(fastBarSpin).Store(uint64(e.spin)) // channel waits in C use it too
	f.u64(fastBarYield).Store(uint64(yieldPhase / time.Nanosecond))
	f.u32(fastBarRounds).Store(0)
	f.u32(fastBarGAMask).Store(0)
	f.u32(fastBarLead).Store(0)
	if e.nprocs == 1 {
		return
	}
	if !b.hier {
		if b.publishRounds(e, nil) {
			f.u32(fastBarOn).Store(1)
		}
		return
	}
	if b.leaderWork(e) {
		if !b.publishRounds(e, b.leaders) {
			return
		}
		f.u32(fastBarLead).Store(1)
	}
	f.u32(fastBarLocals).Store(uint32(b.locals))
	last := uint32(0)
	if len(b.leaders) == 1 {
		last = 1
	}
	f.u32(fastBarLast).Store(last)
	f.u64(fastBarArrive).Store(uint64(uintptr(b.arrive)))
	f.u64(fastBarRelease).Store(uint64(uintptr(b.release)))
	f.u32(fastBarOn).Store(1)
}

// publishRounds describes the rounds of disseminate(among) to the C side:
// for each, the slot we write, mapped here or, where not, its GA, which
// the transport's C code writes (a bit of fastBarGAMask). False when there
// are more rounds than the fast state holds.
func (b *barrier) publishRounds(e *Engine, among []int) bool {
	f := b.f
	mask, rounds, me := uint32(0), 0, e.position(among)
	for ; ; rounds++ {
		to, ga, ok := e.roundSlot(among, me, rounds)
		if !ok {
			break
		}
		if rounds == fastBarMaxRounds {
			return false
		}
		word := uint64(ga)
		if p := e.mapped(to, ga, 8); p != nil {
			word = uint64(uintptr(p))
		} else {
			mask |= 1 << rounds
		}
		f.u64(fastBarPeers + 8*rounds).Store(word)
	}
	f.u64(fastBarMine).Store(uint64(uintptr(unsafe.Pointer(e.slot(0)))))
	f.u32(fastBarGAMask).Store(mask)
	f.u32(fastBarRounds).Store(uint32(rounds))
	return true
}

// leaderWork: this process leads its host in a barrier among hosts.
func (b *barrier) leaderWork(e *Engine) bool { return b.leader == e.phys && len(b.leaders) > 1 }

// barrier waits until every process entered the same barrier.
func (e *Engine) barrier() error {
	if e.nprocs == 1 {
		return nil
	}
	b := &e.bar
	b.lock()
	// The previous barrier's puts must be out before their words change.
	if b.pending().Load() != 0 {
		e.waitUntil("acp_sync", func() bool { return b.pending().Load() == 0 })
	}
	ep := b.epoch().Add(1)
	if b.hier {
		last := atomic.AddUint64((*uint64)(b.arrive), 1) == ep*uint64(b.locals)
		if last && len(b.leaders) == 1 {
			atomic.StoreUint64((*uint64)(b.release), ep)
			b.unlock()
			return nil
		}
	}
	return e.FinishSync(ep)
}

// FinishSync completes barrier ep, which this process entered (holding the
// barrier's lock, and in a hierarchical barrier having arrived), and
// releases the lock: the second half of barrier, and how a C fast path
// that waited long enough hands a barrier over.
func (e *Engine) FinishSync(ep uint64) error {
	b := &e.bar
	defer b.unlock()
	if !b.hier {
		e.disseminate(ep, nil)
		return nil
	}
	if !b.leaderWork(e) {
		rel := (*uint64)(b.release)
		if atomic.LoadUint64(rel) < ep {
			e.waitUntil("acp_sync", func() bool { return atomic.LoadUint64(rel) >= ep })
		}
		return nil
	}
	// The leader of one of several hosts: everybody of this host arrived
	// (the counter only grows), then the other hosts' leaders, then release.
	arrived := (*uint64)(b.arrive)
	want := ep * uint64(b.locals)
	if atomic.LoadUint64(arrived) < want {
		e.waitUntil("acp_sync", func() bool { return atomic.LoadUint64(arrived) >= want })
	}
	e.disseminate(ep, b.leaders)
	atomic.StoreUint64((*uint64)(b.release), ep)
	return nil
}

// roundSlot is the process this one, at place me (position), writes to in
// round `round` of a dissemination among the given processes (physical
// indices, in the same order everywhere; nil: all), the one 2^round places
// further on, and the GA of the slot it writes there; ok is false past the
// last round.
func (e *Engine) roundSlot(among []int, me, round int) (peer int, ga GA, ok bool) {
	n := e.nprocs
	if among != nil {
		n = len(among)
	}
	if round >= 63 || 1<<round >= n {
		return 0, 0, false
	}
	peer = (me + 1<<round) % n
	if among != nil {
		peer = among[peer]
	}
	return peer, e.layout.Encode(e.rankOfPeer(peer), 0, SegEngine, uint64(8*round)), true
}

// position is this process's place among the processes of a
// dissemination (nil: all of them), found once per barrier rather than
// per round: among lists every host's leader, thousands at scale.
func (e *Engine) position(among []int) int {
	if among == nil {
		return e.phys
	}
	return slices.Index(among, e.phys)
}

// disseminate runs the dissemination barrier of epoch ep among the given
// processes (physical indices, in the same order everywhere; nil: all).
func (e *Engine) disseminate(ep uint64, among []int) {
	b := &e.bar
	me := e.position(among)
	for round := 0; ; round++ {
		to, ga, ok := e.roundSlot(among, me, round)
		if !ok {
			break
		}
		if p := e.mapped(to, ga, 8); p != nil {
			atomic.StoreUint64((*uint64)(p), ep)
		} else {
			b.words[round] = ep
			b.pending().Add(1)
			// Only the next barrier waits for this put, and it polls.
			t, src := e.transportTo(to), unsafe.Pointer(&b.words[round])
			if pt, ok := t.(PolledPutter); ok {
				pt.PutPolled(to, ga, src, 8, barrierPut{b})
			} else {
				t.Put(to, ga, src, 8, barrierPut{b})
			}
		}
		mine := e.slot(round)
		if atomic.LoadUint64(mine) < ep {
			e.waitUntil("acp_sync", func() bool { return atomic.LoadUint64(mine) >= ep })
		}
	}
	// The C side runs a barrier only when these puts are complete
	// (pending): where it could run the next one, wait for them here
	// rather than leave that one, and so every later one, to Go.
	if b.pending().Load() != 0 && b.cMayFollow() {
		e.waitUntil("acp_sync", func() bool { return b.pending().Load() == 0 })
	}
}

// cMayFollow reports whether the C side may run the next barrier with
// writes through a transport's C code.
func (b *barrier) cMayFollow() bool {
	f := b.f
	return f.u32(fastBarOn).Load() != 0 && f.u32(fastBarGAMask).Load() != 0 && f.u64(fastRemote).Load() != 0
}
