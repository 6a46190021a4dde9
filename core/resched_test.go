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
	p := schedPass{every: 5 * time.Millisecond, dense: time.Millisecond}
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
	p := schedPass{every: 5 * time.Millisecond, dense: time.Millisecond}
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
	p := schedPass{every: 5 * time.Millisecond, dense: time.Millisecond}
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
	now := int64(time.Since(clockBase))
	waitsPass.last.Store(now - int64(reschedEvery))
	// The wait before "began" later than now: dense however long this
	// thread is kept from running.
	waitsPass.lastWait.Store(now + int64(time.Hour))
	PassScheduler()
	last := waitsPass.last.Load()
	assert.GreaterOrEqual(t, last, now, "a due pass is recorded")
	before := int64(time.Since(clockBase))
	PassScheduler()
	if before-last < int64(reschedEvery) {
		assert.Equal(t, last, waitsPass.last.Load(), "a wait within the interval does not pass")
	}
}
