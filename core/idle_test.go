package core

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestIdleGateNeedsTurnsAndTime(t *testing.T) {
	start := time.Now()
	g := NewIdleGate(50 * time.Microsecond)
	g.Worked(start)
	// Descheduled for longer than the spin time: the first turn back must
	// not put the goroutine to sleep.
	late := start.Add(time.Millisecond)
	for i := 1; i < minIdleTurns; i++ {
		assert.False(t, g.MaySleep(late), "turn %d", i)
	}
	assert.True(t, g.MaySleep(late))

	// Enough turns, but within the spin time: keep polling.
	g.Worked(start)
	for i := 1; i < 2*minIdleTurns; i++ {
		assert.False(t, g.MaySleep(start.Add(10*time.Microsecond)), "turn %d", i)
	}
	assert.True(t, g.MaySleep(start.Add(50*time.Microsecond)))

	// Work resets the count.
	g.Worked(late)
	assert.False(t, g.MaySleep(late.Add(time.Second)))
}

func TestIdleGateZeroSpinSleepsAtOnce(t *testing.T) {
	g := NewIdleGate(0)
	assert.True(t, g.MaySleep(time.Now()))
}

// A sixteenth of the peer timeout, within the floor and 1 s.
func TestIdlePeriod(t *testing.T) {
	for _, c := range []struct{ timeout, floor, want time.Duration }{
		{30 * time.Second, 10 * time.Millisecond, time.Second},
		{time.Second, 10 * time.Millisecond, time.Second / 16},
		{time.Second, 100 * time.Millisecond, 100 * time.Millisecond},
		{0, 10 * time.Millisecond, 10 * time.Millisecond},
		{time.Hour, 50 * time.Millisecond, time.Second},
	} {
		assert.Equal(t, c.want, IdlePeriod(c.timeout, c.floor), "peer timeout %v, floor %v", c.timeout, c.floor)
	}
}
