package ib

/*
#include <stdlib.h>
#include "fast.h"
*/
import "C"

import (
	"fmt"
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/libacp/libacp/core"
)

// The C fast path's part of this transport (fast.h): copies between this
// process's memory and a peer's starter memory on colour 0, posted and
// completed by the application thread in C. This file keeps the C records
// in step with the connections and hands what the C side leaves (errors,
// the Go side's own completions) to the ordinary code.

const (
	fastTag        = C.ACPIB_FAST_TAG
	fastPostFailed = C.ACPIB_POST_FAILED
	fastSlots      = C.ACPIB_FAST_SLOTS
	fastStash      = C.ACPIB_FAST_STASH
	fastTable      = C.ACPIB_FAST_TABLE
	fastBytes      = C.sizeof_acpib_fast
	fastConnBytes  = C.sizeof_acpib_fastconn
	fastKeyBytes   = C.sizeof_acpib_fastkey
	fastRegBytes   = C.sizeof_acpib_fastreg
	fastRegs       = C.ACPIB_FAST_REGS
)

// fastHost is what the engine offers a transport with C code for the fast
// path (core Engine).
type fastHost interface {
	SetFastRemote(r unsafe.Pointer)
	FinishFast(h core.Handle, peer int, get bool, ga core.GA, n uint64, err error)
}

// fastShared is the part of the C record the Go side uses too.
type fastShared struct {
	pollLock  *int32         // one completion queue poller (C or Go)
	appPolls  *atomic.Uint64 // the application polled or issued (the progress goroutine then need not spin)
	idleSleep *atomic.Uint32 // 1: the progress goroutine sleeps for idleWait, events for solicited messages only
	inflight  *atomic.Int32  // work requests the C side posted, not completed
	clock     *atomic.Int64  // the coarse clock (endpoint.now), which the C side stamps its work with
	// acksWaiting: a revocation waits for the C side's work with the key
	// to end; the C side wakes the progress goroutine when it has.
	acksWaiting *atomic.Uint32
}

// newFast allocates the C record for colour 0's device; the endpoint's
// shared words live in it.
func (e *endpoint) newFast() error {
	p := e.paths[0]
	maxMsg := uint64(maxChunk)
	if p.maxMsg > 0 {
		maxMsg = min(maxMsg, uint64(p.maxMsg))
	}
	x := C.acpib_fast_new(p.dev.v, C.int(e.wakeFD), C.uint32_t(maxMsg), C.uint32_t(e.keys.size))
	if x == nil {
		return fmt.Errorf("cannot allocate %d bytes for the fast path", C.sizeof_acpib_fast)
	}
	e.fast, e.fastDev = x, p.dev.index
	e.pollLock = (*int32)(unsafe.Pointer(&x.poll_lock))
	e.appPolls = (*atomic.Uint64)(unsafe.Pointer(&x.app_polls))
	e.idleSleep = (*atomic.Uint32)(unsafe.Pointer(&x.idle_sleep))
	e.inflight = (*atomic.Int32)(unsafe.Pointer(&x.inflight))
	e.acksWaiting = (*atomic.Uint32)(unsafe.Pointer(&x.acks_waiting))
	clock := (*atomic.Int64)(unsafe.Pointer(&x.clock))
	clock.Store(e.clock.Load())
	e.clock = clock
	return nil
}

// lendFast gives the engine the C code once the GA layout is known.
func (e *endpoint) lendFast() {
	if fh, ok := e.host.(fastHost); ok && e.fast != nil {
		e.fh = fh
		fh.SetFastRemote(unsafe.Pointer(e.fast))
	}
}

// withdrawFast takes the C code back from the engine (Close).
func (e *endpoint) withdrawFast() {
	if e.fh != nil {
		e.fh.SetFastRemote(nil)
	}
}

// fastMapped publishes a same-host peer's memory registered here
// (registerMapped) for the C side, which may then post copies from and to
// it (it stays until the endpoint closes). Locked.
func (e *endpoint) fastMapped(lr *localRegion) {
	if e.fast != nil {
		C.acpib_fast_mapped(e.fast, C.uint64_t(lr.base), C.uint64_t(lr.size), C.uint32_t(lr.lkeys[e.fastDev]))
	}
}

