package core

import "time"

// minIdleTurns is how many turns without work a progress goroutine takes,
// besides the spin time, before it may sleep.
const minIdleTurns = 64

// IdleGate tells a transport's progress goroutine when it may stop polling
// and sleep: once it found no work for the spin time (--acp-progress-spin)
// and for minIdleTurns turns in a row. The turns matter on a CPU shared
// with busy threads: there the goroutine may not run for longer than the
// spin time, and judging by the clock alone it would go to sleep at its
// first turn back, in the middle of an exchange; the peer's next message
// would then wait for it to be woken and scheduled (tens of microseconds,
// often past a retransmission timeout).
type IdleGate struct {
	spin  time.Duration
	since time.Time
	turns int
}

// NewIdleGate starts a gate as if work had just been found.
func NewIdleGate(spin time.Duration) IdleGate {
	return IdleGate{spin: spin, since: time.Now()}
}

// Worked records a turn that found work.
func (g *IdleGate) Worked(now time.Time) { g.since, g.turns = now, 0 }

// MaySleep records a turn without work and reports whether the goroutine
// may sleep now. A spin time of 0 means sleep at once.
func (g *IdleGate) MaySleep(now time.Time) bool {
	g.turns++
	return g.spin == 0 || (g.turns >= minIdleTurns && now.Sub(g.since) >= g.spin)
}

// IdlePeriod is how long a progress goroutine with nothing due may sleep
// before it looks again: a sixteenth of the peer timeout, from floor to 1
// s. Each return from such a sleep (a system call) sets the Go runtime's
// monitor thread polling every 20 µs for a millisecond, a preemption each
// where every CPU runs a rank; what the goroutine does on waking (a
// heartbeat, a look at a coarse clock) must still be seen well within the
// timeout.
func IdlePeriod(peerTimeout, floor time.Duration) time.Duration {
	return min(max(peerTimeout/16, floor), time.Second)
}
