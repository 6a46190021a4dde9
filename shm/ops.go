package shm

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/libacp/libacp/core"
)

// Record types in the rings.
const (
	mCtrl      = 1 // control message for the engine
	mAtomic    = 2 // opID, op, target, a, b: the owner applies it
	mAtomicRep = 3 // opID, status, old value
	mPut       = 4 // opID, op dst, op size, offset | data: the owner writes it
	mPutRep    = 5 // opID, status, bytes
	mGetReq    = 6 // opID, src, size: the owner streams the data back
	mGetData   = 7 // opID, offset | data
	mGetErr    = 8 // opID, status
)

// chunkSize is the data carried per record when the owner serves a copy.
func (e *endpoint) chunkSize() int { return min(e.ringSize/4, 32<<10) }

type opKind uint8

const (
	opPut opKind = iota
	opGet
	opAtomic
)

// op is an operation the owner serves for us, waiting for its answer.
type op struct {
	id       uint64
	kind     opKind
	peer     *peer
	c        core.Completion
	dst      unsafe.Pointer // get
	size     uint64
	received uint64 // bytes acknowledged (put) or arrived (get)
	failed   core.Status
}

// stream produces the records of a copy the owner serves: a put we send,
// or the data of a get we serve.
type stream struct {
	typ    uint8
	opID   uint64
	src    unsafe.Pointer // put: our memory
	srcGA  core.GA        // get data: our memory, checked per record
	dstGA  core.GA        // put: the whole destination
	size   uint64
	off    uint64
	once   bool // a zero-byte copy still sends one record
	failed bool
}

// Put implements core.Transport. Starter memory is mapped, and the engine
// copies into it itself; Put sees registered memory (copied with
// process_vm_writev) and what could not be mapped.
func (e *endpoint) Put(i int, dst core.GA, src unsafe.Pointer, n uint64, c core.Completion) {
	if p := e.Map(i, dst, n); p != nil {
		// src may be the program's memory (the engine copies between
		// mapped ends itself; this path is rare): guarded.
		if !core.GuardedCopy(unsafe.Slice((*byte)(p), n), unsafe.Slice((*byte)(src), n)) {
			c.OnComplete(0, core.StatusFault.Err())
			return
		}
		c.OnComplete(0, nil)
		return
	}
	p, err := e.peerOf(i)
	if err != nil {
		e.failed(err)
		return
	}
	if p.cmaOK {
		addr, st := p.mirror.acquire(e.host.Layout(), dst, n)
		if st != core.StatusOK {
			c.OnComplete(0, st.Err())
			return
		}
		err := cmaWrite(p.pid, addr, src, n)
		p.mirror.release(e.host.Layout().Seg(dst))
		if err == nil || !e.cmaRefused(p, err) {
			c.OnComplete(0, cmaError(err))
			return
		}
	}
	// The owner serves this copy from our ring (the kernel refused our
	// copies): the ring's copy reads src on our goroutines, where an
	// unreadable page (protected since its registration) would be a
	// signal. This path is rare; check it all here.
	if !core.Readable(src, n) {
		c.OnComplete(0, core.StatusFault.Err())
		return
	}
	e.mu.Lock()
	o := e.newOp(opPut, p, c)
	o.size = n
	e.addStream(p, &stream{typ: mPut, opID: o.id, src: src, dstGA: dst, size: n, once: true})
	e.flushLocked(p)
	e.mu.Unlock()
}

