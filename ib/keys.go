package ib

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/libacp/libacp/core"
)

// ---- local registrations (core.Registrar) ----

// localRegion is one region of this process registered with every device:
// its memory may be a local buffer of any path and a target of peers.
type localRegion struct {
	r      *core.Region
	base   uintptr
	size   uint64
	mrs    []*vmr // per device
	lkeys  []uint32
	rkeys  []uint32
	serial uint32 // distinguishes successive registrations of a segment

	users    atomic.Int32 // local work requests using its lkeys
	fetchers []int32      // peers that were given its key (guarded by endpoint.mu)
	locked   bool         // mlocked (starter memory)
	readOnly bool         // registered for peers' reads only: its memory was read-only (regOnEveryDevice)
	watched  bool         // its memory is watched: its registration may be kept (regCache)
	stale    bool         // its memory went while it was registered (guarded by regCache.mu)
}

func (lr *localRegion) deregister() {
	deregAll(lr.mrs)
	lr.mrs = nil
	if lr.locked {
		_ = unix.Munlock(unsafe.Slice((*byte)(lr.r.Base), lr.size))
		lr.locked = false
	}
}

// RegisterRegion implements core.Registrar: ibv_reg_mr on every device.
func (e *endpoint) RegisterRegion(r *core.Region) error {
	lr := &localRegion{r: r, base: uintptr(r.Base), size: r.Size}
	if r.Size > 0 && r.Base != nil {
		if e.rc.on() && r.Seg >= core.SegFirstUser {
			// Watched before it is registered: whatever happens to the
			// memory after the registration took its pages is reported.
			if !e.rc.take(lr) {
				e.rc.watch(lr, func(f string, a ...any) { e.host.Logf(2, f, a...) })
			}
		}
		if lr.mrs == nil {
			if err := e.regOnEveryDevice(lr, r.Base, "registration", r.Seg >= core.SegFirstUser); err != nil {
				if lr.watched {
					e.rc.forget(lr)
				}
				return err
			}
		}
		lr.fillKeys()
		// The adapter holds the physical pages of a registration. acp_reset
		// clears starter memory, and dropping its pages (MADV_DONTNEED)
		// would leave peers writing into pages nobody sees any more:
		// locked pages cannot be dropped, so they are cleared in place.
		if r.Seg < core.SegFirstUser {
			if err := unix.Mlock(unsafe.Slice((*byte)(r.Base), r.Size)); err != nil {
				e.host.Logf(1, "ib: cannot lock starter memory (%v): acp_reset may not clear it for peers; raise ulimit -l", err)
			} else {
				lr.locked = true
			}
		}
	}
	e.mu.Lock()
	e.serial++
	lr.serial = e.serial
	e.regs[r.Seg] = lr
	e.byRegion[r] = lr
	e.fastLocal(lr, true)
	if len(lr.mrs) > 0 {
		e.insertLocal(lr)
	}
	e.mu.Unlock()
	return nil
}

// regOnEveryDevice registers lr's memory, at base, on every device; a
// refused registration is tried once more after the kept registrations
// (regCache) are flushed, which may have held the lockable memory. On
// failure none stays registered; what names the memory in the message.
//
// mayReadOnly: a program's memory that is read-only (a constant table, a
// file mapped PROT_READ), which ibv_reg_mr refuses with EFAULT when asked
// for write access, is registered for peers' reads only (lr.readOnly);
// writes and atomics into it, and reads into it, then fail at their
// issuer with StatusFault without being posted, as over shm and udp.
// Only memory that is all readable: a kernel before 6.2 pins pages for a
// read-only registration with FOLL_FORCE, inaccessible ones (PROT_NONE)
// too, and peers would read what the process itself cannot; such a range
// keeps the EFAULT.
func (e *endpoint) regOnEveryDevice(lr *localRegion, base unsafe.Pointer, what string, mayReadOnly bool) error {
	for i, d := range e.devs {
		mr, err := regMR(d.v, base, lr.size, lr.readOnly)
		if errors.Is(err, unix.EFAULT) && mayReadOnly && i == 0 && !lr.readOnly && core.Readable(base, lr.size) {
			if mr, err = regMR(d.v, base, lr.size, true); err == nil {
				lr.readOnly = true
			}
		}
		if err != nil && e.rc.flush() > 0 {
			mr, err = regMR(d.v, base, lr.size, lr.readOnly)
		}
		if err != nil {
			deregAll(lr.mrs)
			lr.mrs = nil
			return fmt.Errorf("%s: %v", d.name, regError(err, lr.size, what))
		}
		lr.mrs = append(lr.mrs, mr)
	}
	return nil
}

