package core

import (
	"sync"
)

// barrier is a dissemination barrier over the transports: in round k every
// process sends to (p + 2^k) mod N and waits for (p - 2^k) mod N, so it takes
// ceil(log2 N) rounds and N messages per round in total, with no root.
//
// A process can be at most one barrier ahead of a slower one (it cannot
// finish barrier e+1 before everyone entered it), so arrivals are keyed by
// epoch and round and consumed once.
type barrier struct {
	run     sync.Mutex // one barrier at a time per process
	epoch   uint64
	mu      sync.Mutex
	arrived map[uint64]int
}

func (b *barrier) init() { b.arrived = map[uint64]int{} }

func barrierKey(epoch uint64, round uint8) uint64 { return epoch<<8 | uint64(round) }

func (b *barrier) arrive(epoch uint64, round uint8) {
	b.mu.Lock()
	b.arrived[barrierKey(epoch, round)]++
	b.mu.Unlock()
}

func (b *barrier) take(epoch uint64, round uint8) bool {
	k := barrierKey(epoch, round)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.arrived[k] == 0 {
		return false
	}
	if b.arrived[k]--; b.arrived[k] == 0 {
		delete(b.arrived, k)
	}
	return true
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
	b.epoch++
	ep := b.epoch
	var msg [10]byte
	msg[0] = msgBarrier
	le.PutUint64(msg[1:], ep)
	for round, dist := uint8(0), 1; dist < n; round, dist = round+1, dist*2 {
		to := (e.phys + dist) % n
		msg[9] = round
		e.transportTo(to).Send(to, msg[:])
		e.waitUntil(func() bool { return b.take(ep, round) })
	}
	return nil
}