// Get implements core.Transport.
func (e *endpoint) Get(i int, src core.GA, dst unsafe.Pointer, n uint64, c core.Completion) {
	if p := e.Map(i, src, n); p != nil {
		if !core.GuardedCopy(unsafe.Slice((*byte)(dst), n), unsafe.Slice((*byte)(p), n)) {
			c.OnComplete(0, core.StatusFault.Err())
			return
		}
		c.OnComplete(0, nil)
		return
	}
	p, err := e.peerOf(i)
	if err != nil {
		e.failed(err)
		return
	}
	if p.cmaOK {
		addr, st := p.mirror.acquire(e.host.Layout(), src, n)
		if st != core.StatusOK {
			c.OnComplete(0, st.Err())
			return
		}
		err := cmaRead(p.pid, addr, dst, n)
		p.mirror.release(e.host.Layout().Seg(src))
		if err == nil || !e.cmaRefused(p, err) {
			c.OnComplete(0, cmaError(err))
			return
		}
	}
	e.mu.Lock()
	o := e.newOp(opGet, p, c)
	o.dst, o.size = dst, n
	var b [24]byte
	le.PutUint64(b[0:], o.id)
	le.PutUint64(b[8:], uint64(src))
	le.PutUint64(b[16:], n)
	e.sendLocked(p, mGetReq, b[:])
	e.mu.Unlock()
}

// Atomic implements core.Transport. Atomics on memory that is not mapped
// here are applied by the owner's CPU, like every other atomic on it.
func (e *endpoint) Atomic(i int, aop core.AtomicOp, target core.GA, a, b uint64, c core.Completion) {
	p, err := e.peerOf(i)
	if err != nil {
		e.failed(err)
		return
	}
	e.mu.Lock()
	o := e.newOp(opAtomic, p, c)
	var r [40]byte
	le.PutUint64(r[0:], o.id)
	r[8] = byte(aop)
	le.PutUint64(r[16:], uint64(target))
	le.PutUint64(r[24:], a)
	le.PutUint64(r[32:], b)
	e.sendLocked(p, mAtomic, r[:])
	e.mu.Unlock()
}

// Send implements core.Transport.
func (e *endpoint) Send(i int, msg []byte) {
	p, err := e.peerOf(i)
	if err != nil {
		e.failed(err)
		return
	}
	e.mu.Lock()
	e.sendLocked(p, mCtrl, msg)
	e.mu.Unlock()
}

// cmaRefused reports (and remembers) that the kernel does not let us copy
// into p with process_vm_*: from now on p serves our copies itself.
func (e *endpoint) cmaRefused(p *peer, err error) bool {
	if errors.Is(err, unix.EPERM) || errors.Is(err, unix.ENOSYS) {
		p.cmaOK = false
		e.host.Logf(1, "shm: process_vm_readv/writev to rank %d refused (%v); it serves copies to its registered memory itself", e.host.PeerRank(p.idx), err)
		return true
	}
	return false
}

func cmaError(err error) error {
	if err == nil {
		return nil
	}
	// The mirror said the range is registered: a failing copy means the
	// memory faulted at either end (EFAULT: read-only, or protected or
	// unmapped since its registration) or the owner is gone (ESRCH).
	switch {
	case errors.Is(err, unix.ESRCH):
		return core.StatusPeerGone.Err()
	case errors.Is(err, unix.EFAULT):
		return core.StatusFault.Err()
	}
	return core.StatusOutOfBounds.Err()
}

func (e *endpoint) newOp(kind opKind, p *peer, c core.Completion) *op {
	e.nextOp++
	o := &op{id: e.nextOp, kind: kind, peer: p, c: c}
	e.ops[o.id] = o
	return o
}

// sendLocked writes a record for p, or queues it when p's ring is full.
func (e *endpoint) sendLocked(p *peer, typ uint8, parts ...[]byte) {
	if len(p.pending) == 0 && p.out.put(typ, parts...) {
		e.ring(p)
		return
	}
	rec := []byte{typ}
	for _, part := range parts {
		rec = append(rec, part...)
	}
	p.pending = append(p.pending, rec)
	e.queue(p)
}

func (e *endpoint) addStream(p *peer, s *stream) {
	p.streams = append(p.streams, s)
	e.queue(p)
}

func (e *endpoint) queue(p *peer) {
	if !p.queued {
		p.queued = true
		e.backlog = append(e.backlog, p)
		e.backlogLen.Store(int32(len(e.backlog)))
	}
}

