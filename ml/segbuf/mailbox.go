package segbuf

import (
	"sync/atomic"

	"github.com/libacp/libacp/core"
)

// The mailbox introduces endpoints to each other. The destination of a
// pair (a channel's receiver, a segmented buffer's destination) posts a
// record, the GA of its control block tagged with the kind, into the
// source's mailbox; the source takes records from its own memory in the
// order they were posted. Records from one process are posted in the order
// its endpoints were created, so the k-th source endpoint created for a
// (peer, kind) meets the k-th destination endpoint created there.
//
// Only the destination acts on the network (atomics on the source's
// mailbox); the source reads its own memory. Records the source consumed
// before it created the matching endpoint wait in a list here.

// drain consumes the records that arrived in our mailbox and gives them to
// the endpoints waiting for them.
func (l *Lib) drain() (changed bool) {
	// Only this process writes the head word (under l.mu, by moveHead);
	// peers read it with atomics.
	head := l.word(offMboxHead)
	slot := func(t uint64) *uint64 { return l.word(offSlots + 8*(t%l.slots)) }
	if atomic.LoadUint64(slot(atomic.LoadUint64(head))) == 0 {
		return false // cheap test without the lock
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for {
		h := atomic.LoadUint64(head)
		w := slot(h)
		rec := atomic.LoadUint64(w)
		if rec == 0 {
			break
		}
		// Empty the slot before the head shows room: a writer that sees the
		// new head may swap its record in at once.
		atomic.StoreUint64(w, 0)
		l.moveHead(h + 1)
		ga := core.GA(rec &^ kindMask)
		k := recordKey{rank: l.e.QueryRank(ga), kind: Kind(rec & kindMask)}
		if k.rank < 0 || k.rank == l.me || (k.kind != KindSegbuf && k.kind != KindChannel) {
			l.e.Logf(1, "communication library: dropped a malformed endpoint record %#x in the mailbox", rec)
			continue
		}
		l.records[k] = append(l.records[k], ga)
		changed = true
	}
	l.matchLocked()
	return changed
}

// moveHead stores the mailbox's new head with an atomic of the engine,
// not a store: peers read the word with atomics at any time, and where an
// adapter executes those (--acp-ib-atomics nic) a CPU store is not atomic
// with them: a fetch-and-add of 0 that read the old head writes it back
// over the new one, and the mailbox would stall. A slot's store needs
// none of this: no peer touches the slot until it has read the new head.
func (l *Lib) moveHead(v uint64) {
	h, err := l.e.Atomic(core.OpSwap8, l.trash(), l.base+offMboxHead, v, 0, core.HandleNull)
	if err == nil {
		l.e.Complete(h)
	}
	if err != nil || l.e.Failed(h) {
		// Our own starter memory cannot refuse an atomic; should it ever,
		// the store keeps the mailbox moving where CPU atomics serve peers.
		l.e.Logf(1, "communication library: moving the mailbox head by an atomic failed (%v); stored instead", err)
		atomic.StoreUint64(l.word(offMboxHead), v)
	}
}

// matchLocked gives records to waiting source endpoints, oldest first.
func (l *Lib) matchLocked() {
	for k, ps := range l.waiting {
		recs := l.records[k]
		n := min(len(ps), len(recs))
		for i := 0; i < n; i++ {
			ps[i].rec.Store(uint64(recs[i]))
		}
		if n == 0 {
			continue
		}
		clear(ps[:n])
		l.waiting[k] = ps[n:]
		l.records[k] = recs[n:]
		if len(l.waiting[k]) == 0 {
			delete(l.waiting, k)
		}
		if len(l.records[k]) == 0 {
			delete(l.records, k)
		}
	}
}

// await registers a new source endpoint for its peer's record.
func (l *Lib) await(p *Pair) {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := recordKey{rank: p.peer, kind: p.kind}
	l.waiting[k] = append(l.waiting[k], p)
	l.matchLocked()
}

// enqueue registers a new destination endpoint whose record must be posted
// to its peer after those of earlier endpoints.
func (l *Lib) enqueue(p *Pair) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.outbox[p.peer] = append(l.outbox[p.peer], p)
}

// first reports whether p is the oldest destination endpoint towards its
// peer still waiting for a ticket: tickets are taken one at a time, so
// records keep creation order.
func (l *Lib) first(p *Pair) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	q := l.outbox[p.peer]
	return len(q) > 0 && q[0] == p
}

// ticketed removes p from the outbox once its ticket is known.
func (l *Lib) ticketed(p *Pair) {
	l.mu.Lock()
	defer l.mu.Unlock()
	q := l.outbox[p.peer]
	for i, x := range q {
		if x == p {
			q = append(q[:i], q[i+1:]...)
			break
		}
	}
	if len(q) == 0 {
		delete(l.outbox, p.peer)
	} else {
		l.outbox[p.peer] = q
	}
}

// forget removes an endpoint that goes away before it was matched.
func (l *Lib) forget(p *Pair) {
	l.ticketed(p)
	l.mu.Lock()
	defer l.mu.Unlock()
	k := recordKey{rank: p.peer, kind: p.kind}
	ps := l.waiting[k]
	for i, x := range ps {
		if x == p {
			l.waiting[k] = append(ps[:i], ps[i+1:]...)
			break
		}
	}
	if len(l.waiting[k]) == 0 {
		delete(l.waiting, k)
	}
}
