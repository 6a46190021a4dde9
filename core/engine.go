package core

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/libacp/libacp/internal/hostid"
)

// Exchanger is the bootstrap as the engine sees it: how processes that do
// not know each other yet exchange contact information once, and a barrier
// that stays reliable when the transports are being torn down.
type Exchanger interface {
	Rank() int // physical index of this process, 0..Size-1
	Size() int
	// AllGather contributes rec (the same length on every process) and
	// returns every process's record concatenated in physical order.
	AllGather(rec []byte) ([]byte, error)
	// Barrier returns when every process has called it.
	Barrier() error
	// Abort asks the launcher to stop the whole job.
	Abort(code int, msg string)
	Close() error
}

// LocalIPer is implemented by exchangers that know which local IP address
// reached the other processes (a TCP rendezvous does).
type LocalIPer interface{ LocalIP() string }

// Config is what an engine is built from.
type Config struct {
	Settings  *Settings
	Exchanger Exchanger
	// Stderr receives diagnostics (os.Stderr when nil).
	Stderr io.Writer
	// Exit ends the process after a fatal error or acp_abort (os.Exit when
	// nil). Tests that run several engines in one process replace it.
	Exit func(code int)
	// ForeignMemory says that no memory registered with this engine is
	// Go's heap (a C program: its own memory, and the libraries' mapped
	// areas). Transports may then watch registered memory for being
	// unmapped (internal/memwatch), which Go's heap must never be: the
	// runtime's own madvise of it would wait for a goroutine.
	ForeignMemory bool
}

// Engine is one process's ACP basic layer: registration, the command queue
// with its handles, local execution, delegation and the transports.
type Engine struct {
	pollingWaits atomic.Int32  // threads polling the transports in a wait (Polled)
	served       atomic.Uint64 // peers' requests served here (atomics, messages): see pollUntil

	cfg    Config
	ex     Exchanger
	layout Layout
	nprocs int
	phys   int          // our physical index
	rank   atomic.Int64 // our logical rank (acp_rank)
	// node is our host's identity with our group on it (hostid.InGroup,
	// --acp-host-group): the start-up record's and the transports'.
	node [hostid.Size]byte
	// routed is set once the routes are chosen. A peer's message can only
	// arrive after that (the peer finished its start-up exchange, which
	// needs ours), but through a socket: the flag makes the order one the
	// Go memory model (and the race detector) sees.
	routed   atomic.Bool
	log2phys []int32 // nil while logical == physical
	phys2log []int32 // likewise
	// A transport's C code for the fast path finds peers by the logical
	// ranks of the time it learnt them: after a reset that permutes ranks
	// the engine no longer lends it (SetFastRemote).
	noFastRemote atomic.Bool
	regs         *RegTable
	starters     [NumStarters][]byte
	colors       int
	// startersShared: the starter memories belong to a transport (shared
	// with peers), which releases them.
	startersShared bool

	slots   []transportSlot // requested transports, preference order
	trs     []Transport     // the ones open here, preference order
	mappers []Mapper        // per entry of trs: its Mapper ability, or nil
	polled  []Transport     // the ones that reach at least one peer
	// waitPollers are the polled transports told when a wait polls them.
	waitPollers []WaitPoller
	// orderWatchers are the polled transports told when an operation
	// begins to wait for earlier ones.
	orderWatchers []OrderWatcher
	route         []uint8 // peer → index into trs
	// The transport that executes the job's 8-byte atomics on its device
	// for every placement (DeviceAtomics), or nil: then atomics on memory
	// this thread can touch are CPU atomics, and the owner's CPU serves
	// the rest.
	devAtom deviceAtomicTransport

	q       queue
	bar     barrier
	verbose int
	spin    time.Duration
	timeout time.Duration
	// hangAfter: a wait this long prints the hang report (0: never)
	hangAfter time.Duration
	reports   reporters
	// stateReport prints the state report (--acp-state-report-at), or nil;
	// reportMu is held while it runs, and guards reportStopped (the
	// library is ending: no report any more).
	stateReport   *time.Timer
	reportMu      sync.Mutex
	reportStopped bool
	errs          atomic.Int64 // operations completed with an error
	failures      failures     // which ones, recently

	stateMu sync.Mutex
	closed  bool
}

// Handle is an ACP operation handle (acp_handle_t).
type Handle int64

// Special handles.
const (
	HandleNull Handle = 0
	HandleAll  Handle = -1
	HandleCont Handle = -2
)

// nodeIDSize is the size of the per-host identity in the start-up record.
const nodeIDSize = hostid.Size

// recordHead is the start-up record before the transports' addresses: job
// key candidate (8) | colours (2) | node id (16) | process id (4).
const recordHead = 8 + 2 + nodeIDSize + 4

