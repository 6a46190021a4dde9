// Package ib is the InfiniBand verbs transport (native InfiniBand and RoCE):
// puts are RDMA WRITEs, gets RDMA READs, control messages RC SENDs into a
// shared receive queue, all over reliable-connected queue pairs that are
// created on first contact with a peer. Each active port of each device is
// one colour. libibverbs is loaded with dlopen when the transport opens,
// so libacp works on hosts without it.
//
// Connection information (queue pair number, packet sequence number, LID,
// GID, the starter memories' keys) is exchanged over a short TCP connection
// to the peer's connection service, whose address every process publishes
// through the start-up exchange. Keys of registered memory are fetched
// from the owner on first use, cached per (peer, segment) in a bounded
// cache, and revoked by the owner before it deregisters the memory.
// Atomics execute at the owner's CPU unless both ends' adapters are atomic
// with their CPUs (see nicAtomic).
package ib

// #include "fast.h"
import "C"

import (
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/libacp/libacp/core"
)

func init() {
	core.RegisterTransport(core.TransportInfo{
		Name:        "ib",
		Open:        open,
		Colors:      1,
		Settings:    Settings,
		Priority:    20, // after shared memory, before UDP
		AddressSize: addressBytes,
	})
}

// Settings are the tunables of this transport.
var Settings = []core.Setting{
	{Name: "ib-device", Kind: core.KindString, Default: "",
		Help: "verbs devices and ports to use, e.g. mlx5_0 or mlx5_0:1,mlx5_1:1 (default: every active port); each is one colour"},
	{Name: "ib-gid-index", Kind: core.KindString, Default: "",
		Help: "RoCE GID table index to send from (default: the RoCE v2 GID of the netdev's IPv4 address)"},
	{Name: "ib-addr", Kind: core.KindString, Default: "",
		Help: "IP address of this process's connection service (default: the address that reached the start-up rendezvous, else the RoCE netdev's, else 127.0.0.1)"},
	{Name: "ib-atomics", Kind: core.KindString, Default: "cpu", Choices: []string{"cpu", "nic"},
		Help: "who executes atomics: cpu (the owner's CPU, so they are atomic with its CPU's; a remote one wakes the owner's progress thread) or nic (the adapters execute every 8-byte atomic, this process's own through a loopback connection, swap/xor/or/and as compare-and-swap loops, for adapters whose atomics are not atomic with the CPU's; 4-byte atomics stay on the owner's CPU); every process must choose alike and open ib"},
	{Name: "ib-key-cache", Kind: core.KindUint, Default: "1024", Min: 16, Max: 1 << 20,
		Help: "remote memory keys cached per process (registered regions of peers; starter memories are always known)"},
	{Name: "ib-reg-cache", Kind: core.KindUint, Default: "64", Min: 0, Max: 1 << 16,
		Help: "adapter registrations of unregistered memory kept for a later registration of the same range (0: none); each kept range is watched and let go when the program unmaps it (userfaultfd; none are kept where it is not allowed), at most half the locked-memory limit is kept"},
}

// Sizes. Work requests in flight are bounded per process (sendSlots, which
// also bounds the completion queue) and per queue pair (qpDepth); what
// does not fit waits in the connection's queue.
const (
	msgSize      = 128 // receive buffers and per-request scratch space
	maxCtrl      = msgSize - 1
	srqDepth     = 256
	sendSlots    = 1024
	qpDepth      = C.ACPIB_FAST_PER_QP // 32, for both sides of the fast path: a large put is one work request, depth only pipelines small ones
	askInline    = 64
	maxChunk     = 1 << 30 // bytes per RDMA work request (32-bit lengths)
	qpTimeout    = 16      // local ACK timeout 4.096 µs * 2^16 = 0.27 s
	recvTag      = 1 << 63
	timerPeriod  = 50 * time.Millisecond // the progress goroutine's longest sleep with Go's work in flight or an operation waiting in the engine
	addressBytes = 19                    // IPv6-sized IP | port | flags (wire.go)
)

// repostBatch: receive buffers go back to the shared receive queue in
// batches of this many, one call per batch rather than one per message
// received (a cgo call: 10-15 us under emulation); the queue never holds
// fewer than srqDepth-repostBatch+1.
const repostBatch = 16

