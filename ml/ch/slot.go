package ch

import (
	"encoding/binary"
	"math/bits"
	"sync/atomic"
	"unsafe"

	"github.com/libacp/libacp/core"
)

// The receiver's ring: slotCount slots of slotSize bytes. The sender writes
// each slot with a single put of header and payload; the receiver takes
// slot seq-1 (mod slotCount) when its header carries sequence number seq and
// its checksum matches. The checksum is what makes one put enough: a put's
// bytes may land in any order, so a slot whose header arrived before its
// payload fails the check and is looked at again later. The receiver
// releases slots by adding to the sender's control block; the sender writes
// slot t only while t - released < slotCount.
const (
	slotSize    = 4096
	slotCount   = 16
	headerSize  = 64
	slotPayload = slotSize - headerSize
	ringSize    = slotSize * slotCount
)

// Messages up to eagerMax bytes travel through the ring (in as many slots
// as they need, pipelined); larger ones are announced by a rendezvous slot
// and the receiver copies them from the sender's buffer directly.
//
// A sender that writes the receiver's ring in place (same node) streams
// messages up to streamMax through the ring as well, slot after slot as
// the receiver releases them: the two CPUs' copies then run side by side,
// where a rendezvous costs a registration at each end and a system call
// that pins every page, several microseconds that only larger messages
// repay. Each line of a streamed message crosses between the two CPUs
// twice (into the ring and out of it), a rendezvous's once: between CPUs
// far apart (other core complex) streaming is no faster at 32 KiB and
// slower from 64 KiB, between close ones it is faster up to 256 KiB.
const (
	eagerMax  = 16 << 10
	streamMax = 32 << 10
)

// Slot header.
const (
	hSeq   = 0  // uint64: sequence number of the slot on this channel, from 1
	hKind  = 8  // uint32: slotFirst, slotNext or slotRendezvous
	hLen   = 12 // uint32: payload bytes in this slot
	hTotal = 16 // uint64: size of the whole message
	hAux   = 24 // uint64: slotNext: offset of this chunk; slotRendezvous: GA of the sender's buffer
	hSum   = 32 // uint64: checksum of bytes [0, hSum) and the payload
)

// Kinds of slot.
const (
	slotFirst      = 1 // first chunk of a message sent through the ring
	slotNext       = 2 // a further chunk of it
	slotRendezvous = 3 // a message the receiver copies from the sender's buffer
)

// kindHelp in a rendezvous slot's kind: the sender maps the receiver's ring
// (it writes it in place) and will copy pieces of the message itself while
// it waits. Two CPUs then copy one message: on one node that is about
// twice the rate of one (each copy is a process_vm_readv/writev, bound by
// one CPU's copying, not by the memory's bandwidth).
const kindHelp = 0x200

// The shared copy of a rendezvous message: the receiver opens it in the
// rendezvous slot's payload area, which the announcement leaves unused,
// and both sides then claim pieces with an atomic add on the claim count,
// copy them (the receiver gets, the sender puts) and add the bytes copied
// to the done count. The receiver finishes the message when done reaches
// the length; the sender's buffer is released with the slot, as before.
// The open word holds the slot's sequence number, written last: the
// sender clears it before it announces the message, so old bytes in the
// area (an earlier message's) can never pass for it.
const (
	rvOpen  = headerSize + 0  // uint64: the slot's sequence number once open
	rvKey   = headerSize + 8  // uint64: GA of the receive buffer's registration
	rvLen   = headerSize + 16 // uint64: bytes to copy (the receive may be shorter than the message)
	rvPiece = headerSize + 24 // uint64: bytes per piece
	rvClaim = headerSize + 32 // uint64: pieces claimed
	rvDone  = headerSize + 40 // uint64: bytes copied
)

// Piece sizes: at least pieceMin (a piece costs a claim and a system
// call), at most pieceMax (the last piece decides when the two sides
// finish); a message is shared from two pieces on.
const (
	pieceMin  = 64 << 10
	pieceMax  = 256 << 10
	sharedMin = 2 * pieceMin
)

// pieceFor is the piece size of a shared copy of n bytes: a quarter of it
// within [pieceMin, pieceMax].
func pieceFor(n uint64) uint64 { return min(max(n/4, pieceMin), pieceMax) }

// sharedCopy is the shared-copy area of a rendezvous slot, in the
// receiver's ring (mapped at the sender).
type sharedCopy struct{ slot unsafe.Pointer }

func sharedAt(ring unsafe.Pointer, pos uint64) sharedCopy {
	return sharedCopy{unsafe.Pointer(&slotAt(ring, pos)[0])}
}

func (a sharedCopy) word(off uintptr) *uint64 { return (*uint64)(unsafe.Add(a.slot, off)) }

// clear is the sender's, before it announces the message in the slot.
func (a sharedCopy) clear() { atomic.StoreUint64(a.word(rvOpen), 0) }