// New initialises the basic layer of this process: starter memory, the
// registration table, the transports, and the exchange of addresses. It
// returns when every process of the job got as far (the allgather is a
// barrier).
func New(cfg Config) (*Engine, error) {
	if cfg.Stderr == nil {
		cfg.Stderr = os.Stderr
	}
	if cfg.Exit == nil {
		cfg.Exit = os.Exit
	}
	s := cfg.Settings
	ex := cfg.Exchanger
	e := &Engine{
		cfg:     cfg,
		ex:      ex,
		nprocs:  ex.Size(),
		phys:    ex.Rank(),
		verbose: s.Int("verbose"),
		spin:    s.Duration("progress-spin"),
		timeout: s.Duration("peer-timeout"),

		hangAfter: s.Duration("hang-report"),
	}
	e.rank.Store(int64(e.phys))
	if pf := s.String("portfile"); pf != "" {
		return nil, fmt.Errorf("--acp-portfile %q: the multi-MPI port file of the original macprun is not supported; start the job with acprun, mpirun or srun", pf)
	}

	// The application's thread (this one: acp_init calls in from it) is
	// pinned before the transports start their threads, which stay free.
	if c := s.String("bind-thread-cpu"); c != "" {
		cpu, err := strconv.Atoi(c)
		if err == nil {
			err = PinCallingThread(cpu)
		}
		if err != nil {
			e.Logf(1, "ACP_BIND_THREAD_CPU=%q (set by acprun --acp-bind thread): %v; the thread stays unpinned", c, err)
		} else {
			e.Logf(2, "the thread that called acp_init is pinned to CPU %d (--acp-bind thread); the library's threads are free", cpu)
		}
	}

	// Transports first: they decide the number of colours, which the GA
	// layout needs.
	e.colors = 1
	if e.nprocs > 1 {
		if err := e.openTransports(); err != nil {
			return nil, err
		}
	}
	var err error
	if e.layout, err = NewLayout(e.nprocs, e.colors); err != nil {
		e.closeTransports()
		return nil, err
	}
	e.regs = NewRegTable(e.layout, e.phys)
	if err := e.allocStarters(); err != nil {
		e.closeTransports()
		return nil, err
	}
	if err := e.q.init(e, s.Int("queue-depth")); err != nil {
		e.closeTransports()
		e.freeStarters()
		return nil, err
	}
	e.bar.f = e.q.fast

	if err := e.exchange(); err != nil {
		// The caller owns the exchanger and closes it on failure.
		e.closeTransports()
		e.freeStarters()
		return nil, err
	}
	e.publishOwn()
	e.Logf(2, "%s; %d colour(s); transports %s; queue depth %d", e.layout, e.colors, e.transportNames(), s.Int("queue-depth"))
	e.startStateReport(s.Duration("state-report-at"))
	return e, nil
}

func (e *Engine) openTransports() error {
	s := e.cfg.Settings
	infos, err := SelectedTransports(s)
	if err != nil {
		return err
	}
	if len(infos) == 0 {
		return errors.New("no transport is linked into this library")
	}
	e.node = hostid.InGroup(s.String("host-group"))
	hint := ""
	if lip, ok := e.ex.(LocalIPer); ok {
		hint = lip.LocalIP()
	}
	// Every requested transport keeps its place in the start-up record
	// even where it fails to open, so that all processes agree on the
	// record's layout; peers then route around it.
	var failures []string
	for _, info := range infos {
		t, err := info.Open(TransportConfig{Host: e, Settings: s, Peer: e.phys, NPeers: e.nprocs, BindHint: hint, Node: e.node, ForeignMemory: e.cfg.ForeignMemory})
		if err != nil {
			failures = append(failures, fmt.Sprintf("%s: %v", info.Name, err))
			e.Logf(2, "transport %s not available: %v", info.Name, err)
			t = nil
		}
		e.slots = append(e.slots, transportSlot{info: info, t: t})
		if t == nil {
			continue
		}
		e.trs = append(e.trs, t)
		colors := info.Colors
		if c, ok := t.(Colorer); ok {
			colors = c.Colors()
		}
		e.colors = max(e.colors, colors)
	}
	if len(e.trs) == 0 {
		return fmt.Errorf("no transport could be opened (%s)", strings.Join(failures, "; "))
	}
	return nil
}

// transportSlot is one requested transport: its description and, when it
// opened here, the endpoint.
type transportSlot struct {
	info TransportInfo
	t    Transport
	size int // address size in the start-up record
}

func registeredNames() []string {
	var out []string
	for _, t := range Transports() {
		out = append(out, t.Name)
	}
	return out
}

func (e *Engine) transportNames() string {
	if len(e.trs) == 0 {
		return "none (single process)"
	}
	var n []string
	for _, t := range e.trs {
		n = append(n, t.Name())
	}
	return strings.Join(n, ",")
}

