package core

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestSchedPassIsDueOncePerInterval(t *testing.T) {
	p := schedPass{every: 5 * time.Millisecond}
	ms := func(n int64) int64 { return n * int64(time.Millisecond) }
	assert.False(t, p.due(ms(1)), "within the first interval of the process")
	assert.True(t, p.due(ms(5)))
	assert.False(t, p.due(ms(5)), "twice at one moment")
	assert.False(t, p.due(ms(9)))
	assert.True(t, p.due(ms(10)))
	assert.True(t, p.due(ms(40)), "after a long time without waits")
	assert.False(t, p.due(ms(44)))
}

func TestSchedPassTellsOneOfManyCallers(t *testing.T) {
	p := schedPass{every: 5 * time.Millisecond}
	var told atomic.Int32
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if p.due(int64(7 * time.Millisecond)) {
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
	PassScheduler()
	last := waitsPass.last.Load()
	assert.GreaterOrEqual(t, last, now, "a due pass is recorded")
	before := int64(time.Since(clockBase))
	PassScheduler()
	if before-last < int64(reschedEvery) {
		assert.Equal(t, last, waitsPass.last.Load(), "a wait within the interval does not pass")
	}
}