// open is the receiver's: n bytes into the registration key, the slot's
// sequence number last.
func (a sharedCopy) open(seq uint64, key core.GA, n uint64) {
	atomic.StoreUint64(a.word(rvKey), uint64(key))
	atomic.StoreUint64(a.word(rvLen), n)
	atomic.StoreUint64(a.word(rvPiece), pieceFor(n))
	atomic.StoreUint64(a.word(rvClaim), 0)
	atomic.StoreUint64(a.word(rvDone), 0)
	atomic.StoreUint64(a.word(rvOpen), seq)
}

func (a sharedCopy) opened(seq uint64) bool { return atomic.LoadUint64(a.word(rvOpen)) == seq }

func (a sharedCopy) key() core.GA { return core.GA(atomic.LoadUint64(a.word(rvKey))) }

// claim takes the next piece: its offset and length, or ok false when
// every piece is taken. Pieces are counted, never multiplied out: a
// receiver that gives up sets the claim count far beyond them (close).
func (a sharedCopy) claim() (off, n uint64, ok bool) {
	total, size := atomic.LoadUint64(a.word(rvLen)), atomic.LoadUint64(a.word(rvPiece))
	if size == 0 {
		return 0, 0, false
	}
	pieces := (total + size - 1) / size
	if atomic.LoadUint64(a.word(rvClaim)) >= pieces {
		return 0, 0, false
	}
	i := atomic.AddUint64(a.word(rvClaim), 1) - 1
	if i >= pieces {
		return 0, 0, false
	}
	off = i * size
	return off, min(size, total-off), true
}

// settle counts n bytes of a claimed piece as done: copied, or given up.
func (a sharedCopy) settle(n uint64) { atomic.AddUint64(a.word(rvDone), n) }

func (a sharedCopy) done() uint64 { return atomic.LoadUint64(a.word(rvDone)) }

// close stops further claims and returns the bytes of the pieces claimed
// before (which are settled, or will be).
func (a sharedCopy) close() uint64 {
	atomic.StoreUint64(a.word(rvOpen), 0)
	claimed := atomic.SwapUint64(a.word(rvClaim), 1<<62)
	size, total := atomic.LoadUint64(a.word(rvPiece)), atomic.LoadUint64(a.word(rvLen))
	if size == 0 {
		return 0
	}
	return min(min(claimed, (total+size-1)/size)*size, total)
}

var le = binary.LittleEndian

// header is a decoded slot header.
type header struct {
	kind    uint32
	help    bool   // rendezvous: kindHelp
	ordered bool   // written in place (kindOrdered)
	n       uint64 // payload bytes
	total   uint64
	aux     uint64
}

// Slot sum constants: odd, with bits spread (multiplication by them is a
// bijection of 64-bit words).
const (
	sumK1 = 0x9e3779b97f4a7c15
	sumK2 = 0xc2b2ae3d27d4eb4f
	// The lanes' starting values: K1+K2 and -K1 (mod 2^64), K2, 0.
	sumV0 = 0x60ea27f6a71f6764
	sumV3 = 0x61c8864680b583eb
)

func sumStep(lane, w uint64) uint64 { return bits.RotateLeft64(lane+w*sumK2, 31) * sumK1 }

// slotChecksum is a slot's checksum: a 64-bit hash of four lanes. Each
// 8-byte word of head (the header up to the checksum, hSum bytes: one word
// per lane) and then of payload goes into lane (word index mod 4) through
// a bijective multiply-and-rotate step; the lanes are then combined with
// the length and mixed. A slot that differs from the bytes summed only in
// the words of one lane always fails the check (every step is a bijection
// of its lane's state); a slot of old and new bytes in several lanes
// passes with probability about 2^-64. It replaced CRC-32C beside CRC-32:
// per byte a multiplication costs less than either, on hardware (0.13 us
// a KiB against 0.71 on the Xeon host) and far less where instructions
// are emulated (0.5 against 9 us in the Soft-RoCE guest, which sums each
// slot at both ends; BENCHMARKS.md, 2026-11-29, fourth section).
// capi/chfast.c has the same code (its test compares them).
func slotChecksum(head, payload []byte) uint64 {
	v := [4]uint64{sumV0, sumK2, 0, sumV3}
	for i := range v {
		v[i] = sumStep(v[i], le.Uint64(head[8*i:]))
	}
	p := payload
	for ; len(p) >= 32; p = p[32:] {
		v[0] = sumStep(v[0], le.Uint64(p))
		v[1] = sumStep(v[1], le.Uint64(p[8:]))
		v[2] = sumStep(v[2], le.Uint64(p[16:]))
		v[3] = sumStep(v[3], le.Uint64(p[24:]))
	}
	i := 0
	for ; len(p) >= 8; p, i = p[8:], i+1 {
		v[i] = sumStep(v[i], le.Uint64(p))
	}
	if len(p) > 0 {
		var w [8]byte
		copy(w[:], p)
		v[i] = sumStep(v[i], le.Uint64(w[:]))
	}
	h := bits.RotateLeft64(v[0], 1) + bits.RotateLeft64(v[1], 7) + bits.RotateLeft64(v[2], 12) + bits.RotateLeft64(v[3], 18) + uint64(len(payload))
	h ^= h >> 33
	h *= sumK2
	h ^= h >> 29
	h *= sumK1
	h ^= h >> 32
	return h
}