// fillKeys notes the keys of lr's registrations, one per device.
func (lr *localRegion) fillKeys() {
	for _, mr := range lr.mrs {
		lkey, rkey := mrKeys(mr)
		lr.lkeys = append(lr.lkeys, lkey)
		lr.rkeys = append(lr.rkeys, rkey)
	}
}

// insertLocal adds lr to the regions lookupLocal searches, in base order.
// Locked.
func (e *endpoint) insertLocal(lr *localRegion) {
	i := sort.Search(len(e.localList), func(i int) bool { return e.localList[i].base > lr.base })
	e.localList = append(e.localList, nil)
	copy(e.localList[i+1:], e.localList[i:])
	e.localList[i] = lr
}

// UnregisterRegion implements core.Registrar. Before the memory is
// deregistered, every peer that was given its key forgets it and confirms
// that none of its work still uses it, so a later registration under the
// same segment number can never be reached through the old key, and the
// old memory is never touched once this returns; our own work with it
// (Go's and the C side's) ends first too.
func (e *endpoint) UnregisterRegion(r *core.Region) {
	e.mu.Lock()
	lr := e.byRegion[r]
	if lr == nil {
		e.mu.Unlock()
		return
	}
	delete(e.byRegion, r)
	for i, x := range e.localList {
		if x == lr {
			e.localList = append(e.localList[:i], e.localList[i+1:]...)
			break
		}
	}
	withdrawn := -1
	if e.regs[r.Seg] == lr {
		delete(e.regs, r.Seg)
		withdrawn = e.fastLocal(lr, false)
	}
	key := invalKey{seg: r.Seg, serial: lr.serial}
	w := &invalWait{waiting: map[int]bool{}}
	for _, f := range lr.fetchers {
		peer := int(f)
		if c := e.conns[peer*len(e.paths)]; c == nil || c.state == connFailed {
			continue
		}
		w.waiting[peer] = true
		e.revocations++
		e.sendMsg(peer, encodeInval(make([]byte, invalLen), mInval, r.Seg, lr.serial))
	}
	if len(w.waiting) > 0 {
		e.invals[key] = w
	}
	e.unlockAndRun()

	deadline := time.Now().Add(e.timeout)
	for i := 0; ; i++ {
		e.mu.Lock()
		left := -1
		for peer := range w.waiting {
			if c := e.conns[peer*len(e.paths)]; c != nil && c.state == connFailed {
				delete(w.waiting, peer) // its adapter refuses the peer's traffic now
				continue
			}
			left = peer
		}
		if left < 0 {
			delete(e.invals, key)
		}
		e.mu.Unlock()
		if left < 0 && lr.users.Load() == 0 && e.fastRegUsers(withdrawn) == 0 {
			break
		}
		if time.Now().After(deadline) {
			e.fatalOnce.Do(func() {
				e.host.Fatal(fmt.Errorf("rank %d is unreachable: it did not confirm within %v that it stopped using memory being unregistered; is it still running? (raise --acp-peer-timeout / ACP_PEER_TIMEOUT)",
					e.host.PeerRank(max(left, 0)), e.timeout))
			})
			return
		}
		if !e.progress() && i > 100 {
			time.Sleep(20 * time.Microsecond)
		}
	}
	e.mu.Lock()
	if lr.watched && e.rc.park(lr) {
		lr.mrs = nil // kept for a registration of the same range
	} else {
		lr.deregister()
	}
	e.mu.Unlock()
}

