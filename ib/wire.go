package ib

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"

	"github.com/libacp/libacp/core"
)

var le = binary.LittleEndian

// Messages carried by RC SENDs on a peer's colour-0 connection. The first
// byte is the type; everything fits one receive buffer (msgSize bytes).
const (
	mCtrl      = 1 // payload: a core control message for Host.Deliver
	mAtomicReq = 2 // op, id, ga, a, b: apply at the owner's CPU
	mAtomicRep = 3 // status, id, old value
	mKeyReq    = 4 // seg, ga: what is the key of this registration?
	mKeyRep    = 5 // status, colour, seg, serial, rkey, base, size, offBase
	mInval     = 6 // seg, serial: forget this key (the owner unregisters)
	mInvalAck  = 7 // seg, serial: forgotten, and nothing of ours still uses it
)

// isRequest: a message a peer sends on its own initiative, as opposed to
// an answer to one of ours.
func isRequest(typ byte) bool {
	return typ == mCtrl || typ == mAtomicReq || typ == mKeyReq || typ == mInval
}

const (
	atomicReqLen = 40
	atomicRepLen = 24
	keyReqLen    = 16
	keyRepLen    = 40
	invalLen     = 12
)

func encodeAtomicReq(b []byte, id uint64, op core.AtomicOp, ga core.GA, x, y uint64) []byte {
	b = b[:atomicReqLen]
	clear(b[:8])
	b[0], b[1] = mAtomicReq, byte(op)
	le.PutUint64(b[8:], id)
	le.PutUint64(b[16:], uint64(ga))
	le.PutUint64(b[24:], x)
	le.PutUint64(b[32:], y)
	return b
}

func encodeAtomicRep(b []byte, id uint64, st core.Status, old uint64) []byte {
	b = b[:atomicRepLen]
	clear(b[:8])
	b[0], b[1] = mAtomicRep, byte(st)
	le.PutUint64(b[8:], id)
	le.PutUint64(b[16:], old)
	return b
}

func encodeKeyReq(b []byte, seg int, ga core.GA) []byte {
	b = b[:keyReqLen]
	clear(b[:4])
	b[0] = mKeyReq
	le.PutUint32(b[4:], uint32(seg))
	le.PutUint64(b[8:], uint64(ga))
	return b
}

// keyReply is the owner's answer to mKeyReq.
type keyReply struct {
	status  core.Status
	color   int
	seg     int
	serial  uint32
	rkey    uint32
	base    uint64 // address of the region's first byte at the owner
	size    uint64
	offBase uint64 // GA offset of that byte
	// readOnly: peers may only read the region (flag keyReadOnly).
	readOnly bool
}

// Flags of a key reply (byte 3).
const keyReadOnly = 1

func encodeKeyRep(b []byte, k keyReply) []byte {
	b = b[:keyRepLen]
	b[0], b[1], b[2], b[3] = mKeyRep, byte(k.status), byte(k.color), 0
	if k.readOnly {
		b[3] = keyReadOnly
	}
	le.PutUint32(b[4:], uint32(k.seg))
	le.PutUint32(b[8:], k.serial)
	le.PutUint32(b[12:], k.rkey)
	le.PutUint64(b[16:], k.base)
	le.PutUint64(b[24:], k.size)
	// offBase < 64: kept in 8 bytes anyway for a simple layout
	le.PutUint64(b[32:], k.offBase)
	return b
}

func decodeKeyRep(b []byte) keyReply {
	return keyReply{status: core.Status(b[1]), color: int(b[2]), seg: int(le.Uint32(b[4:])),
		serial: le.Uint32(b[8:]), rkey: le.Uint32(b[12:]), base: le.Uint64(b[16:]),
		size: le.Uint64(b[24:]), offBase: le.Uint64(b[32:]), readOnly: b[3]&keyReadOnly != 0}
}

func encodeInval(b []byte, typ byte, seg int, serial uint32) []byte {
	b = b[:invalLen]
	b[0], b[1], b[2], b[3] = typ, 0, 0, 0
	le.PutUint32(b[4:], uint32(seg))
	le.PutUint32(b[8:], serial)
	return b
}

// validLen is the length each message type must have (mCtrl: at least 1).
func validLen(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	switch b[0] {
	case mCtrl:
		return true
	case mAtomicReq:
		return len(b) == atomicReqLen
	case mAtomicRep:
		return len(b) == atomicRepLen
	case mKeyReq:
		return len(b) == keyReqLen
	case mKeyRep:
		return len(b) == keyRepLen
	case mInval, mInvalAck:
		return len(b) == invalLen
	}
	return false
}

