package segbuf

import (
	"fmt"
	"io"

	"github.com/libacp/libacp/core"
)

// reportState lists every endpoint the library progresses that describes
// itself (core.StateReporter: a line saying what it has sent and taken and
// what it waits for).
func (l *Lib) reportState(w io.Writer) {
	l.prog.mu.Lock()
	list := make([]Poller, 0, len(l.prog.pollers))
	for p := range l.prog.pollers {
		list = append(list, p)
	}
	l.prog.mu.Unlock()
	n := 0
	for _, p := range list {
		if r, ok := p.(core.StateReporter); ok {
			r.ReportState(w)
			n++
		}
	}
	fmt.Fprintf(w, "  %d endpoint(s) with work pending; %d thread(s) in a wait; background progress parked: %v\n",
		n, l.prog.waiters.Load(), l.prog.parked.Load())
}

// State describes the pair's connection and counts (the caller holds the
// lock that guards its endpoint).
func (p *Pair) State() string {
	role := "source"
	if p.role == Dest {
		role = "destination"
	}
	s := fmt.Sprintf("%s end with rank %d: connected %v (step %d), peer's count %d, ours %d (sent %d)",
		role, p.peer, p.connected, p.step, p.seen, p.pubVal, p.pubSent)
	if p.err != nil {
		s += fmt.Sprintf(", error: %v", p.err)
	}
	return s
}

// ReportState implements core.StateReporter.
func (s *Segbuf) ReportState(w io.Writer) {
	core.ReportLocked(w, &s.mu, func() {
		fmt.Fprintf(w, "  segmented buffer, %s; tail %d, head %d, sent %d, %d copies in flight\n",
			s.p.State(), s.tail, s.head, s.sent, len(s.inflight))
	})
}
