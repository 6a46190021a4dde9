package segbuf

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/libacp/libacp/core"
)

// Role says which end of a ring an endpoint is.
type Role uint8

// Roles.
const (
	Source Role = 1 // writes segments into the destination's buffer
	Dest   Role = 2 // owns the buffer that is written; releases segments
)

// The control block of an endpoint: words the peer writes, and what the
// source reads once to learn the destination's buffer.
const (
	ctlPeer     = 0   // destination: the source's control block GA, swapped in by the source (tagFailed on a mismatch)
	ctlState    = 8   // non-zero once the peer's disconnect notice arrived
	ctlCount    = 16  // 16 bytes {value, check}: the counter the peer publishes (source: segments released; destination: segments acknowledged)
	ctlBuf      = 32  // GA of this endpoint's buffer
	ctlSegSize  = 40  //
	ctlSegNum   = 48  //
	ctlFetch    = 64  // two words: results of the connection's atomics
	ctlInfo     = 80  // source: copy of the destination's buffer GA, segment size and count
	ctlPubStage = 128 // pubRecords records of 16 bytes: what we publish to the peer, while its put is in flight
	ctlSize     = ctlPubStage + 16*pubRecords

	// pubRecords publications may be in flight at once; a further one
	// waits for the oldest to complete (its record is reused).
	pubRecords = 8
)