// lookupLocal finds a live registration that covers [p, p+n) and pins it
// until the work request completes; write: one the adapter may write (an
// RDMA READ's destination). readOnly: only registrations for peers' reads
// cover it, and write was asked (the memory was read-only when
// registered). Locked.
func (e *endpoint) lookupLocal(p uintptr, n uint64, dev int, write bool) (lr *localRegion, lkey uint32, readOnly bool) {
	// The last region starting at or below p, then earlier ones: regions
	// may overlap, and a longer one further down may cover the range.
	i := sort.Search(len(e.localList), func(i int) bool { return e.localList[i].base > p })
	for i--; i >= 0; i-- {
		lr := e.localList[i]
		if uint64(p-lr.base) <= lr.size && n <= lr.size-uint64(p-lr.base) {
			if write && lr.readOnly {
				readOnly = true
				continue
			}
			lr.users.Add(1)
			return lr, lr.lkeys[dev], false
		}
	}
	return nil, 0, readOnly
}

// registerMapped registers the memory of a same-host peer mapped here
// that holds [p, p+n) (Host.MappedMemory: the engine hands it to us as the
// local end of a copy between a process of this host and one elsewhere),
// once: it stays registered until we close, as it stays mapped. It pins it
// as lookupLocal does; nil when no such memory holds the range or it
// cannot be registered (the copy then goes through the scratch area; a
// refused memory is neither looked up nor tried again). Locked.
func (e *endpoint) registerMapped(p unsafe.Pointer, n uint64, dev int) (*localRegion, uint32) {
	a := uintptr(p)
	for _, r := range e.mappedRefused {
		if a >= r.base && uint64(a-r.base) < r.size {
			return nil, 0
		}
	}
	base, size := e.host.MappedMemory(p, n)
	if base == nil {
		return nil, 0
	}
	lr := &localRegion{base: uintptr(base), size: size}
	if err := e.regOnEveryDevice(lr, base, "a same-host peer's starter memory", false); err != nil {
		e.mappedRefused = append(e.mappedRefused, lr)
		e.host.Logf(1, "ib: %v; copies from and to this memory of a peer on this host go through a bounce buffer", err)
		return nil, 0
	}
	lr.fillKeys()
	e.mappedRegs = append(e.mappedRegs, lr)
	e.fastMapped(lr)
	e.insertLocal(lr)
	lr.users.Add(1)
	return lr, lr.lkeys[dev]
}

// regError explains a failed ibv_reg_mr. The usual cause is the
// locked-memory limit: say which value would do.
func regError(err error, size uint64, what string) error {
	errno, _ := err.(syscall.Errno)
	if errno != unix.ENOMEM && errno != unix.EPERM && errno != unix.EAGAIN {
		return fmt.Errorf("ibv_reg_mr of %d bytes (%s) failed: %v; is the whole range mapped and readable?", size, what, err)
	}
	var lim unix.Rlimit
	limit := "unknown"
	if unix.Getrlimit(unix.RLIMIT_MEMLOCK, &lim) == nil {
		if lim.Cur == unix.RLIM_INFINITY {
			limit = "unlimited"
		} else {
			limit = fmt.Sprintf("%d KiB", lim.Cur/1024)
		}
	}
	need := (pinnedBytes() + size + 1023) / 1024
	return fmt.Errorf("ibv_reg_mr of %d bytes (%s) failed: %v; the locked-memory limit (ulimit -l) is %s and this process needs at least %d KiB: raise it (ulimit -l %d, or unlimited; memlock in /etc/security/limits.conf), or register less memory",
		size, what, err, limit, need, need)
}

// pinnedBytes is the memory this process has pinned already (VmPin).
func pinnedBytes() uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmPin:"); ok {
			f := strings.Fields(v)
			if len(f) > 0 {
				kb, _ := strconv.ParseUint(f[0], 10, 64)
				return kb * 1024
			}
		}
	}
	return 0
}

