package ib

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// Without connections the report says so; with its lock held by a hung
// thread it says that instead of waiting for it.
func TestReportStateNeverBlocks(t *testing.T) {
	e := &endpoint{}
	var b strings.Builder
	e.ReportState(&b)
	assert.Equal(t, "  0 connection(s); 0 operation(s) waiting for an owner's answer, 0 key lookup(s), 0 invalidation(s) in flight; 0 key(s) fetched, 0 revoked, 0 read(s) with a carried key so far\n", b.String())

	e.mu.Lock()
	b.Reset()
	e.ReportState(&b)
	e.mu.Unlock()
	assert.Equal(t, "  the endpoint's lock is held by another thread\n", b.String())
	assert.Equal(t, "connecting", connConnecting.String())
}