// A published counter travels as one 16-byte put of {value, check(value)}:
// a put needs no work from the peer's process (an atomic may), and the
// check lets the reader ignore a record whose bytes have not all landed.
// Each publication starts after the previous one completed (ordered by
// handle), so a later value never lands before an earlier one.
func countCheck(v uint64) uint64 {
	z := v + 0x9e3779b97f4a7c15
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// tagFailed in a destination's peer word says that the source refused the
// connection (its segment size or count differ).
const tagFailed = 8

type connStep uint8

const (
	stepQueued    connStep = iota // destination: behind earlier records to the same peer
	stepTicket                    // destination: fetch-and-add on the peer's mailbox tail issued
	stepRoomCheck                 // destination: about to read the peer's mailbox head
	stepRoom                      // destination: head and capacity read issued
	stepPosted                    // destination: record swapped into the mailbox
	stepMatch                     // source: waiting for the destination's record
	stepInfo                      // source: reading the destination's buffer description
	stepDone                      // connected, or failed
)

// Pair is one endpoint of a ring mirrored between two processes: its
// control block, its buffer, and the connection to the peer's endpoint.
// It is not safe for concurrent use: its owner (a segmented buffer or a
// channel endpoint) serialises every call.
type Pair struct {
	l       *Lib
	kind    Kind
	role    Role
	peer    int
	ctl     Block
	buf     core.GA
	segSize uint64
	segNum  uint64

	rec atomic.Uint64 // source: the destination's control block, from the mailbox

	step    connStep
	h       core.Handle
	ticket  uint64
	retry   time.Time
	backoff time.Duration

	connected    bool
	err          error
	remoteCtl    core.GA
	remoteBuf    core.GA
	last         core.Handle // latest operation on this pair
	disc         core.Handle // our disconnect notice, once issued
	disconnected bool        // Disconnect was called
	released     bool

	seen     uint64                  // largest valid count the peer published to us
	pubVal   uint64                  // count we want the peer to see
	pubSent  uint64                  // count in our latest publication
	pubOrder core.Handle             // the next publication starts after this
	pubN     uint64                  // publications issued
	pubH     [pubRecords]core.Handle // the latest publication from each record
	pubLast  core.Handle             // our latest publication
	// pubAt is the peer's count record mapped here (nil: publish by
	// puts), decided when the pair connects.
	pubAt unsafe.Pointer
}

// NewPair creates an endpoint of kind towards peer whose buffer (already
// registered by the caller) is buf, segNum segments of segSize bytes. A
// destination starts posting its record at once; a source waits for it.
func (l *Lib) NewPair(kind Kind, role Role, peer int, buf core.GA, segSize, segNum uint64) (*Pair, error) {
	if err := l.CheckPeer("peer rank", peer); err != nil {
		return nil, err
	}
	ctl, err := l.Alloc(ctlSize)
	if err != nil {
		return nil, err
	}
	p := &Pair{l: l, kind: kind, role: role, peer: peer, ctl: ctl, buf: buf, segSize: segSize, segNum: segNum}
	atomic.StoreUint64(ctl.word(ctlBuf), uint64(buf))
	atomic.StoreUint64(ctl.word(ctlSegSize), segSize)
	atomic.StoreUint64(ctl.word(ctlSegNum), segNum)
	l.used.Store(true)
	if role == Dest {
		p.step = stepQueued
		l.enqueue(p)
	} else {
		p.step = stepMatch
		l.await(p)
	}
	return p, nil
}

// Peer is the rank of the other end.
func (p *Pair) Peer() int { return p.peer }

// Role is this end's role.
func (p *Pair) Role() Role { return p.role }

// Connected reports whether both ends know each other.
func (p *Pair) Connected() bool { return p.connected }

// Err is why the connection failed, or nil.
func (p *Pair) Err() error { return p.err }

// RemoteBuf is the GA of the peer's buffer (source, once connected).
func (p *Pair) RemoteBuf() core.GA { return p.remoteBuf }

// Count is the counter the peer publishes: on a source the segments the
// destination released, on a destination the segments the source
// acknowledged.
func (p *Pair) Count() uint64 {
	v := atomic.LoadUint64(p.ctl.word(ctlCount))
	c := atomic.LoadUint64(p.ctl.word(ctlCount + 8))
	if c == countCheck(v) && v > p.seen {
		p.seen = v
	}
	return p.seen
}

// CountRecord is where the peer publishes Count: {value, check(value)}
// (for a C fast path in this process that reads it as Count does).
func (p *Pair) CountRecord() unsafe.Pointer { return unsafe.Pointer(p.ctl.word(ctlCount)) }

// PeerCountRecord is the peer's count record mapped here, or nil (once
// connected): a C fast path in this process publishes into it as flush
// does, with two stores.
func (p *Pair) PeerCountRecord() unsafe.Pointer { return p.pubAt }

// PeerCountGA is the GA of the peer's record of our count, for a
// publication that another path of this process puts there (ml/ch's C
// path); LastPublication is our latest publication's handle, which such a
// put must follow, and Publish's order makes ours follow it.
func (p *Pair) PeerCountGA() core.GA { return p.remoteCtl + ctlCount }

// LastPublication: see PeerCountGA.
func (p *Pair) LastPublication() core.Handle { return p.pubLast }

// established marks the pair connected, once the peer's control block is
// known.
func (p *Pair) established() {
	p.connected, p.step = true, stepDone
	p.pubAt = p.l.e.Direct(p.remoteCtl+ctlCount, 16)
}

// Note records an operation on this pair, so that the disconnect notice is
// ordered after it.
func (p *Pair) Note(h core.Handle) { p.last = max(p.last, h) }

// Progress advances the connection and sends what is owed to the peer; it
// reports whether anything changed.
func (p *Pair) Progress() (changed bool) {
	if p.released {
		return false
	}
	if p.step != stepDone {
		changed = p.connect()
	}
	if p.flush() {
		changed = true
	}
	if p.notify() {
		changed = true
	}
	return changed
}

// Pending reports whether the pair needs progress to do its part.
func (p *Pair) Pending() bool {
	return !p.released && p.err == nil &&
		(p.step != stepDone || p.pubVal != p.pubSent || (p.disconnected && p.disc == core.HandleNull))
}

// Idle reports whether none of our operations on the peer is in flight
// or owed: the control block may go.
func (p *Pair) Idle() bool {
	return !p.Pending() && (p.pubLast == core.HandleNull || p.l.done(p.pubLast)) &&
		(p.disc == core.HandleNull || p.l.done(p.disc))
}

func (p *Pair) connect() (changed bool) {
	l := p.l
	e := l.e
	switch p.step {
	case stepQueued:
		if !l.first(p) {
			return false
		}
		h, err := e.Atomic(core.OpAdd8, p.ctl.GA+ctlFetch, l.starterGA(p.peer, offMboxTail), 1, 0, core.HandleNull)
		if err != nil {
			p.fail(fmt.Errorf("cannot reach rank %d's mailbox: %v", p.peer, err))
			return true
		}
		p.h, p.step = h, stepTicket
		return true

	case stepTicket:
		if !l.done(p.h) {
			return false
		}
		p.ticket = atomic.LoadUint64(p.ctl.word(ctlFetch))
		l.ticketed(p)
		p.step = stepRoomCheck
		return true

	case stepRoomCheck:
		if !p.retry.IsZero() && time.Now().Before(p.retry) {
			return false
		}
		// Head first, capacity second: in-order completion makes the second
		// handle cover both.
		_, err1 := e.Atomic(core.OpAdd8, p.ctl.GA+ctlFetch, l.starterGA(p.peer, offMboxHead), 0, 0, core.HandleNull)
		h, err2 := e.Atomic(core.OpAdd8, p.ctl.GA+ctlFetch+8, l.starterGA(p.peer, offMboxCap), 0, 0, core.HandleNull)
		if err := errors.Join(err1, err2); err != nil {
			p.fail(fmt.Errorf("cannot reach rank %d's mailbox: %v", p.peer, err))
			return true
		}
		p.h, p.step = h, stepRoom
		return true

	case stepRoom:
		if !l.done(p.h) {
			return false
		}
		head := atomic.LoadUint64(p.ctl.word(ctlFetch))
		capacity := atomic.LoadUint64(p.ctl.word(ctlFetch + 8))
		if capacity == 0 || p.ticket >= head+capacity {
			// The peer has not started yet, or has not consumed the records
			// before ours: ask again later, less often each time.
			p.backoff = min(max(2*p.backoff, 100*time.Microsecond), 10*time.Millisecond)
			p.retry = time.Now().Add(p.backoff)
			p.step = stepRoomCheck
			return false
		}
		slot := l.starterGA(p.peer, offSlots+8*(p.ticket%capacity))
		h, err := e.Atomic(core.OpSwap8, l.trash(), slot, uint64(p.ctl.GA)|uint64(p.kind), 0, core.HandleNull)
		if err != nil {
			p.fail(fmt.Errorf("cannot post to rank %d's mailbox: %v", p.peer, err))
			return true
		}
		p.Note(h)
		p.step = stepPosted
		return true

	case stepPosted:
		v := atomic.LoadUint64(p.ctl.word(ctlPeer))
		if v == 0 {
			return false
		}
		if v&tagFailed != 0 {
			p.fail(fmt.Errorf("rank %d refused the connection: its end has a different segment size or count (this end: %d segments of %d bytes)",
				p.peer, p.segNum, p.segSize))
			return true
		}
		p.remoteCtl = core.GA(v)
		p.established()
		return true

	case stepMatch:
		rec := p.rec.Load()
		if rec == 0 {
			return false
		}
		h, err := e.Copy(p.ctl.GA+ctlInfo, core.GA(rec)+ctlBuf, 24, core.HandleNull)
		if err != nil {
			p.fail(fmt.Errorf("cannot read rank %d's endpoint: %v", p.peer, err))
			return true
		}
		p.h, p.step = h, stepInfo
		return true

	case stepInfo:
		if !l.done(p.h) {
			return false
		}
		rec := core.GA(p.rec.Load())
		buf := atomic.LoadUint64(p.ctl.word(ctlInfo))
		size := atomic.LoadUint64(p.ctl.word(ctlInfo + 8))
		num := atomic.LoadUint64(p.ctl.word(ctlInfo + 16))
		if buf == 0 {
			p.fail(fmt.Errorf("rank %d's endpoint could not be read", p.peer))
			return true
		}
		if size != p.segSize || num != p.segNum {
			p.fail(fmt.Errorf("rank %d's end has %d segments of %d bytes, this end %d of %d; both ends must give the same segment size and count",
				p.peer, num, size, p.segNum, p.segSize))
			h, err := e.Atomic(core.OpSwap8, l.trash(), rec+ctlPeer, uint64(p.ctl.GA)|tagFailed, 0, core.HandleNull)
			if err == nil {
				p.Note(h)
			}
			return true
		}
		h, err := e.Atomic(core.OpSwap8, l.trash(), rec+ctlPeer, uint64(p.ctl.GA), 0, core.HandleNull)
		if err != nil {
			p.fail(fmt.Errorf("cannot reach rank %d's endpoint: %v", p.peer, err))
			return true
		}
		p.Note(h)
		p.remoteCtl, p.remoteBuf = rec, core.GA(buf)
		p.established()
		return true
	}
	return false
}

func (p *Pair) fail(err error) {
	p.err = err
	p.step = stepDone
	p.l.e.Logf(1, "communication library: connection with rank %d: %v", p.peer, err)
}

// Connecting reports whether the connection is still being set up.
func (p *Pair) Connecting() bool { return p.step != stepDone }

// Publish makes v (which only grows) the peer's count, in a publication
// that starts after order. With wait, it is issued before Publish returns
// (waiting, if need be, for an earlier publication to complete and free its
// record); otherwise it may be left to a later Progress.
func (p *Pair) Publish(v uint64, order core.Handle, wait bool) {
	p.pubVal = max(p.pubVal, v)
	p.pubOrder = max(p.pubOrder, order)
	for n := 0; !p.flush() && wait && p.connected && p.err == nil && p.pubVal != p.pubSent; n++ {
		core.YieldTurn(n)
	}
}

// flush issues a publication of the latest count when one is owed and a
// record is free; it reports whether it issued one.
func (p *Pair) flush() bool {
	if !p.connected || p.pubVal == p.pubSent || p.err != nil {
		return false
	}
	// A publication follows the one before (ours, and the latest of the C
	// side's: pubOrder), so that the record ends with the largest count.
	// Those two alone: operations issued before them need not be seen
	// complete, which may take another thread's progress.
	lastDone := p.l.opDone(p.pubLast) && p.l.opDone(p.pubOrder)
	if p.pubAt != nil && lastDone {
		// Two stores into the peer's record, which a put would do too but
		// through the engine: nothing of ours is in flight that this one
		// must follow (or that could land after it with an older value).
		rec := (*[2]uint64)(p.pubAt)
		atomic.StoreUint64(&rec[0], p.pubVal)
		atomic.StoreUint64(&rec[1], countCheck(p.pubVal))
		p.pubSent, p.pubOrder = p.pubVal, core.HandleNull
		return true
	}
	i := p.pubN % pubRecords
	if h := p.pubH[i]; h != core.HandleNull && !p.l.opDone(h) {
		return false
	}
	off := uint64(ctlPubStage + 16*i)
	atomic.StoreUint64(p.ctl.word(off), p.pubVal)
	atomic.StoreUint64(p.ctl.word(off+8), countCheck(p.pubVal))
	order := core.HandleNull
	if !lastDone {
		order = max(p.pubOrder, p.pubLast)
	}
	h, err := p.l.e.Copy(p.remoteCtl+ctlCount, p.ctl.GA+core.GA(off), 16, order)
	if err != nil {
		p.fail(fmt.Errorf("cannot publish a count to rank %d: %v", p.peer, err))
		return false
	}
	p.Note(h)
	p.pubH[i], p.pubLast, p.pubN = h, h, p.pubN+1
	p.pubSent, p.pubOrder = p.pubVal, core.HandleNull
	return true
}

// Disconnect tells the peer that this end is done, after every operation
// this end issued before (and every count it still owes).
func (p *Pair) Disconnect() error {
	if !p.connected {
		return errors.New("not connected")
	}
	if p.disconnected {
		return errors.New("already disconnected")
	}
	p.disconnected = true
	p.notify()
	return nil
}

// notify sends the disconnect notice once no count is owed.
func (p *Pair) notify() bool {
	if !p.disconnected || p.disc != core.HandleNull || p.err != nil {
		return false
	}
	if p.pubVal != p.pubSent {
		return false
	}
	h, err := p.l.e.Atomic(core.OpAdd8, p.l.trash(), p.remoteCtl+ctlState, 1, 0, p.last)
	if err != nil {
		p.fail(fmt.Errorf("cannot send the disconnect notice to rank %d: %v", p.peer, err))
		return true
	}
	p.disc = h
	return true
}

// Disconnected reports whether this end disconnected.
func (p *Pair) Disconnected() bool { return p.disconnected }

// PeerDisconnected reports whether the peer's disconnect notice arrived:
// everything the peer did to this end happened before.
func (p *Pair) PeerDisconnected() bool { return atomic.LoadUint64(p.ctl.word(ctlState)) != 0 }

// DisconnectLanded reports whether our disconnect notice is in place at
// the peer.
func (p *Pair) DisconnectLanded() bool {
	return p.disc != core.HandleNull && p.l.done(p.disc)
}

// Settled reports whether both ends disconnected and our notice landed:
// neither end touches the other any more.
func (p *Pair) Settled() bool {
	return p.PeerDisconnected() && p.DisconnectLanded() && p.Idle()
}

// Release gives the control block back. Only for settled pairs (or when
// the library stops).
func (p *Pair) Release() {
	if p.released {
		return
	}
	p.released = true
	if p.step != stepDone {
		p.l.forget(p)
	}
	p.l.Free(p.ctl)
}