// ring tells p that our ring to it has records, and wakes it if it sleeps.
func (e *endpoint) ring(p *peer) {
	me := e.myLocal
	word := (*uint64)(unsafe.Add(p.hdr, hdrPending+8*(me/64)))
	if atomic.LoadUint64(word)&(1<<(me%64)) == 0 {
		atomic.OrUint64(word, 1<<(me%64))
	}
	if atomic.LoadUint32((*uint32)(unsafe.Add(p.hdr, hdrSleeping))) != 0 {
		f := (*uint32)(unsafe.Add(p.hdr, hdrFutex))
		atomic.AddUint32(f, 1)
		futexWake(f)
	}
}

// flushLocked moves queued records and stream chunks of p into its ring
// while there is room, and reports whether it wrote anything.
func (e *endpoint) flushLocked(p *peer) bool {
	wrote := false
	for len(p.pending) > 0 {
		rec := p.pending[0]
		if !p.out.put(rec[0], rec[1:]) {
			break
		}
		p.pending[0] = nil
		p.pending = p.pending[1:]
		wrote = true
	}
	for len(p.pending) == 0 && len(p.streams) > 0 {
		s := p.streams[0]
		if s.failed || (s.off >= s.size && !s.once) {
			p.streams[0] = nil
			p.streams = p.streams[1:]
			continue
		}
		chunk := min(uint64(e.chunkSize()), s.size-s.off)
		var ok bool
		if s.typ == mPut {
			var h [32]byte
			le.PutUint64(h[0:], s.opID)
			le.PutUint64(h[8:], uint64(s.dstGA))
			le.PutUint64(h[16:], s.size)
			le.PutUint64(h[24:], s.off)
			ok = p.out.put(mPut, h[:], unsafe.Slice((*byte)(unsafe.Add(s.src, s.off)), chunk))
		} else {
			src, r, st := e.host.Acquire(s.srcGA, s.size)
			if st != core.StatusOK {
				// Unregistered while we served it.
				s.failed = true
				var b [16]byte
				le.PutUint64(b[0:], s.opID)
				b[8] = byte(st)
				e.sendLocked(p, mGetErr, b[:])
				continue
			}
			if r.UserMemory() && !core.Readable(unsafe.Add(src, s.off), chunk) {
				// Protected or unmapped since its registration.
				r.Release()
				s.failed = true
				var b [16]byte
				le.PutUint64(b[0:], s.opID)
				b[8] = byte(core.StatusFault)
				e.sendLocked(p, mGetErr, b[:])
				continue
			}
			var h [16]byte
			le.PutUint64(h[0:], s.opID)
			le.PutUint64(h[8:], s.off)
			ok = p.out.put(mGetData, h[:], unsafe.Slice((*byte)(unsafe.Add(src, s.off)), chunk))
			r.Release()
		}
		if !ok {
			break
		}
		s.off += chunk
		s.once = false
		wrote = true
	}
	if wrote {
		e.ring(p)
	}
	return wrote
}

// ---- consumer side ----

// progress drains our rings and pushes our backlog; it never blocks.
func (e *endpoint) progress() bool {
	worked := false
	if e.rxMu.TryLock() {
		for w := 0; w*64 < e.localCount; w++ {
			word := (*uint64)(unsafe.Pointer(&e.seg.mem[hdrPending+8*w]))
			if atomic.LoadUint64(word) == 0 {
				continue
			}
			bits := atomic.SwapUint64(word, 0)
			for b := 0; bits != 0; b, bits = b+1, bits>>1 {
				if bits&1 == 0 {
					continue
				}
				from := w*64 + b
				if e.inRings[from].drain(func(typ uint8, payload []byte) { e.handle(from, typ, payload) }) > 0 {
					worked = true
				}
			}
		}
		e.rxMu.Unlock()
	}
	if e.pushBacklog() {
		worked = true
	}
	if !worked {
		e.watch()
	}
	return worked
}

