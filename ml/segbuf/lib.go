// Package segbuf implements ACP's segmented buffers (acp_*_segbuf): a ring
// of segments mirrored from a source process to a destination process.
//
// It also holds what the communication library's channels (package ml/ch)
// are built on: a Pair is the connection between two endpoints of a ring,
// matched in creation order through a mailbox in the CL starter memory;
// the library hands out registered memory for endpoints and drives their
// progress in the background.
//
// Everything is written against the basic layer's public API: copies,
// atomics, registration, and polling of handles. A step of any protocol
// here needs only one-sided operations of the process that takes it, so
// the peer's basic-layer progress serves it whatever the peer's
// application is doing.
package segbuf

import (
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/libacp/libacp/core"
)

// Layout of the CL starter memory. Peers write the mailbox with atomics:
// a writer takes a ticket (fetch-and-add on the tail), waits until the
// owner's head shows room for it, and swaps its record into slot
// ticket % capacity; the owner consumes slots in ticket order.
const (
	offMboxTail = 0  // tickets taken by writers
	offMboxHead = 8  // records consumed by the owner
	offMboxCap  = 16 // capacity in records, written by the owner at start
	offTrash    = 24 // old values of atomics whose result nobody reads
	offVote     = 32 // two words: finalize votes (rank 0's are used)
	offScratch  = 48 // where this process fetches a vote
	offSlots    = 64 // mailbox records, 8 bytes each; then free space for endpoints

	minSlots = 8
	maxSlots = 64
	// MinStarter is the smallest CL starter memory the library can use.
	MinStarter = offSlots + minSlots*8
)

// Kind tells which kind of endpoint a mailbox record introduces, so that
// channels and segmented buffers between the same processes are matched
// separately, each in creation order.
type Kind uint8

// Kinds of pairs.
const (
	KindSegbuf  Kind = 1
	KindChannel Kind = 2
)

const kindMask = 7

// Lib is one process's communication-library base.
type Lib struct {
	e        *core.Engine
	unreport func() // takes reportState out of the engine's hang report
	me       int
	nprocs   int
	starter  []byte
	base     core.GA // GA of this process's CL starter memory
	slots    uint64  // mailbox capacity
	mem      *memory
	prog     progress

	mu      sync.Mutex
	records map[recordKey][]core.GA // consumed records no endpoint claimed yet
	waiting map[recordKey][]*Pair   // source endpoints without a record, oldest first
	outbox  map[int][]*Pair         // destination endpoints per peer whose record has no ticket yet

	changes atomic.Uint64 // progress passes that changed something
	used    atomic.Bool   // an endpoint was ever created here
	closed  atomic.Bool
}

type recordKey struct {
	rank int
	kind Kind
}

// Start begins the communication-library base on a running engine. The CL
// starter memory must hold at least MinStarter bytes.
func Start(e *core.Engine) (*Lib, error) {
	st := e.StarterMemory(core.SegStarterCL)
	// The region may be larger than asked (a ring pool for same-host
	// peers); the minimum applies to the size the user set.
	if asked := e.StarterSetting(core.SegStarterCL); len(st) < MinStarter || asked < MinStarter {
		return nil, fmt.Errorf("the communication library's starter memory of %d bytes cannot hold its mailbox (at least %d bytes); set --acp-size-smem-cl / ACP_SIZE_SMEM_CL to %d or more, or to 0 to go without channels and segmented buffers",
			min(uint64(len(st)), asked), MinStarter, MinStarter)
	}
	base, err := e.StarterGACL(e.Rank())
	if err != nil {
		return nil, err
	}
	slots := min(uint64(len(st)-offSlots)/8, maxSlots)
	free := (offSlots + 8*slots + blockAlign - 1) &^ (blockAlign - 1)
	free = min(free, uint64(len(st)))
	l := &Lib{
		e:       e,
		me:      e.Rank(),
		nprocs:  e.Procs(),
		starter: st,
		base:    base,
		slots:   slots,
		mem:     newMemory(e, st[free:], base+core.GA(free)),
		records: map[recordKey][]core.GA{},
		waiting: map[recordKey][]*Pair{},
		outbox:  map[int][]*Pair{},
	}
	l.prog.init()
	l.unreport = e.AddStateReporter("channels and segmented buffers", l.reportState)
	// The starter memory is zero at start and after acp_reset; writers that
	// arrive before this store see capacity 0 and come back later.
	atomic.StoreUint64(l.word(offMboxCap), l.slots)
	l.startProgress()
	return l, nil
}

