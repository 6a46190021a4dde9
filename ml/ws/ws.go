// Package ws is the data library's workspace: a byte array of size_ws
// bytes spread over consecutive ranks in chunks of size_default bytes,
// read and written with pread/pwrite-like copies to and from GAs.
//
// Differences from the original, which had the bugs listed as Q-DL-8: the
// default chunk size is 1 MiB (the original wrote "0x1048576"), the chunk
// count is exact when the size is a multiple of the chunk size, the chunk
// GAs are exchanged through the basic layer's hand-off word, which every
// rank has (not bytes 150..157 of the user's starter memory, nor the data
// library's, which may be absent), ranks without a chunk have no
// data, creation and destruction are collective (destroy waits for every
// rank and unregisters the chunks), every workspace starts at the rank set
// by acp_setparams_ws, and reads and writes check their range and wait for
// all of their copies.
package ws

import (
	"errors"
	"fmt"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/libacp/libacp/core"
	"github.com/libacp/libacp/ml/heap"
)

// DefaultChunk is the default size_default: 1 MiB.
const DefaultChunk = 1 << 20

// Workspace is one workspace as this process knows it.
type Workspace struct {
	Size, Chunk, Remainder uint64
	GAs                    []core.GA // chunk i's GA
	Procs                  []int     // chunk i's rank
	Sizes                  []uint64  // chunk i's bytes
	Key, GA                core.GA   // this rank's chunk (0 when it has none)
	Data                   unsafe.Pointer
	mem                    []byte
}

// Module is the per-process workspace state (acp_setparams_ws).
type Module struct {
	e     *core.Engine
	mu    sync.Mutex
	start int
	chunk uint64
	live  map[*Workspace]bool

	// coll lets one collective call (create, destroy) of this process run
	// at a time, as acp_sync does: the k-th of every process meet. Two
	// threads creating workspaces at once both wrote their chunk's GA
	// into this process's one hand-off word and read the others' between
	// barriers of the other call, so the two workspaces shared chunks
	// and one's own chunk was not in its list.
	coll sync.Mutex
}

// New makes the module with the default parameters: start at rank 0,
// 1 MiB chunks.
func New(e *core.Engine) *Module {
	return &Module{e: e, chunk: DefaultChunk, live: map[*Workspace]bool{}}
}

// SetParams is acp_setparams_ws. Every process must pass the same values.
func (m *Module) SetParams(procStart, sizeDefault uint64) error {
	if sizeDefault == 0 {
		return errors.New("size_default must be greater than 0")
	}
	if procStart >= uint64(m.e.Procs()) {
		return fmt.Errorf("proc_start %d is outside 0..%d", procStart, m.e.Procs()-1)
	}
	m.mu.Lock()
	m.start, m.chunk = int(procStart), sizeDefault
	m.mu.Unlock()
	return nil
}

// Create is acp_create_ws: collective.
func (m *Module) Create(a *heap.Access, size uint64) (*Workspace, error) {
	m.coll.Lock()
	defer m.coll.Unlock()
	m.mu.Lock()
	start, chunk := m.start, m.chunk
	m.mu.Unlock()
	n := size / chunk
	if size%chunk != 0 {
		n++
	}
	if n > uint64(m.e.Procs()-start) {
		return nil, fmt.Errorf("%d bytes in chunks of %d bytes need %d ranks from rank %d, but the job has %d; raise size_default with acp_setparams_ws",
			size, chunk, n, start, m.e.Procs())
	}
	w := &Workspace{Size: size, Chunk: chunk, Remainder: size % chunk}
	for i := uint64(0); i < n; i++ {
		w.Procs = append(w.Procs, start+int(i))
		w.Sizes = append(w.Sizes, min(chunk, size-i*chunk))
	}
	me := m.e.Rank()
	mine := me - start
	if mine >= 0 && uint64(mine) < n {
		if err := w.allocate(m.e, w.Sizes[mine]); err != nil {
			// The others are waiting in the barrier below: join them, and
			// let everybody see the missing chunk as a NULL GA.
			m.e.Logf(1, "acp_create_ws: %v", err)
		}
	}
	own, _ := m.e.HandoffGA(me)
	a.PutWords(own, uint64(w.GA))
	a.Flush()
	if err := m.e.Sync(); err != nil {
		w.release(m.e)
		return nil, err
	}
	var rerr error
	for i, p := range w.Procs {
		h, _ := m.e.HandoffGA(p)
		ga, err := a.Word(h)
		if err != nil {
			rerr = err
			break
		}
		if ga == 0 {
			rerr = fmt.Errorf("rank %d could not allocate its chunk of %d bytes", p, w.Sizes[i])
		}
		w.GAs = append(w.GAs, core.GA(ga))
	}
	// Nobody reuses the hand-off word before everybody has read it.
	if err := m.e.Sync(); err != nil && rerr == nil {
		rerr = err
	}
	if rerr != nil {
		w.release(m.e)
		return nil, rerr
	}
	m.mu.Lock()
	m.live[w] = true
	m.mu.Unlock()
	return w, nil
}