// watch stops the job when a process of this host we talk to stops
// beating: its progress goroutine bumps a heartbeat in its header at least
// beat period, even while its application computes, so a frozen
// or stuck process (which would hang whoever waits for it: a barrier, a
// request it should serve) is found within --acp-peer-timeout.
func (e *endpoint) watch() {
	now := time.Now()
	if now.UnixNano() < e.nextWatch.Load() {
		return
	}
	e.nextWatch.Store(now.Add(e.beatEvery).UnixNano())
	e.mu.Lock()
	var stuck *peer
	for _, p := range e.contacted {
		beat := atomic.LoadUint64((*uint64)(unsafe.Add(p.hdr, hdrHeartbeat)))
		if beat != p.lastBeat || p.beatSeen.IsZero() || atomic.LoadUint32((*uint32)(unsafe.Add(p.hdr, hdrClosed))) != 0 {
			p.lastBeat, p.beatSeen = beat, now
			continue
		}
		if now.Sub(p.beatSeen) > e.timeout {
			stuck = p
			break
		}
	}
	e.mu.Unlock()
	if stuck != nil {
		e.host.Fatal(fmt.Errorf("rank %d (pid %d, this host) is unreachable: no sign of life for %v; is it still running? (raise --acp-peer-timeout / ACP_PEER_TIMEOUT if it may be stopped that long)",
			e.host.PeerRank(stuck.idx), stuck.pid, e.timeout))
	}
}

// beat shows peers that this process's progress goroutine runs.
func (e *endpoint) beat(now time.Time) {
	if now.Sub(e.lastBeat) >= e.beatEvery {
		e.lastBeat = now
		atomic.AddUint64((*uint64)(unsafe.Pointer(&e.seg.mem[hdrHeartbeat])), 1)
	}
}

// pushBacklog retries records and streams that waited for ring space.
func (e *endpoint) pushBacklog() bool {
	if e.backlogLen.Load() == 0 {
		return false // the common case, without the lock
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.backlog) == 0 {
		return false
	}
	wrote := false
	keep := e.backlog[:0]
	for _, p := range e.backlog {
		if e.flushLocked(p) {
			wrote = true
		}
		if len(p.pending) > 0 || len(p.streams) > 0 {
			keep = append(keep, p)
		} else {
			p.queued = false
		}
	}
	clear(e.backlog[len(keep):])
	e.backlog = keep
	e.backlogLen.Store(int32(len(keep)))
	return wrote
}

// handle serves one record from the peer with local index `from`. It runs
// with rxMu held but not mu, so the engine may call back into us.
func (e *endpoint) handle(from int, typ uint8, b []byte) {
	src := e.locals[from]
	switch typ {
	case mCtrl:
		e.host.Deliver(src, b)
	case mAtomic:
		old, st := e.host.ApplyAtomic(core.AtomicOp(b[8]), core.GA(le.Uint64(b[16:])), le.Uint64(b[24:]), le.Uint64(b[32:]))
		var r [24]byte
		copy(r[0:8], b[0:8])
		r[8] = byte(st)
		le.PutUint64(r[16:], old)
		e.reply(src, mAtomicRep, r[:])
	case mPut:
		id, dst, size, off := le.Uint64(b), core.GA(le.Uint64(b[8:])), le.Uint64(b[16:]), le.Uint64(b[24:])
		data := b[32:]
		st := core.StatusBadRequest
		if off <= size && uint64(len(data)) <= size-off {
			var p unsafe.Pointer
			var r *core.Region
			if p, r, st = e.host.Acquire(dst, size); st == core.StatusOK {
				if !r.CopyInto(unsafe.Slice((*byte)(unsafe.Add(p, off)), len(data)), data) {
					st = core.StatusFault // read-only, or protected since registered
				}
				r.Release()
				e.host.Wake()
			}
		}
		var rep [24]byte
		le.PutUint64(rep[0:], id)
		rep[8] = byte(st)
		le.PutUint64(rep[16:], uint64(len(data)))
		e.reply(src, mPutRep, rep[:])
	case mGetReq:
		id, ga, size := le.Uint64(b), core.GA(le.Uint64(b[8:])), le.Uint64(b[16:])
		_, r, st := e.host.Acquire(ga, size)
		p, err := e.peerOf(src)
		if err != nil {
			e.failed(err)
			return
		}
		e.mu.Lock()
		if st != core.StatusOK {
			var eb [16]byte
			le.PutUint64(eb[0:], id)
			eb[8] = byte(st)
			e.sendLocked(p, mGetErr, eb[:])
		} else {
			r.Release()
			e.addStream(p, &stream{typ: mGetData, opID: id, srcGA: ga, size: size, once: true})
			e.flushLocked(p)
		}
		e.mu.Unlock()
	case mAtomicRep, mPutRep, mGetData, mGetErr:
		e.answer(typ, b)
	default:
		e.host.Logf(1, "shm: dropped a record of unknown type %d from rank %d", typ, e.host.PeerRank(src))
	}
}