// Engine is the basic layer the library runs on.
func (l *Lib) Engine() *core.Engine { return l.e }

func (l *Lib) word(off uint64) *uint64 { return (*uint64)(unsafe.Pointer(&l.starter[off])) }

// starterGA names a word of rank's CL starter memory.
func (l *Lib) starterGA(rank int, off uint64) core.GA {
	ga, _ := l.e.StarterGACL(rank)
	return ga + core.GA(off)
}

// trash is where atomics put old values nobody reads.
func (l *Lib) trash() core.GA { return l.base + offTrash }

// CheckPeer validates a peer rank for a pair: another process of the job.
func (l *Lib) CheckPeer(what string, rank int) error {
	if l.closed.Load() {
		return fmt.Errorf("the communication library has stopped")
	}
	if rank < 0 || rank >= l.nprocs {
		return fmt.Errorf("%s %d out of range 0..%d", what, rank, l.nprocs-1)
	}
	if rank == l.me {
		return fmt.Errorf("%s %d is the calling process itself: both ends must be different processes", what, rank)
	}
	return nil
}

// Stopping reports whether the library is stopping: endpoints should then
// send what they owe at once.
func (l *Lib) Stopping() bool { return l.closed.Load() }

// Alloc returns a zeroed block of registered memory for an endpoint.
func (l *Lib) Alloc(size uint64) (Block, error) { return l.mem.alloc(size) }

// Free recycles a block no peer accesses any more.
func (l *Lib) Free(b Block) { l.mem.free(b) }

// done reports whether operation h (and everything issued before it)
// completed, polling the transports once if not.
func (l *Lib) done(h core.Handle) bool { return !l.e.Inquire(h) }

// opDone reports whether the operation of h completed, whatever ran
// before it (core Engine.OpDone).
func (l *Lib) opDone(h core.Handle) bool { return l.e.OpDone(h) }

// Stop ends the library (acp_finalize, acp_reset); collective. Endpoints
// keep progressing until every process got here and nothing more can
// happen anywhere: requests that were posted but never waited on finish if
// their peer lets them. What can never finish is abandoned, and all memory
// is released.
func (l *Lib) Stop() error {
	if l.closed.Swap(true) {
		return nil
	}
	l.unreport()
	var err error
	if l.nprocs > 1 {
		err = l.quiesce()
	}
	l.stopProgress()
	for _, p := range l.snapshot() {
		p.Abandon()
	}
	l.mem.release()
	return err
}

// quiesce runs rounds of (progress until locally still; vote) until a
// round in which no process changed anything. The first vote only asks
// whether anybody ever used the library, so a program without channels
// pays two barriers. While processes arrive, the background goroutine
// keeps serving peers that still wait for us.
func (l *Lib) quiesce() error {
	changed := l.used.Load() || l.changes.Load() > 0
	for round := 0; ; round++ {
		any, err := l.vote(round, changed)
		if err != nil || !any {
			return err
		}
		if round == 0 {
			// Everybody is here: from now on only this thread moves things.
			l.stopProgress()
		}
		before := l.changes.Load()
		for {
			c, _ := l.progressAll(true)
			l.e.Complete(core.HandleAll)
			if !c {
				break
			}
		}
		changed = l.changes.Load() != before
		if round == 0 {
			// The goroutine's last steps may still have been landing at
			// peers while they polled: look once more.
			changed = true
		}
	}
}

// vote adds this process's verdict to rank 0's vote word of the round and
// returns whether anybody voted "changed". Collective.
func (l *Lib) vote(round int, changed bool) (bool, error) {
	word := l.starterGA(0, offVote+8*uint64(round%2))
	if changed {
		h, err := l.e.Atomic(core.OpAdd8, l.trash(), word, 1, 0, core.HandleNull)
		if err != nil {
			return false, err
		}
		l.e.Complete(h)
	}
	if err := l.e.Sync(); err != nil {
		return false, err
	}
	h, err := l.e.Atomic(core.OpAdd8, l.base+offScratch, word, 0, 0, core.HandleNull)
	if err != nil {
		return false, err
	}
	l.e.Complete(h)
	v := atomic.LoadUint64(l.word(offScratch))
	if err := l.e.Sync(); err != nil {
		return false, err
	}
	if l.me == 0 {
		// Nobody reads this word again before the next round's barrier;
		// round+1 uses the other one.
		atomic.StoreUint64(l.word(offVote+8*uint64(round%2)), 0)
	}
	return v != 0, nil
}