// qpRetry is how often an adapter sends again after an ACK timeout.
// Adapters give up after 7 retries (about 2 s at qpTimeout) with "retry
// count exceeded": the peer is gone. Soft-RoCE reads 7 as "for ever";
// there the peer timeout decides (checkTimers, for the Go and the C
// side's work alike), which a user can raise for a slow emulated network.
// 6 would give Soft-RoCE a limit of about 2 s that no setting lifts.
const qpRetry = 7

type endpoint struct {
	host     core.Host
	me, n    int
	paths    []*path
	devs     []*device
	spin     time.Duration
	timeout  time.Duration
	forceNIC bool // tests: NIC atomics even without IBV_ATOMIC_GLOB
	nicAll   bool // --acp-ib-atomics nic: the adapters execute every 8-byte atomic (core.DeviceAtomics)

	// One mapping outside the Go heap: sendSlots scratch areas, then each
	// device's receive buffers; registered with every device.
	buf     []byte
	bufMRs  []*vmr
	bufLkey []uint32

	ln   net.Listener
	ip   net.IP
	port int

	connected chan struct{} // closed by Connect
	closing   chan struct{} // closed by Close
	tcpMu     sync.Mutex
	tcp       map[net.Conn]struct{} // handshakes in progress
	layout    core.Layout
	jobKey    uint64
	book      core.AddressBook

	// The C fast path's record (fast.go) and the words it shares with
	// it: one completion queue poller at a time (completions are handled
	// in queue order), the application's polls, the sleep flag, the C
	// side's work in flight.
	fast    *C.acpib_fast
	fastDev int
	fh      fastHost
	fastShared
	sqBlocked     []*conn     // connections whose queued work waits for a send queue entry the C side holds
	sqBlockedFlag atomic.Bool // sqBlocked is not empty

	mu        sync.Mutex
	conns     []*conn          // [peer*len(paths)+path], nil until first contact
	byQPN     map[uint64]*conn // device<<32 | local QP number
	slots     []slot
	free      []int32
	waitSlot  []*conn
	ops       map[uint64]*op // waiting for a reply from the owner
	nextID    uint64
	keys      keyCache
	misses    map[missKey]*miss
	regs      map[int]*localRegion // by segment: the current registration
	byRegion  map[*core.Region]*localRegion
	localList []*localRegion // registered regions sorted by base (lkey lookup)
	// mappedRegs are registrations of same-host peers' memory mapped here
	// (registerMapped), kept until close; mappedRefused, such memories whose
	// registration failed (not tried again).
	mappedRegs    []*localRegion
	mappedRefused []*localRegion
	serial        uint32
	invals        map[invalKey]*invalWait
	acks          []*pendingAck
	repost        [][]uint32 // per device: receive buffers to post again
	comps         []completion
	deliver       []delivery
	atomics       []atomicReq
	fatal         error
	nconn         int // queue pairs created (statistics, tests)
	// keyRequests counts the key requests sent, revocations the
	// invalidations sent to peers that had a key, carriedReads the reads
	// that used a key their owner packed instead (statistics, tests).
	keyRequests  uint64
	revocations  uint64
	carriedReads atomic.Uint64
	rc           regCache // registrations kept for reuse
	// served counts the requests peers sent us (control messages,
	// atomics, key requests, invalidations): the work after which the
	// progress goroutine polls on, since the peer's next request tends to
	// follow. Locked writes; the goroutine reads it without the lock.
	served atomic.Uint64

	idleWait time.Duration // the progress goroutine's longest sleep with nothing in flight (core.IdlePeriod; the coarse clock may be that old)
	// deaf: the progress goroutine sleeps with events for solicited
	// messages only, so the completion of an operation the Go side posts
	// now would raise none (wakeIdle). Set whenever idleSleep is.
	deaf atomic.Bool
	// waiting counts the application threads that poll this endpoint in
	// a wait now (WaitPolls), waits those that began one; quiet: the
	// progress goroutine sleeps for quietLease at most with its completion
	// queues unarmed (sleepQuiet).
	waiting atomic.Int32
	waits   atomic.Uint64
	quiet   atomic.Bool
	// longSleep: the progress goroutine sleeps longer than timerPeriod
	// (or is about to), unaware of an operation that the engine holds
	// behind the C side's work (OrderWaits).
	longSleep atomic.Bool

	fatalOnce sync.Once
	closed    atomic.Bool
	wakeFD    int
	events    *eventWaiter // the progress goroutine's sleep (events.go)
	done      chan struct{}
	hs        sync.WaitGroup // handshakes in progress
}

type completion struct {
	c   core.Completion
	val uint64
	err error
}

