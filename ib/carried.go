package ib

import (
	"unsafe"

	"github.com/libacp/libacp/core"
)

// A carried key (core.KeyCarrier) is the owner's answer to a key request
// (keyReply, mKeyRep), packed beside the GA it names instead of sent: the
// peer's read resolves with it as with a cached key, but it never enters
// the cache (nor the C side's table), so the owner gives it to nobody it
// must later revoke it from (lr.fetchers). Over Soft-RoCE a channel's
// rendezvous message otherwise cost a key request served by the sender's
// CPU before the read, and a revocation at the sender's unregistration
// that waited for the receiver's confirmation, itself queued behind the
// next message's read: 2.6 ms of each 64 KiB message, 17.6 ms of each
// 1 MiB one (BENCHMARKS.md, 2026-11-29, fifth section).

// Packing must fit core's bound.
var _ [core.CarriedKeySize - keyRepLen]struct{}

// PackKey implements core.KeyCarrier.
func (e *endpoint) PackKey(r *core.Region, b []byte) int {
	if len(b) < keyRepLen {
		return 0
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	lr := e.byRegion[r]
	if lr == nil || len(lr.rkeys) == 0 || r.Seg < core.SegFirstUser || r.Color >= len(e.paths) {
		return 0
	}
	return len(encodeKeyRep(b, e.keyReplyOf(lr)))
}

// GetCarried implements core.KeyCarrier: an RDMA READ with the owner's
// packed key, or an ordinary one when the key does not name src's
// segment of that peer.
func (e *endpoint) GetCarried(peer int, src core.GA, dst unsafe.Pointer, n uint64, key []byte, c core.Completion) {
	o := &op{kind: opGet, c: c, peer: peer, ga: src, local: dst, n: n}
	if len(key) == keyRepLen && key[0] == mKeyRep && peer != e.me {
		if k := decodeKeyRep(key); k.status == core.StatusOK && k.seg == e.layout.Seg(src) && k.seg >= core.SegFirstUser {
			rk := rkeyOf(peer, k)
			o.carried = &rk
			e.carriedReads.Add(1)
		}
	}
	e.issue(o, true)
}