func (w *Workspace) allocate(e *core.Engine, n uint64) error {
	mem, err := unix.Mmap(-1, 0, int(n), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return fmt.Errorf("cannot map a chunk of %d bytes: %v", n, err)
	}
	key, err := e.Register(unsafe.Pointer(&mem[0]), n, 0)
	if err != nil {
		_ = unix.Munmap(mem)
		return fmt.Errorf("cannot register a chunk of %d bytes: %v", n, err)
	}
	w.mem, w.Key, w.GA, w.Data = mem, key, key, unsafe.Pointer(&mem[0])
	return nil
}

func (w *Workspace) release(e *core.Engine) {
	if w.mem != nil {
		_ = e.Unregister(w.Key)
		_ = unix.Munmap(w.mem)
		w.mem, w.Key, w.GA, w.Data = nil, 0, 0, nil
	}
}

// Known reports whether w is a live workspace of this module.
func (m *Module) Known(w *Workspace) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.live[w]
}

// Destroy is acp_destroy_ws: collective. It waits until every rank has
// called it, so no access to the chunks is still running, then releases
// this rank's chunk.
func (m *Module) Destroy(w *Workspace) error {
	m.mu.Lock()
	ok := m.live[w]
	delete(m.live, w)
	m.mu.Unlock()
	if !ok {
		return errors.New("not a live workspace (destroyed already?)")
	}
	m.coll.Lock()
	defer m.coll.Unlock()
	err := m.e.Sync()
	w.release(m.e)
	return err
}

// Close forgets every workspace and releases this rank's chunks (at
// acp_finalize and acp_reset).
func (m *Module) Close() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for w := range m.live {
		w.release(m.e)
	}
	m.live = map[*Workspace]bool{}
}

// Read copies workspace bytes [offset, offset+size) to ga (acp_read_ws).
func (w *Workspace) Read(a *heap.Access, ga core.GA, size, offset uint64) error {
	return w.each(size, offset, func(chunk core.GA, at uint64, n uint64) error {
		return a.Copy(ga+core.GA(at), chunk, n)
	}, a)
}

// Write copies size bytes at ga to workspace bytes [offset, offset+size)
// (acp_write_ws).
func (w *Workspace) Write(a *heap.Access, ga core.GA, size, offset uint64) error {
	return w.each(size, offset, func(chunk core.GA, at uint64, n uint64) error {
		return a.Copy(chunk, ga+core.GA(at), n)
	}, a)
}

// each calls fn for every chunk piece of [offset, offset+size): the GA in
// the chunk, the piece's position in the caller's range, its length.
func (w *Workspace) each(size, offset uint64, fn func(chunk core.GA, at, n uint64) error, a *heap.Access) error {
	if offset > w.Size || size > w.Size-offset {
		return fmt.Errorf("%d bytes at offset %d do not fit in the workspace's %d bytes", size, offset, w.Size)
	}
	for i, c := range w.GAs {
		lo := uint64(i) * w.Chunk
		hi := lo + w.Sizes[i]
		s, e := max(lo, offset), min(hi, offset+size)
		if s >= e {
			continue
		}
		if err := fn(c+core.GA(s-lo), s-offset, e-s); err != nil {
			return err
		}
	}
	return a.Flush()
}
