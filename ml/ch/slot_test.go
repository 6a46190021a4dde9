package ch

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A slot whose bytes have not all landed is not taken: whatever mix of the
// old and the new content the receiver sees, it waits for the whole slot.
func TestSlotLandsOnlyWhenComplete(t *testing.T) {
	k := newChecksummer()
	payload := make([]byte, slotPayload)
	for i := range payload {
		payload[i] = byte(i*7 + 3)
	}
	h := header{kind: slotFirst, n: slotPayload, total: 100000, aux: 0}
	full := make([]byte, slotSize)
	n := k.write(full, 42, h, unsafe.Pointer(&payload[0]))
	require.Equal(t, uint64(slotSize), n)

	got, ok := k.landed(full, 42)
	require.True(t, ok)
	assert.Equal(t, h, got)
	_, ok = k.landed(full, 41)
	assert.False(t, ok, "another sequence number")

	// The previous lap of the same slot, then the new one landing byte by
	// byte, in order and from the back: no prefix or suffix is taken.
	old := make([]byte, slotSize)
	k.write(old, 34, header{kind: slotFirst, n: 10, total: 10}, unsafe.Pointer(&payload[5]))
	for _, cut := range []int{0, 8, hSum, hSum + 8, headerSize, headerSize + 1, slotSize / 2, int(n) - 1} {
		mix := append([]byte(nil), old...)
		copy(mix[:cut], full[:cut])
		_, ok := k.landed(mix, 42)
		assert.False(t, ok, "front %d bytes landed", cut)
		if cut == 0 {
			continue // the whole slot
		}
		mix = append([]byte(nil), old...)
		copy(mix[cut:], full[cut:])
		_, ok = k.landed(mix, 42)
		assert.False(t, ok, "back from byte %d landed", cut)
	}
	// One payload byte still old.
	mix := append([]byte(nil), full...)
	mix[headerSize+1000] ^= 0x55
	_, ok = k.landed(mix, 42)
	assert.False(t, ok, "one payload byte differs")

	// A header claiming more payload than a slot holds is never taken.
	bad := append([]byte(nil), full...)
	le.PutUint32(bad[hLen:], slotPayload+1)
	_, ok = k.landed(bad, 42)
	assert.False(t, ok)
}

func TestEmptySlot(t *testing.T) {
	k := newChecksummer()
	s := make([]byte, slotSize)
	_, ok := k.landed(s, 1)
	assert.False(t, ok, "a zeroed slot")
	k.write(s, 1, header{kind: slotFirst}, nil)
	got, ok := k.landed(s, 1)
	require.True(t, ok)
	assert.Equal(t, uint64(0), got.n)
}
