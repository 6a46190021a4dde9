// Package udp is the reference transport: reliable, exactly-once delivery
// of copies, atomics and control messages over plain UDP sockets, usable on
// any network and between any two processes.
//
// Reliability: per-peer sequence numbers, cumulative plus selective
// acknowledgements piggybacked on every datagram, retransmission with
// exponential backoff (100 µs to 100 ms, from a smoothed RTT estimate), a
// receive window that drops duplicates, so every request executes exactly
// once however datagrams are lost, duplicated or reordered. A peer that
// stays silent for --acp-peer-timeout is a fatal error naming it.
//
// Large copies are cut into fragments produced lazily as the congestion
// window opens, so a copy of any size (64-bit) needs no more buffer space
// than the window.
package udp

import (
	"encoding/binary"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/libacp/libacp/core"
)

func init() {
	core.RegisterTransport(core.TransportInfo{
		Name:        "udp",
		Priority:    30,
		AddressSize: addressSize,
		Open:        open,
		Colors:      1,
		Settings:    Settings,
	})
}

// Settings are the tunables of this transport.
var Settings = []core.Setting{
	{Name: "udp-mtu", Kind: core.KindUint, Default: "0", Max: 65000,
		Help: "largest datagram in bytes (0: 65000 between loopback addresses, 1472 otherwise; at least 1024)"},
	{Name: "udp-faults", Kind: core.KindString, Default: "",
		Help: "inject faults into sent datagrams for testing, e.g. loss=0.1,dup=0.05,reorder=0.1,seed=1"},
	{Name: "udp-ack-delay", Kind: core.KindDuration, Default: "20us",
		Help: "how long the acknowledgement of a lone datagram or of a put's last fragment may wait to ride on an answer (0: acknowledge at once)"},
	{Name: "udp-addr", Kind: core.KindString, Default: "",
		Help: "IPv4 address to bind and publish (default: the address used to reach the start-up rendezvous, else 127.0.0.1)"},
}

// Protocol constants.
const (
	recvBatch   = 32
	sendBatch   = 64
	rxWindow    = 1024 // sequence numbers a receiver accepts beyond its next expected one
	maxInflight = rxWindow - 24
	minRTO      = 100 * time.Microsecond
	maxRTO      = 100 * time.Millisecond
	// maxWindowBytes bounds the bytes in flight to a peer (half its
	// receive buffer does too). 2 MiB is several times what a LAN's
	// round trip holds; over loopback a larger window only let a large
	// put's sender outrun the receiver it shares 2 CPUs with: with 8 MiB
	// the put pingpong took 0.86-1.04 of Open MPI's TCP time at 2 MiB
	// where 2 MiB gave 0.73-0.93 (3 sets, 28 paired rounds; BENCHMARKS.md
	// 2026-11-23, late).
	maxWindowBytes = 2 << 20
	initialRTO     = minRTO // until the first round trip is measured
	addressSize    = 8      // IPv4, port, receive buffer in KiB/4 units
	loopbackMTU    = 65000
	maxSpare       = 256  // acknowledged datagrams kept for reuse
	maxFreeOps     = 256  // finished operations kept for reuse
	networkMTU     = 1472 // 1500-byte Ethernet MTU minus IP and UDP headers
	rxBufferBytes  = 65536
	ackEvery       = recvBatch // datagrams accepted before an acknowledgement goes out at once
	// maxAckHold bounds how long after it became owed an acknowledgement
	// may be held for an answer to ride on (peer.holdAck): below minRTO, so
	// that the hold alone never lets the sender's timer run out.
	maxAckHold = 80 * time.Microsecond
	placeMin   = 16 << 10 // put fragments from this size on are received in place
	// In bulk mode a small datagram (an acknowledgement, a flag) is taken
	// alone and bulk mode goes on, for up to bulkSmallMax in a row, while
	// the socket was found empty within the last bulkBacklogMax datagrams
	// (recvPlaced).
	bulkSmallMax   = 8
	bulkBacklogMax = recvBatch
	// streamWait is how long a waiting thread keeps taking the rest of a
	// put after the last fragment arrived.
	streamWait = 20 * time.Microsecond

	// idleSleep is the longest the progress goroutine sleeps with nothing
	// due: each return from that sleep (a system call) sets the Go
	// runtime's monitor thread polling every 20 µs for a millisecond, a
	// preemption each where every CPU runs a rank.
	idleSleep = time.Second
	// appNap is how long the progress goroutine stays away at a time while
	// an application thread polls in a wait: after the wait, the socket
	// may go unread for that long if the thread does not poll again.
	appNap = 50 * time.Microsecond
)

// fragGuess is the next fragment of a put being received, or of the data
// of one of our gets, as the last one predicts it: from peer src under
// sequence number seq, for the put's destination dst (or the get opID's)
// of size bytes, at offset off, frag bytes long (less at the end).
type fragGuess struct {
	valid           bool
	get             bool
	src             uint32
	seq             uint64
	dst             core.GA
	opID            uint64
	size, off, frag uint64
}

