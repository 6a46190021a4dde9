package udp

import (
	"time"
	"unsafe"

	"github.com/libacp/libacp/core"
)

// peer is the reliable stream state with one other process, in both
// directions. Guarded by endpoint.mu.
type peer struct {
	idx    int
	addr   *dest
	ipText string
	mtu    int // largest datagram to this peer

	// Receive side: rxNext is the next sequence number expected; rxBits
	// marks arrivals in [rxNext, rxNext+rxWindow) (bit s%rxWindow).
	rxNext       uint64
	rxBits       [rxWindow / 64]uint64
	ackDue       bool      // our acknowledgement state has news for it
	ackNow       bool      // ... that should not wait for a datagram going its way
	ackAt        time.Time // when a delayed acknowledgement must go out at the latest
	ackSince     time.Time // when the acknowledgement owed became owed
	unacked      int       // datagrams accepted since our state last went out
	unackedBytes int       // and their bytes
	ackBuf       [headerSize]byte
	lastErr      uint64 // opID of the last put rejected, to report it once
	dupsSeen     int    // duplicates from it since our last acknowledgement to it

	// Send side.
	nextSeq       uint64   // next sequence number to assign
	queue         []*dgram // assigned a sequence number, not sent yet
	inflight      []*dgram // sent, contiguous by sequence number, front unacknowledged
	inflightBytes int      // bytes of unacknowledged datagrams in flight
	cwnd          int      // bytes allowed in flight
	maxWindow     int      // upper bound of cwnd
	// A timeout halves cwnd, but on one machine the usual cause is a
	// receiver that was off its CPU, not a loss: the datagram arrives twice.
	// The receiver counts the duplicates (header field dups), and when it
	// has seen every retransmission since the cut twice, cwnd goes back to
	// cwndUndo (as TCP undoes a cut on duplicate SACKs, RFC 2883/3708).
	// Without that, each needless retransmission halved the window for
	// hundreds of datagrams: a 1 MiB put pingpong ran with 2 datagrams in
	// flight after the start's timeouts.
	cwndUndo    int       // cwnd before the cuts being checked, 0: none
	undoRetrans int       // retransmissions since then not yet reported as duplicates
	undoUntil   time.Time // when the check gives up: the cut stands
	streams     []*stream // large transfers producing fragments as the window allows
	waitMark    []*op     // acknowledged puts waiting for our receive side to catch up
	isActive    bool

	srtt, rttvar time.Duration
	rto          time.Duration

	lastHeard    time.Time // when a datagram from it last arrived
	lastProgress time.Time // when it last acknowledged something new
	// quietUntil: after a timeout, no other datagram to this peer is
	// retransmitted before this time (see checkTimers).
	quietUntil time.Time
}

// dueAt is when d counts as lost without an acknowledgement. The clock
// restarts whenever the peer acknowledges anything new (as TCP's
// retransmission timer does): a burst of large datagrams takes the
// receiver longer to drain than one round trip, and a datagram that waits
// behind others it is still taking is not lost. A real loss shows as a
// hole that later datagrams' selective acknowledgements reveal, or as no
// progress for a whole timeout.
func (p *peer) dueAt(d *dgram) time.Time {
	t := d.sentAt
	if p.lastProgress.After(t) {
		t = p.lastProgress
	}
	return t.Add(d.rto)
}

// dgram is a reliable datagram until it is acknowledged.
type dgram struct {
	seq       uint64
	buf       []byte // header (and body, unless data holds it)
	data      []byte // fragment data sent without a copy: a put's source, a served get's memory
	sent      int    // bytes on the wire when first sent: what the window counted
	sentAt    time.Time
	firstSent time.Time
	rto       time.Duration
	retries   int
	acked     bool
	op        *op // put fragment: the put it belongs to (counted in op.refs)

	// served: a fragment of a get served from our memory, srcLen bytes at
	// srcOff in the get's range (srcGA, srcSize, which every access checks
	// whole). Its data goes out straight from that memory, which is pinned
	// (reg) only while a send may read it, and is looked up again for a
	// retransmission (endpoint.lend).
	served                  bool
	srcGA                   core.GA
	srcSize, srcOff, srcLen uint64
	reg                     *core.Region

	// Small datagrams (a put fragment's header, a get request, an atomic,
	// a reply) live here, and datagrams are reused once acknowledged
	// (endpoint.spare), so that a stream of small operations allocates
	// nothing for its datagrams.
	small [headerSize + maxSmallBody]byte
}

// size is the datagram's length on the wire.
func (d *dgram) size() int { return len(d.buf) + len(d.data) }