// starterSettings name the sizes of the starter memories (segments 0..2).
var starterSettings = [SegEngine]string{"size-smem", "size-smem-cl", "size-smem-dl"}

// starterSizes are the sizes of the starter memories and the engine area.
// Where peers map starter memory (shared), the communication library's
// region also holds the ring pool (withRingPool).
func starterSizes(s *Settings, shared bool) [NumStarters]uint64 {
	sizes := [NumStarters]uint64{SegEngine: engineAreaSize}
	for i, name := range starterSettings {
		sizes[i] = s.Uint(name)
	}
	if shared {
		sizes[SegStarterCL] = withRingPool(s, sizes[SegStarterCL])
	}
	return sizes
}

func (e *Engine) allocStarters() error {
	s := e.cfg.Settings
	// A transport that shares memory with peers provides the starter
	// memories, so that peers can map them; otherwise they are private.
	var provider StarterProvider
	var providerName string
	for _, t := range e.trs {
		if sp, ok := t.(StarterProvider); ok {
			provider, providerName = sp, t.Name()
			break
		}
	}
	sizes := starterSizes(s, provider != nil)
	for i, name := range starterSettings {
		if sizes[i] > e.layout.MaxOffset() {
			fix := fmt.Sprintf("--acp-%s / %s", name, Setting{Name: name}.Env())
			if i == SegStarterCL && provider != nil {
				fix += " or --acp-size-cl-rings / ACP_SIZE_CL_RINGS"
			}
			return fmt.Errorf("starter memory of %d bytes exceeds the %d bytes a GA can address in a %d-process job; lower %s",
				sizes[i], e.layout.MaxOffset(), e.nprocs, fix)
		}
	}
	if provider != nil {
		mem, err := provider.Starters(sizes)
		if err != nil {
			return fmt.Errorf("cannot allocate starter memory of %d+%d+%d bytes in %s: %v; lower --acp-size-smem, --acp-size-smem-cl, --acp-size-smem-dl",
				sizes[0], sizes[1], sizes[2], providerName, err)
		}
		e.starters, e.startersShared = mem, true
	}
	for i := range sizes {
		if !e.startersShared {
			b, err := mapAnon(sizes[i])
			if err != nil {
				e.freeStarters()
				what := "the engine area"
				if i < SegEngine {
					what = fmt.Sprintf("--acp-%s / %s", starterSettings[i], Setting{Name: starterSettings[i]}.Env())
				}
				return fmt.Errorf("cannot allocate %d bytes of starter memory: %v; lower %s", sizes[i], err, what)
			}
			e.starters[i] = b
		}
		var base unsafe.Pointer
		if len(e.starters[i]) > 0 {
			base = unsafe.Pointer(&e.starters[i][0])
		}
		// Starter memory is page aligned, so every rank's starter GA has
		// offset 0 and can be computed without asking the owner.
		r := e.regs.Install(SegStarter+i, base, sizes[i], 0)
		if err := e.announce(r); err != nil {
			e.freeStarters()
			return fmt.Errorf("starter memory: %v", err)
		}
	}
	return nil
}

// withRingPool is the size of the communication library's starter memory
// where peers map it: the configured size plus --acp-size-cl-rings, so
// that channel rings land where same-host peers write them with plain
// stores (and the C fast paths apply) even with the small default. A
// configured size of 0 (no communication library) stays 0.
func withRingPool(s *Settings, cl uint64) uint64 {
	if cl == 0 {
		return 0
	}
	return cl + s.Uint("size-cl-rings")
}

func (e *Engine) freeStarters() {
	for i := range e.starters {
		if !e.startersShared {
			unmap(e.starters[i])
		}
		e.starters[i] = nil
	}
}

// announce tells the transports that need to prepare memory about a new
// region; on a failure the ones that accepted it forget it again.
func (e *Engine) announce(r *Region) error {
	for i, t := range e.trs {
		if reg, ok := t.(Registrar); ok {
			if err := reg.RegisterRegion(r); err != nil {
				e.withdraw(r, i)
				return fmt.Errorf("%s: %v", t.Name(), err)
			}
		}
	}
	return nil
}

// withdraw tells the first n transports that a region is gone.
func (e *Engine) withdraw(r *Region, n int) {
	for _, t := range e.trs[:n] {
		if reg, ok := t.(Registrar); ok {
			reg.UnregisterRegion(r)
		}
	}
}

