package ws_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/libacp/libacp/core"
	"github.com/libacp/libacp/ml/dl"
	"github.com/libacp/libacp/ml/heap"
	"github.com/libacp/libacp/ml/ws"
)

// Random writes and reads of a workspace spread over three ranks in
// chunks of an odd size, each by a random rank, ranges crossing chunk
// boundaries and reaching past the end (refused, and nothing written):
// after every write a random rank reads the whole workspace back and
// finds the model's bytes.
func TestRandomReadsAndWrites(t *testing.T) {
	const n, size, chunk, steps, stage = 3, 1000, 397, 200, 2048
	withWorkspace(t, n, []string{"size-smem=4096"}, 0, chunk, size, func(me int, e *core.Engine, l *dl.Library, m *ws.Module, wsp *ws.Workspace) error {
		buf := e.StarterMemory(core.SegStarter)
		bga, _ := e.StarterGA(me)
		// Rank 0 zeroes the workspace first, so every rank's model starts
		// as zeros; every rank draws the same schedule and applies every
		// write to its model. A rank that finds a fault goes on to the
		// end, so that the others are not left waiting in a barrier.
		var fault error
		failed := func(err error) {
			if fault == nil {
				fault = err
			}
		}
		model := make([]byte, size)
		rng := rand.New(rand.NewPCG(20261128, 5))
		if me == 0 {
			clear(buf[stage : stage+size])
			if err := l.Call(func(a *heap.Access) error { return wsp.Write(a, bga+stage, size, 0) }); err != nil {
				return err
			}
		}
		for step := range steps {
			writer, reader := rng.IntN(n), rng.IntN(n)
			off := rng.IntN(size + 20)
			k := rng.IntN(size/2 + 1)
			src := rng.IntN(stage - k + 1)
			fill := rng.Uint64()
			if err := e.Sync(); err != nil {
				return err
			}
			fits := off+k <= size
			if me == writer {
				r := rand.New(rand.NewPCG(fill, 1))
				for i := src; i < src+k; i++ {
					buf[i] = byte(r.Uint32())
				}
				err := l.Call(func(a *heap.Access) error { return wsp.Write(a, bga+core.GA(src), uint64(k), uint64(off)) })
				if fits && err != nil {
					failed(fmt.Errorf("step %d: write of %d bytes at %d by rank %d: %v", step, k, off, me, err))
				}
				if !fits && err == nil {
					failed(fmt.Errorf("step %d: write of %d bytes at %d past the end (%d bytes) accepted", step, k, off, size))
				}
			}
			if err := e.Sync(); err != nil {
				return err
			}
			if fits {
				r := rand.New(rand.NewPCG(fill, 1))
				for i := off; i < off+k; i++ {
					model[i] = byte(r.Uint32())
				}
			}
			if me != reader {
				continue
			}
			if err := l.Call(func(a *heap.Access) error { return wsp.Read(a, bga+stage, size, 0) }); err != nil {
				failed(fmt.Errorf("step %d: read by rank %d: %v", step, me, err))
				continue
			}
			got := buf[stage : stage+size]
			if !bytes.Equal(got, model) {
				i := 0
				for got[i] == model[i] {
					i++
				}
				failed(fmt.Errorf("step %d: rank %d reads byte %d as %#x, want %#x (last write: %d bytes at %d by rank %d)", step, me, i, got[i], model[i], k, off, writer))
				copy(model, got) // one fault, one report
			}
		}
		if err := m.Destroy(wsp); err != nil {
			failed(err)
		}
		return fault
	})
}
