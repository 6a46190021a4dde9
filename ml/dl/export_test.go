package dl

import (
	"github.com/libacp/libacp/core"
	"github.com/libacp/libacp/ml/heap"
)

// RememberTableRoom makes this process believe that table t of e's
// containers has room bytes, as if it had read so.
func RememberTableRoom(e *core.Engine, t core.GA, room uint64) { tableRooms.put(tableKey{e, t}, room) }

// TableRoom is what this process remembers of table t, if anything.
func TableRoom(e *core.Engine, t core.GA) (uint64, bool) { return tableRooms.get(tableKey{e, t}) }

// Tables are the GAs of h's tables, from its directory.
func (l *Library) Tables(h Hashed) (ts []core.GA, err error) {
	err = l.call(func(a *heap.Access) error { ts, err = directory(a, h); return err })
	return ts, err
}