// kindWord is the slot's kind word: the kind and its flags (landed
// decodes them).
func (h header) kindWord() uint32 {
	w := h.kind
	if h.help {
		w |= kindHelp
	}
	if h.ordered {
		w |= kindOrdered
	}
	return w
}

// slotAt views slot i of a ring (or of the sender's staging slots).
func slotAt(base unsafe.Pointer, i uint64) []byte {
	return unsafe.Slice((*byte)(unsafe.Add(base, (i%slotCount)*slotSize)), slotSize)
}

// write fills a staging slot and returns the bytes to put.
func writeStaged(s []byte, seq uint64, h header, payload unsafe.Pointer) uint64 {
	le.PutUint64(s[hSeq:], seq)
	le.PutUint32(s[hKind:], h.kindWord())
	le.PutUint32(s[hLen:], uint32(h.n))
	le.PutUint64(s[hTotal:], h.total)
	le.PutUint64(s[hAux:], h.aux)
	if h.n > 0 {
		copy(s[headerSize:headerSize+h.n], unsafe.Slice((*byte)(payload), h.n))
	}
	le.PutUint64(s[hSum:], slotChecksum(s[:hSum], s[headerSize:headerSize+h.n]))
	return headerSize + h.n
}

// copyToRing (copy.go) copies a payload into a ring written in place.
// The receiver read those lines last: vector stores (Go's copy) first take
// each one back from its CPU, where `rep movsb` on some CPUs with ERMS
// writes them whole (internal/memcopy says which). It does so from
// movsbMin bytes; capi/chfast.c, which sends most messages of one node,
// follows the same decision (RingCopyByMovsb) and threshold
// (ACPCH_MOVSB_MIN).
const movsbMin = 512

// RingCopyByMovsb reports whether payloads of movsbMin bytes or more are
// copied into a ring with `rep movsb`.
func RingCopyByMovsb() bool { return ringByMovsb }

// writeOrdered writes slot s of the receiver's ring in place with this
// CPU's stores: header and payload, then the sequence number, so that the
// receiver, which reads the number first, finds the rest complete.
func writeOrdered(s []byte, seq uint64, h header, payload unsafe.Pointer) {
	if h.n > 0 {
		copyToRing(s[headerSize:headerSize+h.n], payload)
	}
	h.ordered = true
	le.PutUint32(s[hKind:], h.kindWord())
	le.PutUint32(s[hLen:], uint32(h.n))
	le.PutUint64(s[hTotal:], h.total)
	le.PutUint64(s[hAux:], h.aux)
	le.PutUint64(s[hSum:], 0)
	atomic.StoreUint64((*uint64)(unsafe.Pointer(&s[hSeq])), seq)
}

// landedSlot reports whether slot s holds the complete slot seq, and decodes
// its header.
//
// A put's bytes land while we read them (over ib the adapter's driver
// writes the slot as the receiver polls it), so the header is read once,
// into a copy, and both the decoding and the checksum use that copy: read
// twice, a header whose sequence number had landed but whose offset had
// not decoded the old offset, and the checksum, computed a moment later
// over memory that was whole by then, passed it (an 8 KiB channel message
// over ib failed every time with "continues a message at offset 0").
func landedSlot(s []byte, seq uint64) (header, bool) {
	if atomic.LoadUint64((*uint64)(unsafe.Pointer(&s[hSeq]))) != seq {
		return header{}, false
	}
	var hb [headerSize]byte
	copy(hb[:], s[:headerSize])
	h := header{
		kind:  le.Uint32(hb[hKind:]),
		n:     uint64(le.Uint32(hb[hLen:])),
		total: le.Uint64(hb[hTotal:]),
		aux:   le.Uint64(hb[hAux:]),
	}
	if h.n > slotPayload {
		return header{}, false // a header that is still half old
	}
	h.help, h.ordered, h.kind = h.kind&kindHelp != 0, h.kind&kindOrdered != 0, h.kind&^(kindHelp|kindOrdered)
	if h.ordered {
		// Written in order by this host's stores, the number last
		// (writeOrdered): what we read after the number is whole.
		return h, true
	}
	if slotChecksum(s[:hSum], s[headerSize:headerSize+h.n]) != le.Uint64(s[hSum:]) {
		return header{}, false
	}
	// The checksum held for the memory as it is now; the copy decoded
	// above must be that memory (a slot only ever changes from its old
	// bytes to its new ones, so equal now means equal then). Compared
	// here rather than summed from the copy, which would put the copy on
	// the heap.
	if le.Uint64(hb[hSeq:]) != seq || string(hb[:hSum+8]) != string(s[:hSum+8]) {
		return header{}, false
	}
	return h, true
}

// SlotSum is the checksum of a slot written by a put: over its header up
// to the checksum and its first n payload bytes. capi/chfast.c writes and
// checks slots with its own code for it; its test compares the two.
func SlotSum(slot []byte, n uint64) uint64 {
	return slotChecksum(slot[:hSum], slot[headerSize:headerSize+n])
}