// fastLocal publishes or withdraws our registration lr for the C side:
// starter memory by address (its copies name it by pointer), other
// segments by number. Withdrawing returns the segment whose users the
// caller waits for (-1: none). Locked.
func (e *endpoint) fastLocal(lr *localRegion, valid bool) (withdrawn int) {
	seg := lr.r.Seg
	if e.fast == nil || len(lr.lkeys) == 0 {
		return -1
	}
	v := C.int(cBool(valid))
	lkey := C.uint32_t(lr.lkeys[e.fastDev])
	switch {
	case seg <= core.SegStarterDL:
		C.acpib_fast_local(e.fast, C.int(seg), C.uint64_t(lr.base), C.uint64_t(lr.size), lkey, v)
	case seg >= core.SegFirstUser:
		r := C.acpib_fastreg{lkey: lkey, rkey: C.uint32_t(lr.rkeys[e.fastDev]), color: C.uint32_t(lr.r.Color), base: C.uint64_t(lr.base), size: C.uint64_t(lr.size), off_base: C.uint64_t(lr.r.OffBase),
			read_only: cBool(lr.readOnly)}
		// Refused (the entry still in use): the Go side serves it.
		_ = C.acpib_fast_reg(e.fast, C.uint32_t(seg), &r, v)
		if !valid {
			return seg
		}
	}
	return -1
}

// fastRegUsers counts the C side's work requests that still use our
// registration of seg.
func (e *endpoint) fastRegUsers(seg int) int {
	if e.fast == nil || seg < 0 {
		return 0
	}
	return int(C.acpib_fast_reg_users(e.fast, C.uint32_t(seg)))
}

// fastKeyPut lends the C side a peer's key of colour 0 that it just
// learnt, unless the key's slot there still waits for an old key's work
// to end (a confirmation is pending on it). Locked.
func (e *endpoint) fastKeyPut(k *rkey) {
	if e.fast == nil || k.color != 0 {
		return
	}
	slot := int(C.acpib_fast_key_slot(e.fast, C.int32_t(k.peer), C.int32_t(k.seg)))
	for _, a := range e.acks {
		if a.fastSlot == slot {
			return
		}
	}
	ck := C.acpib_fastkey{peer: C.int32_t(k.peer), seg: C.int32_t(k.seg), serial: C.uint32_t(k.serial), rkey: C.uint32_t(k.key),
		color: C.uint32_t(k.color), base: C.uint64_t(k.base), size: C.uint64_t(k.size), off_base: C.uint64_t(k.offBase), read_only: cBool(k.readOnly)}
	k.inFast = C.acpib_fast_key_put(e.fast, &ck) != 0
}

// fastKeyDrop withdraws a revoked key from the C side; it returns the
// slot whose users must drop to 0 before the revocation is confirmed, or
// -1. Locked.
func (e *endpoint) fastKeyDrop(peer, seg int, serial uint32) int {
	if e.fast == nil {
		return -1
	}
	return int(C.acpib_fast_key_drop(e.fast, C.int32_t(peer), C.int32_t(seg), C.uint32_t(serial)))
}

// fastKeyUsers counts the C side's work requests that still use key slot s.
func (e *endpoint) fastKeyUsers(s int) int {
	if e.fast == nil || s < 0 {
		return 0
	}
	return int(C.acpib_fast_key_users(e.fast, C.uint32_t(s)))
}

// cKeySlot is the C side's slot of (peer, seg) in a table of n keys
// (tests: keyCache.slot must give the same).
func cKeySlot(n, peer, seg int) int {
	return int(C.acpib_key_slot(C.uint32_t(n), C.int32_t(peer), C.int32_t(seg)))
}

// bareFast gives e a C record of nkeys keys without a device, and the
// function that frees it (tests of the tables, on machines without one).
func (e *endpoint) bareFast(nkeys int) (free func()) {
	e.fast = C.acpib_fast_new(nil, -1, 1<<20, C.uint32_t(nkeys))
	return func() { C.acpib_fast_free(e.fast); e.fast = nil }
}

// fastEntries reads back the C side's key of (peer, seg) and its entry
// for our registration of seg: whether each is valid, and read-only
// (tests: what the Go side publishes must arrive whole).
func (e *endpoint) fastEntries(peer, seg int) (key, keyReadOnly, reg, regReadOnly bool) {
	if e.fast.keys != nil {
		k := unsafe.Slice(e.fast.keys, e.fast.nkeys)[C.acpib_fast_key_slot(e.fast, C.int32_t(peer), C.int32_t(seg))]
		key = k.valid != 0 && int(k.peer) == peer && int(k.seg) == seg
		keyReadOnly = key && k.read_only != 0
	}
	if e.fast.regs != nil && seg < C.ACPIB_FAST_REGS {
		g := unsafe.Slice(e.fast.regs, C.ACPIB_FAST_REGS)[seg]
		reg = g.valid != 0
		regReadOnly = reg && g.read_only != 0
	}
	return
}

