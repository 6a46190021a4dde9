package core

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/libacp/libacp/internal/hostid"
)

// Completion receives the outcome of one transport operation.
type Completion interface {
	// OnComplete is called exactly once per operation, never while the
	// transport holds one of its own locks. val is the fetched old value of
	// an atomic (0 otherwise); err is nil on success, an *AccessError when
	// the owner rejected the access.
	OnComplete(val uint64, err error)
}

// Transport moves bytes and atomics between this process and its peers.
// Peers are numbered by their physical index in the job (the order in which
// the bootstrap numbered processes; logical ranks may differ after
// acp_reset). A transport never needs to understand GAs beyond passing them
// to the owner's Host; every check happens at the owner.
//
// Operations never block: they queue what cannot be sent now. All methods
// may be called from any goroutine, concurrently.
type Transport interface {
	// Name is the transport's registry name ("udp", "shm", ...).
	Name() string

	// Address is this endpoint's contact information, published to all
	// peers through the bootstrap. Its length is fixed per transport and
	// identical on every rank.
	Address() []byte

	// Connect gives the transport every peer's Address (indexed by
	// physical peer) and the job's key (random per job and per
	// initialisation; traffic carrying another key is dropped). It is
	// called once, before any operation. Peers may send to us before our
	// Connect returns (their first message can beat our allgather); the
	// transport must cope (drop and let retransmission repair, or queue).
	Connect(peers AddressBook, jobKey uint64) error

	// Put copies n bytes of local memory at src to the peer's dst. The
	// completion runs when the data is in place at the peer (or was
	// rejected). src stays valid and unchanged until then.
	Put(peer int, dst GA, src unsafe.Pointer, n uint64, c Completion)

	// Get copies n bytes at the peer's src into local memory at dst. The
	// completion runs when all bytes have landed (or were rejected).
	Get(peer int, src GA, dst unsafe.Pointer, n uint64, c Completion)

	// Atomic applies op to the word at the peer's target (a = operand or
	// expected value, b = new value for cas) and completes with the old
	// value. It executes exactly once at the peer.
	Atomic(peer int, op AtomicOp, target GA, a, b uint64, c Completion)

	// Send delivers msg reliably and exactly once to Host.Deliver at the
	// peer. msg may be reused by the caller after Send returns.
	Send(peer int, msg []byte)

	// Poll makes progress without blocking: receives, answers, completes,
	// retransmits. It reports whether anything happened. A transport also
	// makes progress on its own (a progress goroutine); Poll lets a waiting
	// caller do the work itself instead of waiting for a wake-up.
	Poll() bool

	// Quiesce waits until everything this endpoint sent has been
	// acknowledged by its receiver (finalize and reset call it between two
	// barriers), or returns an error naming the peer that did not answer
	// within the deadline.
	Quiesce(deadline time.Time) error

	// Close stops the progress goroutine and releases sockets and memory.
	Close() error
}

// PolledPutter is implemented by transports whose put may leave the
// progress thread asleep when the caller promises to poll for what depends
// on the put's completion itself (Engine.poll). The barrier's puts are
// such: only the next barrier waits for them, polling. Over ib a put
// otherwise wakes a sleeping progress goroutine so that its completion is
// seen even if no thread waits; that wake-up is a system call of the
// issuer's and a thread switch, which a barrier paid in each round.
type PolledPutter interface {
	PutPolled(peer int, dst GA, src unsafe.Pointer, n uint64, c Completion)
}

// WaitPoller is implemented by transports whose progress thread sleeps
// until the device raises an event for a completion. While an application
// thread polls the transport in a wait it sees every completion itself,
// and an event per message only wakes a second thread to compete with it
// for the CPU (over Soft-RoCE the wake-up is paid inside the peer's post:
// 0.05-0.1 ms of each served atomic). The engine brackets the polling part
// of its waits with WaitPolls and WaitEnds, on the thread that polls;
// after the last WaitEnds the transport must be as ready to wake its
// progress thread as it was before the first WaitPolls.
type WaitPoller interface {
	WaitPolls()
	WaitEnds()
}

// OrderWatcher is implemented by transports whose progress thread may
// sleep long while work that the application polls for itself is in
// flight (ib's C fast path). An operation ordered behind such work starts
// only when someone sees that work complete: the engine calls OrderWaits
// whenever an operation begins to wait for earlier ones, and the transport
// then looks for completions often while Host.OrderWaiting holds.
type OrderWatcher interface {
	OrderWaits()
}

