package heap_test

import (
	"encoding/binary"
	"fmt"
	"sync"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/libacp/libacp/core"
	"github.com/libacp/libacp/core/coretest"
	_ "github.com/libacp/libacp/core/memnet"
	"github.com/libacp/libacp/ml/heap"
)

const dlSize = 4096

// world starts n engines with a laid-out heap and a scratch pool each.
func world(t *testing.T, n int, size int) (*coretest.World, []*heap.Scratch) {
	w := coretest.NewWorld(t, n, "memnet", fmt.Sprintf("size-smem-dl=%d", size))
	ss := make([]*heap.Scratch, n)
	w.Run(func(r int, e *core.Engine) error {
		heap.Init(e)
		s, err := heap.NewScratch(e)
		ss[r] = s
		if err != nil {
			return err
		}
		return e.Sync()
	})
	t.Cleanup(func() {
		for _, s := range ss {
			s.Close()
		}
		w.Close()
	})
	return w, ss
}

// begin takes an access for the test's goroutine until the test ends.
func begin(t *testing.T, s *heap.Scratch) *heap.Access {
	a, err := s.Begin()
	require.NoError(t, err)
	t.Cleanup(func() { a.End() })
	return a
}

func word(e *core.Engine, ga core.GA) uint64 {
	p, err := e.QueryAddress(ga)
	if err != nil {
		panic(err)
	}
	return binary.LittleEndian.Uint64(unsafe.Slice((*byte)(p), 8))
}

func TestFreshHeapPlacement(t *testing.T) {
	w, ss := world(t, 1, dlSize)
	e := w.Engines[0]
	a := begin(t, ss[0])
	d, _ := e.StarterGADL(0)
	wspan := uint64(dlSize-16) &^ 7

	g0, err := heap.Malloc(a, 10, 0)
	require.NoError(t, err)
	assert.Equal(t, d+96, g0, "first block of a fresh heap")
	assert.Equal(t, uint64(32+3), word(e, g0-8), "header: 32 bytes, allocated")
	assert.Equal(t, uint64(32+3), word(e, g0+16), "footer")
	g1, err := heap.Malloc(a, 0, 0)
	require.NoError(t, err)
	assert.Equal(t, g0+32, g1, "blocks are contiguous")
	assert.Equal(t, uint64(3), word(e, d+16+64), "start sentinel")
	assert.Equal(t, uint64(3), word(e, d+16+core.GA(wspan)-8), "end sentinel")

	require.NoError(t, heap.Free(a, g0))
	require.NoError(t, heap.Free(a, g1))
	all, err := heap.Malloc(a, wspan-80-16, 0)
	require.NoError(t, err)
	assert.Equal(t, d+96, all, "everything freed: one block again")
	_, err = heap.Malloc(a, 8, 0)
	assert.ErrorIs(t, err, heap.ErrNoMemory)
	assert.Contains(t, err.Error(), "ACP_SIZE_SMEM_DL")
	require.NoError(t, heap.Free(a, all))
}

func TestBadFrees(t *testing.T) {
	w, ss := world(t, 1, dlSize)
	e := w.Engines[0]
	a := begin(t, ss[0])
	g, err := heap.Malloc(a, 16, 0)
	require.NoError(t, err)
	assert.NoError(t, heap.Free(a, core.GANull), "ACP_GA_NULL is ignored")
	assert.NoError(t, heap.Free(a, g+4), "unaligned GAs are ignored")
	assert.ErrorIs(t, heap.Free(a, g+8), heap.ErrNotBlock)
	bl, _ := e.StarterGA(0)
	assert.ErrorIs(t, heap.Free(a, bl), heap.ErrNotBlock)
	require.NoError(t, heap.Free(a, g))
	assert.ErrorIs(t, heap.Free(a, g), heap.ErrNotBlock, "a second free")
	_, err = heap.Malloc(a, 8, 5)
	assert.Error(t, err, "rank out of range")
}

func TestNoHeap(t *testing.T) {
	for _, size := range []int{0, 64} {
		w, ss := world(t, 2, size)
		w.Run(func(r int, e *core.Engine) error {
			a, err := ss[r].Begin()
			if err != nil {
				return err
			}
			defer a.End()
			for rank := 0; rank < 2; rank++ {
				_, err := heap.Malloc(a, 8, rank)
				a.ClearErr()
				assert.ErrorIs(t, err, heap.ErrNoHeap, "%d bytes, malloc on rank %d", size, rank)
				assert.ErrorContains(t, err, "ACP_SIZE_SMEM_DL", "%d bytes, malloc on rank %d", size, rank)
			}
			return nil
		})
	}
}

