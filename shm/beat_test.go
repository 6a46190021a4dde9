package shm

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// Beats are a sixteenth of the peer timeout, within 10 ms and 1 s: a stuck
// peer is still found in time, and an idle process wakes at most once a
// second by default.
func TestBeatPeriod(t *testing.T) {
	for _, c := range []struct{ timeout, want time.Duration }{
		{30 * time.Second, time.Second},
		{time.Second, time.Second / 16},
		{100 * time.Millisecond, 10 * time.Millisecond},
		{0, 10 * time.Millisecond},
		{time.Hour, time.Second},
	} {
		assert.Equal(t, c.want, beatPeriod(c.timeout), "peer timeout %v", c.timeout)
	}
}