// exchange publishes this process's record, connects the transports and
// chooses one per peer. Record: job key candidate (8) | colours (2) | node
// id (16) | process id (4) | per requested transport: present (1) | address.
func (e *Engine) exchange() error {
	if e.nprocs == 1 {
		return nil
	}
	var key [8]byte
	if _, err := rand.Read(key[:]); err != nil {
		return err
	}
	rec := append([]byte{}, key[:]...)
	rec = binary.LittleEndian.AppendUint16(rec, uint16(e.colors))
	rec = append(rec, e.node[:]...)
	rec = binary.LittleEndian.AppendUint32(rec, uint32(os.Getpid()))
	for i := range e.slots {
		sl := &e.slots[i]
		sl.size = sl.info.AddressSize
		if sl.t == nil {
			rec = append(rec, 0)
			rec = append(rec, make([]byte, sl.size)...)
			continue
		}
		addr := sl.t.Address()
		if sl.size == 0 {
			sl.size = len(addr)
		}
		if len(addr) != sl.size {
			return fmt.Errorf("%s: address of %d bytes, its registration says %d", sl.info.Name, len(addr), sl.size)
		}
		rec = append(rec, 1)
		rec = append(rec, addr...)
	}
	all, err := e.ex.AllGather(rec)
	if err != nil {
		return fmt.Errorf("start-up exchange failed: %v", err)
	}
	if len(all) != len(rec)*e.nprocs {
		return fmt.Errorf("start-up exchange: %d bytes from %d processes, expected %d-byte records: do all processes use the same libacp and ACP_TRANSPORTS?", len(all), e.nprocs, len(rec))
	}
	book := AddressBook{RecSize: len(rec), Data: all}
	for p := 0; p < e.nprocs; p++ {
		if c := int(binary.LittleEndian.Uint16(book.At(p)[8:])); c != e.colors {
			return fmt.Errorf("process %d offers %d colour(s), this one %d: every process must use the same transports", p, c, e.colors)
		}
	}
	jobKey := binary.LittleEndian.Uint64(book.At(0)[:8]) // rank 0's candidate wins
	e.oversubscription(book)
	off := recordHead
	var books []AddressBook
	for _, sl := range e.slots {
		n := sl.size
		sub := AddressBook{RecSize: n, Data: make([]byte, 0, n*e.nprocs)}
		for p := 0; p < e.nprocs; p++ {
			r := book.At(p)[off:]
			if r[0] == 0 {
				if sub.Absent == nil {
					sub.Absent = make([]bool, e.nprocs)
				}
				sub.Absent[p] = true
			}
			sub.Data = append(sub.Data, r[1:1+n]...)
		}
		books = append(books, sub)
		off += 1 + n
	}
	for i, sl := range e.slots {
		if sl.t == nil {
			continue
		}
		if err := sl.t.Connect(books[i], jobKey); err != nil {
			return fmt.Errorf("%s: %v", sl.info.Name, err)
		}
	}
	if err := e.chooseRoutes(books); err != nil {
		return err
	}
	e.routed.Store(true)
	return e.bar.plan(e, book)
}

// chooseRoutes picks for every peer the first transport, in preference
// order, that is open at both ends and reaches it.
func (e *Engine) chooseRoutes(books []AddressBook) error {
	e.route = make([]uint8, e.nprocs)
	e.mappers = make([]Mapper, len(e.trs))
	for i, t := range e.trs {
		e.mappers[i], _ = t.(Mapper)
	}
	counts := make([]int, len(e.trs))
	for p := 0; p < e.nprocs; p++ {
		if p == e.phys {
			continue
		}
		chosen := -1
		for i, idx := 0, 0; i < len(e.slots); i++ {
			sl := e.slots[i]
			if sl.t == nil {
				continue
			}
			reaches := books[i].Present(p)
			if r, ok := sl.t.(Reacher); ok && reaches {
				reaches = r.Reaches(p)
			}
			if reaches {
				chosen = idx
				break
			}
			idx++
		}
		if chosen < 0 {
			return fmt.Errorf("no transport reaches process %d (tried %s); set --acp-transports / ACP_TRANSPORTS", p, e.transportNames())
		}
		e.route[p] = uint8(chosen)
		counts[chosen]++
	}
	if err := e.chooseDeviceAtomics(books); err != nil {
		return err
	}
	var parts []string
	for i, t := range e.trs {
		if counts[i] > 0 {
			parts = append(parts, fmt.Sprintf("%s to %d process(es)", t.Name(), counts[i]))
			e.polled = append(e.polled, t)
		}
	}
	if e.devAtom != nil && !slices.Contains(e.polled, Transport(e.devAtom)) {
		e.polled = append(e.polled, e.devAtom) // a wait polls it for its atomics
	}
	for _, t := range e.polled {
		if w, ok := t.(WaitPoller); ok {
			e.waitPollers = append(e.waitPollers, w)
		}
		if w, ok := t.(OrderWatcher); ok {
			e.orderWatchers = append(e.orderWatchers, w)
		}
	}
	e.Logf(1, "transports: %s", strings.Join(parts, ", "))
	return nil
}

