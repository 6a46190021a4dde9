// Package shm is the same-host transport. Every process places its starter
// memories in a shared memory file that the other processes of its host
// map on first contact, so copies and atomics on starter memory (and the
// data library's heap, which lives there) are plain loads, stores and CPU
// atomics executed by the calling thread (the engine does them itself
// through Map). Memory a program registered from its own heap is reached
// with process_vm_readv/writev, checked against a mirror of the owner's
// registration table that the owner keeps in shared memory; where the
// kernel refuses that, the owner serves the request. Control messages
// (delegation, barriers, requests the owner serves) travel through
// single-producer rings in shared memory, one per pair, with a futex
// doorbell for a consumer that sleeps.
package shm

import (
	"encoding/binary"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/libacp/libacp/core"
)

func init() {
	core.RegisterTransport(core.TransportInfo{
		Name:        "shm",
		Open:        open,
		Colors:      1,
		Priority:    10,
		AddressSize: addressSize,
		Settings:    Settings,
		// Starters maps the starter memories for the processes of a host.
		SharesStarters: true,
	})
}

// Settings are the tunables of this transport.
var Settings = []core.Setting{
	{Name: "shm-cma", Kind: core.KindUint, Default: "1", Max: 1,
		Help: "1: reach memory registered by a peer on this host with process_vm_readv/writev; 0: ask the owner to serve such copies"},
	{Name: "shm-ring-size", Kind: core.KindUint, Default: strconv.Itoa(defaultRingSize), Min: minRingSize, Max: 1 << 26,
		Help: "bytes of each message ring between two processes of one host"},
}

// defaultRingSize is --acp-shm-ring-size's default.
const defaultRingSize = 65536

// Address record: node id (16) | pid (4) | starter memfd (4) | ring memfd
// (4) | ring size (4) | three starter sizes (24) | mirror slots (4) |
// engine area size (4).
const addressSize = 64

// Shared header at the start of each process's segment.
const (
	hdrMagic     = 0
	hdrReady     = 8  // u32: rings sized and mapped
	hdrSleeping  = 12 // u32: the consumer sleeps on hdrFutex
	hdrFutex     = 16 // u32
	hdrRings     = 24 // u64: bytes of the ring memfd
	hdrHeartbeat = 32 // u64: bumped by the progress goroutine while it lives
	hdrClosed    = 40 // u32: the transport closed (finalized), no heartbeat to expect
	hdrOwner     = 48 // u32: the owner's peer index; u32 at 52: its process id
	hdrPending   = 64 // [64]u64: bit i = producer with local index i queued records
	hdrSize      = 4096
	magic        = 0x61637073686d3031 // "acpshm01"
	maxLocal     = 64 * 64
	pageSize     = 4096
)

type endpoint struct {
	host      core.Host
	me, n     int
	node      [16]byte
	pid       int
	cma       bool
	cmaWhy    string
	spin      time.Duration
	timeout   time.Duration
	beatEvery time.Duration // how often a live process shows it is alive, and peers look (core.IdlePeriod)

	ringSize int
	seg      *memfd // header | starters | registration mirror
	rings    *memfd // rings for the local peers' records to us
	sizes    [core.NumStarters]uint64
	offs     [core.NumStarters]uint64 // starter offsets in seg
	mirror   mirror

	// This host's processes, found at Connect. Only their address records
	// are kept, and a bit per process of the job: in a job of a million
	// processes the whole book would be 64 MB of every process's memory,
	// for the few dozen it can ever reach.
	local      []uint64 // bit p: physical peer p is on this host
	locals     []int    // index among this host's processes → physical peer, ascending
	localRecs  []byte   // their address records, in that order
	localCount int
	myLocal    int // our own index among them
	peers      []atomic.Pointer[peer]

	mu         sync.Mutex // producer side: rings we write, pending queues, ops
	contact    sync.Mutex // serialises mapping peers
	ops        map[uint64]*op
	nextOp     uint64
	backlog    []*peer      // peers with pending records or streams
	backlogLen atomic.Int32 // len(backlog), read without the lock
	inRings    []*ring      // by local index: the ring each local peer writes to us
	contacted  []*peer
	nextWatch  atomic.Int64 // unix ns of the next watchdog look
	lastBeat   time.Time    // progress goroutine only
	rxMu       sync.Mutex
	closed     atomic.Bool
	done       chan struct{}
	started    bool
	fatalMsg   string
}

