package core

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// The command queue: handles are consecutive per process starting at 1;
// completion is in order (handle h is complete when h and everything issued
// before it finished). Operations may finish out of order; the low-water
// mark `done` only advances over a finished prefix.
//
// Slots live in a ring of `depth` entries indexed by handle. A handle's slot
// is reused only after the handle retired (done >= h), which is why at most
// `depth` operations are in flight: issuing more waits (back-pressure).

type cmdState uint8

const (
	slotFree    cmdState = iota
	slotWaiting          // start condition not met yet
	slotRunning          // started; a completion will come
	slotDone             // finished, waiting for earlier handles to finish
)

type cmdKind uint8

const (
	kindNop           cmdKind = iota // zero-byte copy
	kindLocalCopy                    // both ends here
	kindPut                          // source here, destination at a peer
	kindGet                          // source at a peer, destination here
	kindCopyRemote                   // neither end here: the source's owner executes
	kindLocalAtomic                  // target and result here
	kindAtomicFetch                  // target at a peer (with device atomics: anywhere), result here
	kindAtomicPush                   // target here, result at a peer
	kindAtomicRemote                 // target at a peer, result elsewhere: the target's owner executes
	kindDevAtomicPush                // a device's atomic (Engine.devAtom) whose result is not here: read-check the result location, atomic, put
)

// cmd is one operation. It is the Completion handed to transports.
type cmd struct {
	e      *Engine
	h      Handle
	after  Handle // may start once done >= after
	state  cmdState
	kind   cmdKind
	op     AtomicOp
	dst    GA
	src    GA
	size   uint64
	a, b   uint64
	peer   int            // physical peer the operation talks to
	pin    *Region        // local region held while a transport uses it
	at     unsafe.Pointer // where a kindAtomicFetch stores the old value (in pin's region, or mapped)
	word   uint64         // fetched value on its way to a remote result location
	report *Report        // where the issuer wants a failure recorded, or nil
	// carried is the source owner's packed key of a kindGet
	// (CopyCarried), the caller's: used only while the call that issued
	// it runs (an operation without an order starts at once).
	carried *CarriedKey
}

// The lock, the counters and the done flags live in the fast state (see
// fast.go), which a C fast path may share; everything else is Go's alone.
type queue struct {
	e       *Engine
	fast    *fastState
	ring    []cmd
	issued  *atomic.Int64 // last handle issued
	done    *atomic.Int64 // every handle <= done is complete
	waiting []*cmd        // in handle order, guarded by the lock
	// waitingAny: waiting is not empty (OrderWaiting). Apart from the
	// fast state, which transports' progress goroutines may look at
	// before it exists.
	waitingAny atomic.Bool
	wake       event
}

// setWaiting publishes the length of waiting (under the lock).
func (q *queue) setWaiting(n int) {
	q.fast.u32(fastWaiting).Store(uint32(n))
	q.waitingAny.Store(n > 0)
}

func (q *queue) init(e *Engine, depth int) error {
	f, err := newFastState(depth)
	if err != nil {
		return err
	}
	q.e, q.fast, q.issued, q.done = e, f, f.issued, f.done
	fastEngines.Store(uintptr(unsafe.Pointer(&f.mem[0])), e)
	q.ring = make([]cmd, depth)
	for i := range q.ring {
		q.ring[i].e = e
	}
	return nil
}

func (q *queue) lock()   { q.fast.lock() }
func (q *queue) unlock() { q.fast.unlock() }

// reset forgets every handle (acp_reset; the job is quiescent).
func (q *queue) reset() {
	q.lock()
	defer q.unlock()
	for i := range q.ring {
		q.ring[i] = cmd{e: q.e}
	}
	clear(q.fast.flags)
	q.issued.Store(0)
	q.done.Store(0)
	q.waiting = q.waiting[:0]
	q.setWaiting(0)
}