// chooseDeviceAtomics finds the transport, if any, that executes the
// job's 8-byte atomics on its device (DeviceAtomics). It must reach every
// process, since no atomic of that width may run as a CPU atomic anywhere.
func (e *Engine) chooseDeviceAtomics(books []AddressBook) error {
	for i := range e.slots {
		sl := e.slots[i]
		d, ok := sl.t.(deviceAtomicTransport)
		if !ok || !d.DeviceAtomic(OpAdd8) {
			continue
		}
		if e.devAtom != nil {
			return fmt.Errorf("%s and %s both execute atomics on their devices; choose one (%s)", e.devAtom.Name(), sl.t.Name(), d.DeviceAtomicsSetting())
		}
		for p := 0; p < e.nprocs; p++ {
			if !books[i].Present(p) {
				return fmt.Errorf("%s executes every 8-byte atomic on its device (%s), so every process must open it, but process %d did not: include %s in --acp-transports / ACP_TRANSPORTS everywhere, or drop %s",
					sl.t.Name(), d.DeviceAtomicsSetting(), p, sl.t.Name(), d.DeviceAtomicsSetting())
			}
		}
		e.devAtom = d
		e.q.fast.u32(fastDevAtomics).Store(1)
		e.Logf(1, "atomics: 8-byte ones on the %s device (%s), 4-byte ones on the owner's CPU", sl.t.Name(), d.DeviceAtomicsSetting())
	}
	return nil
}

// deviceAtomicTransport is a transport that offers DeviceAtomics.
type deviceAtomicTransport interface {
	Transport
	DeviceAtomics
}

// deviceAtomic reports whether op goes to the device (DeviceAtomics).
func (e *Engine) deviceAtomic(op AtomicOp) bool {
	return e.devAtom != nil && e.devAtom.DeviceAtomic(op)
}

// oversubscription counts the processes of this host; when they outnumber
// the CPUs this process may use, waits give the CPU away from their first
// poll instead of spinning: the process they wait for cannot run otherwise.
func (e *Engine) oversubscription(book AddressBook) {
	// Processes, not engines: the engines of one test process are goroutines.
	me := string(book.At(e.phys)[10 : 10+nodeIDSize])
	pids := map[uint32]bool{}
	for p := 0; p < e.nprocs; p++ {
		if string(book.At(p)[10:10+nodeIDSize]) == me {
			pids[binary.LittleEndian.Uint32(book.At(p)[10+nodeIDSize:])] = true
		}
	}
	local := len(pids)
	if cpus := hostCPUs(pids); local > cpus {
		e.spin = 0
		e.Logf(2, "%d processes on this host, %d CPU(s) for them: waits yield the CPU at once", local, cpus)
	}
}

// Layout returns the job's GA layout.
func (e *Engine) Layout() Layout { return e.layout }

// Rank is this process's logical rank (acp_rank).
func (e *Engine) Rank() int { return int(e.rank.Load()) }

// Procs is the number of processes (acp_procs).
func (e *Engine) Procs() int { return e.nprocs }

// Colors is the number of colours (acp_colors).
func (e *Engine) Colors() int { return e.colors }

// Errors is the number of operations that completed with an error.
func (e *Engine) Errors() int64 { return e.errs.Load() }

// TransportNames lists the open transports.
func (e *Engine) TransportNames() string { return e.transportNames() }

// peerOf maps a logical rank to its physical index.
func (e *Engine) peerOf(rank int) int {
	if e.log2phys == nil {
		return rank
	}
	return int(e.log2phys[rank])
}

// LandsOnReceipt reports whether what the process of rank writes into our
// memory lands only when a thread of ours receives it (ReceiptDriven): a
// waiter for such memory (a channel's ring) polls the transports
// (Progress) at every turn and looks at the memory after a poll that
// found work. False before the routes are chosen and for invalid ranks.
func (e *Engine) LandsOnReceipt(rank int) bool {
	if !e.routed.Load() || rank < 0 || rank >= e.nprocs || rank == e.Rank() {
		return false
	}
	r, ok := e.transportTo(e.peerOf(rank)).(ReceiptDriven)
	return ok && r.LandsOnReceipt()
}

// transportTo picks the transport for a physical peer.
func (e *Engine) transportTo(peer int) Transport { return e.trs[e.route[peer]] }

