package core

import (
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/libacp/libacp/internal/raceedge"
)

// The fast state is the part of the command queue that a C fast path may
// share: the queue lock, the issued and done counters, one done flag per
// ring slot, the GA layout, a table of starter memories this process
// can touch directly (its own, and peers' mapped through shared memory),
// and the barrier's lock, epoch and words when the barrier is one store and
// one wait in memory mapped here (see barrier.go).
// It lives outside the Go heap, at fixed offsets, so that C code in the
// same process can complete operations on such memory without calling Go:
// the C side takes the same lock, follows the same rules (see
// capi/fastpath.c), and falls back to Go for anything else. The semantics
// stay defined here; the C code only repeats the cheapest case.
//
// Layout (byte offsets; keep in step with capi/fastpath.h):
const (
	fastLock         = 0   // int32: 0 free, 1 held
	fastIssued       = 64  // int64: last handle issued
	fastDone         = 128 // int64: every handle <= done is complete
	fastEnabled      = 192 // uint32: the C side may complete operations
	fastMe           = 196 // uint32: our logical rank
	fastNprocs       = 200 // uint32
	fastRankShift    = 204 // uint32: colour+segment+offset bits
	fastSegShift     = 208 // uint32: offset bits
	fastSegMask      = 216 // uint64: segment field mask (after shifting)
	fastOffMask      = 224 // uint64
	fastColorMask    = 232 // uint64: colour field in place (GA & mask)
	fastDepth        = 240 // uint32: ring slots (= done flags)
	fastWinBase      = 244 // uint32: first logical rank of the starter table
	fastWinLen       = 248 // uint32: ranks in the starter table
	fastBarLock      = 256 // int32: one barrier at a time per process (C and Go)
	fastBarOn        = 260 // uint32: the C side may run the barrier
	fastBarLast      = 264 // uint32: 1 when the last arrival releases (one host)
	fastBarLocals    = 268 // uint32: processes on this host
	fastBarEpoch     = 272 // uint64: last barrier entered (under fastBarLock)
	fastBarArrive    = 280 // uint64: address of the leader's arrival counter
	fastBarRelease   = 288 // uint64: address of the leader's release word
	fastBarSpin      = 296 // uint64: ns a wait spins before it yields (--acp-progress-spin; 0 when oversubscribed), set for every engine
	fastBarYield     = 304 // uint64: ns a wait then yields before it sleeps (yieldPhase)
	fastBarRounds    = 312 // uint32: rounds of a dissemination (over everybody, or the leader's among hosts; 0: none)
	fastBarMine      = 320 // uint64: address of our slot of round 0 (round k: + 8k)
	fastWaiting      = 400 // uint32: operations waiting for their start condition (queue.waiting; under the lock)
	fastDevAtomics   = 404 // uint32: 1 when 8-byte atomics go to a device (Engine.devAtom): the C side leaves them to Go
	fastRemote       = 408 // uint64: address of a transport's acpf_remote (core/fastremote.h), or 0
	fastBarGAMask    = 416 // uint32: bit k: round k's slot is a GA, written through the transport's C code (its signal)
	fastBarLead      = 420 // uint32: 1 when we lead our host in a barrier among several: arrivals, rounds, release
	fastBarPending   = 424 // int64: the barrier's puts through a transport's Go side not yet complete (barrier.pending)
	fastBarPeers     = 512 // fastBarMaxRounds × uint64: the slot we write in each round, mapped here, or its GA (fastBarGAMask)
	fastBarMaxRounds = 32  // 2^32 processes (or hosts): every job's rounds, one bit each in fastBarGAMask
	fastTable        = 768 // per table rank: 3 × (base u64, size u64)
	fastEntrySize    = 48
	fastMaxWindow    = 4096
	fastHeaderSize   = fastTable
)

type fastState struct {
	mem    []byte
	lockW  *int32
	issued *atomic.Int64
	done   *atomic.Int64
	flags  []uint32 // done flag per slot
	depth  int
}

func newFastState(depth int) (*fastState, error) {
	size := fastHeaderSize + fastMaxWindow*fastEntrySize + 4*depth
	mem, err := mapAnon(uint64(size))
	if err != nil {
		return nil, fmt.Errorf("cannot allocate the command queue: %v", err)
	}
	f := &fastState{
		mem:    mem,
		lockW:  (*int32)(unsafe.Pointer(&mem[fastLock])),
		issued: (*atomic.Int64)(unsafe.Pointer(&mem[fastIssued])),
		done:   (*atomic.Int64)(unsafe.Pointer(&mem[fastDone])),
		flags:  unsafe.Slice((*uint32)(unsafe.Pointer(&mem[fastHeaderSize+fastMaxWindow*fastEntrySize])), depth),
		depth:  depth,
	}
	f.u32(fastDepth).Store(uint32(depth))
	return f, nil
}

func (f *fastState) u32(off int) *atomic.Uint32 { return (*atomic.Uint32)(unsafe.Pointer(&f.mem[off])) }
func (f *fastState) u64(off int) *atomic.Uint64 { return (*atomic.Uint64)(unsafe.Pointer(&f.mem[off])) }