type endpoint struct {
	host     core.Host
	me       int
	n        int
	conn     packetConn
	sock     *socket
	wakeFd   int
	ip       net.IP
	port     int
	mtu      int // 0: automatic per peer
	spin     time.Duration
	timeout  time.Duration
	ackDelay time.Duration

	connected atomic.Bool
	key       uint64
	book      core.AddressBook

	mu           sync.Mutex // guards everything below and all peer state
	peers        []*peer    // created on first contact
	active       []*peer    // peers with unsent or unacknowledged data
	ops          opTable
	nextOp       uint64
	out          []packet
	retired      []*dgram  // acknowledged datagrams, recycled after sending
	spare        []*dgram  // acknowledged datagrams for reuse (cleared)
	freeOps      []*op     // operations nothing refers to any more, for reuse
	spareStreams []*stream // streams of served gets, for reuse
	lent         []*dgram  // served fragments whose memory is pinned until sendOut
	owed         []*peer   // peers that may be owed a pure acknowledgement
	completions  []completion
	// spareCompletions: the array of a long list of completions, back from
	// its run (unlockAndRun)
	spareCompletions []completion
	deliveries       []delivery
	fatal            error
	landed           bool         // a peer's put was written during this batch
	nextOpCheck      time.Time    // when checkTimers next looks at waiting operations
	nextCheck        atomic.Int64 // unix ns of the next retransmission check
	sleepUntil       atomic.Int64 // unix ns the sleeping progress goroutine wakes at at the latest; 0 while it runs

	rxMu    sync.Mutex
	rxBufs  [][]byte
	rxSizes []int
	// Large put fragments are received straight into their destination
	// while they keep coming (rxBulk): the header is peeked and checked
	// first, then the data lands where it belongs without a copy of ours.
	rxBulk    bool
	peekHdr   [headerSize + putHeader]byte
	rxPartial bool      // the last put fragment received was not its put's last
	bulkSmall int       // small datagrams taken in a row in bulk mode
	rxBacklog int       // datagrams received since the socket was last found empty
	guess     fragGuess // where the next datagrams probably belong (recvGuessed)
	// A batch received in bulk mode (recvPlaced): datagram i is in place
	// for rxPlacedLen[i] bytes, its header in rxHdr[i][:rxHdrLen], or, at
	// -1, whole in rxBufs[i]. placedReg pins a put's destination until the
	// batch is handled; placed is what handle is told of the datagram it
	// handles (-1: nothing in place).
	rxHdr       [recvBatch][headerSize + putHeader]byte
	rxHdrLen    int
	rxPlacedLen [recvBatch]int
	placedReg   *core.Region
	placed      int
	// recvGuessed's arguments to recvScattered (fields: a local array
	// would escape through the interface call, an allocation per batch).
	guessHdrs  [recvBatch][]byte
	guessData  [recvBatch][]byte
	guessSpill [recvBatch][]byte

	stats struct {
		sent, resent, received, dropped atomic.Int64
		placed                          atomic.Int64 // fragments received straight into their destination
		misguessed                      atomic.Int64 // datagrams recvGuessed took for a fragment they were not (copied out again)
	}

	closed atomic.Bool
	done   chan struct{}
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

func open(cfg core.TransportConfig) (core.Transport, error) {
	s := cfg.Settings
	ipText := s.String("udp-addr")
	if ipText == "" {
		ipText = cfg.BindHint
	}
	if ipText == "" {
		ipText = "127.0.0.1"
	}
	ip := net.ParseIP(ipText).To4()
	if ip == nil {
		return nil, fmt.Errorf("address %q is not an IPv4 address (set --acp-udp-addr / ACP_UDP_ADDR)", ipText)
	}
	sock, port, err := openSocket(ip, sendBatch)
	if err != nil {
		return nil, fmt.Errorf("cannot open a UDP socket on %s: %v (set --acp-udp-addr / ACP_UDP_ADDR)", ip, err)
	}
	wake, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		sock.close()
		return nil, err
	}
	e := &endpoint{
		host:     cfg.Host,
		me:       cfg.Peer,
		n:        cfg.NPeers,
		sock:     sock,
		conn:     sock,
		wakeFd:   wake,
		ip:       ip,
		port:     port,
		mtu:      s.Int("udp-mtu"),
		spin:     s.Duration("progress-spin"),
		timeout:  s.Duration("peer-timeout"),
		ackDelay: s.Duration("udp-ack-delay"),
		peers:    make([]*peer, cfg.NPeers),
		done:     make(chan struct{}),
		placed:   -1,
	}
	if e.mtu != 0 && e.mtu < 1024 {
		e.close()
		return nil, fmt.Errorf("--acp-udp-mtu %d is below the minimum of 1024 bytes", e.mtu)
	}
	if f := strings.TrimSpace(s.String("udp-faults")); f != "" {
		fc, err := newFaultyConn(sock, f)
		if err != nil {
			e.close()
			return nil, fmt.Errorf("--acp-udp-faults %q: %v", f, err)
		}
		e.conn = fc
	}
	e.rxBufs = make([][]byte, recvBatch)
	for i := range e.rxBufs {
		e.rxBufs[i] = make([]byte, rxBufferBytes)
	}
	e.rxSizes = make([]int, recvBatch)
	e.nextCheck.Store(1<<63 - 1)
	go e.progressLoop()
	return e, nil
}