type delivery struct {
	peer int
	msg  []byte
}

type atomicReq struct {
	from int
	id   uint64
	op   core.AtomicOp
	ga   core.GA
	a, b uint64
}

// endpoints lists the open endpoints of this process (tests inspect them).
var endpoints struct {
	sync.Mutex
	list []*endpoint
}

// CloseEndpointOf closes the ib endpoint that engine host opened, as the
// kernel does with the queue pairs of a process that dies, and leaves the
// engine as it is (tests of a vanished peer).
func CloseEndpointOf(host core.Host) error {
	endpoints.Lock()
	var e *endpoint
	for _, x := range endpoints.list {
		if x.host == host {
			e = x
		}
	}
	endpoints.Unlock()
	if e == nil {
		return fmt.Errorf("no ib endpoint of this engine")
	}
	return e.Close()
}

func open(cfg core.TransportConfig) (core.Transport, error) {
	s := cfg.Settings
	e := &endpoint{
		host:      cfg.Host,
		me:        cfg.Peer,
		n:         cfg.NPeers,
		spin:      s.Duration("progress-spin"),
		timeout:   s.Duration("peer-timeout"),
		connected: make(chan struct{}),
		closing:   make(chan struct{}),
		tcp:       map[net.Conn]struct{}{},
		byQPN:     map[uint64]*conn{},
		ops:       map[uint64]*op{},
		misses:    map[missKey]*miss{},
		regs:      map[int]*localRegion{},
		byRegion:  map[*core.Region]*localRegion{},
		invals:    map[invalKey]*invalWait{},
		done:      make(chan struct{}),
		wakeFD:    -1,
		forceNIC:  testForceNICAtomics,
		nicAll:    s.String("ib-atomics") == "nic",
		idleWait:  core.IdlePeriod(s.Duration("peer-timeout"), timerPeriod),
		fastShared: fastShared{pollLock: new(int32), appPolls: new(atomic.Uint64),
			idleSleep: new(atomic.Uint32), inflight: new(atomic.Int32), clock: new(atomic.Int64), acksWaiting: new(atomic.Uint32)},
	}
	e.keys.init(s.Int("ib-key-cache"))
	e.clock.Store(time.Now().UnixNano())
	logf := func(format string, args ...any) { cfg.Host.Logf(2, format, args...) }
	var err error
	e.paths, e.devs, err = discover(s.String("ib-device"), s.String("ib-gid-index"), logf)
	if err != nil {
		return nil, err
	}
	if err := e.setup(s.String("ib-addr"), cfg.BindHint); err != nil {
		e.release()
		return nil, err
	}
	e.conns = make([]*conn, e.n*len(e.paths))
	e.rc.init(s.Int("ib-reg-cache"), cfg.ForeignMemory, logf)
	endpoints.Lock()
	endpoints.list = append(endpoints.list, e)
	endpoints.Unlock()
	go e.progressLoop()
	go e.serve()
	return e, nil
}

// setup creates what every connection shares: completion queue, shared
// receive queue and buffers per device, the scratch area, the connection
// service.
func (e *endpoint) setup(addr, hint string) error {
	cqSize := sendSlots + fastSlots + srqDepth + 64
	for _, d := range e.devs {
		if err := setupDevice(d.v, min(cqSize, int(d.v.max_cqe)), min(srqDepth, int(d.v.max_srq_wr))); err != nil {
			return fmt.Errorf("%s: %v", d.name, err)
		}
		d.chanFD, d.asyncFD = channelFD(d.v), asyncFD(d.v)
	}
	size := sendSlots*msgSize + len(e.devs)*srqDepth*msgSize
	b, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return fmt.Errorf("cannot map %d bytes of message buffers: %v", size, err)
	}
	e.buf = b
	for _, d := range e.devs {
		mr, err := regMR(d.v, unsafe.Pointer(&b[0]), uint64(len(b)), false)
		if err != nil {
			return fmt.Errorf("%s: %v", d.name, regError(err, uint64(len(b)), "message buffers"))
		}
		lkey, _ := mrKeys(mr)
		e.bufMRs = append(e.bufMRs, mr)
		e.bufLkey = append(e.bufLkey, lkey)
	}
	e.slots = make([]slot, sendSlots)
	e.free = make([]int32, 0, sendSlots)
	for i := sendSlots - 1; i >= 0; i-- {
		e.free = append(e.free, int32(i))
	}
	e.repost = make([][]uint32, len(e.devs))
	for i, d := range e.devs {
		idx := make([]uint32, srqDepth)
		for j := range idx {
			idx[j] = uint32(j)
		}
		if err := postRecv(d.v, recvTag|uint64(i)<<32, idx, e.recvBase(i), msgSize, e.bufLkey[i]); err != nil {
			return fmt.Errorf("%s: posting receive buffers: %v", d.name, err)
		}
	}
	if e.wakeFD, err = unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC); err != nil {
		return err
	}
	// What the progress goroutine sleeps on: bit 0 the wake-up, then each
	// device's completion channel and asynchronous events (takeEvents).
	fds := []int32{int32(e.wakeFD)}
	for _, d := range e.devs {
		fds = append(fds, int32(d.chanFD), int32(d.asyncFD))
	}
	if e.events, err = newEventWaiter(fds); err != nil {
		return fmt.Errorf("cannot wait for the devices' events: %v", err)
	}
	if err := e.newFast(); err != nil {
		return err
	}
	return e.listen(addr, hint)
}