func (q *queue) slot(h Handle) *cmd { return &q.ring[uint64(h)%uint64(len(q.ring))] }

// issue enters an operation and starts it when its condition allows.
func (q *queue) issue(c cmd, order Handle) (Handle, error) {
	q.lock()
	for q.issued.Load()-q.done.Load() >= int64(len(q.ring)) {
		q.unlock()
		q.e.waitUntil("an operation waiting for room in the queue (--acp-queue-depth)", func() bool { return q.issued.Load()-q.done.Load() < int64(len(q.ring)) })
		q.lock()
	}
	h := Handle(q.issued.Load() + 1)
	var after Handle
	switch {
	case order == HandleNull:
		after = 0
	case order == HandleAll || order == HandleCont:
		// CONT may pipeline behind the previous operation; waiting for it
		// is always a correct way to honour that.
		after = h - 1
	case order > 0 && order < h:
		after = order
	default:
		q.unlock()
		if order > 0 {
			return HandleNull, fmt.Errorf("order handle %d has not been issued (last issued: %d)", order, h-1)
		}
		return HandleNull, fmt.Errorf("order handle %d is not a handle, ACP_HANDLE_NULL, ACP_HANDLE_ALL or ACP_HANDLE_CONT", order)
	}
	q.issued.Store(int64(h))
	s := q.slot(h)
	e := s.e
	*s = c
	s.e, s.h, s.after = e, h, after
	if int64(after) <= q.done.Load() {
		s.state = slotRunning
		q.unlock()
		q.run(s)
		return h, nil
	}
	s.state = slotWaiting
	q.waiting = append(q.waiting, s)
	q.setWaiting(len(q.waiting))
	q.unlock()
	for _, w := range q.e.orderWatchers {
		w.OrderWaits()
	}
	return h, nil
}

// readyNow reports whether an operation issued now with this order could
// start at once (the fast path runs such operations before taking a
// handle; an invalid order is left to issue, which reports it).
func (q *queue) readyNow(order Handle) bool {
	switch {
	case order == HandleNull:
		return true
	case order == HandleAll || order == HandleCont:
		return q.done.Load() == q.issued.Load()
	case order > 0:
		return int64(order) <= q.done.Load()
	}
	return false
}

// completed gives the handle of an operation that already ran in the
// calling thread: one lock, no slot unless earlier operations are still
// running.
func (q *queue) completed() Handle {
	q.lock()
	for q.issued.Load()-q.done.Load() >= int64(len(q.ring)) {
		q.unlock()
		q.e.waitUntil("an operation waiting for room in the queue (--acp-queue-depth)", func() bool { return q.issued.Load()-q.done.Load() < int64(len(q.ring)) })
		q.lock()
	}
	h := q.issued.Load() + 1
	q.issued.Store(h)
	if q.done.Load() == h-1 {
		// Nothing waits for a handle that did not exist, so advancing the
		// mark starts nothing.
		q.done.Store(h)
	} else {
		atomic.StoreUint32(q.fast.flag(h), 1)
	}
	q.unlock()
	return Handle(h)
}

// run starts c and then whatever its completion made ready, iteratively
// (a chain of ordered local operations must not recurse). The list lives
// on the stack unless a chain outgrows it.
func (q *queue) run(c *cmd) {
	var buf [8]*cmd
	ready := append(buf[:0], c)
	for i := 0; i < len(ready); i++ {
		if err, finished := q.e.start(ready[i]); finished {
			ready = q.finish(ready[i], err, ready)
		}
	}
}

// complete is called when a started operation ended.
func (q *queue) complete(c *cmd, err error) {
	var buf [4]*cmd
	for _, r := range q.finish(c, err, buf[:0]) {
		q.run(r)
	}
}

