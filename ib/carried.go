package ib

import (
	"unsafe"

	"github.com/libacp/libacp/core"
)

// A carried key (core.KeyCarrier) is what a key reply carries, packed by
// the owner: the peer's read resolves with it as with a cached key, but
// it never enters the cache (nor the C side's table), so the owner gives
// it to nobody it must later revoke it from (lr.fetchers). Over Soft-RoCE
// a channel's rendezvous message otherwise cost a key request served by
// the sender's CPU before the read, and a revocation at the sender's
// unregistration that waited for the receiver's confirmation, itself
// queued behind the next message's read: 2.6 ms of each 64 KiB message,
// 17.6 ms of each 1 MiB one (BENCHMARKS.md, 2026-11-29, fifth section).
const (
	ckSeg     = 0  // uint32: segment of the registration
	ckSerial  = 4  // uint32: its serial (which registration of the segment)
	ckRkey    = 8  // uint32: the rkey of the device of its colour's path
	ckColor   = 12 // uint32: its colour
	ckBase    = 16 // uint64: address of its first byte
	ckSize    = 24 // uint64: its size
	ckOffBase = 32 // uint64: GA offset of its first byte
	ckLen     = 40
)

// Packing must fit core's bound.
var _ [core.CarriedKeySize - ckLen]struct{}

// PackKey implements core.KeyCarrier.
func (e *endpoint) PackKey(r *core.Region, b []byte) int {
	if len(b) < ckLen {
		return 0
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	lr := e.byRegion[r]
	if lr == nil || len(lr.rkeys) == 0 || r.Seg < core.SegFirstUser || r.Color >= len(e.paths) {
		return 0
	}
	le.PutUint32(b[ckSeg:], uint32(r.Seg))
	le.PutUint32(b[ckSerial:], lr.serial)
	le.PutUint32(b[ckRkey:], lr.rkeys[e.paths[r.Color].dev.index])
	le.PutUint32(b[ckColor:], uint32(r.Color))
	le.PutUint64(b[ckBase:], uint64(lr.base))
	le.PutUint64(b[ckSize:], lr.size)
	le.PutUint64(b[ckOffBase:], r.OffBase)
	return ckLen
}

// GetCarried implements core.KeyCarrier: an RDMA READ with the owner's
// packed key, or an ordinary one when the key does not name src's
// segment of that peer.
func (e *endpoint) GetCarried(peer int, src core.GA, dst unsafe.Pointer, n uint64, key []byte, c core.Completion) {
	o := &op{kind: opGet, c: c, peer: peer, ga: src, local: dst, n: n}
	if k, ok := unpackKey(peer, key); ok && int(k.seg) == e.layout.Seg(src) && k.seg >= core.SegFirstUser && peer != e.me {
		o.carried = &k
		e.carriedReads.Add(1)
	}
	e.issue(o, true)
}

// unpackKey decodes a key PackKey packed at peer.
func unpackKey(peer int, b []byte) (rkey, bool) {
	if len(b) != ckLen {
		return rkey{}, false
	}
	return rkey{
		valid:   true,
		peer:    int32(peer),
		seg:     int32(le.Uint32(b[ckSeg:])),
		serial:  le.Uint32(b[ckSerial:]),
		key:     le.Uint32(b[ckRkey:]),
		color:   int(le.Uint32(b[ckColor:])),
		base:    le.Uint64(b[ckBase:]),
		size:    le.Uint64(b[ckSize:]),
		offBase: le.Uint64(b[ckOffBase:]),
	}, true
}