// recvBase is the address of device i's first receive buffer.
func (e *endpoint) recvBase(i int) uintptr {
	return uintptr(unsafe.Pointer(&e.buf[0])) + uintptr(sendSlots*msgSize+i*srqDepth*msgSize)
}

// scratch is the scratch area of a send slot.
func (e *endpoint) scratch(s int32) []byte {
	return e.buf[int(s)*msgSize : int(s+1)*msgSize]
}

func (e *endpoint) scratchAddr(s int32) uint64 {
	return uint64(uintptr(unsafe.Pointer(&e.buf[0]))) + uint64(s)*msgSize
}

func (e *endpoint) listen(addr, hint string) error {
	ipText := addr
	if ipText == "" {
		ipText = hint
	}
	if ipText == "" {
		if p := e.paths[0]; p.roce() && isV4Mapped(p.gid) {
			ipText = net.IP(p.gid[:]).String()
		}
	}
	if ipText == "" {
		ipText = "127.0.0.1"
	}
	ip := net.ParseIP(ipText)
	if ip == nil {
		return fmt.Errorf("connection service address %q is not an IP address (set --acp-ib-addr / ACP_IB_ADDR)", ipText)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(ip.String(), "0"))
	if err != nil {
		return fmt.Errorf("cannot open the connection service on %s: %v (set --acp-ib-addr / ACP_IB_ADDR)", ip, err)
	}
	e.ln, e.ip, e.port = ln, ip, ln.Addr().(*net.TCPAddr).Port
	return nil
}

func (e *endpoint) Name() string { return "ib" }

// Colors implements core.Colorer: one colour per usable port.
func (e *endpoint) Colors() int { return len(e.paths) }

// Address is the connection service's IP and TCP port, and whether every
// device of ours executes atomics atomically with our CPU (wire.go).
func (e *endpoint) Address() []byte {
	glob := true
	for _, d := range e.devs {
		glob = glob && d.atomicGlob
	}
	return encodeAddress(e.ip, e.port, glob, e.nicAll)
}

// DeviceAtomic implements core.DeviceAtomics: with --acp-ib-atomics nic
// the adapters execute every 8-byte atomic, wherever its target is.
func (e *endpoint) DeviceAtomic(op core.AtomicOp) bool { return e.nicAll && op.Width() == 8 }

func (e *endpoint) DeviceAtomicsSetting() string { return "--acp-ib-atomics nic" }

func (e *endpoint) Connect(book core.AddressBook, key uint64) error {
	if book.RecSize != addressBytes || book.Len() != e.n {
		return fmt.Errorf("address book of %d records of %d bytes, want %d of %d", book.Len(), book.RecSize, e.n, addressBytes)
	}
	// The engine's GA layout: colour, segment and offset of a GA decide
	// the path, the key and the remote address. The engine knows its
	// layout once every transport declared its colours.
	l, ok := e.host.(interface{ Layout() core.Layout })
	if !ok {
		var err error
		if e.layout, err = core.NewLayout(e.n, len(e.paths)); err != nil {
			return err
		}
	} else {
		e.layout = l.Layout()
	}
	if err := checkAtomicsMode(book, e.nicAll, e.host.PeerRank); err != nil {
		return err
	}
	e.mu.Lock()
	e.book, e.jobKey = book, key
	e.lendFast()
	e.mu.Unlock()
	close(e.connected)
	return nil
}

