package core

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func ms(n float64) int64 { return int64(n * float64(time.Millisecond)) }

func TestSchedPassIsDueOncePerIntervalOfDenseWaits(t *testing.T) {
	var p schedPass
	dueAt := func(from, to, step float64) (at []float64) {
		for x := from; x <= to; x += step {
			if p.due(ms(x)) {
				at = append(at, x)
			}
		}
		return at
	}
	// Waits every 0.5 ms from 0.5 to 21 ms: passes at 5, 10, 15, 20.
	assert.Equal(t, []float64{5, 10, 15, 20}, dueAt(0.5, 21, 0.5))
	assert.False(t, p.due(ms(21)), "twice at one moment")
}

func TestSchedPassSkipsSparseWaits(t *testing.T) {
	var p schedPass
	// Waits 3 ms apart: never dense, never a pass.
	for x := 3.0; x < 100; x += 3 {
		assert.False(t, p.due(ms(x)), "wait at %v ms", x)
	}
	// The first wait of a dense series after a pause does not pass; the
	// next one, within the gap, does (the interval has long passed).
	assert.False(t, p.due(ms(200)))
	assert.True(t, p.due(ms(200.5)))
}

func TestSchedPassTellsOneOfManyCallers(t *testing.T) {
	var p schedPass
	p.due(ms(6.5))
	var told atomic.Int32
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if p.due(ms(7)) {
				told.Add(1)
			}
		}()
	}
	wg.Wait()
	assert.Equal(t, int32(1), told.Load())
}

func TestPassSchedulerPassesWhenDue(t *testing.T) {
	now := time.Now()
	ns := int64(now.Sub(clockBase))
	waitsPass.last.Store(ns - int64(reschedEvery))
	// The wait before "began" later than now: dense however long this
	// thread is kept from running.
	waitsPass.lastWait.Store(ns + int64(time.Hour))
	after := PassScheduler(now)
	assert.Equal(t, ns, waitsPass.last.Load(), "a due pass is recorded")
	assert.False(t, after.Before(now), "the reading after a pass is a new one")
	if again := time.Now(); again.Sub(now) < reschedEvery {
		assert.Equal(t, again, PassScheduler(again), "a wait within the interval goes on with its own reading")
		assert.Equal(t, ns, waitsPass.last.Load(), "a wait within the interval does not pass")
	}
}