// ---- keys of peers' registrations ----

// rkey is what this process knows about a peer's registered region.
type rkey struct {
	valid   bool
	peer    int32
	seg     int32
	serial  uint32
	key     uint32
	color   int
	base    uint64
	size    uint64
	offBase uint64
	inFast  bool // the C side holds it too (fastKeyPut)
	// readOnly: registered for reads only (localRegion.readOnly): writes
	// and atomics into it fail here, never posted (the adapter would
	// refuse them and end the connection).
	readOnly bool
}

// keyCache holds peers' keys, direct-mapped by (peer, segment): bounded,
// and a lookup is one probe. A conflict evicts the older key (it will be
// fetched again on its next use). The C side's table (fast.h) has the same
// size and slots, so a key that replaces another here replaces it there.
type keyCache struct {
	size    int
	e       []rkey // allocated on first use
	evicted uint64
}

func (k *keyCache) init(size int) { k.size = size }

// slot: the C side's table (fast.h, acpib_key_slot) hashes alike, so that
// a key evicted here is evicted there (TestKeySlotsAgreeWithC).
func (k *keyCache) slot(peer, seg int) int {
	h := uint64(peer)*0x9e3779b97f4a7c15 ^ uint64(seg)*0xc2b2ae3d27d4eb4f
	return int((h >> 32) % uint64(k.size))
}

func (k *keyCache) get(peer, seg int) *rkey {
	if k.e == nil {
		return nil
	}
	x := &k.e[k.slot(peer, seg)]
	if x.valid && int(x.peer) == peer && int(x.seg) == seg {
		return x
	}
	return nil
}

func (k *keyCache) put(x rkey) {
	if k.e == nil {
		k.e = make([]rkey, k.size)
	}
	s := &k.e[k.slot(int(x.peer), int(x.seg))]
	if s.valid && (s.peer != x.peer || s.seg != x.seg) {
		k.evicted++
	}
	x.valid = true
	*s = x
}

// drop forgets the key of (peer, seg) if it is the given registration or
// an older one.
func (k *keyCache) drop(peer, seg int, serial uint32) {
	if x := k.get(peer, seg); x != nil && x.serial <= serial {
		x.valid = false
	}
}

type missKey struct{ peer, seg int32 }

// miss is a key request in flight and the operations waiting for it.
type miss struct {
	ops  []*op
	sent int64 // coarse clock (endpoint.now) when the request left
}

// awaitKey parks o until the owner told us the key of its segment. Locked.
func (e *endpoint) awaitKey(o *op) {
	seg := e.layout.Seg(o.ga)
	k := missKey{int32(o.peer), int32(seg)}
	m := e.misses[k]
	if m == nil {
		m = &miss{}
		e.misses[k] = m
		e.keyRequests++
		e.sendTimed(o.peer, encodeKeyReq(make([]byte, keyReqLen), seg, o.ga), &m.sent)
	}
	m.ops = append(m.ops, o)
}

// serveKey answers a peer's key request for one of our registrations and
// remembers that the peer has the key. Locked.
func (e *endpoint) serveKey(peer, seg int, ga core.GA) {
	rep := keyReply{seg: seg}
	lr := e.regs[seg]
	switch {
	case e.layout.Rank(ga) != e.host.PeerRank(e.me):
		rep.status = core.StatusWrongRank
	case seg < core.SegFirstUser || lr == nil || len(lr.rkeys) == 0:
		rep.status = core.StatusBadSegment
	default:
		rep = e.keyReplyOf(lr)
		known := false
		for _, f := range lr.fetchers {
			known = known || int(f) == peer
		}
		if !known {
			lr.fetchers = append(lr.fetchers, int32(peer))
		}
	}
	e.sendMsg(peer, encodeKeyRep(make([]byte, keyRepLen), rep))
}