// SourceReader is implemented by transports that read a put's source after
// Put returned, where a fault there cannot fail that put alone (udp: a
// send of a batch of datagrams fails whole with EFAULT). Before such a put
// the engine checks that a source in the program's memory can be read
// (a byte per page); other transports do without that cost (shm's kernel
// copies report EFAULT for the one copy; ib's adapter reads the pages
// pinned at registration).
type SourceReader interface {
	ReadsSourceLater() bool
}

// ReceiptDriven is implemented by transports over which what a peer writes
// into our memory lands only when a thread of ours receives it (udp: a
// datagram is read and applied). Nothing a waiter looks at in our memory
// can change between two polls of such a transport unless another thread
// of ours polled it (ib's adapter writes by itself, shm's peers store).
type ReceiptDriven interface {
	LandsOnReceipt() bool
}

// Registrar is implemented by transports that must prepare memory before
// peers can reach it (verbs memory registration): every region, the
// starter memories included, is announced before any peer can name it and
// withdrawn after the last access through the registration table ended.
type Registrar interface {
	RegisterRegion(r *Region) error
	UnregisterRegion(r *Region)
}

// Colorer is implemented by transports that offer several paths (devices,
// ports); a GA's colour selects among them. Without it a transport has the
// colours its TransportInfo declares.
type Colorer interface {
	Colors() int
}

// Reacher is implemented by transports that reach only some peers (shared
// memory reaches the processes on the same host). It is asked after
// Connect; transports without it reach every peer that is present.
type Reacher interface {
	Reaches(peer int) bool
}

// DeviceAtomics is implemented by transports whose device can execute
// atomics. A device's atomics are atomic with each other but, on most
// adapters (IBV_ATOMIC_HCA), not with the CPU's: when the job chose the
// device for a kind of atomic, every atomic of that kind on any rank's
// memory, this process's own and memory mapped here included, goes to
// this transport's Atomic (peer may be this process), and none runs as a
// CPU atomic. The engine asks after Connect.
type DeviceAtomics interface {
	// DeviceAtomic reports whether op must be executed by the device.
	DeviceAtomic(op AtomicOp) bool
	// DeviceAtomicsSetting names the setting that chose the device, for
	// messages ("ib-atomics=nic").
	DeviceAtomicsSetting() string
}

// Mapper is implemented by transports that map some of a peer's memory
// into this process (shared memory maps the starter memories). The engine
// then copies and runs atomics on that memory itself, in the calling thread.
type Mapper interface {
	// Map returns a pointer to [ga, ga+n) of the peer's memory, or nil when
	// that range is not mapped here (or is out of bounds: the access then
	// takes the transport's ordinary path and is checked by the owner).
	Map(peer int, ga GA, n uint64) unsafe.Pointer
	// Starter returns where the peer's starter memory seg (0..2) is mapped
	// here and its size, or nil: the engine publishes it to its C fast
	// path once Map found it mapped.
	Starter(peer, seg int) (unsafe.Pointer, uint64)
}

// StarterProvider is implemented by transports that place the starter
// memories (and the engine's area, SegEngine) where peers can map them.
// The memory must be zeroed and page aligned; the transport releases it
// when it closes.
type StarterProvider interface {
	Starters(sizes [NumStarters]uint64) ([NumStarters][]byte, error)
}

// Host is what a transport may ask of the engine that owns it: target-side
// checks and execution, and delivery of control messages.
type Host interface {
	// Acquire resolves [ga, ga+n) of this process's registered memory for an
	// access by a peer. On StatusOK the caller must Release the region.
	Acquire(ga GA, n uint64) (unsafe.Pointer, *Region, Status)

	// ApplyAtomic executes op at this process's ga on behalf of a peer.
	ApplyAtomic(op AtomicOp, ga GA, a, b uint64) (uint64, Status)

	// Wake tells the engine that a peer's put landed in our memory, so that
	// a waiter polling that memory looks again (cheap when nobody waits).
	Wake()

	// OrderWaiting reports whether operations wait in the engine for
	// earlier ones to finish (an order handle): such an operation starts
	// only once someone sees its predecessors complete (OrderWatcher).
	OrderWaiting() bool

	// Polled reports whether an application thread is polling the
	// transports in a wait right now, receiving what arrives itself (a
	// channel's wait, Engine.PollingWaitBegins). A progress goroutine
	// that would only compete with it for each arrival may stay away
	// meanwhile, a short while at a time.
	Polled() bool

	// Deliver hands a control message from a peer to the engine. The
	// transport calls it without holding its own locks; msg is only valid
	// during the call.
	Deliver(peer int, msg []byte)

	// MappedMemory returns the peer's memory mapped here (the starter
	// memory of a process on this host, reached through a Mapper) that
	// holds [p, p+n), and its size; nil when none does. A transport
	// whose adapter needs local memory registered asks for a local end
	// it does not know: the engine hands it such memory as the local end
	// of a copy between a process of this host and one elsewhere.
	MappedMemory(p unsafe.Pointer, n uint64) (unsafe.Pointer, uint64)

	// PeerRank is the logical rank of a physical peer (for messages).
	PeerRank(peer int) int

	// Layout is the job's GA layout (valid once Connect was called).
	Layout() Layout

	// Fatal reports a failure the job cannot survive (a peer stopped
	// answering). It prints err and terminates the process.
	Fatal(err error)

	// Logf prints a diagnostic line when ACP_VERBOSE is at least level.
	Logf(level int, format string, args ...any)
}