// Every rank, with several goroutines, allocates on rank 0 and on its
// neighbour while freeing; blocks never overlap and every heap is one block
// again at the end.
func TestConcurrentRemoteMalloc(t *testing.T) {
	const n, threads, iters = 3, 3, 40
	w, ss := world(t, n, 1<<16)
	type blk struct {
		ga   core.GA
		size uint64
	}
	var mu sync.Mutex
	var live []blk
	w.Run(func(r int, e *core.Engine) error {
		var wg sync.WaitGroup
		errs := make(chan error, threads)
		for th := 0; th < threads; th++ {
			wg.Add(1)
			go func(th int) {
				defer wg.Done()
				a, err := ss[r].Begin()
				if err != nil {
					errs <- err
					return
				}
				defer a.End()
				var mine []blk
				for i := 0; i < iters; i++ {
					target := 0
					if i%2 == 1 {
						target = (r + 1) % n
					}
					size := uint64(1 + (i*37+th*11+r*7)%150)
					g, err := heap.Malloc(a, size, target)
					if err != nil {
						errs <- err
						return
					}
					mine = append(mine, blk{g, size})
					if i%3 == 2 {
						if err := heap.Free(a, mine[0].ga); err != nil {
							errs <- err
							return
						}
						mine = mine[1:]
					}
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
	// No two live blocks overlap.
	for i, x := range live {
		for _, y := range live[i+1:] {
			if x.ga < y.ga+core.GA((y.size+7)&^7) && y.ga < x.ga+core.GA((x.size+7)&^7) {
				t.Fatalf("blocks %#x (%d bytes) and %#x (%d bytes) overlap", x.ga, x.size, y.ga, y.size)
			}
		}
	}
	gas := make([]core.GA, len(live))
	for i, b := range live {
		gas[i] = b.ga
	}
	freeAllThenWhole(w, ss, gas, 1<<16)
}

// freeAllThenWhole frees the blocks (rank r the r-th of every n), then
// checks that every heap of size bytes is one free block again.
func freeAllThenWhole(w *coretest.World, ss []*heap.Scratch, blocks []core.GA, size uint64) {
	n := len(w.Engines)
	w.Run(func(r int, e *core.Engine) error {
		a, err := ss[r].Begin()
		if err != nil {
			return err
		}
		defer a.End()
		for i := r; i < len(blocks); i += n {
			if err := heap.Free(a, blocks[i]); err != nil {
				return err
			}
		}
		return e.Sync()
	})
	w.Run(func(r int, e *core.Engine) error {
		a, err := ss[r].Begin()
		if err != nil {
			return err
		}
		defer a.End()
		d, _ := e.StarterGADL(r)
		all, err := heap.Malloc(a, (size-16)&^7-96, r)
		if err != nil {
			return fmt.Errorf("heap of rank %d is not one block again: %v", r, err)
		}
		if all != d+96 {
			return fmt.Errorf("whole-heap block at %#x, want %#x", all, d+96)
		}
		return heap.Free(a, all)
	})
}

// badCopy issues a copy that the peer rejects and waits for it: a failure
// of the process that is no data-library call's.
func badCopy(t *testing.T, e *core.Engine) {
	peer, _ := e.StarterGA((e.Rank() + 1) % e.Procs())
	mine, _ := e.StarterGA(e.Rank())
	h, err := e.Copy(peer+1<<20, mine, 8, core.HandleNull)
	assert.NoError(t, err)
	e.Complete(h)
	assert.True(t, e.Failed(h), "the peer rejects the copy")
}

func TestOtherFailuresDoNotFailACall(t *testing.T) {
	w, ss := world(t, 2, dlSize)
	e := w.Engines[0]
	a := begin(t, ss[0])
	badCopy(t, e)
	g, err := heap.Malloc(a, 8, 1)
	require.NoError(t, err, "a failure of the process before the call")
	badCopy(t, e)
	require.NoError(t, heap.Free(a, g), "a failure of the process during the call")
}

// One goroutine keeps failing copies while others allocate on the peer's
// heap: every allocation succeeds, and the peer's heap lock is free at
// the end.
func TestOtherThreadsFailuresLeaveTheLockFree(t *testing.T) {
	w, ss := world(t, 2, 1<<16)
	e := w.Engines[0]
	stop := make(chan struct{})
	var bad sync.WaitGroup
	bad.Add(1)
	go func() {
		defer bad.Done()
		for {
			select {
			case <-stop:
				return
			default:
				badCopy(t, e)
			}
		}
	}()
	var wg sync.WaitGroup
	for th := 0; th < 3; th++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a, err := ss[0].Begin()
			if !assert.NoError(t, err) {
				return
			}
			defer a.End()
			for i := 0; i < 100; i++ {
				g, err := heap.Malloc(a, 64, 1)
				if !assert.NoError(t, err, "malloc %d", i) {
					a.ClearErr()
					continue
				}
				assert.NoError(t, heap.Free(a, g), "free %d", i)
				a.ClearErr()
			}
		}()
	}
	wg.Wait()
	close(stop)
	bad.Wait()
	d, _ := e.StarterGADL(1)
	assert.Zero(t, word(w.Engines[1], d+64), "the heap lock of rank 1")
}

// Buffers of calls that ran at once are given back to the system once the
// calls end, but for a few kept idle; the registrations they took become
// usable again.
func TestScratchIdleBuffersBounded(t *testing.T) {
	_, ss := world(t, 1, dlSize)
	s := ss[0]
	const n = 32
	as := make([]*heap.Access, n)
	for i := range as {
		a, err := s.Begin()
		require.NoError(t, err)
		as[i] = a
	}
	assert.Equal(t, n, s.Registered())
	for _, a := range as {
		require.NoError(t, a.End())
	}
	kept := s.Registered()
	assert.LessOrEqual(t, kept, 4, "scratch buffers left registered")
	assert.GreaterOrEqual(t, kept, 1)

	// The buffers still work, and calls one after another reuse them.
	g, err := func() (core.GA, error) {
		a, err := s.Begin()
		require.NoError(t, err)
		defer a.End()
		return heap.Malloc(a, 64, 0)
	}()
	require.NoError(t, err)
	assert.NotEqual(t, core.GANull, g)
	assert.Equal(t, kept, s.Registered())
}
