package core

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLayoutWidths(t *testing.T) {
	cases := []struct {
		procs, colors             int
		rank, color, seg, offBits uint
	}{
		{1, 1, 1, 0, 15, 48},
		{2, 1, 2, 0, 14, 48},
		{8, 1, 4, 0, 12, 48},
		{127, 1, 7, 0, 9, 48},
		{128, 1, 8, 0, 9, 47},
		{1 << 20, 1, 21, 0, 9, 34},
		{1 << 20, 4, 21, 2, 9, 32},
		{MaxProcs, 1, 24, 0, 9, 31},
	}
	for _, c := range cases {
		l, err := NewLayout(c.procs, c.colors)
		require.NoError(t, err)
		assert.Equal(t, c.rank, l.RankBits, "rank bits for %d procs", c.procs)
		assert.Equal(t, c.color, l.ColorBits, "colour bits for %d colours", c.colors)
		assert.Equal(t, c.seg, l.SegBits, "segment bits for %d procs", c.procs)
		assert.Equal(t, c.offBits, l.OffsetBits, "offset bits for %d procs", c.procs)
		assert.Equal(t, uint(64), l.RankBits+l.ColorBits+l.SegBits+l.OffsetBits)
	}
}

// Every job size holds more registrations at once than the original's ib
// device (255, all used by its sample acpbl_test_rm).
func TestLayoutRegistrationsAtEverySize(t *testing.T) {
	for procs := 1; procs <= MaxProcs; procs *= 2 {
		for _, colors := range []int{1, 2, 4} {
			l, err := NewLayout(procs, colors)
			require.NoError(t, err)
			tab := NewRegTable(l, 0)
			assert.GreaterOrEqual(t, tab.Capacity(), 255, "%d procs, %d colours: %s", procs, colors, l)
		}
	}
}

func TestLayoutRejectsBadSizes(t *testing.T) {
	for _, n := range []int{0, -1, MaxProcs + 1} {
		_, err := NewLayout(n, 1)
		assert.Error(t, err, "%d procs", n)
	}
	_, err := NewLayout(4, 0)
	assert.Error(t, err)
}

func TestGAEncodeDecodeRoundTrip(t *testing.T) {
	for _, procs := range []int{1, 2, 3, 8, 1000, 1 << 20} {
		l, err := NewLayout(procs, 2)
		require.NoError(t, err)
		for _, rank := range []int{0, procs / 2, procs - 1} {
			for _, seg := range []int{0, 1, l.Segments() - 1} {
				for _, off := range []uint64{0, 1, l.MaxOffset() - 1} {
					ga := l.Encode(rank, 1, seg, off)
					assert.NotEqual(t, GANull, ga, "a valid GA is never zero")
					d := l.Decode(ga)
					assert.Equal(t, Decoded{Rank: rank, Color: 1, Seg: seg, Off: off}, d)
				}
			}
		}
	}
}

func TestGALinearWithinRegion(t *testing.T) {
	l, _ := NewLayout(5, 1)
	ga := l.Encode(3, 0, 7, 100)
	for k := uint64(0); k < 1000; k += 37 {
		d := l.Decode(ga + GA(k))
		assert.Equal(t, 3, d.Rank)
		assert.Equal(t, 7, d.Seg)
		assert.Equal(t, 100+k, d.Off)
	}
}

func TestGARankOutOfRange(t *testing.T) {
	l, _ := NewLayout(5, 1)
	assert.Equal(t, -1, l.Rank(GANull))
	// rank field 6 = rank 5, which does not exist in a 5-process job.
	assert.Equal(t, -1, l.Rank(GA(uint64(6)<<(64-l.RankBits))))
	assert.Equal(t, 4, l.Rank(l.Encode(4, 0, 0, 0)))
}
