package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// One P more than the runtime would use, so that one is idle while the
// application thread, back in C, holds its own; two for a rank confined to
// one CPU; an explicit GOMAXPROCS stands.
func TestProcsLeaveOneIdle(t *testing.T) {
	assert.Equal(t, 2, procsFor(1, ""), "a rank pinned to one CPU")
	assert.Equal(t, 3, procsFor(2, ""))
	assert.Equal(t, 65, procsFor(64, ""))
	assert.Equal(t, 1, procsFor(1, "1"), "GOMAXPROCS=1 set by the user")
	assert.Equal(t, 2, procsFor(2, "2"))
}