// finish marks c done, advances the low-water mark, and appends to ready
// the waiting operations whose start condition now holds (marked
// running): an ordered operation started by the completion of the one
// before it allocated a list of its own.
func (q *queue) finish(c *cmd, err error, ready []*cmd) []*cmd {
	if err != nil {
		q.e.opFailed(c, err)
	}
	q.lock()
	c.state = slotDone
	c.pin = nil
	atomic.StoreUint32(q.fast.flag(int64(c.h)), 1)
	d := q.done.Load()
	issued := q.issued.Load()
	for d < issued {
		f := q.fast.flag(d + 1)
		if atomic.LoadUint32(f) == 0 {
			break
		}
		atomic.StoreUint32(f, 0)
		q.slot(Handle(d + 1)).state = slotFree
		d++
	}
	q.done.Store(d)
	if len(q.waiting) > 0 {
		keep := q.waiting[:0]
		for _, w := range q.waiting {
			if int64(w.after) <= d {
				w.state = slotRunning
				ready = append(ready, w)
			} else {
				keep = append(keep, w)
			}
		}
		clear(q.waiting[len(keep):])
		q.waiting = keep
		q.setWaiting(len(keep))
	}
	q.unlock()
	q.wake.broadcast()
	return ready
}

// OnComplete receives the transport's verdict for c.
func (c *cmd) OnComplete(val uint64, err error) {
	e := c.e
	if ae, ok := err.(*AccessError); ok && ae.Rank < 0 {
		// The peer rejected the access: say who and which range.
		ae.Rank = e.rankOfPeer(c.peer)
		switch c.kind {
		case kindPut, kindAtomicPush, kindDevAtomicPush:
			ae.GA, ae.Size = c.dst, c.size
		default:
			ae.GA, ae.Size = c.src, c.size
		}
		e.hint(ae)
	}
	if err == nil && c.kind == kindAtomicFetch {
		if !storeIn(c.pin, c.at, c.op.Width(), val) {
			err = fmt.Errorf("%s result: %v", c.op, e.accessErr(StatusFault, c.dst, c.size, -1))
		}
	}
	c.at = nil
	release(c.pin) // after the store: it pinned the result location
	e.q.complete(c, err)
}

// PeerRank implements Host.
func (e *Engine) PeerRank(peer int) int { return e.rankOfPeer(peer) }

// rankOfPeer maps a physical index back to its logical rank (diagnostics).
func (e *Engine) rankOfPeer(peer int) int {
	if e.phys2log == nil {
		return peer
	}
	return int(e.phys2log[peer])
}

func (e *Engine) opFailed(c *cmd, err error) {
	e.errs.Add(1)
	e.failures.add(c.h)
	c.report.record(err)
	if c.kind >= kindLocalAtomic {
		e.Logf(1, "%s handle %d (dst %#x, target %#x) failed: %v", c.op, c.h, uint64(c.dst), uint64(c.src), err)
	} else {
		e.Logf(1, "acp_copy handle %d (dst %#x, src %#x, %d bytes) failed: %v", c.h, uint64(c.dst), uint64(c.src), c.size, err)
	}
}

// failures remembers the handles of recent operations that completed with
// an error, so that a caller can ask about its own (Failed) without the
// process-wide count telling it about other threads'.
type failures struct {
	mu    sync.Mutex
	set   map[Handle]struct{}
	order []Handle
}

// maxFailures bounds the memory: older failures are forgotten.
const maxFailures = 4096

func (f *failures) add(h Handle) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.set == nil {
		f.set = map[Handle]struct{}{}
	}
	f.set[h] = struct{}{}
	f.order = append(f.order, h)
	if len(f.order) > maxFailures {
		delete(f.set, f.order[0])
		f.order = f.order[1:]
	}
}

func (f *failures) has(h Handle) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.set[h]
	return ok
}

func (f *failures) reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.set, f.order = nil, nil
}

// Failed reports whether operation h completed with an error (for the
// last 4096 failures; meaningful once h is complete).
func (e *Engine) Failed(h Handle) bool { return e.failures.has(h) }