// peer is another process of this host, once contacted.
type peer struct {
	idx      int
	pid      int
	localIdx int
	seg      []byte // its header, starters and mirror
	hdr      unsafe.Pointer
	starters [core.NumStarters]unsafe.Pointer
	sizes    [core.NumStarters]uint64
	mirror   mirror
	rings    []byte // its ring memfd, mapped once it is ready
	out      *ring  // where we write records for it
	cmaOK    bool

	pending [][]byte // records waiting for room in out (type byte first)
	streams []*stream
	queued  bool // on the backlog

	// Watchdog: its heartbeat when we last saw it change, and when.
	lastBeat uint64
	beatSeen time.Time
}

func open(cfg core.TransportConfig) (core.Transport, error) {
	s := cfg.Settings
	e := &endpoint{
		host:      cfg.Host,
		me:        cfg.Peer,
		n:         cfg.NPeers,
		node:      cfg.Node,
		pid:       unixGetpid(),
		spin:      s.Duration("progress-spin"),
		timeout:   s.Duration("peer-timeout"),
		beatEvery: core.IdlePeriod(s.Duration("peer-timeout"), 10*time.Millisecond),
		ringSize:  pad8(int(s.Uint("shm-ring-size"))),
		peers:     make([]atomic.Pointer[peer], cfg.NPeers),
		ops:       map[uint64]*op{},
		done:      make(chan struct{}),
	}
	if s.Uint("shm-cma") == 1 {
		e.cma, e.cmaWhy = allowPeerAccess()
	} else {
		e.cmaWhy = "disabled by --acp-shm-cma 0"
	}
	var err error
	if e.rings, err = newMemfd("acp-rings", 0); err != nil {
		return nil, err
	}
	return e, nil
}

func (e *endpoint) Name() string { return "shm" }

func roundPage(n uint64) uint64 { return (n + pageSize - 1) &^ (pageSize - 1) }

// Starters implements core.StarterProvider: the starter memories live in
// the shared segment, after the header and before the registration mirror.
func (e *endpoint) Starters(sizes [core.NumStarters]uint64) ([core.NumStarters][]byte, error) {
	var out [core.NumStarters][]byte
	e.sizes = sizes
	off := uint64(hdrSize)
	for i, sz := range sizes {
		e.offs[i] = off
		off += roundPage(sz)
	}
	slots := mirrorSlots(e.host.Layout())
	mirrorOff := off
	total := off + roundPage(uint64(slots*mirrorEntrySize))
	if total > 1<<62 {
		return out, fmt.Errorf("%d bytes of starter memory do not fit", total)
	}
	seg, err := newMemfd("acp-starter", int(total))
	if err != nil {
		return out, err
	}
	e.seg = seg
	le.PutUint32(seg.mem[hdrOwner:], uint32(e.me))
	le.PutUint32(seg.mem[hdrOwner+4:], uint32(e.pid))
	le.PutUint64(seg.mem[hdrMagic:], magic)
	e.mirror = newMirror(seg.mem[mirrorOff:mirrorOff+uint64(slots*mirrorEntrySize)], slots)
	e.mirror.clearAll()
	for i, sz := range sizes {
		if sz > 0 {
			out[i] = seg.mem[e.offs[i] : e.offs[i]+sz : e.offs[i]+sz]
		}
	}
	return out, nil
}

func mirrorSlots(l core.Layout) int { return min(l.Segments(), 4096) }

var le = binary.LittleEndian

// Address implements core.Transport.
func (e *endpoint) Address() []byte {
	b := make([]byte, addressSize)
	copy(b, e.node[:])
	le.PutUint32(b[16:], uint32(e.pid))
	segFd := -1
	if e.seg != nil {
		segFd = e.seg.fd
	}
	le.PutUint32(b[20:], uint32(int32(segFd)))
	le.PutUint32(b[24:], uint32(e.rings.fd))
	le.PutUint32(b[28:], uint32(e.ringSize))
	for i, sz := range e.sizes[:core.SegEngine] {
		le.PutUint64(b[32+8*i:], sz)
	}
	le.PutUint32(b[56:], uint32(e.mirror.slots))
	le.PutUint32(b[60:], uint32(e.sizes[core.SegEngine]))
	return b
}

