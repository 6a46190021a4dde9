package ib

import (
	"fmt"
	"unsafe"

	"github.com/libacp/libacp/core"
)

// Memory the verbs provider maps into the process (queues shared with the
// driver), measured on Soft-RoCE with TestMemoryReport
// (bench/ib_compare.sh prints it): adapters size their queues differently,
// so these are indications, not bounds.
const (
	mappedPerDevice = 296 << 10 // completion queue and shared receive queue
	mappedPerQP     = 36 << 10  // send and receive queue of one RC queue pair
	defaultKeyCache = 1024      // --acp-ib-key-cache
)

// MemoryUse estimates what the ib endpoint of one process holds in a job of
// nprocs processes, contacted of which it has talked to, with one device
// port (each further port doubles the per-device and per-peer figures).
func MemoryUse(nprocs, contacted int) []core.MemoryItem {
	n, k := uint64(nprocs), uint64(min(contacted, nprocs))
	perConn := uint64(unsafe.Sizeof(conn{})) + qpDepth*uint64(unsafe.Sizeof((*req)(nil))) + fastConnBytes
	return []core.MemoryItem{
		{Table: "ib address book", Bytes: n * addressBytes,
			How: fmt.Sprintf("%d bytes per process: the IP and port of its connection service, its adapters' kind of atomics", addressBytes)},
		{Table: "ib connection table", Bytes: n * uint64(unsafe.Sizeof((*conn)(nil))),
			How: "one pointer per (process, port), nil until first contact"},
		{Table: "ib queue pairs", Bytes: k * (mappedPerQP + perConn),
			How: fmt.Sprintf("%d contacted × (one RC queue pair: ~%d KiB of queues the provider maps, measured on Soft-RoCE; %d bytes of connection state); none for processes never contacted",
				k, mappedPerQP>>10, perConn)},
		{Table: "ib device queues", Bytes: mappedPerDevice,
			How: fmt.Sprintf("per device: a completion queue for %d work requests and a shared receive queue of %d (~%d KiB mapped, measured on Soft-RoCE)", sendSlots+fastSlots, srqDepth, mappedPerDevice>>10)},
		{Table: "ib message buffers", Bytes: (sendSlots + srqDepth) * msgSize,
			How: fmt.Sprintf("per device, registered: %d send slots and %d receive buffers of %d bytes", sendSlots, srqDepth, msgSize)},
		{Table: "ib fast path", Bytes: fastBytes,
			How: fmt.Sprintf("the C fast path's record: %d slots, a stash of %d completions, a table of %d connections (each connection's %d-byte record is counted with it)",
				fastSlots, fastStash, fastTable, fastConnBytes)},
		{Table: "ib key cache", Bytes: defaultKeyCache * uint64(unsafe.Sizeof(rkey{})+fastKeyBytes),
			How: fmt.Sprintf("%d remote keys (--acp-ib-key-cache) of %d bytes, and the fast path's copy of %d bytes each, allocated on the first key learnt",
				defaultKeyCache, unsafe.Sizeof(rkey{}), fastKeyBytes)},
		{Table: "ib fast path registrations", Bytes: fastRegs * fastRegBytes,
			How: fmt.Sprintf("the fast path's table of this process's registrations: %d segments of %d bytes, allocated on the first registration; only the pages of segments in use are touched",
				fastRegs, fastRegBytes)},
	}
}