// AddressBook holds one fixed-size record per physical peer.
type AddressBook struct {
	RecSize int
	Data    []byte
	// Absent marks peers on which this transport could not be opened (nil:
	// present everywhere). Their records are zero; a transport never
	// reaches them.
	Absent []bool
}

// Present reports whether the transport is open at peer i.
func (b AddressBook) Present(i int) bool { return b.Absent == nil || !b.Absent[i] }

// Len is the number of peers.
func (b AddressBook) Len() int {
	if b.RecSize == 0 {
		return 0
	}
	return len(b.Data) / b.RecSize
}

// At returns peer i's record.
func (b AddressBook) At(i int) []byte { return b.Data[i*b.RecSize : (i+1)*b.RecSize] }

// TransportConfig is what a transport factory gets.
type TransportConfig struct {
	Host     Host
	Settings *Settings
	Peer     int    // our physical index
	NPeers   int    // number of processes
	BindHint string // local IP address this process reached the bootstrap from, if known
	// Node is this process's host identity (hostid, with its group:
	// --acp-host-group), as the start-up record carries it: processes with
	// equal ones may share memory.
	Node [hostid.Size]byte
	// ForeignMemory: no registered memory is Go's heap (Config).
	ForeignMemory bool
}

// TransportFactory opens a transport endpoint.
type TransportFactory func(cfg TransportConfig) (Transport, error)

// TransportInfo describes a registered transport.
type TransportInfo struct {
	Name     string
	Open     TransportFactory
	Settings []Setting // settings the transport reads
	Colors   int       // colours (paths) the transport offers
	// Priority orders the transports when the user names none: the lowest
	// that reaches a peer carries its traffic (shared memory before
	// InfiniBand before UDP).
	Priority int
	// AddressSize is the length of Address(). Knowing it without opening
	// the transport lets a process on which it failed to open still take
	// part in the exchange (as absent).
	AddressSize int
	// SharesStarters says the transport is a StarterProvider (peers map
	// the starter memories), for estimates made without opening it.
	SharesStarters bool
}

var registry struct {
	sync.Mutex
	m map[string]TransportInfo
}

// RegisterTransport adds a transport to the registry. Transports call it
// from their package init, so that linking a transport is enough to offer it.
func RegisterTransport(info TransportInfo) {
	registry.Lock()
	defer registry.Unlock()
	if registry.m == nil {
		registry.m = map[string]TransportInfo{}
	}
	if _, dup := registry.m[info.Name]; dup {
		panic(fmt.Sprintf("transport %q registered twice", info.Name))
	}
	registry.m[info.Name] = info
}

// LookupTransport finds a registered transport.
func LookupTransport(name string) (TransportInfo, bool) {
	registry.Lock()
	defer registry.Unlock()
	info, ok := registry.m[name]
	return info, ok
}

// Transports lists the registered transports by name.
func Transports() []TransportInfo {
	registry.Lock()
	defer registry.Unlock()
	out := make([]TransportInfo, 0, len(registry.m))
	for _, v := range registry.m {
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Priority != out[j].Priority {
			return out[i].Priority < out[j].Priority
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// NamedTransports are the transports --acp-transports / ACP_TRANSPORTS
// names, in lower case, in its order, each once; nil when it names none
// (every transport linked is then in use).
func NamedTransports(s *Settings) []string {
	var out []string
	for _, n := range strings.Split(s.String("transports"), ",") {
		if n = strings.TrimSpace(strings.ToLower(n)); n != "" && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// SelectedTransports are the transports acp_init tries, best first: those
// the settings name, or every registered one.
func SelectedTransports(s *Settings) ([]TransportInfo, error) {
	names := NamedTransports(s)
	if names == nil {
		return Transports(), nil
	}
	out := make([]TransportInfo, 0, len(names))
	for _, n := range names {
		info, ok := LookupTransport(n)
		if !ok {
			return nil, fmt.Errorf("unknown transport %q in --acp-transports / ACP_TRANSPORTS (available: %s)", n, strings.Join(registeredNames(), ", "))
		}
		out = append(out, info)
	}
	return out, nil
}