// ---- address record (start-up exchange) ----

// A process's address record: its connection service's IP (16 bytes,
// IPv4 mapped) and TCP port (2, big-endian), and flags (1).
const (
	addrAtomicGlob = 1 // every device of the process reports IBV_ATOMIC_GLOB
	addrNICAll     = 2 // --acp-ib-atomics nic
)

func encodeAddress(ip net.IP, port int, atomicGlob, nicAll bool) []byte {
	b := make([]byte, addressBytes)
	copy(b, ip.To16())
	binary.BigEndian.PutUint16(b[16:], uint16(port))
	if atomicGlob {
		b[18] |= addrAtomicGlob
	}
	if nicAll {
		b[18] |= addrNICAll
	}
	return b
}

func decodeAddress(b []byte) (ip net.IP, port int) {
	return net.IP(append([]byte(nil), b[:16]...)), int(binary.BigEndian.Uint16(b[16:]))
}

// peerAtomicGlob reports whether the process of address record b executes
// adapters' atomics atomically with its CPU on every device (false for a
// process on which the transport did not open: its record is zeros).
func peerAtomicGlob(b []byte) bool { return b[18]&addrAtomicGlob != 0 }

// peerNICAll reports whether the process of address record b runs with
// --acp-ib-atomics nic.
func peerNICAll(b []byte) bool { return b[18]&addrNICAll != 0 }

// ---- connection handshake (TCP) ----

// starterKey describes one of a peer's starter memories.
type starterKey struct {
	base, size, offBase uint64
	rkey                uint32
}

// qpInfo is what one side of a connection tells the other.
type qpInfo struct {
	lid       uint16
	mtu       uint8
	linkLayer uint8
	qpn, psn  uint32
	gid       [16]byte
	starters  [core.SegFirstUser]starterKey
}

// hello is a handshake record: the initiator's request and the acceptor's
// answer have the same shape.
type hello struct {
	jobKey   uint64
	from, to uint32
	path     uint16
	info     qpInfo
}

var helloMagic = [8]byte{'A', 'C', 'P', 'I', 'B', 'v', '1', 0}

const helloLen = 56 + core.SegFirstUser*32

func (h *hello) encode() []byte {
	b := make([]byte, helloLen)
	copy(b, helloMagic[:])
	le.PutUint64(b[8:], h.jobKey)
	le.PutUint32(b[16:], h.from)
	le.PutUint32(b[20:], h.to)
	le.PutUint16(b[24:], h.path)
	le.PutUint16(b[26:], h.info.lid)
	le.PutUint32(b[28:], h.info.qpn)
	le.PutUint32(b[32:], h.info.psn)
	b[36], b[37] = h.info.mtu, h.info.linkLayer
	copy(b[40:56], h.info.gid[:])
	for i, s := range h.info.starters {
		o := 56 + 32*i
		le.PutUint64(b[o:], s.base)
		le.PutUint64(b[o+8:], s.size)
		le.PutUint64(b[o+16:], s.offBase)
		le.PutUint32(b[o+24:], s.rkey)
	}
	return b
}

func decodeHello(b []byte) (hello, error) {
	var h hello
	if len(b) != helloLen {
		return h, fmt.Errorf("handshake of %d bytes, want %d", len(b), helloLen)
	}
	if [8]byte(b[:8]) != helloMagic {
		return h, errors.New("not an ACP ib handshake (another program on this port, or another libacp version)")
	}
	h.jobKey = le.Uint64(b[8:])
	h.from = le.Uint32(b[16:])
	h.to = le.Uint32(b[20:])
	h.path = le.Uint16(b[24:])
	h.info.lid = le.Uint16(b[26:])
	h.info.qpn = le.Uint32(b[28:])
	h.info.psn = le.Uint32(b[32:])
	h.info.mtu, h.info.linkLayer = b[36], b[37]
	copy(h.info.gid[:], b[40:56])
	for i := range h.info.starters {
		o := 56 + 32*i
		h.info.starters[i] = starterKey{base: le.Uint64(b[o:]), size: le.Uint64(b[o+8:]),
			offBase: le.Uint64(b[o+16:]), rkey: le.Uint32(b[o+24:])}
	}
	return h, nil
}
