package boot

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTreeTopology(t *testing.T) {
	// The original acprun's parents: rank 1 → 0, rank r ≥ 2 → r/2.
	assert.Equal(t, -1, treeParent(0))
	assert.Equal(t, 0, treeParent(1))
	assert.Equal(t, 1, treeParent(2))
	assert.Equal(t, 1, treeParent(3))
	assert.Equal(t, 3, treeParent(7))
	assert.Equal(t, []int{1}, treeChildren(0, 9))
	assert.Nil(t, treeChildren(0, 1))
	assert.Equal(t, []int{2, 3}, treeChildren(1, 9))
	assert.Equal(t, []int{8}, treeChildren(4, 9))
	assert.Nil(t, treeChildren(5, 9))
	assert.Equal(t, 9, treeSubtreeSize(0, 9))
	assert.Equal(t, 8, treeSubtreeSize(1, 9))
	assert.Equal(t, 4, treeSubtreeSize(2, 9)) // 2, 4, 5, 8
	assert.Equal(t, 1, treeSubtreeSize(5, 9))
	for n := 1; n <= 40; n++ {
		for r := 0; r < n; r++ {
			if r > 0 {
				assert.Contains(t, treeChildren(treeParent(r), n), r, "rank %d of %d", r, n)
			}
			count := 0
			for q := []int{r}; len(q) > 0; q = append(q[1:], treeChildren(q[0], n)...) {
				count++
			}
			assert.Equal(t, count, treeSubtreeSize(r, n), "subtree of rank %d of %d", r, n)
		}
	}
}

// treeOptions is what the original acprun would pass to rank r.
func treeOptions(ports []int, r, n int) Options {
	o := Options{Rank: r, NProcs: n, RankSet: true, PortLocal: ports[r], HostRemote: "127.0.0.1", Timeout: 5 * time.Second}
	if p := treeParent(r); p >= 0 {
		o.PortRemote = ports[p]
	}
	return o
}

func TestTreeCollectives(t *testing.T) {
	for _, n := range []int{1, 2, 3, 7, 9} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			ports := freePorts(t, n)
			requireNoErrors(t, eachRank(n, func(rank int) error {
				b, err := openTree(treeOptions(ports, rank, n))
				if err != nil {
					return err
				}
				defer b.Close()
				if b.Method() != "tree" || b.Rank() != rank || b.Size() != n {
					return fmt.Errorf("%s rank %d of %d", b.Method(), b.Rank(), b.Size())
				}
				if n > 1 && b.LocalIP() != "127.0.0.1" {
					return fmt.Errorf("local IP %q", b.LocalIP())
				}
				return exerciseCollectives(b)
			}))
		})
	}
}

func TestTreeThroughLadder(t *testing.T) {
	ports := freePorts(t, 3)
	requireNoErrors(t, eachRank(3, func(rank int) error {
		b, err := Open(treeOptions(ports, rank, 3))
		if err != nil {
			return err
		}
		defer b.Close()
		if b.Method() != "tree" {
			return fmt.Errorf("method %s", b.Method())
		}
		return b.Barrier()
	}))
}

func TestTreeUnequalRecordsFailEverywhere(t *testing.T) {
	const n = 7
	ports := freePorts(t, n)
	errs := eachRank(n, func(rank int) error {
		b, err := openTree(treeOptions(ports, rank, n))
		if err != nil {
			return fmt.Errorf("open: %w", err)
		}
		defer b.Close()
		size := 8
		if rank == 5 {
			size = 9
		}
		_, err = b.AllGather(make([]byte, size))
		return err
	})
	for r, err := range errs {
		require.Error(t, err, "rank %d", r)
		assert.Contains(t, err.Error(), "rank 5 contributed 9 bytes", "rank %d", r)
	}
}

func TestTreeTimeoutNamesMissingChild(t *testing.T) {
	const n = 3
	ports := freePorts(t, n)
	// Rank 2 never starts: rank 1 waits for it.
	errs := eachRank(2, func(rank int) error {
		o := treeOptions(ports, rank, n)
		o.Timeout = 400 * time.Millisecond
		b, err := openTree(o)
		if err != nil {
			return err
		}
		defer b.Close()
		return b.Barrier()
	})
	require.Error(t, errs[1])
	assert.Contains(t, errs[1].Error(), "rank 1: child rank 2 did not connect to port")
	require.Error(t, errs[0])
}

