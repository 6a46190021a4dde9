package ib

import (
	"fmt"
	"io"

	"github.com/libacp/libacp/core"
)

// ReportState implements core.StateReporter for the engine's hang report:
// each connection's state and the work it holds, and what waits for
// peers. A thread that hangs may hold the endpoint's lock; then it says so.
func (e *endpoint) ReportState(w io.Writer) { core.ReportLocked(w, &e.mu, func() { e.reportConns(w) }) }

// reportConns writes ReportState's lines. Locked.
func (e *endpoint) reportConns(w io.Writer) {
	n := 0
	for _, c := range e.conns {
		if c == nil {
			continue
		}
		n++
		fmt.Fprintf(w, "  rank %d, path %d: %s; work requests posted %d, completed %d; send queue entries held %d; %d queued",
			e.host.PeerRank(c.peer), c.path, c.state, c.posted, c.completed, c.sq.Load(), len(c.queue))
		if c.err != nil {
			fmt.Fprintf(w, "; error: %v", c.err)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "  %d connection(s); %d operation(s) waiting for an owner's answer, %d key lookup(s), %d invalidation(s) in flight; %d key(s) fetched, %d revoked, %d read(s) with a carried key so far\n",
		n, len(e.ops), len(e.misses), len(e.invals), e.keyRequests, e.revocations, e.carriedReads.Load())
	if e.rc.on() {
		fmt.Fprintf(w, "  %s\n", e.rc.summary())
	}
}
