package ch_test

import (
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"

	"github.com/libacp/libacp/core/coretest"
	"github.com/libacp/libacp/ml/ch"
)

// A receive that waits longer than the hang-report setting prints the
// channel's state: which end, what it took and released, what is posted.
func TestHangReportListsTheChannel(t *testing.T) {
	w := newWorld(t, 2, "hang-report=0.05")
	defer w.close()
	w.exchange(
		func(c *ch.Channel) error {
			time.Sleep(400 * time.Millisecond)
			buf := coretest.CMem(t, 8)
			q, err := c.Send(unsafe.Pointer(&buf[0]), 8)
			if err == nil {
				_, err = q.Wait()
			}
			return err
		},
		func(c *ch.Channel) error {
			buf := coretest.CMem(t, 8)
			q, err := c.Recv(unsafe.Pointer(&buf[0]), 8)
			if err == nil {
				_, err = q.Wait()
			}
			return err
		})
	out := w.Stderr.String()
	assert.Equal(t, 1, strings.Count(out, "acp[1]: hang report: a wait on a channel or segmented buffer has waited"), out)
	assert.Contains(t, out, "acp[1]: hang report: channels and segmented buffers:\n")
	assert.Regexp(t, `acp\[1\]: hang report:   channel 0->1, destination end with rank 0: connected true .*; receiver: 0 slots taken, 0 released, 1 receive\(s\) posted`, out)
}
