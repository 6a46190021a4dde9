package core

import (
	"runtime"
	"sync/atomic"
	"time"
)

// reschedEvery is how often a thread that waits in the library again and
// again goes through the Go scheduler of its own accord (PassScheduler).
//
// The runtime's monitor thread preempts a P whose goroutine has not been
// through the scheduler for 10 ms. An application thread calling in from
// C never goes through it: each call enters and leaves Go like a system
// call, on the P it kept. So every 10 ms the monitor preempted it: in Go code by a signal
// and a hand-over of the P to another thread and back; in C or in a
// system call by taking its P away, after which the monitor polls every
// 20 µs for 50 turns. With every CPU running a busy rank, each of those
// wake-ups (1,000-2,000 a second per udp rank on vm-2c) took a rank's CPU
// for about 25 µs. One pass through the scheduler every 5 ms costs one
// hand-over and keeps the monitor asleep: the monitor's wake-ups fell to
// ~250 a second, a udp channel pingpong's messages slower than 20 µs from
// 10-11 % to 8-9 % (BENCHMARKS.md, 2026-11-27, fourth section).
const reschedEvery = 5 * time.Millisecond

// denseGap: a wait that begins within this time of the one before is
// part of a busy exchange, whose thread stays in or near Go; only such
// waits pass. A hand-over of a locked thread's P took 40-140 µs on vm-2c
// (16 µs with both threads on one CPU), a cost a program that waits
// now and then would pay at each wait for nothing: its thread stays in C
// long enough for the monitor to take its P there, which needs no
// hand-over.
const denseGap = time.Millisecond

// schedPass decides when a pass is due: at most once per reschedEvery in
// the process, and only for a wait in a dense series. Threads share it: a
// program with several waiting threads passes for one of them per
// interval, and the others are preempted as before when their turn does
// not come in time.
type schedPass struct {
	last     atomic.Int64 // nanoseconds since clockBase: the last pass
	lastWait atomic.Int64 // nanoseconds since clockBase: the last wait's start
}

// due records a wait beginning at now (nanoseconds since clockBase) and
// reports whether it should pass; of callers at the same moment, one is
// told so.
func (p *schedPass) due(now int64) bool {
	if now-p.lastWait.Swap(now) > int64(denseGap) {
		return false
	}
	last := p.last.Load()
	return now-last >= int64(reschedEvery) && p.last.CompareAndSwap(last, now)
}

var (
	clockBase = time.Now()
	waitsPass schedPass
)

// PassScheduler goes through the Go scheduler if the waits of this process
// come in a dense series and none passed for reschedEvery. Waits call it
// as they begin, with the clock reading they start from (a hand-over's tens
// of microseconds then delay an answer that has not arrived yet), and
// continue from the reading it returns: now, or a new one after a pass.
func PassScheduler(now time.Time) time.Time {
	if !waitsPass.due(int64(now.Sub(clockBase))) {
		return now
	}
	runtime.Gosched()
	return time.Now()
}