// Report collects the failures of the operations issued with it (CopyFor,
// AtomicFor), so that code sharing the engine with other threads judges
// its own operations alone: Errors counts the whole process's failures,
// and Failed forgets a failure after 4096 newer ones, which a busy
// neighbour thread can produce before the issuer looks.
type Report struct {
	first atomic.Pointer[error]
}

// record keeps err unless an earlier failure is kept; a nil report
// ignores it.
func (r *Report) record(err error) {
	if r != nil {
		r.first.CompareAndSwap(nil, &err)
	}
}

// Take returns the first failure recorded since the last Take (nil: none)
// and forgets it. Failures of operations not complete yet are not in it.
func (r *Report) Take() error {
	if p := r.first.Swap(nil); p != nil {
		return *p
	}
	return nil
}

// Complete waits until h and every operation issued before it completed
// (acp_complete). ALL and CONT mean everything issued so far; NULL and
// handles never issued return at once.
func (e *Engine) Complete(h Handle) {
	q := &e.q
	target := int64(h)
	switch {
	case h == HandleAll || h == HandleCont:
		target = q.issued.Load()
	case h <= 0 || int64(h) > q.issued.Load():
		return
	}
	if q.done.Load() >= target {
		return
	}
	e.waitUntil("acp_complete", func() bool { return q.done.Load() >= target })
}

// Inquire reports whether h or an operation before it is still incomplete
// (acp_inquire: false = complete). It makes progress once, so a caller
// polling it in a loop moves the job forward.
func (e *Engine) Inquire(h Handle) bool {
	q := &e.q
	target := int64(h)
	switch {
	case h == HandleAll || h == HandleCont:
		target = q.issued.Load()
	case h <= 0 || int64(h) > q.issued.Load():
		return false
	}
	if q.done.Load() >= target {
		return false
	}
	if !e.poll() && rand.Uint32()%64 == 0 {
		// Threads that loop on acp_inquire enter Go so often that they
		// keep every P between calls (a random draw, not a shared counter
		// those threads would all write), and a runnable goroutine would
		// never run: the progress goroutine, which may hold a transport's
		// poll lock that those threads' polls then skip. Hand the P over
		// now and then.
		runtime.Gosched()
	}
	return q.done.Load() < target
}

// OpDone reports whether the operation of h itself completed, whatever
// ran before it: the library's reuse of memory that one of its operations
// read (a staging slot), or a put that must land after one other, needs
// no more, and operations issued before it may be slow to be seen
// complete (another thread's, found by its progress). It polls once, as
// Inquire does. NULL and never-issued handles are complete.
func (e *Engine) OpDone(h Handle) bool {
	q := &e.q
	if h <= 0 || int64(h) > q.issued.Load() {
		return true
	}
	if q.opDone(int64(h)) {
		return true
	}
	e.poll()
	return q.opDone(int64(h))
}

// opDone: the done flag of h's slot is h's own while the done mark is
// short of h (h - depth was swept before the mark passed it, which it did
// before h could be issued; h + depth cannot be issued before the mark
// passes h). A flag read after the mark moved past h may be h + depth's,
// and h is complete then all the same. capi/fastpath.c's op_done is the
// same test.
func (q *queue) opDone(h int64) bool {
	return h <= q.done.Load() || atomic.LoadUint32(q.fast.flag(h)) != 0
}

// Progress polls the transports once, as a wait does between its checks,
// and reports whether that found work. A thread that waits for memory a
// peer writes (a channel's ring) calls it: over a transport whose data
// lands only when someone receives it, the waiting thread then receives it
// itself instead of waiting for the progress goroutine to be woken.
func (e *Engine) Progress() bool { return e.poll() }