// checkAtomicsMode refuses a job whose processes chose --acp-ib-atomics
// differently: an atomic one of them sends to the adapter would not be
// atomic with another's CPU atomic on the same word.
func checkAtomicsMode(book core.AddressBook, nicAll bool, rankOf func(peer int) int) error {
	mode := func(nic bool) string {
		if nic {
			return "nic"
		}
		return "cpu"
	}
	for p := 0; p < book.Len(); p++ {
		if book.Present(p) && peerNICAll(book.At(p)) != nicAll {
			return fmt.Errorf("rank %d runs with --acp-ib-atomics %s, this process with %s: every process must choose alike (ACP_IB_ATOMICS)",
				rankOf(p), mode(!nicAll), mode(nicAll))
		}
	}
	return nil
}

// peerAddr is the connection service of a peer.
func (e *endpoint) peerAddr(peer int) string {
	ip, port := decodeAddress(e.book.At(peer))
	return net.JoinHostPort(ip.String(), strconv.Itoa(port))
}

// Poll implements core.Transport. A waiting application thread polls the
// completion queues itself; while it does, the progress goroutine does not
// spin (see progressLoop).
func (e *endpoint) Poll() bool {
	e.appPolls.Add(1)
	return e.progress()
}

// wakeIdle ends a sleep of the progress goroutine that would not see the
// operation just issued complete: the long idle sleep, and a sleep with
// the C side's work in flight or after the application's activity, deaf
// to this operation's completion until the goroutine arms the queue for
// it. A channel's release of slots, posted by Go and awaited by no one,
// stayed unseen for tens of milliseconds while the C side's later
// operations completed, and so did whatever waited for it. Not while the goroutine
// sleeps quiet: that sleep is short (quietLease).
func (e *endpoint) wakeIdle() {
	if e.deaf.Load() && !e.quiet.Load() {
		core.SignalEventfd(e.wakeFD)
	}
}

// OrderWaits implements core.OrderWatcher: an operation began to wait in
// the engine for earlier ones, which may be the C side's, whose
// completions nobody else may look for; a long sleep ends, and the next
// one is timerPeriod long while any operation waits.
func (e *endpoint) OrderWaits() {
	if e.longSleep.Load() {
		core.SignalEventfd(e.wakeFD)
	}
}

// now is the coarse clock of the endpoint (Unix nanoseconds), refreshed
// by the progress loop whenever it wakes, so at least every idleWait (the
// peer timeout's sixteenth; every timerPeriod while Go's work is in
// flight or an operation waits in the engine): reading the real clock
// can cost microseconds (a virtual machine without a usable TSC), and only
// timeouts of seconds use it. The C fast path stamps its work with it too.
func (e *endpoint) now() int64 { return e.clock.Load() }

// progress handles one batch of completions per device. It never blocks;
// if another goroutine is polling, it returns at once.
func (e *endpoint) progress() bool {
	if !atomic.CompareAndSwapInt32(e.pollLock, 0, 1) {
		return false
	}
	defer atomic.StoreInt32(e.pollLock, 0)
	worked := false
	if e.sqBlockedFlag.Load() {
		e.mu.Lock()
		e.drainSQBlocked()
		e.unlockAndRun()
	}
	if e.acksWaiting.Load() != 0 {
		// The C side's work with a revoked key may have ended.
		e.mu.Lock()
		e.checkAcks()
		e.unlockAndRun()
	}
	var wcs [pollBatch]wc
	for i, d := range e.devs {
		// What the C side polled and left comes before what is still
		// in the queue.
		n := 0
		if i == e.fastDev {
			n = e.takeStash(&wcs)
		}
		if n == 0 {
			n = pollCQ(d.v, &wcs)
		}
		if n < 0 {
			e.host.Logf(1, "ib: polling the completion queue of %s failed", d.name)
			continue
		}
		if n == 0 {
			continue
		}
		worked = true
		e.mu.Lock()
		for j := 0; j < n; j++ {
			e.handleWC(i, &wcs[j])
		}
		e.unlockAndRun()
	}
	return worked
}

