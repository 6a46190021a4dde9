package ch

import (
	"encoding/binary"
	"math/rand/v2"
	"runtime"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/libacp/libacp/core/coretest"
	"github.com/libacp/libacp/ml/segbuf"
)

// A slot whose bytes have not all landed is not taken: whatever mix of the
// old and the new content the receiver sees, it waits for the whole slot.
func TestSlotLandsOnlyWhenComplete(t *testing.T) {
	payload := make([]byte, slotPayload)
	for i := range payload {
		payload[i] = byte(i*7 + 3)
	}
	h := header{kind: slotFirst, n: slotPayload, total: 100000, aux: 0}
	full := make([]byte, slotSize)
	n := writeStaged(full, 42, h, unsafe.Pointer(&payload[0]))
	require.Equal(t, uint64(slotSize), n)

	got, ok := landedSlot(full, 42)
	require.True(t, ok)
	assert.Equal(t, h, got)
	_, ok = landedSlot(full, 41)
	assert.False(t, ok, "another sequence number")

	// The previous lap of the same slot, then the new one landing byte by
	// byte, in order and from the back: no prefix or suffix is taken.
	old := make([]byte, slotSize)
	writeStaged(old, 34, header{kind: slotFirst, n: 10, total: 10}, unsafe.Pointer(&payload[5]))
	for _, cut := range []int{0, 8, hSum, hSum + 8, headerSize, headerSize + 1, slotSize / 2, int(n) - 1} {
		mix := append([]byte(nil), old...)
		copy(mix[:cut], full[:cut])
		_, ok := landedSlot(mix, 42)
		assert.False(t, ok, "front %d bytes landed", cut)
		if cut == 0 {
			continue // the whole slot
		}
		mix = append([]byte(nil), old...)
		copy(mix[cut:], full[cut:])
		_, ok = landedSlot(mix, 42)
		assert.False(t, ok, "back from byte %d landed", cut)
	}
	// One payload byte still old.
	mix := append([]byte(nil), full...)
	mix[headerSize+1000] ^= 0x55
	_, ok = landedSlot(mix, 42)
	assert.False(t, ok, "one payload byte differs")

	// A header claiming more payload than a slot holds is never taken.
	bad := append([]byte(nil), full...)
	le.PutUint32(bad[hLen:], slotPayload+1)
	_, ok = landedSlot(bad, 42)
	assert.False(t, ok)
}

// A slot read while it lands (over ib the adapter's driver writes it as
// the receiver polls): a header whose sequence number landed but whose
// offset had not must never be taken with the previous lap's offset, even
// when the rest landed before the checksum was computed. The writer here
// stores each lap's slot over the last one a word at a time, in order,
// yielding between words, and writes the next lap only once the receiver
// took this one, as a sender waits for the release; outside the Go heap,
// like a ring. Laps alternate between a first chunk (offset 0) and the
// last chunk of an 8 KiB message (offset 8064).
func TestSlotHeaderIsReadOnce(t *testing.T) {
	const laps = 20000
	payload := make([]byte, 128)
	for i := range payload {
		payload[i] = byte(i*5 + 1)
	}
	hdr := func(l int) header {
		if l%2 == 0 {
			return header{kind: slotFirst, n: 128, total: 8192}
		}
		return header{kind: slotNext, n: 128, total: 8192, aux: 8064}
	}
	seq := func(l int) uint64 { return uint64(8*l + 1) }
	slots := make([][]byte, laps)
	for l := range slots {
		slots[l] = make([]byte, slotSize)
		writeStaged(slots[l], seq(l), hdr(l), unsafe.Pointer(&payload[0]))
	}
	words := int(headerSize+128) / 8
	ring := coretest.CMem(t, slotSize)
	word := func(b []byte, i int) *uint64 { return (*uint64)(unsafe.Pointer(&b[8*i])) }
	var taken, done, stop atomic.Int64
	taken.Store(-1)
	defer func() {
		// A failed check ends the test: the writer stops before the ring
		// is unmapped.
		stop.Store(1)
		for done.Load() == 0 {
			runtime.Gosched()
		}
	}()
	go func() {
		defer done.Store(1)
		for l := 0; l < laps && stop.Load() == 0; l++ {
			for i := 0; i < words; i++ {
				atomic.StoreUint64(word(ring, i), *word(slots[l], i))
				runtime.Gosched()
			}
			for taken.Load() < int64(l) && stop.Load() == 0 {
				runtime.Gosched() // the receiver releases the slot
			}
		}
	}()
	for l := 0; l < laps; {
		if h, ok := landedSlot(ring, seq(l)); ok {
			require.Equal(t, hdr(l), h, "lap %d", l)
			taken.Store(int64(l))
			l++
		}
	}
}

func TestEmptySlot(t *testing.T) {
	s := make([]byte, slotSize)
	_, ok := landedSlot(s, 1)
	assert.False(t, ok, "a zeroed slot")
	writeStaged(s, 1, header{kind: slotFirst}, nil)
	got, ok := landedSlot(s, 1)
	require.True(t, ok)
	assert.Equal(t, uint64(0), got.n)
}

