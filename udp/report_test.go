package udp_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/libacp/libacp/core"
	"github.com/libacp/libacp/core/coretest"
)

// A barrier that waits past the hang-report setting for a rank lists the
// transport's peers and what is in flight to them.
func TestHangReportListsThePeers(t *testing.T) {
	w := coretest.NewWorld(t, 2, "udp", "hang-report=0.05")
	defer w.Close()
	w.Run(func(rank int, e *core.Engine) error {
		if rank == 1 {
			time.Sleep(400 * time.Millisecond)
		}
		return e.Sync()
	})
	out := w.Stderr.String()
	assert.Contains(t, out, "acp[0]: hang report: transport udp:\n")
	assert.Regexp(t, `acp\[0\]: hang report:   1 peer\(s\) contacted, [01] with data in flight; 0 operation\(s\) waiting for a peer\n`, out)
}