// A rank whose child never came tells the ranks it is connected to, so
// that their errors name the missing rank too, not a lost connection.
func TestTreeMissingChildNamedEverywhere(t *testing.T) {
	const n = 7
	ports := freePorts(t, n)
	errs := eachRank(n, func(rank int) error {
		if rank == 2 {
			return nil // never starts; its children 4 and 5 cannot reach it
		}
		o := treeOptions(ports, rank, n)
		if rank == 1 || rank == 4 || rank == 5 {
			o.Timeout = 400 * time.Millisecond // they give up on rank 2 first
		}
		b, err := openTree(o)
		if err != nil {
			return err
		}
		defer b.Close()
		_, err = b.AllGather([]byte{byte(rank)})
		return err
	})
	for _, r := range []int{0, 1, 3, 6} {
		require.Error(t, errs[r], "rank %d", r)
		assert.Contains(t, errs[r].Error(), "rank 1: child rank 2 did not connect to port", "rank %d", r)
	}
	for _, r := range []int{4, 5} {
		require.Error(t, errs[r], "rank %d", r)
		assert.Contains(t, errs[r].Error(), fmt.Sprintf("rank %d cannot reach its parent rank 2", r))
	}
}

func TestTreeCollectiveTimeoutNamesRank(t *testing.T) {
	const n = 3
	ports := freePorts(t, n)
	errs := eachRank(n, func(rank int) error {
		o := treeOptions(ports, rank, n)
		o.Timeout = 400 * time.Millisecond
		b, err := openTree(o)
		if err != nil {
			return err
		}
		if rank == 3-1 {
			// Rank 2 joins but never enters the barrier.
			time.Sleep(700 * time.Millisecond)
			return b.Close()
		}
		defer b.Close()
		return b.Barrier()
	})
	require.Error(t, errs[1])
	assert.Contains(t, errs[1].Error(), "Barrier timed out after 400ms on rank 1 waiting for rank 2")
	require.Error(t, errs[0])
}

func TestTreeRefusesWrongSize(t *testing.T) {
	ports := freePorts(t, 2)
	errs := eachRank(2, func(rank int) error {
		o := treeOptions(ports, rank, 2)
		if rank == 1 {
			o.NProcs = 3
		}
		o.Timeout = 2 * time.Second
		b, err := openTree(o)
		if err == nil {
			b.Close()
		}
		return err
	})
	for r, err := range errs {
		require.Error(t, err, "rank %d", r)
		assert.Contains(t, err.Error(), "rank 1 has --acp-nprocs 3, but its parent rank 0 has 2", "rank %d", r)
	}
}

func TestTreeRefusesWrongChild(t *testing.T) {
	// Rank 2 of 3 pointed at rank 0, whose only child is rank 1.
	ports := freePorts(t, 3)
	done := make(chan error, 1)
	go func() {
		o := treeOptions(ports, 0, 3)
		o.Timeout = 2 * time.Second
		b, err := openTree(o)
		if err == nil {
			b.Close()
		}
		done <- err
	}()
	o := treeOptions(ports, 2, 3)
	o.PortRemote = ports[0]
	o.Timeout = 2 * time.Second
	_, err := openTree(o)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "rank 2 is not a child of rank 0 (expected rank 1)")
	err = <-done
	require.Error(t, err)
	assert.Contains(t, err.Error(), "rank 2 is not a child of rank 0")
}

func TestTreeParentMissing(t *testing.T) {
	ports := freePorts(t, 2)
	o := treeOptions(ports, 1, 2)
	o.Timeout = 300 * time.Millisecond
	start := time.Now()
	_, err := openTree(o)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "rank 1 cannot reach its parent rank 0 at 127.0.0.1:")
	assert.Less(t, time.Since(start), 2*time.Second)
}
