package core

import (
	"fmt"
	"sync/atomic"
	"unsafe"
)

// MemoryItem is what one table of the library costs one process.
type MemoryItem struct {
	Table string
	Bytes uint64
	// How is how the figure is made up, and when the memory is held.
	How string
}

// MemoryUse estimates the memory the basic layer of one process holds in a
// job of nprocs processes with these settings. The figures come from the
// constants and struct sizes the code uses (not from a measurement); the
// tests compare them with real allocations. Transports report their own
// tables (udp.MemoryUse).
func MemoryUse(s *Settings, nprocs int) ([]MemoryItem, error) {
	trs, err := SelectedTransports(s)
	if err != nil {
		return nil, err
	}
	colors := 1
	rec := uint64(recordHead)
	for _, t := range trs {
		colors = max(colors, t.Colors)
		rec += 1 + uint64(t.AddressSize)
	}
	l, err := NewLayout(nprocs, colors)
	if err != nil {
		return nil, err
	}
	depth := s.Int("queue-depth")
	shared := false
	for _, t := range trs {
		shared = shared || t.SharesStarters
	}
	var starters uint64
	for _, size := range starterSizes(s, shared) {
		starters += pageRound(size)
	}
	n := uint64(nprocs)
	items := []MemoryItem{
		{"registration table", regTableBytes(l),
			fmt.Sprintf("%d segment slots of %d bytes, a free list, the 3 starter regions", min(l.Segments(), maxSegments), unsafe.Sizeof(atomic.Pointer[Region]{}))},
		{"command ring", queueBytes(depth),
			fmt.Sprintf("--acp-queue-depth %d × %d-byte commands, plus the lock, counters and done flags shared with the C fast path", depth, unsafe.Sizeof(cmd{}))},
		{"start-up records", n * rec,
			fmt.Sprintf("%d processes × %d bytes (job key, colours, host id, transport addresses); held during acp_init only", nprocs, rec)},
		{"routes", n, "1 byte per process: the transport that reaches it (8 more per process after an acp_reset that changes the ranks)"},
		{"starter memories", starters, fmt.Sprintf("--acp-size-smem, -cl and -dl, rounded up to pages (-cl with --acp-size-cl-rings when same-host peers map starter memory), and the %d-byte engine area (barrier words, the hand-off word); mapped, not on the Go heap, pages touched as used", engineAreaSize)},
	}
	return items, nil
}

// regTableBytes is what NewRegTable allocates for a layout.
func regTableBytes(l Layout) uint64 {
	slots := uint64(min(l.Segments(), maxSegments))
	return slots*uint64(unsafe.Sizeof(atomic.Pointer[Region]{})) +
		(slots-SegFirstUser)*uint64(unsafe.Sizeof(int(0))) +
		3*uint64(unsafe.Sizeof(Region{}))
}

// queueBytes is what the command queue allocates for a depth: the ring on
// the Go heap and the mapped state shared with the C fast path.
func queueBytes(depth int) uint64 {
	return uint64(depth)*uint64(unsafe.Sizeof(cmd{})) +
		pageRound(uint64(fastHeaderSize+fastMaxWindow*fastEntrySize+4*depth))
}

func pageRound(n uint64) uint64 {
	const page = 4096
	return (n + page - 1) / page * page
}
