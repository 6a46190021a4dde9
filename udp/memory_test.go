package udp

import (
	"encoding/binary"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/libacp/libacp/core"
	"github.com/libacp/libacp/internal/raceedge"
)

// The per-peer estimate against what contacting peers really allocates.
func TestMemoryUseMatchesPeers(t *testing.T) {
	if raceedge.Enabled {
		t.Skip("allocation sizes differ under the race detector")
	}
	const n, contacted = 2000, 500
	s := core.NewSettings(core.BaseSettings, Settings)
	tr, err := open(core.TransportConfig{Host: &fakeHost{}, Settings: s, Peer: 0, NPeers: n})
	require.NoError(t, err)
	e := tr.(*endpoint)
	defer e.Close()
	book := core.AddressBook{RecSize: addressSize, Data: make([]byte, n*addressSize)}
	for i := range n {
		rec := book.At(i)
		copy(rec, []byte{127, 0, 0, 1})
		binary.BigEndian.PutUint16(rec[4:], uint16(40000+i))
		binary.LittleEndian.PutUint16(rec[6:], 64)
	}
	require.NoError(t, e.Connect(book, 1))

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	e.mu.Lock()
	for i := 1; i <= contacted; i++ {
		e.peer(i)
	}
	e.mu.Unlock()
	runtime.ReadMemStats(&after)
	got := float64(after.TotalAlloc-before.TotalAlloc) / contacted
	assert.InEpsilon(t, float64(perPeerBytes()), got, 0.25, "per contacted peer: measured %.0f bytes, estimated %d", got, perPeerBytes())

	items := MemoryUse(n, contacted)
	byName := map[string]uint64{}
	for _, it := range items {
		byName[it.Table] = it.Bytes
	}
	assert.Equal(t, uint64(len(e.book.Data)), byName["udp address book"])
	assert.Equal(t, uint64(cap(e.peers))*8, byName["udp peer table"])
	var rx uint64
	for _, b := range e.rxBufs {
		rx += uint64(cap(b))
	}
	assert.Equal(t, rx+uint64(8*len(e.rxSizes)), byName["udp receive buffers"])
	assert.Equal(t, contacted*perPeerBytes(), byName["udp per-peer state"])
	assert.Equal(t, uint64(n)*perPeerBytes(), MemoryUse(n, 10*n)[2].Bytes, "at most every process is contacted")
}