// holdFast counts a use of the C side's key of (peer, seg) (key true)
// or of our registration seg, as a work request posted there would, until
// release runs; ok false when the C side does not hold it (tests).
func (e *endpoint) holdFast(key bool, peer, seg int) (release func(), ok bool) {
	k := C.int(cBool(key))
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.fast == nil {
		return nil, false
	}
	s := C.acpib_fast_hold(e.fast, k, C.int32_t(peer), C.uint32_t(seg))
	if s < 0 {
		return nil, false
	}
	x := e.fast
	return func() { C.acpib_fast_unhold(x, k, s) }, true
}

// fastConnUp describes a ready colour-0 connection to the C side. Locked.
func (e *endpoint) fastConnUp(c *conn) {
	if e.fh == nil || c.path != 0 || c.fc != nil {
		return
	}
	fc := C.acpib_fast_conn_new()
	if fc == nil {
		return // the ordinary path serves this peer
	}
	fc.qp = c.qp
	fc.rank = C.int32_t(e.host.PeerRank(c.peer))
	fc.peer = C.int32_t(c.peer)
	fc.inline_max = C.uint32_t(c.inline)
	if c.peer == e.me {
		fc.loopback = 1 // our registrations' keys are in the C side's table of them
	}
	for seg := range fc.starters {
		s := c.remote.starters[seg]
		st := &fc.starters[seg]
		st.base, st.size, st.off_base, st.rkey = C.uint64_t(s.base), C.uint64_t(s.size), C.uint64_t(s.offBase), C.uint32_t(s.rkey)
		if s.size > 0 {
			st.valid = 1
		}
	}
	c.fc = fc
	// From now on the queue pair's entries are counted where the C side
	// counts too (nothing was posted before the connection was ready).
	fc.inflight = C.int32_t(c.sq.Load())
	c.sq = (*atomic.Int32)(unsafe.Pointer(&fc.inflight))
	C.acpib_fast_conn_up(e.fast, fc)
}

// fastConnDown stops the C side from posting to c. Locked.
func (e *endpoint) fastConnDown(c *conn) {
	if c.fc != nil {
		C.acpib_fast_conn_down(c.fc)
	}
}

// freeFast frees the C records once nothing can use them (release).
func (e *endpoint) freeFast() {
	if e.fast == nil {
		return
	}
	for _, c := range e.conns {
		if c != nil && c.fc != nil {
			c.sq = new(atomic.Int32) // it counted in the record
			C.free(unsafe.Pointer(c.fc))
			c.fc = nil
		}
	}
	// The shared words outlive the record in Go variables: point them at
	// Go memory before the record goes.
	e.pollLock, e.appPolls, e.idleSleep, e.inflight = new(int32), new(atomic.Uint64), new(atomic.Uint32), new(atomic.Int32)
	e.acksWaiting = new(atomic.Uint32)
	clock := new(atomic.Int64)
	clock.Store(e.clock.Load())
	e.clock = clock
	C.acpib_fast_free(e.fast)
	e.fast = nil
}

// takeStash moves completions the C side polled and left to us.
// pollLock held.
func (e *endpoint) takeStash(out *[pollBatch]wc) int {
	if e.fast == nil || e.fast.nstash == 0 { // a field read, not a call into C
		return 0
	}
	return int(C.acpib_fast_take_stash(e.fast, &out[0], pollBatch))
}

// isFastWC reports whether w completes a work request of the C side.
func isFastWC(w *wc) bool { return uint64(w.wr_id)&(recvTag|fastTag) == fastTag }

