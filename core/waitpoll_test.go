package core

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// bracketNet records how a wait polls it: inside or outside the part that
// WaitPolls and WaitEnds bracket.
type bracketNet struct {
	Transport // only the methods below are called
	depth     atomic.Int32
	begins    atomic.Int32
	ends      atomic.Int32
	inside    atomic.Int32 // polls within a bracket
	outside   atomic.Int32 // polls outside (the wait's sleeping part)
	negative  atomic.Bool  // WaitEnds without WaitPolls
}

func (b *bracketNet) Poll() bool {
	if b.depth.Load() > 0 {
		b.inside.Add(1)
	} else {
		b.outside.Add(1)
	}
	return false
}

func (b *bracketNet) WaitPolls() { b.begins.Add(1); b.depth.Add(1) }

func (b *bracketNet) WaitEnds() {
	if b.depth.Add(-1) < 0 {
		b.negative.Store(true)
	}
	b.ends.Add(1)
}

func bracketEngine(spin time.Duration) (*Engine, *bracketNet) {
	b := &bracketNet{}
	e := &Engine{spin: spin}
	e.polled = []Transport{b}
	e.waitPollers = []WaitPoller{b}
	return e, b
}

func TestWaitBracketsItsPolling(t *testing.T) {
	// A spin time far longer than the wait: it ends while polling, however
	// slowly this machine (or the race detector) runs.
	e, b := bracketEngine(time.Minute)
	e.waitUntil("a test", func() bool { return b.inside.Load() >= 50 })
	assert.Equal(t, int32(1), b.begins.Load())
	assert.Equal(t, int32(1), b.ends.Load())
	assert.Equal(t, int32(0), b.depth.Load())
	assert.Positive(t, b.inside.Load())
	assert.Zero(t, b.outside.Load(), "a wait that ends while polling never polls outside the bracket")
}

// A wait that went to sleep goes back to polling, bracketed, when this
// process serves a peer's request: it then answers the next ones itself.
func TestSleepingWaitPollsAgainWhenServing(t *testing.T) {
	e, b := bracketEngine(0)
	var done atomic.Bool
	go func() {
		// Past the polling phases (spin 0 + yieldPhase), the wait sleeps.
		for b.outside.Load() == 0 {
			time.Sleep(time.Millisecond)
		}
		e.served.Add(1) // a peer's atomic, served by the progress thread
		for deadline := time.Now().Add(5 * time.Second); b.begins.Load() < 2 && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
		done.Store(true)
	}()
	e.waitUntil("a test", done.Load)
	assert.GreaterOrEqual(t, b.begins.Load(), int32(2), "the wait polled again after a request was served")
	assert.Equal(t, b.begins.Load(), b.ends.Load())
	assert.False(t, b.negative.Load())
	assert.Equal(t, int32(0), b.depth.Load())
}

// Engine.PollingWaitBegins and PollingWaitEnds (a channel's wait) bracket
// the transports' polling too.
func TestChannelWaitsAreBracketed(t *testing.T) {
	e, b := bracketEngine(0)
	e.PollingWaitBegins()
	assert.True(t, e.Polled())
	e.Progress()
	e.PollingWaitEnds()
	assert.False(t, e.Polled())
	assert.Equal(t, int32(1), b.inside.Load())
	assert.Equal(t, int32(1), b.begins.Load())
	assert.Equal(t, int32(1), b.ends.Load())
}

func TestMovedReportsEachChangeOnce(t *testing.T) {
	var c atomic.Uint64
	var seen uint64
	assert.False(t, Moved(&c, &seen))
	c.Add(2)
	assert.True(t, Moved(&c, &seen))
	assert.Equal(t, uint64(2), seen)
	assert.False(t, Moved(&c, &seen), "the same change again")
}