// A message through the ring is ready for a fast-path receive only once
// every one of its slots landed; what a sender never writes is left to Go.
func TestLandedMessageWaitsForEverySlot(t *testing.T) {
	ring := make([]byte, ringSize)
	c := &Channel{l: &Lib{}, ring: segbuf.Block{Ptr: unsafe.Pointer(&ring[0])}, head: 6}
	const total = 2*slotPayload + 100 // three slots, wrapping around the ring
	msg := make([]byte, total)
	for i := range msg {
		msg[i] = byte(i * 7)
	}
	put := func(i uint64, h header) {
		writeOrdered(slotAt(c.ring.Ptr, c.head+i), c.head+i+1, h, unsafe.Pointer(&msg[h.aux]))
	}
	_, _, ready := c.landedMessage()
	assert.Equal(t, 0, ready, "empty ring")
	put(0, header{kind: slotFirst, n: slotPayload, total: total})
	put(1, header{kind: slotNext, n: slotPayload, total: total, aux: slotPayload})
	_, _, ready = c.landedMessage()
	assert.Equal(t, 0, ready, "the third slot is missing")
	put(2, header{kind: slotNext, n: 100, total: total, aux: 2 * slotPayload})
	n, k, ready := c.landedMessage()
	assert.Equal(t, 1, ready)
	assert.EqualValues(t, total, n)
	assert.EqualValues(t, 3, k)

	put(2, header{kind: slotNext, n: 100, total: total, aux: 2*slotPayload - 1})
	_, _, ready = c.landedMessage()
	assert.Equal(t, -1, ready, "a chunk at the wrong offset is Go's to report")
	put(0, header{kind: slotRendezvous, total: 1 << 20})
	_, _, ready = c.landedMessage()
	assert.Equal(t, -1, ready, "a rendezvous is Go's")
}

// The copy into a ring written in place moves exactly the payload, at any
// alignment and on both sides of the size where it switches to `rep movsb`.
func TestCopyToRing(t *testing.T) {
	src := make([]byte, slotPayload+8)
	for i := range src {
		src[i] = byte(i*13 + 5)
	}
	for _, n := range []int{1, 7, 64, 511, 512, 513, 4000, slotPayload} {
		for _, shift := range []int{0, 1, 3} {
			ring := make([]byte, n+16)
			for i := range ring {
				ring[i] = 0xee
			}
			copyToRing(ring[8+shift:8+shift+n], unsafe.Pointer(&src[shift]))
			assert.Equal(t, src[shift:shift+n], ring[8+shift:8+shift+n], "%d bytes, shifted by %d", n, shift)
			for _, i := range []int{0, 7 + shift, 8 + shift + n, len(ring) - 1} {
				if i < 8+shift || i >= 8+shift+n {
					assert.Equal(t, byte(0xee), ring[i], "%d bytes, shifted by %d: byte %d outside the payload", n, shift, i)
				}
			}
		}
	}
}

// The slot checksum: every byte in its reach counts, the length counts
// (a shorter payload is not its longer self padded with zeros), and
// differences in the words of one lane alone are always caught.
func TestSlotSumProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	slot := make([]byte, slotSize)
	for i := range slot {
		slot[i] = byte(r.Uint32())
	}
	const n = 1000
	base := slotChecksum(slot[:hSum], slot[headerSize:headerSize+n])
	for i := 0; i < headerSize+n; i++ {
		if i >= hSum && i < headerSize {
			continue // the checksum itself and the header's unused bytes
		}
		slot[i] ^= 1 << (i % 8)
		assert.NotEqual(t, base, slotChecksum(slot[:hSum], slot[headerSize:headerSize+n]), "byte %d flipped", i)
		slot[i] ^= 1 << (i % 8)
	}

	short := make([]byte, 37)
	copy(short, slot[headerSize:])
	padded := append(append([]byte(nil), short...), 0, 0, 0)
	assert.NotEqual(t, slotChecksum(slot[:hSum], short), slotChecksum(slot[:hSum], padded))

	// Random changes to the words of one lane (payload word j goes to lane
	// j mod 4, after the header's four words).
	for trial := 0; trial < 2000; trial++ {
		lane := trial % 4
		changed := append([]byte(nil), slot[:headerSize+n]...)
		for j := lane; j < n/8; j += 4 {
			if r.IntN(3) == 0 || j == lane {
				binary.LittleEndian.PutUint64(changed[headerSize+8*j:], r.Uint64())
			}
		}
		assert.NotEqual(t, base, slotChecksum(changed[:hSum], changed[headerSize:headerSize+n]), "trial %d, lane %d", trial, lane)
	}
}

func BenchmarkSlotSum1KiB(b *testing.B) {
	slot := make([]byte, slotSize)
	b.SetBytes(1024)
	for b.Loop() {
		slotChecksum(slot[:hSum], slot[headerSize:headerSize+1024])
	}
}
