package segbuf_test

import (
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"

	"github.com/libacp/libacp/core"
	"github.com/libacp/libacp/core/coretest"
	"github.com/libacp/libacp/ml/segbuf"
)

// A connect that waits longer than the hang-report setting for its peer
// prints the segmented buffer it waits on; the peer, which did not wait,
// prints nothing.
func TestHangReportListsTheSegbuf(t *testing.T) {
	w := newWorld(t, 2, "hang-report=0.05")
	defer w.close()
	w.Run(func(r int, _ *core.Engine) error {
		buf := coretest.CMem(t, 64)
		role := segbuf.Source
		if r == 1 {
			role = segbuf.Dest
			time.Sleep(400 * time.Millisecond)
		}
		s, err := w.libs[r].CreateSegbuf(role, 1-r, unsafe.Pointer(&buf[0]), 16, 4)
		if err != nil {
			return err
		}
		if err := s.Connect(); err != nil {
			return err
		}
		if err := s.Disconnect(); err != nil {
			return err
		}
		return s.Free()
	})
	out := w.Stderr.String()
	assert.Equal(t, 1, strings.Count(out, "acp[0]: hang report: a wait on a channel or segmented buffer has waited"), out)
	assert.Regexp(t, `acp\[0\]: hang report:   segmented buffer, source end with rank 1: connected false .*; tail 0, head 0, sent 0, 0 copies in flight`, out)
	assert.NotContains(t, out, "acp[1]: hang report")
}
