package segbuf

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/libacp/libacp/core"
)

// Poller is an endpoint that needs progress: connection set-up, queued
// transfers, counters to publish. The library polls its pollers from a
// background goroutine while any of them has pending work, and from every
// thread that waits, so that a peer's progress never depends on what this
// process's application happens to be doing.
type Poller interface {
	// Progress advances the endpoint without blocking. background is true
	// in the library's goroutine (which also does lazy work such as
	// publishing counters). It reports whether anything changed and
	// whether work remains that needs more progress.
	Progress(background bool) (changed, pending bool)
	// Abandon ends whatever the endpoint still waits for; the layer stops
	// and nothing can complete any more.
	Abandon()
}

// Timing of the background goroutine and of waits. A wait spins for
// spinFor: a message usually arrives within tens of microseconds, and on a
// busy machine a sleeping thread wakes up hundreds of microseconds late.
// For the engine's spin time it does not yield (the CPU could go to an
// unrelated process for a whole time slice; with more processes than CPUs
// that time is 0), then it yields every few turns, so that other threads
// run. Then
// it sleeps, starting at minSleep and doubling up to maxSleep, so that a
// long wait burns no core but notices a change (which nothing signals:
// peers write our memory) within a fraction of a large message's time.
const (
	spinFor  = time.Millisecond
	minSleep = 20 * time.Microsecond
	maxSleep = 200 * time.Microsecond
	// The background goroutine starts slower and backs off further while
	// nothing changes.
	minIdleSleep = 50 * time.Microsecond
	maxIdleSleep = 5 * time.Millisecond
)

// progress is the background goroutine and the set of pollers.
type progress struct {
	mu      sync.Mutex
	pollers map[Poller]struct{}
	list    []Poller // snapshot of pollers, replaced (never changed) when dirty
	dirty   bool

	parked  atomic.Bool
	waiters atomic.Int32 // application threads inside Wait: they progress everything
	// outside counts application threads that wait outside Wait and run
	// Pass themselves (SetOutsideWaits); nil: none do.
	outside atomic.Pointer[func() int32]
	kick    chan struct{}
	quit    chan struct{}
	stopped chan struct{}
	running bool
}

func (p *progress) init() {
	p.pollers = map[Poller]struct{}{}
	p.kick = make(chan struct{}, 1)
	p.quit = make(chan struct{})
	p.stopped = make(chan struct{})
}

// Add makes p known to the background progress.
func (l *Lib) Add(p Poller) {
	l.prog.mu.Lock()
	l.prog.pollers[p] = struct{}{}
	l.prog.dirty = true
	l.prog.mu.Unlock()
	l.used.Store(true)
	l.Kick()
}

// Remove forgets p (its endpoint was released).
func (l *Lib) Remove(p Poller) {
	l.prog.mu.Lock()
	delete(l.prog.pollers, p)
	l.prog.dirty = true
	l.prog.mu.Unlock()
}

// Kick wakes the background goroutine if it sleeps for lack of work. Call
// it after creating work that needs progress while the caller is away.
func (l *Lib) Kick() {
	if l.prog.parked.Load() {
		select {
		case l.prog.kick <- struct{}{}:
		default:
		}
	}
}

func (l *Lib) snapshot() []Poller {
	p := &l.prog
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.dirty {
		// A new slice: other threads may still be iterating the old one.
		list := make([]Poller, 0, len(p.pollers))
		for q := range p.pollers {
			list = append(list, q)
		}
		p.list, p.dirty = list, false
	}
	return p.list
}

// progressAll polls every endpoint once and drains the mailbox.
func (l *Lib) progressAll(background bool) (changed, pending bool) {
	if l.drain() {
		changed = true
	}
	for _, q := range l.snapshot() {
		c, p := q.Progress(background)
		changed = changed || c
		pending = pending || p
	}
	if changed {
		l.changes.Add(1)
	}
	return changed, pending
}

// SetOutsideWaits gives the background goroutine a count of application
// threads that wait outside Wait (a C fast path spinning on a channel's
// ring): while one does, the goroutine stays away, as it does while a
// thread waits in Wait, and that thread runs Pass now and then instead.
// The goroutine's passes woke a thread every millisecond beside the
// spinning one: where the machine has no CPU to spare (Soft-RoCE's guest,
// 4 virtual CPUs on 2), a rank then lost its CPU for milliseconds, and a
// channel pingpong's 99th percentile was 3-7 ms, against 1.4-3 ms without
// the passes and 0.6-0.9 ms for the put pingpong beside it.
func (l *Lib) SetOutsideWaits(count func() int32) { l.prog.outside.Store(&count) }

func (l *Lib) waitingOutside() bool {
	f := l.prog.outside.Load()
	return f != nil && (*f)() > 0
}

// Pass is one pass of the background goroutine's, for a thread that waits
// outside Wait (SetOutsideWaits): every endpoint progresses once. It
// reports whether anything changed.
func (l *Lib) Pass() bool {
	changed, _ := l.progressAll(true)
	return changed
}

