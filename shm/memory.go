package shm

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"unsafe"

	"github.com/libacp/libacp/core"
)

// MemoryUse estimates what the shared-memory endpoint of one process holds
// in a job of nprocs processes, contacted of which it has talked to. Only
// processes of its own host count beyond a bit per process; the host is
// taken to run one process per CPU of this machine. The figures come from
// the constants and struct sizes the code uses (the tests compare the
// per-job tables with real allocations). Starter memories are core's.
func MemoryUse(nprocs, contacted int) []core.MemoryItem {
	local := min(nprocs, max(runtime.NumCPU(), 1))
	peersHere := min(contacted, local-1)
	n, l, k := uint64(nprocs), uint64(local), uint64(max(peersHere, 0))
	mirror := roundPage(uint64(4096 * mirrorEntrySize))
	return []core.MemoryItem{
		{Table: "shm host table", Bytes: (n+63)/64*8 + n*uint64(unsafe.Sizeof(atomic.Pointer[peer]{})),
			How: "a bit per process (on this host or not), and one pointer per process, nil until first contact"},
		{Table: "shm host's records", Bytes: l * (addressSize + uint64(unsafe.Sizeof(0))),
			How: fmt.Sprintf("%d processes on this host (one per CPU here) × %d bytes: each one's start-up record (memfds, process id, sizes) and physical index", local, addressSize+8)},
		{Table: "shm rings", Bytes: l * defaultRingSize,
			How: fmt.Sprintf("%d processes on this host × --acp-shm-ring-size (%d by default): the ring each writes to us, in our memfd", local, defaultRingSize)},
		{Table: "shm header and mirror", Bytes: hdrSize + mirror,
			How: fmt.Sprintf("a %d-byte header and the mirror of the registration table (up to 4096 entries of %d bytes) in the starter memfd", hdrSize, mirrorEntrySize)},
		{Table: "shm per-peer state", Bytes: k * uint64(unsafe.Sizeof(peer{})),
			How: fmt.Sprintf("%d contacted on this host × %d bytes; their segments and rings are mapped, not copied", k, unsafe.Sizeof(peer{}))},
	}
}