// PollingWaitBegins and PollingWaitEnds bracket the part of a wait outside
// the engine (a channel's) in which the waiting thread polls the
// transports itself (Progress) without sleeping, for what a peer sends it
// (Polled). The engine's own waits do not count: a thread completing a
// put waits for its acknowledgement and then often spins on memory for
// the peer's answer, without a call, and the progress goroutine must then
// be there to receive it (a udp put pingpong took 1.4-1.6 times as long
// at 128 KiB-4 MiB with those waits counted).
func (e *Engine) PollingWaitBegins() {
	e.pollingWaits.Add(1)
	e.waitPolls()
}

// PollingWaitEnds ends what PollingWaitBegins began.
func (e *Engine) PollingWaitEnds() {
	e.waitEnds()
	e.pollingWaits.Add(-1)
}

// waitPolls and waitEnds bracket a part of a wait in which this thread
// polls the transports without sleeping (WaitPoller).
func (e *Engine) waitPolls() {
	for _, w := range e.waitPollers {
		w.WaitPolls()
	}
}

func (e *Engine) waitEnds() {
	for _, w := range e.waitPollers {
		w.WaitEnds()
	}
}

// OrderWaiting implements Host: operations wait for earlier ones.
func (e *Engine) OrderWaiting() bool { return e.q.waitingAny.Load() }

// Polled implements Host: an application thread is polling the transports
// in a wait right now (between PollingWaitBegins and PollingWaitEnds).
func (e *Engine) Polled() bool { return e.pollingWaits.Load() > 0 }

// LastIssued is the most recent handle of this process.
func (e *Engine) LastIssued() Handle { return Handle(e.q.issued.Load()) }

// poll makes progress on the transports that carry traffic to some peer
// (an unused UDP socket is not worth a system call per turn of a wait).
func (e *Engine) poll() bool {
	any := false
	for _, t := range e.polled {
		if t.Poll() {
			any = true
		}
	}
	return any
}

// yieldPhase is how long a wait keeps polling, giving the CPU away between
// polls, after its busy spin: on an oversubscribed node the process it
// waits for needs that CPU to get there, and a sleeping waiter would then
// add a timer's granularity to every barrier round.
const yieldPhase = 2 * time.Millisecond

// maxBusySpin bounds the part of a wait's spin in which it does not yield
// at all. When the kernel puts two ranks' busy threads on one CPU (it does
// not separate threads that never sleep, and over UDP nobody is pinned),
// each message waits for the other's busy spin to end: a udp pingpong ran
// at 43-60 us one way instead of 4.5 in 2 of 6 runs with 50 us, in none of
// 6 with 15 (BENCHMARKS.md, 2026-11-23). Yielding costs a system call when
// nothing else wants the CPU. Only the engine's waits are bounded: with the
// channels' and the barrier's waits (SpinTime, the fast state's spin)
// bounded too, a same-host channel pingpong took 1.2-1.7 times as long up
// to 16 bytes (its rare long waits then yield to the rank's own goroutines).
const maxBusySpin = 15 * time.Microsecond

// waitUntil blocks until cond holds. It first polls the transports itself
// (the waiting thread does the work: no wake-up latency) for the spin time,
// busy, then keeps polling while yielding the CPU for a little longer, then
// sleeps on completion events so that a long wait burns no core.
func (e *Engine) waitUntil(what string, cond func() bool) {
	if cond() {
		return
	}
	var timer *time.Timer
	var hang HangWatch
	for {
		e.waitPolls()
		done := e.pollUntil(cond)
		e.waitEnds()
		if done || e.sleepUntil(cond, &timer, &hang, what) {
			if timer != nil {
				timer.Stop()
			}
			e.EndWait(&hang)
			return
		}
	}
}