func (e *endpoint) Name() string { return "udp" }

// Address is IPv4 (4) | port (2) | receive buffer in 4 KiB units (2).
func (e *endpoint) Address() []byte {
	b := make([]byte, addressSize)
	copy(b, e.ip)
	binary.BigEndian.PutUint16(b[4:], uint16(e.port))
	binary.LittleEndian.PutUint16(b[6:], uint16(min(e.sock.rcvbuf/4096, 65535)))
	return b
}

func (e *endpoint) Connect(book core.AddressBook, key uint64) error {
	if book.RecSize != addressSize || book.Len() != e.n {
		return fmt.Errorf("address book of %d records of %d bytes, want %d of %d", book.Len(), book.RecSize, e.n, addressSize)
	}
	e.mu.Lock()
	e.book = book
	e.key = key
	e.mu.Unlock()
	e.connected.Store(true)
	return nil
}

// peer returns the state for physical peer i, creating it on first
// contact: a rank that never talks to another spends nothing on it.
func (e *endpoint) peer(i int) *peer {
	if p := e.peers[i]; p != nil {
		return p
	}
	rec := e.book.At(i)
	ip := net.IP(append([]byte(nil), rec[:4]...))
	port := int(binary.BigEndian.Uint16(rec[4:]))
	rcvbuf := int(binary.LittleEndian.Uint16(rec[6:])) * 4096
	mtu := e.mtu
	if mtu == 0 {
		mtu = networkMTU
		if ip.IsLoopback() && e.ip.IsLoopback() {
			mtu = loopbackMTU
		}
	}
	p := &peer{
		idx:     i,
		addr:    newDest(ip, port),
		ipText:  fmt.Sprintf("%s:%d", ip, port),
		mtu:     mtu,
		rxNext:  1,
		nextSeq: 1,
		rto:     initialRTO,
	}
	// Keep at most half the receiver's socket buffer in flight, and at
	// least two datagrams.
	p.maxWindow = max(min(rcvbuf/2, maxWindowBytes), 2*mtu)
	p.cwnd = p.maxWindow
	e.peers[i] = p
	return p
}

// Poll implements core.Transport. A waiting thread that received part of
// a put (its own wait may end with the acknowledgement riding on the first
// fragment) takes the rest too, which is on its way: the program may next
// wait for that data without calling us, and the progress goroutine would
// first have to get a CPU.
func (e *endpoint) Poll() bool {
	if !e.progress() {
		return false
	}
	if e.partial() {
		last := time.Now()
		for e.partial() && time.Since(last) < streamWait {
			if e.progress() {
				last = time.Now()
			}
		}
	}
	return true
}

// partial reports whether the last put fragment received was not its put's
// last.
func (e *endpoint) partial() bool {
	e.rxMu.Lock()
	defer e.rxMu.Unlock()
	return e.rxPartial
}

// Quiesce implements core.Transport.
func (e *endpoint) Quiesce(deadline time.Time) error {
	if busy := core.DrainUntil(deadline, e.busyPeer, e.progress); busy >= 0 {
		e.mu.Lock()
		addr := e.peers[busy].ipText
		e.mu.Unlock()
		return fmt.Errorf("udp: rank %d (%s) did not acknowledge our last messages in time (--acp-peer-timeout)", e.host.PeerRank(busy), addr)
	}
	return nil
}

// busyPeer returns a peer with datagrams not yet acknowledged, or -1.
func (e *endpoint) busyPeer() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, p := range e.active {
		if p.busy() {
			return p.idx
		}
	}
	return -1
}

// Close implements core.Transport.
func (e *endpoint) Close() error {
	if e.closed.Swap(true) {
		return nil
	}
	e.host.Logf(2, "udp: %d datagrams sent, %d retransmitted, %d received (%d of them straight into their destination; %d taken for an operation's next fragment and copied out again), %d dropped (duplicates, foreign, beyond the window)",
		e.stats.sent.Load(), e.stats.resent.Load(), e.stats.received.Load(), e.stats.placed.Load(), e.stats.misguessed.Load(), e.stats.dropped.Load())
	e.wake()
	<-e.done
	e.close()
	return nil
}

// wake ends the progress goroutine's sleep.
func (e *endpoint) wake() { core.SignalEventfd(e.wakeFd) }

// ReadsSourceLater implements core.SourceReader: a put's data goes out
// from its source in sendmmsg batches, which an unreadable page fails
// whole.
func (e *endpoint) ReadsSourceLater() bool { return true }

// LandsOnReceipt implements core.ReceiptDriven: a peer's put lands when a
// thread of ours reads its datagram.
func (e *endpoint) LandsOnReceipt() bool { return true }

func (e *endpoint) close() {
	_ = e.conn.close()
	_ = unix.Close(e.wakeFd)
}

var _ core.Transport = (*endpoint)(nil)

// bytesAt views n bytes of memory at p.
func bytesAt(p unsafe.Pointer, n uint64) []byte {
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(p), n)
}