// Connect implements core.Transport: find the processes of this host, size
// the rings they will write to us, and start serving them.
func (e *endpoint) Connect(book core.AddressBook, _ uint64) error {
	if e.seg == nil {
		return fmt.Errorf("the starter memory was not placed in shared memory")
	}
	e.local = make([]uint64, (e.n+63)/64)
	for p := 0; p < e.n; p++ {
		if book.Present(p) && [16]byte(book.At(p)[:16]) == e.node && int32(le.Uint32(book.At(p)[20:])) >= 0 {
			e.local[p/64] |= 1 << (p % 64)
			e.locals = append(e.locals, p)
			e.localRecs = append(e.localRecs, book.At(p)...)
		}
	}
	e.localCount = len(e.locals)
	e.myLocal = e.localIndex(e.me)
	if e.localCount > maxLocal {
		return fmt.Errorf("%d processes on this host; shared memory serves at most %d (set ACP_TRANSPORTS=udp)", e.localCount, maxLocal)
	}
	size := e.localCount * e.ringSize
	if err := e.rings.resize(size); err != nil {
		return err
	}
	e.inRings = make([]*ring, e.localCount)
	for i := range e.inRings {
		e.inRings[i] = newRing(e.rings.mem[i*e.ringSize : (i+1)*e.ringSize])
	}
	le.PutUint64(e.seg.mem[hdrRings:], uint64(size))
	atomic.StoreUint32(e.u32(hdrReady), 1)
	e.started = true
	go e.progressLoop()
	return nil
}

func (e *endpoint) u32(off int) *uint32 { return (*uint32)(unsafe.Pointer(&e.seg.mem[off])) }

// Reaches implements core.Reacher: the processes of this host.
func (e *endpoint) Reaches(p int) bool { return p != e.me && e.isLocal(p) }

// isLocal reports whether physical peer p is on this host.
func (e *endpoint) isLocal(p int) bool { return e.local != nil && e.local[p/64]&(1<<(p%64)) != 0 }

// localIndex is physical peer p's index among this host's processes, or -1.
func (e *endpoint) localIndex(p int) int {
	if i := sort.SearchInts(e.locals, p); i < len(e.locals) && e.locals[i] == p {
		return i
	}
	return -1
}

// peerOf returns a contacted peer, mapping its memory on first use.
func (e *endpoint) peerOf(i int) (*peer, error) {
	if p := e.peers[i].Load(); p != nil {
		return p, nil
	}
	e.contact.Lock()
	defer e.contact.Unlock()
	if p := e.peers[i].Load(); p != nil {
		return p, nil
	}
	li := e.localIndex(i)
	if li < 0 {
		return nil, fmt.Errorf("process %d is not on this host", i)
	}
	rec := e.localRecs[li*addressSize : (li+1)*addressSize]
	p := &peer{idx: i, pid: int(le.Uint32(rec[16:])), localIdx: li, cmaOK: e.cma}
	segFd, ringFd, ringSize := int(int32(le.Uint32(rec[20:]))), int(le.Uint32(rec[24:])), int(le.Uint32(rec[28:]))
	off := uint64(hdrSize)
	var offs [core.NumStarters]uint64
	for k := range p.sizes {
		if k < core.SegEngine {
			p.sizes[k] = le.Uint64(rec[32+8*k:])
		} else {
			p.sizes[k] = uint64(le.Uint32(rec[60:]))
		}
		offs[k] = off
		off += roundPage(p.sizes[k])
	}
	slots := int(le.Uint32(rec[56:]))
	total := off + roundPage(uint64(slots*mirrorEntrySize))
	seg, err := mapPeer(p.pid, segFd, int(total))
	if err != nil {
		return nil, fmt.Errorf("rank %d: %v", e.host.PeerRank(i), err)
	}
	if le.Uint64(seg[hdrMagic:]) != magic {
		unmapPeer(seg)
		return nil, fmt.Errorf("rank %d: shared memory of pid %d is not an ACP segment", e.host.PeerRank(i), p.pid)
	}
	// The same host identity should mean the same process ids; should a
	// setup still show us another process's memory (ours, even), refuse
	// it rather than write there.
	if owner, pid := int(le.Uint32(seg[hdrOwner:])), int(le.Uint32(seg[hdrOwner+4:])); owner != i || pid != p.pid {
		unmapPeer(seg)
		whose := fmt.Sprintf("process %d of the job", owner)
		if owner < e.n {
			whose = fmt.Sprintf("rank %d", e.host.PeerRank(owner))
		}
		return nil, fmt.Errorf("rank %d: the shared memory found at pid %d belongs to %s (its pid %d): the processes see different process ids; set ACP_TRANSPORTS=udp",
			e.host.PeerRank(i), p.pid, whose, pid)
	}
	p.seg = seg
	p.hdr = unsafe.Pointer(&seg[0])
	for k := range offs {
		if p.sizes[k] > 0 {
			p.starters[k] = unsafe.Pointer(&seg[offs[k]])
		}
	}
	p.mirror = newMirror(seg[off:off+uint64(slots*mirrorEntrySize)], slots)
	// Its rings exist once it connected; that happens right after the
	// start-up exchange we both took part in, so the wait is short.
	ready := (*uint32)(unsafe.Add(p.hdr, hdrReady))
	deadline := time.Now().Add(e.timeout)
	for atomic.LoadUint32(ready) == 0 {
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("rank %d did not set up its shared memory within %v", e.host.PeerRank(i), e.timeout)
		}
		core.Yield()
	}
	ringsSize := int(le.Uint64(seg[hdrRings:]))
	if p.rings, err = mapPeer(p.pid, ringFd, ringsSize); err != nil {
		return nil, fmt.Errorf("rank %d: %v", e.host.PeerRank(i), err)
	}
	me := e.myLocal
	p.out = newRing(p.rings[me*ringSize : (me+1)*ringSize])
	e.peers[i].Store(p)
	e.mu.Lock()
	e.contacted = append(e.contacted, p)
	e.mu.Unlock()
	return p, nil
}