// unlockAndRun reposts receive buffers (repostBatch at a time), releases
// the lock and runs what was collected under it: deliveries and atomics
// for the engine (in arrival order), completions, a fatal error.
func (e *endpoint) unlockAndRun() {
	for i, idx := range e.repost {
		if len(idx) >= repostBatch {
			if err := postRecv(e.devs[i].v, recvTag|uint64(i)<<32, idx, e.recvBase(i), msgSize, e.bufLkey[i]); err != nil && e.fatal == nil && !e.closed.Load() {
				e.fatal = fmt.Errorf("ib: cannot post receive buffers on %s: %v", e.devs[i].name, err)
			}
			e.repost[i] = idx[:0]
		}
	}
	comps, dels, ats, fatal := e.comps, e.deliver, e.atomics, e.fatal
	e.comps, e.deliver, e.atomics = nil, nil, nil
	e.mu.Unlock()
	for _, d := range dels {
		e.host.Deliver(d.peer, d.msg)
	}
	for _, a := range ats {
		e.serveAtomic(a)
	}
	for _, c := range comps {
		c.c.OnComplete(c.val, c.err)
	}
	if fatal != nil {
		e.fatalOnce.Do(func() { e.host.Fatal(fatal) })
	}
}

// progressLoop serves peers while the application computes: after
// activity it polls for --acp-progress-spin and some idle turns
// (core.IdleGate), then sleeps until a completion event (or a timer)
// wakes it. It spins only while no
// application thread polls (a waiting thread serves everything it finds on
// the way), because a second busy thread per process takes the CPU that the
// adapter's driver or the peer needs; on an oversubscribed node that costs
// far more than it saves.
func (e *endpoint) progressLoop() {
	defer close(e.done)
	gate := core.NewIdleGate(e.spin)
	var seen, seenAtSleep, servedSeen, waitsSeen uint64
	quietBefore := false
	nextTimer := time.Now()
	// An idle turn reads the clock only every 16th time, and hands the P
	// over (runtime.Gosched, whose timer check reads the clock again) only
	// every 16th time too: under Soft-RoCE's guest a clock read was a 1.2
	// us system call, two per turn, and an atomic that the owner's CPU
	// serves took 17 of them per rank. With one read per 16 turns, 6
	// alternated rounds gave a median of 670 us per atomic against 860, all
	// 18 pairs faster (BENCHMARKS.md). The coarse clock and the end of the
	// spin are then late by 16 turns at most.
	var now time.Time
	idleTurns := 0 // turns in a row that found nothing and did not sleep
	for !e.closed.Load() {
		if idleTurns&15 == 0 {
			now = time.Now()
			e.clock.Store(now.UnixNano())
			if !now.Before(nextTimer) {
				nextTimer = now.Add(timerPeriod)
				e.mu.Lock()
				e.checkTimers(now.UnixNano())
				e.unlockAndRun()
				e.rc.reap()
			}
		}
		if e.progress() {
			idleTurns = 0
			// Completions of the application's own operations are not
			// a reason to poll on: the application polls for its next
			// ones when it waits, and a second busy thread per process
			// takes the CPU the adapter's driver needs (Soft-RoCE, 2
			// processes, 5 alternated rounds: put pingpong medians
			// 12.5-13.6 us at 64-256 B without this spin, 15.8-20.0
			// with it).
			if core.Moved(&e.served, &servedSeen) {
				gate.Worked(time.Now())
			}
			seen = e.appPolls.Load()
			continue
		}
		if !gate.MaySleep(now) && e.appPolls.Load() == seen {
			core.YieldTurn(idleTurns)
			idleTurns++
			continue
		}
		idleTurns = 0
		// Ask for an event, then look once more: a completion that
		// arrived before the request raised no event. Only messages
		// (sent solicited) need us when nothing of ours is in flight:
		// an event for every completion would make the adapter's driver
		// wake this goroutine on each of the application's operations,
		// which the application polls for itself. With nothing in flight
		// the sleep is long (each return from it sets the Go runtime's
		// monitor thread polling for a millisecond); announced first, so
		// that an operation issued meanwhile either counts as in flight
		// here or wakes us (issue).
		//
		// The C side's work in flight is the application's to poll: it
		// needs no event per completion, and no look from here either,
		// except when an operation ordered after it waits in the engine
		// until someone sees it complete: then this goroutine looks at
		// least every timerPeriod (the engine tells us when one begins
		// to wait: OrderWaits). Otherwise the sleep is long, and while
		// the application issued or polled since the last sleep the C
		// side's operations do not end it (idleSleep 0): each would
		// otherwise wake it (a system call for the issuer, a thread
		// switch here). A look every timerPeriod regardless cost more
		// than it found: in the Soft-RoCE guest each one woke three of
		// the runtime's threads per process, on the CPUs where the ranks
		// spin, for 2-3 ms (BENCHMARKS.md, 2026-11-29, eighth section).
		// Announced before busy is read: an operation enqueued after
		// that reading finds them set (deaf first: it is set whenever
		// idleSleep is, for wakeIdle; longSleep before the engine's
		// OrderWaiting, for OrderWaits).
		// While the application's threads poll in their waits, nothing
		// is armed and the sleep is short (sleepQuiet).
		quiet := e.sleepQuiet(quietBefore, &waitsSeen)
		quietBefore = quiet
		e.longSleep.Store(!quiet)
		e.deaf.Store(true)
		e.idleSleep.Store(1)
		busy := e.busy()
		if busy {
			e.deaf.Store(false)
		}
		wait := e.idleWait
		app := e.appPolls.Load()
		active := app != seenAtSleep
		seenAtSleep = app
		switch {
		case quiet:
			e.idleSleep.Store(0)
			wait = quietLease
		case busy || e.host.OrderWaiting():
			e.idleSleep.Store(0)
			e.longSleep.Store(false)
			wait = timerPeriod
		case active || e.inflight.Load() > 0:
			e.idleSleep.Store(0)
		}
		if !quiet {
			e.arm(busy)
		}
		if e.progress() {
			e.awake()
			if core.Moved(&e.served, &servedSeen) {
				gate.Worked(time.Now())
			}
			seen = e.appPolls.Load()
			continue
		}
		e.takeEvents(e.events.wait(wait))
		e.awake()
	}
}