// mapped returns a pointer to [ga, ga+n) of a peer's memory when the
// transport to that peer maps it here, else nil. The first time a peer's
// starter memory turns out to be mapped, it is published to the fast path.
func (e *Engine) mapped(peer int, ga GA, n uint64) unsafe.Pointer {
	m := e.mappers[e.route[peer]]
	if m == nil {
		return nil
	}
	p := m.Map(peer, ga, n)
	if p != nil {
		if seg, rank := e.layout.Seg(ga), e.layout.Rank(ga); seg <= SegStarterDL && !e.q.fast.published(rank, seg) {
			base, size := m.Starter(peer, seg)
			e.q.fast.publish(rank, seg, base, size)
		}
	}
	return p
}

// MappedMemory implements Host. It looks through every peer mapped here;
// a transport asks only on its first use of such memory, which it then
// keeps registered (ib).
func (e *Engine) MappedMemory(p unsafe.Pointer, n uint64) (unsafe.Pointer, uint64) {
	a := uintptr(p)
	for peer := range e.nprocs {
		m := e.mappers[e.route[peer]]
		if m == nil || peer == e.phys {
			continue
		}
		for seg := range SegEngine {
			base, size := m.Starter(peer, seg)
			if base != nil && a >= uintptr(base) && uint64(a-uintptr(base)) <= size && n <= size-uint64(a-uintptr(base)) {
				return base, size
			}
		}
	}
	return nil, 0
}

// publishOwn enables the fast path for our own starter memories.
func (e *Engine) publishOwn() {
	f := e.q.fast
	f.setLayout(e.layout, e.Rank())
	for seg, b := range e.starters[:SegEngine] {
		if len(b) > 0 {
			f.publish(e.Rank(), seg, unsafe.Pointer(&b[0]), uint64(len(b)))
		}
	}
	f.setEnabled(true)
}

// StarterGA is the GA of byte 0 of rank's basic-layer starter memory.
func (e *Engine) StarterGA(rank int) (GA, error) { return e.starterGA(rank, SegStarter) }

// StarterGACL and StarterGADL name the middle layer's starter memories.
func (e *Engine) StarterGACL(rank int) (GA, error) { return e.starterGA(rank, SegStarterCL) }

// StarterGADL names rank's data-library starter memory.
func (e *Engine) StarterGADL(rank int) (GA, error) { return e.starterGA(rank, SegStarterDL) }

// HandoffGA is the GA of a word of rank's engine area that the libraries
// above the basic layer use to hand the other ranks a value across a Sync
// (the workspace's chunk GAs). Every process has it, whatever the sizes
// of its starter memories; one hand-off at a time.
func (e *Engine) HandoffGA(rank int) (GA, error) {
	ga, err := e.starterGA(rank, SegEngine)
	if err != nil {
		return GANull, err
	}
	return ga + areaHandoff, nil
}

func (e *Engine) starterGA(rank, seg int) (GA, error) {
	if rank < 0 || rank >= e.nprocs {
		return GANull, fmt.Errorf("rank %d out of range 0..%d", rank, e.nprocs-1)
	}
	return e.layout.Encode(rank, 0, seg, 0), nil
}

// StarterMemory returns this process's starter region seg (0..2).
func (e *Engine) StarterMemory(seg int) []byte { return e.starters[seg] }

// StarterSetting is the starter memory size the settings ask for (seg 0..2):
// the communication library's region can be larger (--acp-size-cl-rings),
// and the minimum it needs applies to what the user asked for.
func (e *Engine) StarterSetting(seg int) uint64 {
	return e.cfg.Settings.Uint(starterSettings[seg])
}

// Register makes [p, p+size) accessible to every rank. The key is the GA of
// the region's first byte. Every call creates an independent registration,
// even for identical or overlapping ranges.
func (e *Engine) Register(p unsafe.Pointer, size uint64, color int) (GA, error) {
	if color < 0 || color >= e.colors {
		return GANull, fmt.Errorf("colour %d out of range 0..%d (acp_colors() = %d)", color, e.colors-1, e.colors)
	}
	r, err := e.regs.Add(p, size, color)
	if err != nil {
		return GANull, err
	}
	if err := e.announce(r); err != nil {
		_ = e.regs.Remove(r.Seg)
		return GANull, err
	}
	return e.layout.GAOf(e.Rank(), r, r.Base), nil
}

// region finds this process's live user region named by an atkey.
func (e *Engine) region(key GA) (*Region, error) {
	d := e.layout.Decode(key)
	if key == GANull {
		return nil, errors.New("key is ACP_ATKEY_NULL")
	}
	if d.Rank != e.Rank() {
		return nil, fmt.Errorf("key %#x belongs to rank %d, not to this process (rank %d)", uint64(key), d.Rank, e.Rank())
	}
	r := e.regs.Lookup(d.Seg)
	if r == nil || e.layout.GAOf(d.Rank, r, r.Base) != key {
		return nil, fmt.Errorf("key %#x is not a live registration (unregistered already, or never registered)", uint64(key))
	}
	return r, nil
}