// handleFastWC finishes an operation of the C side whose completion the
// Go side polled, or which failed. Locked.
func (e *endpoint) handleFastWC(w *wc) {
	var h C.int64_t
	var peer, get C.int32_t
	var ga, n C.uint64_t
	C.acpib_fast_release(e.fast, w.wr_id, &h, &peer, &ga, &n, &get)
	var err error
	if w.status != wcSuccess {
		c := e.conns[int(peer)*len(e.paths)]
		switch {
		case w.status == fastPostFailed:
			err = fmt.Errorf("ibv_post_send on %s: %v", c.p.name, syscall.Errno(w.vendor_err))
		default:
			kind := opPut
			if get != 0 {
				kind = opGet
			}
			err = e.wcError(c, &slot{kind: slotData, op: &op{kind: kind}}, uint32(w.status))
		}
		if w.status != wcFlushErr {
			e.connFailed(c, err)
		}
	}
	if h == 0 {
		return // a barrier's arrival (a signal): its wait learns of a failure from the peer's state
	}
	e.comps = append(e.comps, completion{fastDone{e.fh, core.Handle(h), int(peer), get != 0, core.GA(ga), uint64(n)}, 0, err})
}

// holdSQ takes an entry of c's send queue for the next work request drain
// posts, unless it holds one already; false when the queue pair is full.
// Once the C side posts to c, both sides take entries from one count.
// Locked.
func (e *endpoint) holdSQ(c *conn) bool {
	if c.sqHeld {
		return true
	}
	if c.sq.Add(1) <= qpDepth {
		c.sqHeld = true
		return true
	}
	c.sq.Add(-1)
	if c.fc == nil {
		return false // only our own completions free entries: drain runs then
	}
	// The C side holds entries. Be found by the progress loop first,
	// then ask the C side to wake it when it frees one, then look once
	// more: an entry freed before the request was seen is found here.
	if !c.sqBlocked {
		c.sqBlocked = true
		e.sqBlocked = append(e.sqBlocked, c)
		e.sqBlockedFlag.Store(true)
	}
	(*atomic.Uint32)(unsafe.Pointer(&c.fc.go_waiting)).Store(1)
	if c.sq.Add(1) <= qpDepth {
		c.sqHeld = true
		return true
	}
	c.sq.Add(-1)
	return false
}

// unholdSQ gives back an entry drain took and did not post. Locked.
func (e *endpoint) unholdSQ(c *conn) {
	if c.sqHeld {
		c.sqHeld = false
		c.sq.Add(-1)
	}
}

// drainSQBlocked drains the connections whose work waited for an entry the
// C side held. Locked.
func (e *endpoint) drainSQBlocked() {
	list := e.sqBlocked
	e.sqBlocked = nil
	e.sqBlockedFlag.Store(false)
	for _, c := range list {
		c.sqBlocked = false
		e.drain(c)
	}
}

// oldestFast is the peer of the oldest work of the C side in flight, and
// when that was posted (endpoint.now); peer -1 when there is none.
func (e *endpoint) oldestFast() (peer int, posted int64) {
	if e.fast == nil || e.inflight.Load() == 0 {
		return -1, 0
	}
	var t C.int64_t
	peer = int(C.acpib_fast_oldest(e.fast, &t))
	return peer, int64(t)
}

// fastDone is the completion of an operation of the C side.
type fastDone struct {
	fh   fastHost
	h    core.Handle
	peer int
	get  bool
	ga   core.GA
	n    uint64
}

func (d fastDone) OnComplete(_ uint64, err error) {
	d.fh.FinishFast(d.h, d.peer, d.get, d.ga, d.n, err)
}

// PausePolling keeps every poller (C or Go) away from the completion
// queues of this process's ib endpoints until resume runs: work requests
// then stay in flight, for tests that fill a queue pair.
func PausePolling() (resume func()) {
	endpoints.Lock()
	list := append([]*endpoint(nil), endpoints.list...)
	endpoints.Unlock()
	for _, e := range list {
		for !atomic.CompareAndSwapInt32(e.pollLock, 0, 1) {
			core.Yield()
		}
	}
	return func() {
		for _, e := range list {
			atomic.StoreInt32(e.pollLock, 0)
		}
	}
}

// FastSignals counts the writes the C side posted for barriers (a
// barrier's arrivals, core/fastremote.h's signal) in this process's ib
// endpoints, for tests.
func FastSignals() uint64 {
	endpoints.Lock()
	defer endpoints.Unlock()
	var n uint64
	for _, e := range endpoints.list {
		if e.fast != nil {
			n += uint64(atomic.LoadUint64((*uint64)(unsafe.Pointer(&e.fast.signals))))
		}
	}
	return n
}

// cBool is b as C's 0 or 1.
func cBool(b bool) C.uint32_t {
	if b {
		return 1
	}
	return 0
}
