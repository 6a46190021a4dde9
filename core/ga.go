package core

import (
	"fmt"
	"math/bits"
)

// GA is a global address: one byte of registered memory somewhere in the job.
//
// Bit layout, most significant first (widths chosen at init from the number
// of processes and colours, identical on every rank):
//
//	| rank+1 | colour | segment | offset |
//
// The rank field holds rank+1 so that every valid GA is non-zero. The segment
// names a slot in the owner's registration table. Offsets are linear within
// a region, so ga+k names byte k further on as long as it stays inside.
type GA uint64

// GANull is never a valid global address (ACP_GA_NULL).
const GANull GA = 0

// Reserved segments: the three starter regions every rank owns.
const (
	SegStarter   = 0 // BL starter memory (acp_query_starter_ga)
	SegStarterCL = 1 // communication-library starter memory
	SegStarterDL = 2 // data-library starter memory (acp_malloc heap)
	SegEngine    = 3 // the engine's own words that peers write (barrier arrivals)
	SegFirstUser = 4 // first segment handed out by acp_register_memory

	// NumStarters counts the regions every rank has from the start.
	NumStarters = 4
)

// MaxProcs is the largest job the layout supports (the original's option
// range for --acp-nprocs).
const MaxProcs = 10_000_000

// Layout is the GA bit layout of one job.
type Layout struct {
	NProcs     int
	RankBits   uint
	ColorBits  uint
	SegBits    uint
	OffsetBits uint
}

// maxOffsetBits bounds the offset field: 2^48 bytes is more address space
// than x86-64 and aarch64 user space can map, so more bits buy nothing and
// are better spent on registration slots.
const maxOffsetBits = 48

// minSegBits keeps at least 512 segments even at the largest jobs: 508
// registrations at once after the reserved ones (NumStarters). The
// original's ib device had 255, and its sample acpbl_test_rm uses every
// one; with 256 segments (252 registrations) that program failed from 128
// processes on.
const minSegBits = 9

// NewLayout chooses the layout for nprocs processes and the given number of
// colours. Every rank computes the same layout from the same arguments, so a
// GA can be decoded anywhere without communication.
func NewLayout(nprocs, colors int) (Layout, error) {
	if nprocs < 1 || nprocs > MaxProcs {
		return Layout{}, fmt.Errorf("number of processes %d out of range 1..%d (set --acp-nprocs / ACP_NPROCS)", nprocs, MaxProcs)
	}
	if colors < 1 || colors > 256 {
		return Layout{}, fmt.Errorf("number of colours %d out of range 1..256", colors)
	}
	l := Layout{NProcs: nprocs}
	l.RankBits = uint(bits.Len(uint(nprocs))) // rank+1 <= nprocs < 2^RankBits
	l.ColorBits = uint(bits.Len(uint(colors - 1)))
	rest := 64 - l.RankBits - l.ColorBits
	l.OffsetBits = min(maxOffsetBits, rest-minSegBits)
	l.SegBits = rest - l.OffsetBits
	return l, nil
}

// Segments is the number of segment numbers a GA can carry.
func (l Layout) Segments() int { return 1 << l.SegBits }

// MaxOffset is one past the largest offset a GA can carry.
func (l Layout) MaxOffset() uint64 { return 1 << l.OffsetBits }

// Encode builds a GA. The caller guarantees that every field is in range.
func (l Layout) Encode(rank, color, seg int, off uint64) GA {
	v := uint64(rank+1) << (l.ColorBits + l.SegBits + l.OffsetBits)
	v |= uint64(color) << (l.SegBits + l.OffsetBits)
	v |= uint64(seg) << l.OffsetBits
	v |= off
	return GA(v)
}

// Rank returns the rank that owns ga, or -1 for GANull and for GAs whose
// rank field is outside 0..NProcs-1.
func (l Layout) Rank(ga GA) int {
	r := int(uint64(ga) >> (l.ColorBits + l.SegBits + l.OffsetBits))
	if r < 1 || r > l.NProcs {
		return -1
	}
	return r - 1
}

// Color returns the colour field of ga (0 when the layout has one colour).
func (l Layout) Color(ga GA) int {
	if l.ColorBits == 0 {
		return 0
	}
	return int(uint64(ga)>>(l.SegBits+l.OffsetBits)) & (1<<l.ColorBits - 1)
}

// Seg returns the segment field of ga.
func (l Layout) Seg(ga GA) int {
	return int(uint64(ga)>>l.OffsetBits) & (1<<l.SegBits - 1)
}

// Offset returns the offset field of ga.
func (l Layout) Offset(ga GA) uint64 {
	return uint64(ga) & (1<<l.OffsetBits - 1)
}

// Decoded is a GA split into its fields.
type Decoded struct {
	Rank  int // -1 when the rank field is invalid
	Color int
	Seg   int
	Off   uint64
}

// Decode splits ga into its fields.
func (l Layout) Decode(ga GA) Decoded {
	return Decoded{Rank: l.Rank(ga), Color: l.Color(ga), Seg: l.Seg(ga), Off: l.Offset(ga)}
}

// String describes the layout for diagnostics.
func (l Layout) String() string {
	return fmt.Sprintf("GA layout for %d procs: rank+1 %d bits | colour %d | segment %d | offset %d",
		l.NProcs, l.RankBits, l.ColorBits, l.SegBits, l.OffsetBits)
}