// Unregister withdraws a registration. Accesses in progress finish first.
func (e *Engine) Unregister(key GA) error {
	r, err := e.region(key)
	if err != nil {
		return err
	}
	if r.Seg < SegFirstUser {
		return fmt.Errorf("key %#x is starter memory, which cannot be unregistered", uint64(key))
	}
	if err := e.regs.Remove(r.Seg); err != nil {
		return err
	}
	e.withdraw(r, len(e.trs))
	return nil
}

// QueryGA converts a pointer inside a registration into a GA.
func (e *Engine) QueryGA(key GA, p unsafe.Pointer) (GA, error) {
	r, err := e.region(key)
	if err != nil {
		return GANull, err
	}
	off := uintptr(p) - uintptr(r.Base)
	if uintptr(p) < uintptr(r.Base) || uint64(off) >= r.Size {
		return GANull, fmt.Errorf("address %p is outside the registered region %p..%p of key %#x",
			p, r.Base, unsafe.Add(r.Base, r.Size), uint64(key))
	}
	return e.layout.GAOf(e.Rank(), r, p), nil
}

// QueryAddress returns the local pointer for a GA of this process.
func (e *Engine) QueryAddress(ga GA) (unsafe.Pointer, error) {
	if e.layout.Rank(ga) < 0 {
		return nil, e.badGA("the", ga) // not another rank's: no rank's
	}
	p, r, st := e.regs.Acquire(ga, 1)
	if st != StatusOK {
		return nil, e.accessErr(st, ga, 1, -1)
	}
	r.Release()
	return p, nil
}

// Direct returns where [ga, ga+n) of another process's starter memory is
// mapped in this one, or nil: a plain store there is that process's
// memory changing, with the CPU's ordering, as long as the engine runs.
func (e *Engine) Direct(ga GA, n uint64) unsafe.Pointer {
	r := e.layout.Rank(ga)
	if r < 0 || r == e.Rank() || e.layout.Seg(ga) > SegStarterDL {
		return nil
	}
	return e.mapped(e.peerOf(r), ga, n)
}

// QueryRank returns the rank owning ga, or -1.
func (e *Engine) QueryRank(ga GA) int { return e.layout.Rank(ga) }

// QueryColor returns the colour of ga, or -1 for invalid GAs.
func (e *Engine) QueryColor(ga GA) int {
	if e.layout.Rank(ga) < 0 {
		return -1
	}
	return e.layout.Color(ga)
}

func (e *Engine) accessErr(st Status, ga GA, n uint64, rank int) error {
	ae := &AccessError{Status: st, Rank: rank, GA: ga, Size: n}
	e.hint(ae)
	return ae
}

// hint names the setting to raise when an access ran past the end of the
// basic-layer or data-library starter memory (the communication library's
// and the engine's are not the program's to address).
func (e *Engine) hint(ae *AccessError) {
	if ae.Status != StatusOutOfBounds || ae.GA == GANull {
		return
	}
	if seg := e.layout.Seg(ae.GA); seg == SegStarter || seg == SegStarterDL {
		name := starterSettings[seg]
		ae.Hint = fmt.Sprintf("starter memory of %d bytes: --acp-%s / %s sets its size", e.StarterSetting(seg), name, Setting{Name: name}.Env())
	}
}

// Logf prints a diagnostic when the verbosity is at least level.
func (e *Engine) Logf(level int, format string, args ...any) {
	if e.verbose >= level {
		fmt.Fprintf(e.cfg.Stderr, "acp[%d]: %s\n", e.Rank(), fmt.Sprintf(format, args...))
	}
}

// Verbose is the ACP_VERBOSE level in force.
func (e *Engine) Verbose() int { return e.verbose }

// Fatal stops the job after an unrecoverable error.
func (e *Engine) Fatal(err error) {
	fmt.Fprintf(e.cfg.Stderr, "acp[%d]: fatal: %v\n", e.Rank(), err)
	e.ex.Abort(255, err.Error())
	e.cfg.Exit(255)
}

// abortOutputWait bounds how long acp_abort waits for the launcher to read
// the process's output before it asks the launcher to stop the job.
const abortOutputWait = 200 * time.Millisecond

// Abort ends this process after an application error (acp_abort): print the
// message with the rank, tell the launcher, release what outlives the
// process, exit 255.
func (e *Engine) Abort(msg string) {
	fmt.Fprintf(e.cfg.Stderr, "acp[%d]: acp_abort: %s\n", e.Rank(), msg)
	if e.cfg.Stderr == os.Stderr {
		awaitOutputRead([]int{1, 2}, abortOutputWait)
	}
	e.ex.Abort(255, msg)
	e.closeTransports()
	e.cfg.Exit(255)
}

