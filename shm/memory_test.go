package shm

import (
	"encoding/binary"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/libacp/libacp/core"
	"github.com/libacp/libacp/internal/hostid"
)

// quietHost is the engine as far as opening, connecting and closing an
// endpoint needs one; nothing is accessed through it.
type quietHost struct{ core.Host }

func (quietHost) Layout() core.Layout                     { l, _ := core.NewLayout(2, 1); return l }
func (quietHost) Logf(level int, format string, a ...any) {}
func (quietHost) Polled() bool                            { return false }
func (quietHost) OrderWaiting() bool                      { return false }
func (quietHost) PeerRank(p int) int                      { return p }

// A process keeps what it needs of the start-up records after Connect: a
// bit per process and the records of its host's processes, not the whole
// book (64 bytes a process: 64 MB at a million) or an index per process.
func TestConnectKeepsOnlyThisHostsRecords(t *testing.T) {
	const n, me, other = 200000, 7, 150000
	s := core.NewSettings(core.BaseSettings, Settings)
	tr, err := open(core.TransportConfig{Host: quietHost{}, Settings: s, Peer: me, NPeers: n, Node: hostid.ID()})
	require.NoError(t, err)
	e := tr.(*endpoint)
	defer e.Close()
	_, err = e.Starters([core.NumStarters]uint64{4096})
	require.NoError(t, err)

	book := core.AddressBook{RecSize: addressSize, Data: make([]byte, n*addressSize)}
	for _, p := range []int{me, other} {
		copy(book.At(p), e.Address())
		binary.LittleEndian.PutUint32(book.At(p)[16:], uint32(1000+p)) // another pid
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	require.NoError(t, e.Connect(book, 1))
	book = core.AddressBook{}
	runtime.GC()
	runtime.ReadMemStats(&after)

	assert.True(t, e.Reaches(other))
	assert.False(t, e.Reaches(me), "not itself")
	assert.False(t, e.Reaches(other-1))
	assert.Equal(t, 1, e.localIndex(other))
	assert.Equal(t, 0, e.myLocal)
	kept := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	assert.Less(t, kept, int64(n/8+64<<10), "bytes kept by Connect for %d processes (a bit each, and this host's)", n)
	for _, it := range MemoryUse(n, 1) {
		if it.Table == "shm host table" {
			assert.Equal(t, uint64(len(e.local)*8+len(e.peers)*8), it.Bytes)
		}
	}
}
