package udp

import "encoding/binary"

// Datagram layout (little-endian). Every datagram carries the job key and
// the sender's acknowledgement state for the receiver, so acknowledgements
// ride on whatever flows the other way and pure ACKs are only needed when
// nothing does.
//
//	 0  u64 key      job key; datagrams of other jobs are dropped
//	 8  u32 src      sender's physical index
//	12  u8  type
//	13  u8  status   for replies (core.Status)
//	14  u8  dups     duplicates received from the receiver since our last
//	                 acknowledgement to it (saturating): its retransmissions
//	                 that were needless (see peer.cwndUndo)
//	15  u8  -
//	16  u64 seq      reliable sequence number, from 1; 0 for pure ACKs
//	24  u64 ackNext  every seq < ackNext from the receiver has arrived
//	32  u64 ackBits  bit i: seq ackNext+1+i has arrived too (selective ACK)
//	40  u64 txMark   sender's next seq to the receiver (see op.mark)
//	48  ... body
const (
	offKey     = 0
	offSrc     = 8
	offType    = 12
	offStatus  = 13
	offDups    = 14
	offSeq     = 16
	offAckNext = 24
	offAckBits = 32
	offTxMark  = 40
	headerSize = 48
)

// Datagram types and their bodies.
const (
	tAck       = 0 // no body
	tPut       = 1 // opID, op dst GA, op size, fragment offset | data
	tGetReq    = 2 // opID, src GA, size
	tGetData   = 3 // opID, fragment offset | data
	tGetErr    = 4 // opID (status in header)
	tAtomic    = 5 // opID, op (u64), target GA, a, b
	tAtomicRep = 6 // opID, old value (status in header)
	tCtrl      = 7 // control message for the receiver's engine
	tPutErr    = 8 // opID (status in header)
)

const (
	putHeader     = 32
	getDataHeader = 16
	// maxSmallBody: the bodies that fit in a datagram's own array
	// (dgram.small): every fixed one (tAtomic's 40 bytes is the largest)
	// and the engine's control messages (a delegated copy: 42 bytes).
	maxSmallBody = 48
)

var le = binary.LittleEndian

type header struct {
	key     uint64
	src     uint32
	typ     uint8
	status  uint8
	dups    uint8
	seq     uint64
	ackNext uint64
	ackBits uint64
	txMark  uint64
}

func parseHeader(b []byte) (h header, ok bool) {
	if len(b) < headerSize {
		return h, false
	}
	h.key = le.Uint64(b[offKey:])
	h.src = le.Uint32(b[offSrc:])
	h.typ = b[offType]
	h.status = b[offStatus]
	h.dups = b[offDups]
	h.seq = le.Uint64(b[offSeq:])
	h.ackNext = le.Uint64(b[offAckNext:])
	h.ackBits = le.Uint64(b[offAckBits:])
	h.txMark = le.Uint64(b[offTxMark:])
	return h, true
}

// putFixedHeader writes the parts of the header that never change on
// retransmission.
func putFixedHeader(b []byte, key uint64, src uint32, typ, status uint8, seq uint64) {
	le.PutUint64(b[offKey:], key)
	le.PutUint32(b[offSrc:], src)
	b[offType] = typ
	b[offStatus] = status
	b[14], b[15] = 0, 0
	le.PutUint64(b[offSeq:], seq)
}

// putAckState refreshes the acknowledgement fields just before sending.
func putAckState(b []byte, ackNext, ackBits, txMark uint64) {
	le.PutUint64(b[offAckNext:], ackNext)
	le.PutUint64(b[offAckBits:], ackBits)
	le.PutUint64(b[offTxMark:], txMark)
}