// awake withdraws what the progress goroutine announced before a sleep:
// it is about to look for work itself.
func (e *endpoint) awake() {
	e.quiet.Store(false)
	e.idleSleep.Store(0)
	e.deaf.Store(false)
	e.longSleep.Store(false)
}

// busy reports whether the Go side has work in flight: the progress
// goroutine then sleeps with an event for every completion.
func (e *endpoint) busy() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.free) != len(e.slots) || len(e.ops) > 0 || len(e.misses) > 0
}

// arm asks every device for an event at its next completion (busy) or
// at its next solicited message.
func (e *endpoint) arm(busy bool) {
	for _, d := range e.devs {
		armCQ(d.v, !busy)
	}
}

// sleepQuiet tells whether the progress goroutine, about to sleep, sleeps
// quiet: for quietLease at most, with the completion queues unarmed, and
// deaf to everything meanwhile. It does while an application thread polls
// in a wait, which sees every completion and every message itself: an
// event would only wake this goroutine to compete with it for the CPU
// (over Soft-RoCE the wake-up runs inside the peer's post, which took
// 90-125 us with it and 55-62 without; BENCHMARKS.md, 2026-11-29, fourth
// section). And it goes on doing so while the application began a wait
// during the last quiet sleep, as a thread that issues and waits in turn
// does (an atomic served by the owner's CPU, then another). When neither
// holds, the queues are armed as before. So whatever an unwatched
// operation or a peer's request needs is seen within a lease or two.
func (e *endpoint) sleepQuiet(before bool, waitsSeen *uint64) bool {
	began := core.Moved(&e.waits, waitsSeen)
	quiet := e.waiting.Load() > 0 || before && began
	e.quiet.Store(quiet)
	return quiet
}

// quietLease is the longest quiet sleep of the progress goroutine.
const quietLease = time.Millisecond

// WaitPolls implements core.WaitPoller.
func (e *endpoint) WaitPolls() {
	e.waits.Add(1)
	e.waiting.Add(1)
}

// WaitEnds implements core.WaitPoller. A quiet sleep ends by itself.
func (e *endpoint) WaitEnds() { e.waiting.Add(-1) }

// takeEvents consumes the events the progress goroutine's sleep reported
// (a bit per descriptor, in the order setup gave them).
func (e *endpoint) takeEvents(ready uint64) {
	if ready&1 != 0 && !e.closed.Load() {
		core.DrainEventfd(e.wakeFD) // a wake-up (issue): reset it
	}
	for i, d := range e.devs {
		if ready&(1<<(1+2*i)) != 0 {
			takeCQEvent(d.v)
		}
		if ready&(1<<(2+2*i)) != 0 {
			e.asyncEvents(d)
		}
	}
}

