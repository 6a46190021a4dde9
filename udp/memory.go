package udp

import (
	"fmt"
	"unsafe"

	"github.com/libacp/libacp/core"
)

// peerTextBytes is the longest "a.b.c.d:port" kept per contacted peer for
// messages.
const peerTextBytes = len("255.255.255.255:65535")

// perPeerBytes is the state created on first contact with a peer.
func perPeerBytes() uint64 {
	return uint64(unsafe.Sizeof(peer{})) + uint64(unsafe.Sizeof(dest{})) + uint64(peerTextBytes)
}

// MemoryUse estimates what the UDP endpoint of one process holds in a job
// of nprocs processes, contacted of which it has exchanged datagrams with.
// The figures come from the constants and struct sizes the code uses; the
// tests compare them with real allocations.
func MemoryUse(nprocs, contacted int) []core.MemoryItem {
	n, k := uint64(nprocs), uint64(min(contacted, nprocs))
	return []core.MemoryItem{
		{Table: "udp address book", Bytes: n * addressSize,
			How: fmt.Sprintf("%d bytes per process (IPv4, port, receive buffer size)", addressSize)},
		{Table: "udp peer table", Bytes: n * uint64(unsafe.Sizeof((*peer)(nil))),
			How: "one pointer per process, nil until first contact"},
		{Table: "udp per-peer state", Bytes: k * perPeerBytes(),
			How: fmt.Sprintf("%d contacted × %d bytes (sequence numbers, %d-datagram receive window, RTT estimate, address); data in flight comes on top: at most half the peer's socket buffer (≤ 8 MiB) per peer being sent to",
				k, perPeerBytes(), rxWindow)},
		{Table: "udp receive buffers", Bytes: recvBatch * (rxBufferBytes + uint64(unsafe.Sizeof(0))),
			How: fmt.Sprintf("%d datagrams of %d bytes received per system call, whatever the job size", recvBatch, rxBufferBytes)},
	}
}
