package boot

import (
	"fmt"
	"net"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// eachRank runs f for ranks 0..n-1 concurrently and returns their errors.
func eachRank(n int, f func(rank int) error) []error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[r] = f(r)
		}()
	}
	wg.Wait()
	return errs
}

func requireNoErrors(t *testing.T, errs []error) {
	t.Helper()
	for r, err := range errs {
		require.NoError(t, err, "rank %d", r)
	}
}

// exerciseCollectives runs the checks every method must pass: repeated
// all-gathers with contents in rank order, barriers, an empty all-gather.
func exerciseCollectives(b Bootstrap) error {
	n := b.Size()
	for round := range 3 {
		rec := []byte{byte(b.Rank()), byte(b.Rank() >> 8), byte(round), 0xA5}
		all, err := b.AllGather(rec)
		if err != nil {
			return fmt.Errorf("round %d: %w", round, err)
		}
		if len(all) != 4*n {
			return fmt.Errorf("round %d: %d bytes, want %d", round, len(all), 4*n)
		}
		for p := range n {
			want := []byte{byte(p), byte(p >> 8), byte(round), 0xA5}
			if got := all[4*p : 4*p+4]; string(got) != string(want) {
				return fmt.Errorf("round %d: record %d is %v, want %v", round, p, got, want)
			}
		}
		if err := b.Barrier(); err != nil {
			return fmt.Errorf("barrier after round %d: %w", round, err)
		}
	}
	all, err := b.AllGather(nil)
	if err != nil || len(all) != 0 {
		return fmt.Errorf("empty all-gather: %d bytes, %v", len(all), err)
	}
	return nil
}

// freePorts returns n TCP ports that were free on all interfaces a moment ago.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var lns []net.Listener
	var ports []int
	for range n {
		ln, err := net.Listen("tcp", ":0")
		require.NoError(t, err)
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	for _, ln := range lns {
		ln.Close()
	}
	return ports
}
