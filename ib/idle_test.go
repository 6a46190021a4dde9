package ib

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// With nothing in flight the progress goroutine sleeps a sixteenth of the
// peer timeout, within timerPeriod and 1 s: 1 s by default.
func TestIdlePeriod(t *testing.T) {
	for _, c := range []struct{ timeout, want time.Duration }{
		{30 * time.Second, time.Second},
		{4 * time.Second, 250 * time.Millisecond},
		{time.Second, time.Second / 16},
		{500 * time.Millisecond, timerPeriod},
		{0, timerPeriod},
		{time.Hour, time.Second},
	} {
		assert.Equal(t, c.want, idlePeriod(c.timeout), "peer timeout %v", c.timeout)
	}
}