func (l *Lib) startProgress() {
	l.prog.running = true
	go l.run()
}

// run is the background goroutine: it polls while some endpoint has
// pending work, sleeping between passes (longer while nothing changes),
// and parks when there is none.
func (l *Lib) run() {
	p := &l.prog
	defer close(p.stopped)
	sleep := minIdleSleep
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		if p.waiters.Load() > 0 || l.waitingOutside() {
			// A waiting thread polls every endpoint itself; competing with
			// it for the core would only slow both down.
			timer.Reset(maxIdleSleep)
			select {
			case <-timer.C:
			case <-p.quit:
				return
			}
			continue
		}
		changed, pending := l.progressAll(true)
		if !pending {
			p.parked.Store(true)
			// Work posted before parked was visible is seen here; work
			// posted after it kicks us.
			if _, pending = l.progressAll(true); !pending {
				select {
				case <-p.kick:
				case <-p.quit:
					p.parked.Store(false)
					return
				}
			}
			p.parked.Store(false)
			sleep = minIdleSleep
			continue
		}
		if changed {
			sleep = minIdleSleep
		} else {
			sleep = min(2*sleep, maxIdleSleep)
		}
		timer.Reset(sleep)
		select {
		case <-timer.C:
		case <-p.quit:
			return
		}
	}
}

// stopProgress ends the background goroutine and waits for it.
func (l *Lib) stopProgress() {
	p := &l.prog
	if !p.running {
		return
	}
	p.running = false
	close(p.quit)
	<-p.stopped
}

// Waiter is something a thread waits for: Done reports whether it
// happened, Step makes progress towards it and reports whether anything
// changed.
type Waiter interface {
	Done() bool
	Step() bool
}

// PollFirst is implemented by waiters that only a receipt can move (their
// peer's writes land when a thread of ours receives them: udp). Their wait
// polls the transports at every turn and steps them after a poll that
// found work, and every 8th turn for what another thread received: a step
// between two polls that found nothing finds nothing, and stepping at every
// turn made each turn of a udp channel's wait twice as long as the poll.
type PollFirst interface {
	PollFirst() bool
}

// Wait blocks until w is done, stepping it between checks and polling
// every endpoint now and then, so that a thread waiting on one channel also
// moves the others. It spins (yielding the CPU every few turns) until
// nothing has changed for a while, then sleeps with growing intervals. A
// wait that sees steady progress keeps spinning however long it lasts: a
// sender waiting on a window of large messages refills the ring as the
// receiver releases slots, and a sleeping sender would leave the receiver
// idle for a wake-up's time (hundreds of microseconds on a busy machine)
// at every refill.
func (l *Lib) Wait(w Waiter) {
	start := core.PassScheduler(time.Now())
	l.prog.waiters.Add(1)
	defer l.prog.waiters.Add(-1)
	// While this thread polls, a transport's progress goroutine leaves
	// what arrives to it (udp: one receiver, not two taking turns).
	l.e.PollingWaitBegins()
	done := l.pollUntil(w, start)
	l.e.PollingWaitEnds()
	if done {
		return
	}
	sleep := minSleep
	var hang core.HangWatch
	defer l.e.EndWait(&hang)
	for {
		core.Nap(sleep)
		if w.Step() {
			sleep = minSleep
		}
		if w.Done() {
			return
		}
		l.e.WatchHang(&hang, "a wait on a channel or segmented buffer")
		if c, _ := l.progressAll(true); c {
			sleep = minSleep
		} else {
			sleep = min(2*sleep, maxSleep)
		}
		if w.Done() {
			return
		}
	}
}

// pollUntil is the polling part of Wait, from the clock reading start: it
// reports whether w is done (false: the wait should sleep now).
func (l *Lib) pollUntil(w Waiter, start time.Time) bool {
	busy := l.e.SpinTime()
	moved := false
	pf, _ := w.(PollFirst)
	pollFirst := pf != nil && pf.PollFirst()
	for i := 1; ; i++ {
		if w.Done() {
			return true
		}
		if pollFirst {
			polled := l.e.Progress()
			if (polled || i%8 == 0) && w.Step() {
				moved = true
			}
			moved = moved || polled
		} else {
			if w.Step() {
				moved = true
			}
			if w.Done() {
				return true
			}
			// What a peer sends may have to be received first (udp): the
			// waiting thread does it, as the engine's own waits do.
			if i%8 == 0 && l.e.Progress() {
				moved = true
			}
		}
		if i%32 == 0 {
			// Stands in for the background goroutine, which stays away
			// while someone waits.
			if c, _ := l.progressAll(true); c || moved {
				start, moved = time.Now(), false
			}
			waited := time.Since(start)
			if waited > spinFor {
				return false
			}
			if waited >= busy {
				core.YieldTurn(i / 32)
			}
		}
	}
}

// waitFunc adapts two functions to a Waiter.
type waitFunc struct {
	done func() bool
	step func() bool
}

func (w waitFunc) Done() bool { return w.done() }
func (w waitFunc) Step() bool { return w.step() }