// asyncEvents reports the device's asynchronous events; a queue pair
// error ends its connection.
func (e *endpoint) asyncEvents(d *device) {
	for {
		typ, qpn, ok := takeAsyncEvent(d.v)
		if !ok {
			return
		}
		e.mu.Lock()
		c := e.byQPN[uint64(d.index)<<32|uint64(qpn)]
		if c != nil && (typ == eventQPFatal || typ == eventQPReqErr || typ == eventQPAccessErr) {
			e.connFailed(c, fmt.Errorf("asynchronous event %s on the queue pair", eventText(typ)))
		} else {
			e.host.Logf(2, "ib: %s: asynchronous event %s", d.name, eventText(typ))
		}
		e.unlockAndRun()
	}
}

// Quiesce implements core.Transport: every work request completed (RC
// completions mean the peer's adapter acknowledged them), nothing queued,
// no answer outstanding.
func (e *endpoint) Quiesce(deadline time.Time) error {
	busy := core.DrainUntil(deadline, func() int {
		e.mu.Lock()
		defer e.mu.Unlock()
		return e.busyPeer()
	}, e.progress)
	if busy >= 0 {
		return fmt.Errorf("ib: rank %d did not acknowledge our last messages in time (--acp-peer-timeout)", e.host.PeerRank(busy))
	}
	return nil
}

// busyPeer returns a peer with unfinished work, or -1. Locked.
func (e *endpoint) busyPeer() int {
	if p, _ := e.oldestFast(); p >= 0 {
		return p
	}
	if len(e.free) != len(e.slots) {
		for _, s := range e.slots {
			if s.kind != slotFree {
				return s.conn.peer
			}
		}
	}
	for _, o := range e.ops {
		return o.peer
	}
	for k := range e.misses {
		return int(k.peer)
	}
	for _, a := range e.acks {
		return a.peer
	}
	for _, c := range e.conns {
		if c != nil && len(c.queue) > 0 {
			return c.peer
		}
	}
	return -1
}

// Close implements core.Transport.
func (e *endpoint) Close() error {
	e.tcpMu.Lock()
	already := e.closed.Swap(true)
	e.tcpMu.Unlock()
	if already {
		return nil
	}
	e.withdrawFast()
	close(e.closing)
	core.SignalEventfd(e.wakeFD)
	<-e.done
	_ = e.ln.Close()
	e.cutHandshakes()
	e.hs.Wait()
	e.mu.Lock()
	e.host.Logf(2, "ib: closing: %d queue pair(s) created", e.nconn)
	if e.rc.on() {
		e.host.Logf(2, "ib: %s", e.rc.summary())
	}
	e.mu.Unlock()
	e.release()
	endpoints.Lock()
	for i, x := range endpoints.list {
		if x == e {
			endpoints.list = append(endpoints.list[:i], endpoints.list[i+1:]...)
			break
		}
	}
	endpoints.Unlock()
	return nil
}

// release frees every verbs resource: queue pairs first, then memory
// registrations, then the devices.
func (e *endpoint) release() {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, c := range e.conns {
		if c != nil && c.qp != nil {
			e.fastConnDown(c)
			destroyQP(c.qp)
			c.qp = nil
		}
	}
	e.freeFast()
	for _, lr := range e.byRegion {
		lr.deregister()
	}
	for _, lr := range e.mappedRegs {
		lr.deregister()
	}
	e.mappedRegs = nil
	e.regs, e.byRegion, e.localList = map[int]*localRegion{}, map[*core.Region]*localRegion{}, nil
	e.rc.close()
	for _, mr := range e.bufMRs {
		_ = deregMR(mr)
	}
	e.bufMRs = nil
	if e.buf != nil {
		_ = unix.Munmap(e.buf)
		e.buf = nil
	}
	for _, d := range e.devs {
		closeDevice(d.v)
	}
	e.devs = nil
	if e.events != nil {
		e.events.close()
		e.events = nil
	}
	if e.wakeFD >= 0 {
		_ = unix.Close(e.wakeFD)
		e.wakeFD = -1
	}
	if e.ln != nil {
		_ = e.ln.Close()
	}
}

var _ core.Transport = (*endpoint)(nil)
var _ core.Registrar = (*endpoint)(nil)
var _ core.Colorer = (*endpoint)(nil)
var _ core.DeviceAtomics = (*endpoint)(nil)

// testForceNICAtomics makes fetch-and-add and compare-and-swap of 8 bytes
// use the NIC even on devices without IBV_ATOMIC_GLOB, so that tests can
// exercise that path on Soft-RoCE. Never set outside tests: such atomics
// are not atomic with respect to the engine's CPU atomics.
var testForceNICAtomics = false
