package core_test

import (
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/libacp/libacp/core"
	"github.com/libacp/libacp/core/coretest"
)

// A wait that lasts the hang-report setting prints, once, what it waits
// for, every state reporter's lines and the goroutines' stacks; a wait
// shorter than that prints nothing.
func TestHangReportSaysWhatWaitsOnce(t *testing.T) {
	w := coretest.NewWorld(t, 2, "memnet", "hang-report=0.05")
	defer w.Close()
	e := w.Engines[0]
	remove := e.AddStateReporter("a test layer", func(w io.Writer) { fmt.Fprintln(w, "  what the test layer waits for") })
	defer remove()
	gone := e.AddStateReporter("a layer that stopped", func(w io.Writer) { fmt.Fprintln(w, "  stale") })
	gone()
	w.LateSync(400 * time.Millisecond)
	out := w.Stderr.String()
	assert.Equal(t, 1, strings.Count(out, "acp[0]: hang report: acp_sync has waited"), out)
	assert.Contains(t, out, "acp[0]: hang report: operations: ")
	assert.Regexp(t, `acp\[0\]: hang report: waits in progress \(that slept\): 1\nacp\[0\]: hang report:   acp_sync, for \d+ms\n`, out)
	assert.Contains(t, out, "acp[0]: hang report: a test layer:\nacp[0]: hang report:   what the test layer waits for\n")
	assert.NotContains(t, out, "stale")
	assert.Contains(t, out, "acp[0]: hang report: the library's goroutines:\nacp[0]: hang report: goroutine ")
	assert.NotContains(t, out, "acp[1]: hang report", "rank 1 did not wait")
}

// Off by default.
func TestNoHangReportByDefault(t *testing.T) {
	w := coretest.NewWorld(t, 2, "memnet")
	defer w.Close()
	w.LateSync(100 * time.Millisecond)
	assert.NotContains(t, w.Stderr.String(), "hang report")
}

// A state report comes once, at the set time since start-up, from every
// rank, waiting or not, with the hang report's parts; none after the
// engine closed, and none by default.
func TestStateReportAtItsTime(t *testing.T) {
	w := coretest.NewWorld(t, 2, "memnet", "state-report-at=0.2")
	e := w.Engines[1]
	remove := e.AddStateReporter("a test layer", func(w io.Writer) { fmt.Fprintln(w, "  what the test layer waits for") })
	time.Sleep(50 * time.Millisecond)
	assert.NotContains(t, w.Stderr.String(), "state report", "a report before its time")
	// Both reports, however loaded the machine; then a while for a
	// second one, which must not come.
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if out := w.Stderr.String(); strings.Contains(out, "acp[0]: state report: the library's goroutines") &&
			strings.Contains(out, "acp[1]: state report: the library's goroutines") {
			break
		}
	}
	time.Sleep(300 * time.Millisecond)
	remove()
	out := w.Stderr.String()
	for r := range 2 {
		assert.Equal(t, 1, strings.Count(out, fmt.Sprintf("acp[%d]: state report: this process has run 200ms since acp_init (--acp-state-report-at / ACP_STATE_REPORT_AT)", r)), out)
		assert.Contains(t, out, fmt.Sprintf("acp[%d]: state report: operations: ", r))
		assert.Contains(t, out, fmt.Sprintf("acp[%d]: state report: the library's goroutines:\nacp[%d]: state report: goroutine ", r, r))
	}
	assert.Contains(t, out, "acp[1]: state report: a test layer:\nacp[1]: state report:   what the test layer waits for\n")
	assert.NotContains(t, out, "hang report")
	w.Close()

	late := coretest.NewWorld(t, 2, "memnet", "state-report-at=0.3")
	late.Close()
	none := coretest.NewWorld(t, 2, "memnet")
	time.Sleep(500 * time.Millisecond)
	none.Close()
	assert.NotContains(t, late.Stderr.String()+none.Stderr.String(), "state report")
}

// The state report lists the waits in progress: rank 0's barrier, which
// waits for rank 1; none of rank 1, which computes. A wait that ended is
// no longer listed.
func TestStateReportListsWaitsInProgress(t *testing.T) {
	w := coretest.NewWorld(t, 2, "memnet", "state-report-at=0.3")
	defer w.Close()
	w.Run(func(r int, e *core.Engine) error {
		if r == 1 {
			// Into the barrier only once both reports are out, however
			// loaded the machine.
			for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
				if out := w.Stderr.String(); strings.Count(out, "state report: the library's goroutines") == 2 {
					break
				}
			}
			time.Sleep(100 * time.Millisecond)
		}
		return e.Sync()
	})
	out := w.Stderr.String()
	assert.Regexp(t, `acp\[0\]: state report: waits in progress \(that slept\): 1\nacp\[0\]: state report:   acp_sync, for \d+ms\n`, out)
	assert.Contains(t, out, "acp[1]: state report: waits in progress (that slept): 0\n")
	assert.Empty(t, w.Engines[0].WaitsInProgress(), "the barrier ended")
}
