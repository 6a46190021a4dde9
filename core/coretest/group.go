// Package coretest runs several engines inside one test process: an
// in-process bootstrap (Group) and a World that starts N engines over a
// chosen transport and runs the same function on each, as N ranks would.
package coretest

import (
	"errors"
	"fmt"
	"sync"
)

// Group is an in-process bootstrap for n members.
type Group struct {
	n       int
	mu      sync.Mutex
	cond    *sync.Cond
	gen     uint64
	recs    [][]byte
	count   int
	result  []byte
	aborted string
}

// NewGroup makes a bootstrap for n members.
func NewGroup(n int) *Group {
	g := &Group{n: n, recs: make([][]byte, n)}
	g.cond = sync.NewCond(&g.mu)
	return g
}

// Member returns the exchanger of member rank.
func (g *Group) Member(rank int) *Member { return &Member{g: g, rank: rank} }

// Aborted returns the message of the first Abort, if any.
func (g *Group) Aborted() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.aborted
}

// Member is one process's view of a Group; it implements core.Exchanger.
type Member struct {
	g    *Group
	rank int
}

// Rank implements core.Exchanger.
func (m *Member) Rank() int { return m.rank }

// Size implements core.Exchanger.
func (m *Member) Size() int { return m.g.n }

// AllGather implements core.Exchanger.
func (m *Member) AllGather(rec []byte) ([]byte, error) {
	g := m.g
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.aborted != "" {
		return nil, errors.New("job aborted: " + g.aborted)
	}
	my := g.gen
	g.recs[m.rank] = append([]byte(nil), rec...)
	g.count++
	if g.count == g.n {
		var out []byte
		for i, r := range g.recs {
			if len(r) != len(rec) {
				return nil, fmt.Errorf("member %d contributed %d bytes, member %d %d", i, len(r), m.rank, len(rec))
			}
			out = append(out, r...)
		}
		g.result = out
		g.count = 0
		g.gen++
		g.cond.Broadcast()
	}
	for g.gen == my && g.aborted == "" {
		g.cond.Wait()
	}
	if g.gen == my {
		return nil, errors.New("job aborted: " + g.aborted)
	}
	return g.result, nil
}

// Barrier implements core.Exchanger.
func (m *Member) Barrier() error {
	_, err := m.AllGather(nil)
	return err
}

// Abort implements core.Exchanger: it wakes every member blocked in the
// group with an error.
func (m *Member) Abort(code int, msg string) {
	g := m.g
	g.mu.Lock()
	if g.aborted == "" {
		g.aborted = fmt.Sprintf("member %d: %s (exit %d)", m.rank, msg, code)
	}
	g.cond.Broadcast()
	g.mu.Unlock()
}

// Close implements core.Exchanger.
func (m *Member) Close() error { return nil }