// SpinTime is how long a wait should poll busy before it gives the CPU
// away (--acp-progress-spin; 0 when this host's processes outnumber its
// CPUs), for waits outside the engine that follow its policy.
func (e *Engine) SpinTime() time.Duration { return e.spin }

// Sync completes this process's outstanding operations, then waits for
// every process (acp_sync).
func (e *Engine) Sync() error {
	e.Complete(HandleAll)
	return e.barrier()
}

// quiesce brings the job to rest: own operations complete, nobody issues
// more, every message sent was acknowledged, and all know it.
func (e *Engine) quiesce() error {
	e.Complete(HandleAll)
	if err := e.barrier(); err != nil {
		return err
	}
	deadline := time.Now().Add(e.timeout)
	for _, t := range e.trs {
		if err := t.Quiesce(deadline); err != nil {
			return err
		}
	}
	return e.ex.Barrier()
}

// Finalize ends the basic layer (acp_finalize): collective.
func (e *Engine) Finalize() error {
	e.stateMu.Lock()
	defer e.stateMu.Unlock()
	if e.closed {
		return errors.New("already finalized")
	}
	err := e.quiesce()
	e.q.fast.setEnabled(false)
	fastEngines.Delete(uintptr(e.FastState()))
	e.closed = true
	e.release()
	return err
}

func (e *Engine) release() {
	e.stopStateReport()
	e.closeTransports()
	e.freeStarters()
	_ = e.ex.Close()
}

func (e *Engine) closeTransports() {
	for _, t := range e.trs {
		_ = t.Close()
	}
}

// Reset re-ranks the job (acp_reset): every process names its new rank;
// unless the names form a permutation of 0..N-1 all return an error and
// nothing changes. Otherwise every outstanding operation is completed,
// then every registration is dropped, all three starter memories are
// cleared, handles restart at 1, and ranks follow the new numbering.
func (e *Engine) Reset(newRank int) error {
	plan, err := e.PlanReset(newRank)
	if err != nil {
		return err
	}
	return e.ApplyReset(plan)
}

// ResetPlan is a validated re-ranking (see PlanReset).
type ResetPlan struct {
	log2phys []int32
	newRank  int
	identity bool
}

// PlanReset is the first half of Reset, collective: it exchanges the
// requested ranks and checks that they form a permutation, changing
// nothing. Layers above the basic layer stop between PlanReset and
// ApplyReset, so that a refused reset leaves them running.
func (e *Engine) PlanReset(newRank int) (*ResetPlan, error) {
	e.stateMu.Lock()
	defer e.stateMu.Unlock()
	var rec [4]byte
	binary.LittleEndian.PutUint32(rec[:], uint32(int32(newRank)))
	all, err := e.ex.AllGather(rec[:])
	if err != nil {
		return nil, fmt.Errorf("reset exchange failed: %v", err)
	}
	plan := &ResetPlan{log2phys: make([]int32, e.nprocs), identity: true}
	seen := make([]bool, e.nprocs)
	for p := 0; p < e.nprocs; p++ {
		r := int32(binary.LittleEndian.Uint32(all[4*p:]))
		if r < 0 || int(r) >= e.nprocs || seen[r] {
			return nil, fmt.Errorf("acp_reset: the requested ranks are not a permutation of 0..%d (process %d asked for %d)", e.nprocs-1, p, r)
		}
		seen[r] = true
		plan.log2phys[r] = int32(p)
		plan.identity = plan.identity && int(r) == p
		if p == e.phys {
			plan.newRank = int(r)
		}
	}
	return plan, nil
}

// ApplyReset is the second half of Reset, collective: quiesce, drop all
// registrations and operations, clear the starter memories, install the
// new ranks.
func (e *Engine) ApplyReset(plan *ResetPlan) error {
	e.stateMu.Lock()
	defer e.stateMu.Unlock()
	if err := e.quiesce(); err != nil {
		return err
	}
	e.q.fast.setEnabled(false)
	for _, r := range e.regs.RemoveAll() {
		e.withdraw(r, len(e.trs))
	}
	// The engine area keeps its barrier epochs: they only grow.
	for i := range e.starters[:SegEngine] {
		zeroMapped(e.starters[i])
	}
	e.q.reset()
	e.failures.reset()
	if plan.identity {
		e.log2phys, e.phys2log = nil, nil
	} else {
		e.noFastRemote.Store(true)
		e.q.fast.u64(fastRemote).Store(0)
		e.log2phys = plan.log2phys
		e.phys2log = make([]int32, len(plan.log2phys))
		for r, p := range plan.log2phys {
			e.phys2log[p] = int32(r)
		}
	}
	e.rank.Store(int64(plan.newRank))
	e.regs.SetRank(plan.newRank)
	e.publishOwn()
	return e.ex.Barrier()
}
