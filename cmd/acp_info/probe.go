package main

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/libacp/libacp/core"
	"github.com/libacp/libacp/internal/hostid"
)

// probe opens and closes an endpoint of a transport as a process of a
// two-process job would, to see whether the transport works here: its
// error says why not (e.g. no RDMA device).
func probe(t core.TransportInfo, s *core.Settings) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("opening it failed: %v", p)
		}
	}()
	layout, err := core.NewLayout(2, max(t.Colors, 1))
	if err != nil {
		return err
	}
	tr, err := t.Open(core.TransportConfig{Host: probeHost{layout}, Settings: s, Peer: 0, NPeers: 2, Node: hostid.ID()})
	if err != nil {
		return err
	}
	if tr == nil {
		return errors.New("opening it returned no endpoint")
	}
	return tr.Close()
}

// probeHost owns no memory and expects no traffic.
type probeHost struct{ layout core.Layout }

func (probeHost) Acquire(core.GA, uint64) (unsafe.Pointer, *core.Region, core.Status) {
	return nil, nil, core.StatusBadSegment
}
func (probeHost) ApplyAtomic(core.AtomicOp, core.GA, uint64, uint64) (uint64, core.Status) {
	return 0, core.StatusBadSegment
}
func (probeHost) Deliver(int, []byte)                                          {}
func (probeHost) Wake()                                                        {}
func (probeHost) Polled() bool                                                 { return false }
func (probeHost) OrderWaiting() bool                                           { return false }
func (probeHost) MappedMemory(unsafe.Pointer, uint64) (unsafe.Pointer, uint64) { return nil, 0 }
func (probeHost) PeerRank(p int) int                                           { return p }
func (h probeHost) Layout() core.Layout                                        { return h.layout }
func (probeHost) Fatal(error)                                                  {}
func (probeHost) Logf(int, string, ...any)                                     {}