// own copies the source data of a fragment into the datagram: the put
// ended before every fragment was acknowledged (its owner refused it), and
// the program may reuse the memory while a retransmission is still due.
func (d *dgram) own() {
	if d.data != nil {
		d.buf = append(d.buf[:len(d.buf):len(d.buf)], d.data...)
		d.data = nil
	}
}

type opKind uint8

const (
	opPut opKind = iota
	opGet
	opAtomic
)

// op is an operation initiated here, waiting for its outcome.
type op struct {
	id      uint64
	kind    opKind
	peer    *peer
	c       core.Completion
	done    bool
	stream  *stream // put: &putStream while it may produce
	created time.Time
	// refs counts what may still look at the op: its being unfinished, a
	// put's stream in the peer's list, each fragment datagram until it is
	// recycled, an entry in waitMark. At 0 it is reused (endpoint.freeOps).
	refs int32

	putStream stream // a put's stream, allocated with it

	// put: fragments not yet acknowledged, and the peer's sequence mark
	// our receive side must reach before the put may complete (an error
	// report the peer queued before acknowledging must be seen first).
	fragsLeft uint64
	mark      uint64

	// get: its destination refused a datagram received in place (EFAULT):
	// its data goes through the copying path, which fails it.
	noPlace bool

	// get: where the data goes and how much arrived.
	dst      unsafe.Pointer
	size     uint64
	received uint64
}

// stream produces the fragments of one large transfer: a put from local
// memory, or the data of a get served from local memory.
type stream struct {
	typ       uint8 // tPut or tGetData
	opID      uint64
	op        *op            // put: our op
	src       unsafe.Pointer // put: local source
	srcGA     core.GA        // get data: local source, checked per fragment
	dstGA     core.GA        // put: destination of the whole op
	size, off uint64
	started   bool
	cancelled bool
}

func (p *peer) busy() bool {
	return len(p.queue) > 0 || len(p.inflight) > 0 || len(p.streams) > 0
}

// inOrder reports whether nothing has arrived beyond rxNext.
func (p *peer) inOrder() bool {
	for _, w := range p.rxBits {
		if w != 0 {
			return false
		}
	}
	return true
}

// fresh reports whether accept would take seq, without recording it.
func (p *peer) fresh(seq uint64) bool {
	if seq < p.rxNext || seq-p.rxNext >= rxWindow {
		return false
	}
	return p.rxBits[(seq%rxWindow)/64]&(1<<(seq%64)) == 0
}

// accept records an arriving sequence number. It returns false for
// duplicates and for numbers beyond the window (the sender will resend).
func (p *peer) accept(seq uint64) bool {
	if seq < p.rxNext || seq-p.rxNext >= rxWindow {
		return false
	}
	w, b := (seq%rxWindow)/64, seq%64
	if p.rxBits[w]&(1<<b) != 0 {
		return false
	}
	p.rxBits[w] |= 1 << b
	for {
		w, b := (p.rxNext%rxWindow)/64, p.rxNext%64
		if p.rxBits[w]&(1<<b) == 0 {
			break
		}
		p.rxBits[w] &^= 1 << b
		p.rxNext++
	}
	return true
}

// sack returns the selective-acknowledgement bits for rxNext+1..rxNext+64:
// the two words of rxBits that hold them, shifted together. Every datagram
// sent carries it; testing the 64 bits one by one took 3 % of a udp
// pingpong's acp_copy.
func (p *peer) sack() uint64 {
	s := p.rxNext + 1
	w, b := (s%rxWindow)/64, s%64
	bits := p.rxBits[w] >> b
	if b != 0 {
		bits |= p.rxBits[(w+1)%(rxWindow/64)] << (64 - b)
	}
	return bits
}

// updateRTT folds a round-trip sample into the estimate (Jacobson/Karels).
func (p *peer) updateRTT(sample time.Duration) {
	if p.srtt == 0 {
		p.srtt, p.rttvar = sample, sample/2
	} else {
		d := p.srtt - sample
		if d < 0 {
			d = -d
		}
		p.rttvar = (3*p.rttvar + d) / 4
		p.srtt = (7*p.srtt + sample) / 8
	}
	p.rto = min(max(p.srtt+4*p.rttvar, minRTO), maxRTO)
}

// canSend reports whether the window has room for n more bytes.
func (p *peer) canSend(n int) bool {
	if len(p.inflight) >= maxInflight {
		return false
	}
	return p.inflightBytes == 0 || p.inflightBytes+n <= p.cwnd
}
