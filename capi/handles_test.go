package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// A live handle of one table names nothing in another, although both
// number their slots alike: a segmented buffer's handle given to
// acp_free_ch freed the channel in the same slot.
func TestHandlesOfAnotherKindAreRefused(t *testing.T) {
	chs, segs := handles[int]{kind: 1}, handles[int]{kind: 3}
	c, s := 7, 8
	hc, hs := chs.put(&c), segs.put(&s)
	assert.Equal(t, uint64(hc)&0xffffffff, uint64(hs)&0xffffffff, "both first slots")
	assert.Nil(t, chs.get(hs), "a segmented buffer's handle as a channel")
	assert.Nil(t, segs.get(hc), "a channel's handle as a segmented buffer")
	assert.Same(t, &c, chs.get(hc))
	assert.Zero(t, uint64(hc)>>63, "bit 63 is the C fast path's")

	chs.del(hc)
	assert.Nil(t, chs.get(hc), "a freed handle")
	hc2 := chs.put(&c)
	assert.NotEqual(t, hc, hc2, "the slot's next handle")
	assert.Nil(t, chs.get(hc))
}
