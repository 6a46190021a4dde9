package segbuf

import (
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
)

// A count record counts only when its check matches, and counts never go
// back.
func TestCountRecord(t *testing.T) {
	mem := make([]uint64, ctlSize/8)
	p := &Pair{ctl: Block{Ptr: unsafe.Pointer(&mem[0]), Size: ctlSize}}
	set := func(v, c uint64) {
		atomic.StoreUint64(p.ctl.word(ctlCount), v)
		atomic.StoreUint64(p.ctl.word(ctlCount+8), c)
	}
	assert.Equal(t, uint64(0), p.Count(), "zeroed block")
	set(5, countCheck(5))
	assert.Equal(t, uint64(5), p.Count())
	set(0x100000005, countCheck(5)) // value landed, check not yet
	assert.Equal(t, uint64(5), p.Count())
	set(7, countCheck(6)) // torn the other way
	assert.Equal(t, uint64(5), p.Count())
	set(9, countCheck(9))
	assert.Equal(t, uint64(9), p.Count())
	set(8, countCheck(8)) // an older value never lowers the count
	assert.Equal(t, uint64(9), p.Count())
	assert.NotEqual(t, uint64(0), countCheck(0), "a zeroed record is not a valid count")
}