// Map implements core.Mapper: a peer's starter memories are mapped here.
func (e *endpoint) Map(i int, ga core.GA, n uint64) unsafe.Pointer {
	p := e.peers[i].Load()
	if p == nil {
		if !e.isLocal(i) {
			return nil
		}
		var err error
		if p, err = e.peerOf(i); err != nil {
			e.failed(err)
			return nil
		}
	}
	l := e.host.Layout()
	seg := l.Seg(ga)
	if seg >= core.NumStarters || l.Color(ga) != 0 {
		return nil
	}
	off := l.Offset(ga)
	if off > p.sizes[seg] || n > p.sizes[seg]-off || p.starters[seg] == nil {
		return nil
	}
	return unsafe.Add(p.starters[seg], off)
}

// Starter implements core.Mapper.
func (e *endpoint) Starter(i, seg int) (unsafe.Pointer, uint64) {
	p := e.peers[i].Load()
	if p == nil || seg < 0 || seg > core.SegStarterDL {
		return nil, 0
	}
	return p.starters[seg], p.sizes[seg]
}

// failed reports a peer we cannot reach although it is on this host.
func (e *endpoint) failed(err error) {
	e.host.Fatal(fmt.Errorf("shm: %v; set ACP_TRANSPORTS=udp to reach it over the network instead", err))
}

// Poll implements core.Transport.
func (e *endpoint) Poll() bool { return e.progress() }

// Quiesce implements core.Transport: everything we wrote was consumed.
func (e *endpoint) Quiesce(deadline time.Time) error {
	if busy := core.DrainUntil(deadline, e.busyPeer, e.progress); busy >= 0 {
		return fmt.Errorf("shm: rank %d did not take our last messages in time (--acp-peer-timeout)", e.host.PeerRank(busy))
	}
	return nil
}

// busyPeer returns a peer we still have work for, or -1.
func (e *endpoint) busyPeer() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, p := range e.backlog {
		if len(p.pending) > 0 || len(p.streams) > 0 {
			return p.idx
		}
	}
	for k := range e.peers {
		if p := e.peers[k].Load(); p != nil && !p.out.empty() {
			return k
		}
	}
	for _, o := range e.ops {
		return o.peer.idx
	}
	return -1
}

// Close implements core.Transport.
func (e *endpoint) Close() error {
	if e.closed.Swap(true) {
		return nil
	}
	if e.seg != nil {
		atomic.StoreUint32(e.u32(hdrClosed), 1)
	}
	if e.started {
		atomic.AddUint32(e.u32(hdrFutex), 1)
		futexWake(e.u32(hdrFutex))
		<-e.done
	}
	for i := range e.peers {
		if p := e.peers[i].Load(); p != nil {
			unmapBytes(p.seg)
			unmapBytes(p.rings)
		}
	}
	e.rings.close()
	e.seg.close()
	return nil
}

var _ core.Transport = (*endpoint)(nil)
var _ core.Mapper = (*endpoint)(nil)
var _ core.StarterProvider = (*endpoint)(nil)
var _ core.Reacher = (*endpoint)(nil)
var _ core.Registrar = (*endpoint)(nil)
