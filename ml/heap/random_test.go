package heap_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/libacp/libacp/core"
	"github.com/libacp/libacp/ml/heap"
)

// Two threads of each of three ranks allocate blocks of random sizes on
// random ranks' heaps and free them again, all at once, until the heaps
// run full now and then. Each block gets a pattern of its own the moment
// it is allocated; a block whose pattern changed before it was freed was
// written by the allocator (or handed out twice). At the end no two live
// blocks overlap, and once all are freed every heap is one block again.
func TestRandomMallocAndFree(t *testing.T) {
	const n, threads, iters = 3, 2, 300
	w, ss := world(t, n, 1<<16)
	type blk struct {
		ga   core.GA
		size uint64
		seed uint64
	}
	bytesOf := func(b blk) []byte {
		p, err := w.Engines[w.Engines[0].QueryRank(b.ga)].QueryAddress(b.ga)
		require.NoError(t, err)
		return unsafe.Slice((*byte)(p), b.size)
	}
	pattern := func(b blk) []byte {
		out := make([]byte, b.size)
		r := rand.New(rand.NewPCG(b.seed, 99))
		for i := range out {
			out[i] = byte(r.Uint32())
		}
		return out
	}
	var mu sync.Mutex
	var live []blk
	var full int
	w.Run(func(r int, e *core.Engine) error {
		var wg sync.WaitGroup
		errs := make(chan error, threads)
		for th := range threads {
			wg.Add(1)
			go func(th int) {
				defer wg.Done()
				a, err := ss[r].Begin()
				if err != nil {
					errs <- err
					return
				}
				defer a.End()
				rng := rand.New(rand.NewPCG(uint64(r), uint64(th)))
				var mine []blk
				for i := range iters {
					if len(mine) == 0 || rng.IntN(100) < 55 {
						size := uint64(1 + rng.IntN(64))
						if rng.IntN(4) == 0 {
							size = uint64(1 + rng.IntN(6000))
						}
						target := rng.IntN(n)
						g, err := heap.Malloc(a, size, target)
						if errors.Is(err, heap.ErrNoMemory) {
							mu.Lock()
							full++
							mu.Unlock()
							continue
						}
						if err != nil {
							errs <- fmt.Errorf("rank %d thread %d, step %d: malloc of %d bytes on rank %d: %v", r, th, i, size, target, err)
							return
						}
						b := blk{g, size, uint64(r)<<40 | uint64(th)<<32 | uint64(i)}
						copy(bytesOf(b), pattern(b))
						mine = append(mine, b)
						continue
					}
					k := rng.IntN(len(mine))
					b := mine[k]
					if !bytes.Equal(bytesOf(b), pattern(b)) {
						errs <- fmt.Errorf("rank %d thread %d, step %d: block %#x of %d bytes changed while it was allocated", r, th, i, b.ga, b.size)
						return
					}
					if err := heap.Free(a, b.ga); err != nil {
						errs <- fmt.Errorf("rank %d thread %d, step %d: free of %#x: %v", r, th, i, b.ga, err)
						return
					}
					mine = append(mine[:k], mine[k+1:]...)
				}
				mu.Lock()
				live = append(live, mine...)
				mu.Unlock()
			}(th)
		}
		wg.Wait()
		close(errs)
		return <-errs
	})
	for i, x := range live {
		require.True(t, bytes.Equal(bytesOf(x), pattern(x)), "block %#x of %d bytes changed while it was allocated", x.ga, x.size)
		for _, y := range live[i+1:] {
			require.False(t, x.ga < y.ga+core.GA(y.size) && y.ga < x.ga+core.GA(x.size),
				"blocks %#x (%d bytes) and %#x (%d bytes) overlap", x.ga, x.size, y.ga, y.size)
		}
	}
	gas := make([]core.GA, len(live))
	for i, b := range live {
		gas[i] = b.ga
	}
	freeAllThenWhole(w, ss, gas, 1<<16)
	t.Logf("%d blocks live at the end; the heaps were full %d times", len(live), full)
}
