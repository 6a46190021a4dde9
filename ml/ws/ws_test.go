package ws_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/libacp/libacp/core"
	"github.com/libacp/libacp/core/coretest"
	_ "github.com/libacp/libacp/core/memnet"
	"github.com/libacp/libacp/ml/dl"
	"github.com/libacp/libacp/ml/heap"
	"github.com/libacp/libacp/ml/ws"
)

func TestWorkspaceAcrossRanks(t *testing.T) {
	const n = 3
	w := coretest.NewWorld(t, n, "memnet", "size-smem=4096")
	defer w.Close()
	w.Run(func(r int, e *core.Engine) error {
		l, err := dl.Start(e)
		if err != nil {
			return err
		}
		defer l.Stop()
		m := ws.New(e)
		defer m.Close()
		if err := m.SetParams(0, 100); err != nil {
			return err
		}
		var wsp *ws.Workspace
		if err := l.Call(func(a *heap.Access) (err error) { wsp, err = m.Create(a, 250); return }); err != nil {
			return err
		}
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
		err = l.Call(func(a *heap.Access) error { return wsp.Read(a, bga, 10, 245) })
		assert.Error(t, err, "past the end")
		_, err = m.Create(nil, 301)
		assert.Error(t, err, "needs 4 ranks")
		return m.Destroy(wsp)
	})
}