func (e *endpoint) reply(to int, typ uint8, b []byte) {
	p, err := e.peerOf(to)
	if err != nil {
		e.failed(err)
		return
	}
	e.mu.Lock()
	e.sendLocked(p, typ, b)
	e.mu.Unlock()
}

// answer completes (part of) an operation the owner served for us.
func (e *endpoint) answer(typ uint8, b []byte) {
	id := le.Uint64(b)
	e.mu.Lock()
	o := e.ops[id]
	if o == nil {
		e.mu.Unlock()
		return
	}
	var val uint64
	done := false
	switch typ {
	case mAtomicRep:
		o.failed, val, done = core.Status(b[8]), le.Uint64(b[16:]), true
	case mPutRep:
		if st := core.Status(b[8]); st != core.StatusOK {
			o.failed = st
		}
		o.received += le.Uint64(b[16:])
		done = o.received >= o.size
	case mGetData:
		off, data := le.Uint64(b[8:]), b[16:]
		if off <= o.size && uint64(len(data)) <= o.size-off {
			if !core.GuardedCopy(unsafe.Slice((*byte)(unsafe.Add(o.dst, off)), len(data)), data) {
				o.failed = core.StatusFault // our destination: read-only, or protected since registered
			}
			o.received += uint64(len(data))
		}
		done = o.received >= o.size
	case mGetErr:
		o.failed, done = core.Status(b[8]), true
	}
	if done {
		delete(e.ops, id)
	}
	e.mu.Unlock()
	if done {
		o.c.OnComplete(val, o.failed.Err())
	}
}

// progressLoop serves our rings while the application computes: it polls
// for a while after activity, then sleeps on the futex doorbell.
func (e *endpoint) progressLoop() {
	defer close(e.done)
	sleeping, futex := e.u32(hdrSleeping), e.u32(hdrFutex)
	gate := core.NewIdleGate(e.spin)
	idle := 0 // turns without work, for YieldTurn (as udp's loop)
	for !e.closed.Load() {
		now := time.Now()
		e.beat(now)
		if e.progress() {
			gate.Worked(now)
			continue
		}
		if !gate.MaySleep(now) {
			core.YieldTurn(idle)
			idle++
			continue
		}
		v := atomic.LoadUint32(futex)
		atomic.StoreUint32(sleeping, 1)
		if e.anyPending() || e.closed.Load() {
			atomic.StoreUint32(sleeping, 0)
			continue
		}
		futexWait(futex, v, int64(e.beatEvery))
		atomic.StoreUint32(sleeping, 0)
	}
}

func (e *endpoint) anyPending() bool {
	for w := 0; w*64 < e.localCount; w++ {
		if atomic.LoadUint64((*uint64)(unsafe.Pointer(&e.seg.mem[hdrPending+8*w]))) != 0 {
			return true
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.backlog) > 0
}

func unmapBytes(b []byte) {
	if len(b) > 0 {
		_ = unix.Munmap(b)
	}
}

func unixGetpid() int { return unix.Getpid() }