// lock takes the queue lock, shared with the C side: spin briefly, then
// yield (a holder never keeps it for more than a few hundred nanoseconds,
// unless the scheduler preempted it: see SpinWait).
func (f *fastState) lock() {
	for i := 0; !atomic.CompareAndSwapInt32(f.lockW, 0, 1); i++ {
		SpinWait(i)
	}
	raceedge.Acquire()
}

func (f *fastState) unlock() {
	raceedge.Release()
	atomic.StoreInt32(f.lockW, 0)
}

// flag is the done flag of handle h's slot.
func (f *fastState) flag(h int64) *uint32 { return &f.flags[uint64(h)%uint64(f.depth)] }

// setLayout publishes the GA layout and our rank, and empties the starter
// table (rebuilt lazily).
func (f *fastState) setLayout(l Layout, me int) {
	f.u32(fastMe).Store(uint32(me))
	f.u32(fastNprocs).Store(uint32(l.NProcs))
	f.u32(fastRankShift).Store(uint32(l.ColorBits + l.SegBits + l.OffsetBits))
	f.u32(fastSegShift).Store(uint32(l.OffsetBits))
	f.u64(fastSegMask).Store(1<<l.SegBits - 1)
	f.u64(fastOffMask).Store(1<<l.OffsetBits - 1)
	f.u64(fastColorMask).Store((1<<l.ColorBits - 1) << (l.SegBits + l.OffsetBits))
	// The window of ranks the table covers: all of them in jobs up to
	// fastMaxWindow processes, else the ranks around ours (a host's
	// processes usually have neighbouring ranks).
	n := min(l.NProcs, fastMaxWindow)
	base := min(max(me-n/2, 0), l.NProcs-n)
	f.u32(fastWinBase).Store(uint32(base))
	f.u32(fastWinLen).Store(uint32(n))
	clear(f.mem[fastTable : fastTable+fastMaxWindow*fastEntrySize])
}

// publish records rank's starter region seg as directly reachable.
func (f *fastState) publish(rank, seg int, base unsafe.Pointer, size uint64) {
	i := rank - int(f.u32(fastWinBase).Load())
	if i < 0 || i >= int(f.u32(fastWinLen).Load()) || base == nil {
		return
	}
	off := fastTable + i*fastEntrySize + seg*16
	// Size first, then the base that makes the entry valid.
	f.u64(off + 8).Store(size)
	f.u64(off).Store(uint64(uintptr(base)))
}

// published reports whether rank's starter table entry is filled.
func (f *fastState) published(rank, seg int) bool {
	i := rank - int(f.u32(fastWinBase).Load())
	if i < 0 || i >= int(f.u32(fastWinLen).Load()) {
		return true // outside the window: nothing to do
	}
	return f.u64(fastTable+i*fastEntrySize+seg*16).Load() != 0
}

// setEnabled lets the C side work, or stops it (reset, finalize).
func (f *fastState) setEnabled(on bool) {
	v := uint32(0)
	if on {
		v = 1
	}
	f.u32(fastEnabled).Store(v)
}

// SetFastRemote lends the C fast path a transport's C code for copies to
// and from peers' starter memory (core/fastremote.h), or withdraws it
// (nil). A transport that lends it finishes the handles it reports itself
// and reports every other one through FinishFast.
func (e *Engine) SetFastRemote(r unsafe.Pointer) {
	if r != nil && e.noFastRemote.Load() {
		return
	}
	e.q.fast.u64(fastRemote).Store(uint64(uintptr(r)))
}

// FinishFast finishes handle h, which a transport's C code took for a copy
// with peer and ga at the remote end (get: from it): the Go side of that
// transport saw it end, with err or without.
func (e *Engine) FinishFast(h Handle, peer int, get bool, ga GA, n uint64, err error) {
	q := &e.q
	q.lock()
	s := q.slot(h)
	s.h, s.state, s.kind, s.peer, s.size, s.pin, s.report = h, slotRunning, kindPut, peer, n, nil, nil
	s.dst, s.src = ga, 0
	if get {
		s.kind, s.dst, s.src = kindGet, 0, ga
	}
	q.unlock()
	s.OnComplete(0, err)
}

// fastEngines finds the engine of a fast state, for C code that hands a
// handle back to Go (FastEngine).
var fastEngines sync.Map // fast state address -> *Engine

// FastEngine returns the engine whose fast state is at state, or nil.
func FastEngine(state unsafe.Pointer) *Engine {
	if e, ok := fastEngines.Load(uintptr(state)); ok {
		return e.(*Engine)
	}
	return nil
}

// FastStateFor builds a fast state that holds only layout l and rank me,
// enabled, with an empty starter table and no engine behind it: for tests
// of a C fast path's decoding against Layout. release unmaps it.
func FastStateFor(l Layout, me int) (state unsafe.Pointer, release func(), err error) {
	f, err := newFastState(1)
	if err != nil {
		return nil, nil, err
	}
	f.setLayout(l, me)
	f.setEnabled(true)
	return unsafe.Pointer(&f.mem[0]), func() { unmap(f.mem) }, nil
}

// FastState returns the address of this engine's fast state, for a C fast
// path in the same process (capi). It stays valid until the process ends.
func (e *Engine) FastState() unsafe.Pointer { return unsafe.Pointer(&e.q.fast.mem[0]) }