// keyReplyOf is the key of our registration lr as peers learn it: in the
// answer to a key request, or packed for one read (PackKey). Locked.
func (e *endpoint) keyReplyOf(lr *localRegion) keyReply {
	rep := keyReply{seg: lr.r.Seg, color: lr.r.Color, serial: lr.serial, base: uint64(lr.base), size: lr.size, offBase: lr.r.OffBase, readOnly: lr.readOnly}
	if lr.r.Color < len(e.paths) {
		rep.rkey = lr.rkeys[e.paths[lr.r.Color].dev.index]
	}
	return rep
}

// rkeyOf is what peer's answer k tells us of its registration.
func rkeyOf(peer int, k keyReply) rkey {
	return rkey{valid: true, peer: int32(peer), seg: int32(k.seg), serial: k.serial, key: k.rkey, color: k.color,
		base: k.base, size: k.size, offBase: k.offBase, readOnly: k.readOnly}
}

// installKey takes an owner's answer and restarts the waiting operations.
// Locked.
func (e *endpoint) installKey(peer int, k keyReply) {
	if k.status == core.StatusOK {
		e.keys.put(rkeyOf(peer, k))
		e.fastKeyPut(e.keys.get(peer, k.seg))
	}
	mk := missKey{int32(peer), int32(k.seg)}
	m := e.misses[mk]
	if m == nil {
		return
	}
	delete(e.misses, mk)
	for _, o := range m.ops {
		if k.status != core.StatusOK {
			o.err = &core.AccessError{Status: k.status, Rank: -1}
			e.dequeued(o)
			continue
		}
		e.enqueue(e.connTo(o.peer, o.path), &req{op: o})
	}
}

type invalKey struct {
	seg    int
	serial uint32
}

// invalWait is an unregistration waiting for the confirmations of the
// peers that had the key.
type invalWait struct{ waiting map[int]bool }

// pendingAck is a revocation we confirm once every work request we posted
// to the owner before it completed (RC completion: the owner's adapter
// executed it), so that the owner may free the memory.
type pendingAck struct {
	peer   int
	seg    int
	serial uint32
	marks  []uint64 // per path: posted count of our connection at that time
	// fastSlot is the C side's key slot whose users must drop to 0 (the
	// C side's work with the key), or -1.
	fastSlot int
}

// invalidate drops a revoked key. Locked.
func (e *endpoint) invalidate(peer, seg int, serial uint32) {
	e.keys.drop(peer, seg, serial)
	a := &pendingAck{peer: peer, seg: seg, serial: serial, marks: make([]uint64, len(e.paths)), fastSlot: e.fastKeyDrop(peer, seg, serial)}
	if a.fastSlot >= 0 {
		// Before the users are read (checkAcks): the C side then either
		// counted itself before they are, or sees this and wakes us.
		e.acksWaiting.Store(1)
	}
	for p := range e.paths {
		if c := e.conns[peer*len(e.paths)+p]; c != nil {
			a.marks[p] = c.posted
		}
	}
	e.acks = append(e.acks, a)
	e.checkAcks()
}

// checkAcks sends the confirmations whose work has completed. Locked.
func (e *endpoint) checkAcks() {
	keep := e.acks[:0]
	waitFast := false
	for _, a := range e.acks {
		ready := true
		if a.fastSlot >= 0 {
			if e.fastKeyUsers(a.fastSlot) == 0 {
				a.fastSlot = -1
			} else {
				ready, waitFast = false, true
			}
		}
		for p, mark := range a.marks {
			c := e.conns[a.peer*len(e.paths)+p]
			if c != nil && c.state != connFailed && c.completed < mark {
				ready = false
			}
		}
		if ready {
			e.sendMsg(a.peer, encodeInval(make([]byte, invalLen), mInvalAck, a.seg, a.serial))
		} else {
			keep = append(keep, a)
		}
	}
	clear(e.acks[len(keep):])
	e.acks = keep
	if !waitFast {
		e.acksWaiting.Store(0)
	}
}

// invalAcked records a peer's confirmation. Locked.
func (e *endpoint) invalAcked(peer, seg int, serial uint32) {
	if w := e.invals[invalKey{seg, serial}]; w != nil {
		delete(w.waiting, peer)
	}
}
