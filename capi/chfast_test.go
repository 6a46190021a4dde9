package main

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/libacp/libacp/ml/ch"
)

// C writes and checks the slots it puts with its own checksum code: it
// must agree with ml/ch's at every payload length, whatever the bytes.
func TestChannelSlotChecksumsAgree(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	slot := make([]byte, 4096)
	for _, n := range []uint64{0, 1, 7, 8, 9, 15, 16, 63, 64, 65, 100, 255, 1000, 1024, 4031, 4032} {
		for k := 0; k < 4; k++ {
			for i := range slot {
				slot[i] = byte(r.Uint32())
			}
			want := ch.SlotSum(slot, n)
			assert.Equal(t, want, chSlotSum(slot, n), "payload of %d bytes, case %d", n, k)
		}
	}
	// Bytes past the checksum's reach change nothing.
	before := chSlotSum(slot, 10)
	slot[40], slot[64+10] = slot[40]+1, slot[64+10]+1
	assert.Equal(t, before, chSlotSum(slot, 10))
	slot[31]++
	assert.NotEqual(t, before, chSlotSum(slot, 10))
}
