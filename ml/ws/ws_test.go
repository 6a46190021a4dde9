package ws_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/libacp/libacp/core"
	"github.com/libacp/libacp/core/coretest"
	_ "github.com/libacp/libacp/core/memnet"
	"github.com/libacp/libacp/ml/dl"
	"github.com/libacp/libacp/ml/heap"
	"github.com/libacp/libacp/ml/ws"
)

// withWorkspace runs fn on every rank of an n-rank world with settings,
// each rank with its data library and a workspace of size bytes in chunks
// of chunk bytes from rank procStart, which fn destroys.
func withWorkspace(t *testing.T, n int, settings []string, procStart, chunk, size uint64,
	fn func(r int, e *core.Engine, l *dl.Library, m *ws.Module, wsp *ws.Workspace) error) {
	w := coretest.NewWorld(t, n, "memnet", settings...)
	defer w.Close()
	w.Run(func(r int, e *core.Engine) error {
		l, err := dl.Start(e)
		if err != nil {
			return err
		}
		defer l.Stop()
		m := ws.New(e)
		defer m.Close()
		if err := m.SetParams(procStart, chunk); err != nil {
			return err
		}
		var wsp *ws.Workspace
		if err := l.Call(func(a *heap.Access) (err error) { wsp, err = m.Create(a, size); return }); err != nil {
			return err
		}
		return fn(r, e, l, m, wsp)
	})
}

func TestWorkspaceAcrossRanks(t *testing.T) {
	withWorkspace(t, 3, []string{"size-smem=4096"}, 0, 100, 250, func(r int, e *core.Engine, l *dl.Library, m *ws.Module, wsp *ws.Workspace) error {
		assert.Equal(t, []int{0, 1, 2}, wsp.Procs)
		assert.Equal(t, []uint64{100, 100, 50}, wsp.Sizes)
		buf := e.StarterMemory(core.SegStarter)
		bga, _ := e.StarterGA(r)
		for i := 0; i < 80; i++ {
			buf[i] = byte(r*80 + i)
		}
		if err := l.Call(func(a *heap.Access) error { return wsp.Write(a, bga, 80, uint64(80*r)) }); err != nil {
			return err
		}
		if err := e.Sync(); err != nil {
			return err
		}
		if err := l.Call(func(a *heap.Access) error { return wsp.Read(a, bga+1000, 240, 0) }); err != nil {
			return err
		}
		for i := 0; i < 240; i++ {
			if buf[1000+i] != byte(i) {
				t.Errorf("rank %d: byte %d is %d", r, i, buf[1000+i])
				break
			}
		}
		err := l.Call(func(a *heap.Access) error { return wsp.Read(a, bga, 10, 245) })
		assert.Error(t, err, "past the end")
		_, err = m.Create(nil, 301)
		assert.Error(t, err, "needs 4 ranks")
		return m.Destroy(wsp)
	})
}

// Workspaces need no data-library starter memory: a program that defines
// iacp_starter_memory_size_dl = 0 still has them. Rank 0 writes the whole
// workspace, on ranks 1 and 2; everybody reads it back.
func TestWorkspaceWithoutDLStarterMemory(t *testing.T) {
	withWorkspace(t, 3, []string{"size-smem=4096", "size-smem-dl=0"}, 1, 64, 100, func(r int, e *core.Engine, l *dl.Library, m *ws.Module, wsp *ws.Workspace) error {
		assert.Equal(t, []int{1, 2}, wsp.Procs)
		buf := e.StarterMemory(core.SegStarter)
		bga, _ := e.StarterGA(r)
		want := make([]byte, 100)
		for i := range want {
			want[i] = byte(3 * i)
		}
		if r == 0 {
			copy(buf, want)
			if err := l.Call(func(a *heap.Access) error { return wsp.Write(a, bga, 100, 0) }); err != nil {
				return err
			}
		}
		if err := e.Sync(); err != nil {
			return err
		}
		if err := l.Call(func(a *heap.Access) error { return wsp.Read(a, bga+200, 100, 0) }); err != nil {
			return err
		}
		assert.Equal(t, want, buf[200:300], "rank %d reads the workspace", r)
		return m.Destroy(wsp)
	})
}

// A size whose chunk count would wrap the rank arithmetic is refused.
func TestWorkspaceTooManyChunks(t *testing.T) {
	w := coretest.NewWorld(t, 2, "memnet", "size-smem=4096")
	defer w.Close()
	w.Run(func(r int, e *core.Engine) error {
		m := ws.New(e)
		defer m.Close()
		if err := m.SetParams(1, 1); err != nil {
			return err
		}
		_, err := m.Create(nil, math.MaxUint64)
		assert.ErrorContains(t, err, "acp_setparams_ws")
		return nil
	})
}

// Two goroutines of every rank create a workspace at once: each gets one
// of its own, whose chunk on this rank is its own and shares no chunk with
// the other. (Both went through the rank's one hand-off word at once, and
// the two shared chunks.)
func TestWorkspacesCreatedAtOnceAreApart(t *testing.T) {
	w := coretest.NewWorld(t, 3, "memnet", "size-smem=4096")
	defer w.Close()
	w.Run(func(r int, e *core.Engine) error {
		l, err := dl.Start(e)
		if err != nil {
			return err
		}
		defer l.Stop()
		m := ws.New(e)
		defer m.Close()
		if err := m.SetParams(0, 64); err != nil {
			return err
		}
		for round := 0; round < 10; round++ {
			var got [2]*ws.Workspace
			errs := make(chan error, 2)
			for g := range got {
				go func() {
					errs <- l.Call(func(a *heap.Access) (err error) { got[g], err = m.Create(a, 3*64); return })
				}()
			}
			for range got {
				if err := <-errs; err != nil {
					return err
				}
			}
			for g, wsp := range got {
				assert.Equal(t, wsp.GA, wsp.GAs[r], "round %d, workspace %d: its chunk here is its own", round, g)
			}
			for p := range got[0].GAs {
				assert.NotEqual(t, got[0].GAs[p], got[1].GAs[p], "round %d: both workspaces have rank %d's chunk", round, p)
			}
			for _, wsp := range got {
				if err := m.Destroy(wsp); err != nil {
					return err
				}
			}
		}
		return nil
	})
}
