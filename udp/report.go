package udp

import (
	"fmt"
	"io"
	"time"

	"github.com/libacp/libacp/core"
)

// ReportState implements core.StateReporter for the engine's hang report:
// the peers with data in flight, and the operations waiting for peers. A
// thread that hangs may hold the endpoint's lock; then it says so.
func (e *endpoint) ReportState(w io.Writer) { core.ReportLocked(w, &e.mu, func() { e.reportPeers(w) }) }

// reportPeers writes ReportState's lines. Locked.
func (e *endpoint) reportPeers(w io.Writer) {
	for _, p := range e.active {
		unacked := 0
		for _, d := range p.inflight {
			if !d.acked {
				unacked++
			}
		}
		heard := "never heard from"
		if !p.lastHeard.IsZero() {
			heard = fmt.Sprintf("last heard %v ago", time.Since(p.lastHeard).Round(time.Microsecond))
		}
		fmt.Fprintf(w, "  rank %d (%s): %d datagram(s) unacknowledged, %d not sent, %d stream(s); next sequence number %d, next expected from it %d; window %d bytes, timeout %v; %s\n",
			e.host.PeerRank(p.idx), p.ipText, unacked, len(p.queue), len(p.streams), p.nextSeq, p.rxNext, p.cwnd, p.rto, heard)
	}
	fmt.Fprintf(w, "  %d peer(s) contacted, %d with data in flight; %d operation(s) waiting for a peer\n",
		len(e.peers)-countNil(e.peers), len(e.active), e.ops.len())
}

func countNil(ps []*peer) int {
	n := 0
	for _, p := range ps {
		if p == nil {
			n++
		}
	}
	return n
}
