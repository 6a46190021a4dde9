package core

import (
	"sync"
	"sync/atomic"
	"unsafe"
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

// engineAreaSize is the size of every process's engine area (SegEngine).
const engineAreaSize = 4096

// maxRounds bounds the rounds of a barrier (2^64 processes).
const maxRounds = 64

type barrier struct {
	run   sync.Mutex // one barrier at a time per process
	epoch uint64
	// words are the sources of puts to peers that are not mapped; a word
	// is rewritten only after its previous put completed.
	words   [maxRounds]uint64
	pending atomic.Int64
}

// barrierPut completes one barrier write sent through a transport.
type barrierPut struct{ b *barrier }

func (p barrierPut) OnComplete(_ uint64, err error) { p.b.pending.Add(-1) }

// slot is where round r's arrivals land in our own engine area.
func (e *Engine) slot(r int) *uint64 {
	return (*uint64)(unsafe.Pointer(&e.starters[SegEngine][8*r]))
}

// barrier waits until every process entered the same barrier.
func (e *Engine) barrier() error {
	n := e.nprocs
	if n == 1 {
		return nil
	}
	b := &e.bar
	b.run.Lock()
	defer b.run.Unlock()
	// The previous barrier's puts must be out before their words change.
	if b.pending.Load() != 0 {
		e.waitUntil(func() bool { return b.pending.Load() == 0 })
	}
	b.epoch++
	ep := b.epoch
	for round, dist := 0, 1; dist < n; round, dist = round+1, dist*2 {
		to := (e.phys + dist) % n
		ga := e.layout.Encode(e.rankOfPeer(to), 0, SegEngine, uint64(8*round))
		if p := e.mapped(to, ga, 8); p != nil {
			atomic.StoreUint64((*uint64)(p), ep)
		} else {
			b.words[round] = ep
			b.pending.Add(1)
			e.transportTo(to).Put(to, ga, unsafe.Pointer(&b.words[round]), 8, barrierPut{b})
		}
		mine := e.slot(round)
		if atomic.LoadUint64(mine) < ep {
			e.waitUntil(func() bool { return atomic.LoadUint64(mine) >= ep })
		}
	}
	return nil
}