// sleepUntil is the sleeping part of waitUntil: it reports true when cond
// holds, false when a peer's requests came to this process again, for
// which the wait goes back to polling (pollUntil), where it serves them
// itself.
func (e *Engine) sleepUntil(cond func() bool, timer **time.Timer, hang *HangWatch, what string) bool {
	sleep := 20 * time.Microsecond
	if *timer == nil {
		*timer = time.NewTimer(sleep)
	}
	served := e.served.Load()
	w := &e.q.wake
	for {
		w.waiters.Add(1)
		ch := w.arm()
		if cond() {
			w.waiters.Add(-1)
			return true
		}
		(*timer).Reset(sleep)
		select {
		case <-ch:
		case <-(*timer).C:
			sleep = min(sleep*2, time.Millisecond)
		}
		w.waiters.Add(-1)
		for e.poll() {
		}
		if cond() {
			return true
		}
		e.WatchHang(hang, what)
		if e.servedSince(&served) {
			return false
		}
	}
}

// pollUntil is the polling part of waitUntil: it reports whether cond
// came to hold within the busy spin and the yielding phase after it.
func (e *Engine) pollUntil(cond func() bool) bool {
	start := PassScheduler(time.Now())
	busy := min(e.spin, maxBusySpin)
	served := e.served.Load()
	for i := 0; ; i++ {
		// The condition is a load or two; polling the transports costs
		// more, and what a same-host peer writes needs no polling at all.
		if i&7 == 0 && (e.poll() || e.servedSince(&served)) {
			start = time.Now()
		}
		if cond() {
			return true
		}
		// Busy: the answer usually comes within the spin time, and giving
		// the CPU away to an unrelated process can cost a whole time slice.
		// (With more processes than CPUs the spin time is 0.)
		if busy == 0 || i&63 == 63 {
			if time.Since(start) >= busy {
				break
			}
		}
	}
	for i := 0; ; i++ {
		// As in Inquire: now and then let a goroutine waiting for a P (one
		// that holds a poll lock, perhaps) run.
		YieldTurn(i)
		if e.poll() || e.servedSince(&served) {
			start = time.Now()
		}
		if cond() {
			return true
		}
		if i&15 == 15 && time.Since(start) >= e.spin+yieldPhase {
			return false
		}
	}
}

// servedSince reports whether this process served a peer's request since
// *seen (a count of e.served), and moves *seen on. A wait counts that as
// work it found: requests that a peer keeps sending are answered by
// whichever thread polls first, and a waiter whose polls the progress
// thread beat to each of them would stop polling after its yielding
// phase, leaving every request to that thread, woken by an event each
// (over Soft-RoCE that wake-up runs inside the peer's post; BENCHMARKS.md,
// 2026-11-29, fourth section).
func (e *Engine) servedSince(seen *uint64) bool { return Moved(&e.served, seen) }

// Moved reports whether counter c changed since *seen, the value it had
// when last asked, and moves *seen on.
func Moved(c *atomic.Uint64, seen *uint64) bool {
	n := c.Load()
	if n == *seen {
		return false
	}
	*seen = n
	return true
}

// Wake implements Host: something arrived that a sleeping waiter may be
// looking for (a put into memory it polls, such as a barrier arrival).
func (e *Engine) Wake() { e.q.wake.broadcast() }

// event wakes sleeping waiters when something completed.
type event struct {
	waiters atomic.Int32
	mu      sync.Mutex
	ch      chan struct{}
}

func (ev *event) arm() <-chan struct{} {
	ev.mu.Lock()
	defer ev.mu.Unlock()
	if ev.ch == nil {
		ev.ch = make(chan struct{})
	}
	return ev.ch
}

func (ev *event) broadcast() {
	if ev.waiters.Load() == 0 {
		return
	}
	ev.mu.Lock()
	if ev.ch != nil {
		close(ev.ch)
		ev.ch = nil
	}
	ev.mu.Unlock()
}

// resolveLocal pins [ga, ga+n) of this process for the duration of an
// operation.
func (e *Engine) resolveLocal(ga GA, n uint64) (unsafe.Pointer, *Region, error) {
	p, r, st := e.regs.Acquire(ga, n)
	if st != StatusOK {
		return nil, nil, e.accessErr(st, ga, n, -1)
	}
	return p, r, nil
}
