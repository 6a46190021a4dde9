package boot

import (
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// job is a rendezvous server with a record of what it reported.
type job struct {
	srv *Server
	key string

	mu     sync.Mutex
	aborts []string
	lost   []int
	logs   []string
	events chan struct{}
}

func startJob(t *testing.T, n int) *job {
	t.Helper()
	j := &job{key: NewKey(), events: make(chan struct{}, 16)}
	srv, err := NewServer(n, j.key)
	require.NoError(t, err)
	j.srv = srv
	srv.Start(Hooks{
		Abort: func(rank, code int, msg string) {
			j.mu.Lock()
			j.aborts = append(j.aborts, fmt.Sprintf("%d:%d:%s", rank, code, msg))
			j.mu.Unlock()
			j.events <- struct{}{}
		},
		Lost: func(rank int, err error) {
			j.mu.Lock()
			j.lost = append(j.lost, rank)
			j.mu.Unlock()
			j.events <- struct{}{}
		},
		Logf: func(format string, args ...any) {
			j.mu.Lock()
			j.logs = append(j.logs, fmt.Sprintf(format, args...))
			j.mu.Unlock()
		},
	})
	t.Cleanup(func() { srv.Close() })
	return j
}

func (j *job) options(rank, n int) Options {
	return Options{Rank: rank, NProcs: n, RankSet: true, Addr: j.srv.Addr(), Key: j.key, Timeout: 5 * time.Second}
}

func (j *job) open(t *testing.T, rank, n int) Bootstrap {
	t.Helper()
	b, err := Open(j.options(rank, n))
	require.NoError(t, err, "rank %d", rank)
	require.Equal(t, "acprun", b.Method())
	return b
}

func (j *job) waitEvent(t *testing.T) {
	t.Helper()
	select {
	case <-j.events:
	case <-time.After(3 * time.Second):
		t.Fatal("the server reported nothing")
	}
}

func (j *job) snapshot() (aborts []string, lost []int, logs string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]string(nil), j.aborts...), append([]int(nil), j.lost...), strings.Join(j.logs, "\n")
}

func TestRendezvousCollectives(t *testing.T) {
	for _, n := range []int{1, 2, 5} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			j := startJob(t, n)
			requireNoErrors(t, eachRank(n, func(rank int) error {
				b, err := Open(j.options(rank, n))
				if err != nil {
					return err
				}
				if b.Rank() != rank || b.Size() != n || b.LocalIP() != "127.0.0.1" {
					return fmt.Errorf("rank %d of %d at %q", b.Rank(), b.Size(), b.LocalIP())
				}
				if err := exerciseCollectives(b); err != nil {
					return err
				}
				if err := b.Close(); err != nil {
					return err
				}
				if _, err := b.AllGather([]byte{1}); err != errClosed {
					return fmt.Errorf("all-gather after Close: %v", err)
				}
				return nil
			}))
			aborts, lost, _ := j.snapshot()
			assert.Empty(t, aborts)
			assert.Empty(t, lost, "a clean Close must not be reported as a lost rank")
		})
	}
}

func TestRendezvousRefusesWrongKey(t *testing.T) {
	j := startJob(t, 2)
	o := j.options(0, 2)
	o.Key = NewKey()
	_, err := Open(o)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "refused rank 0")
	assert.Contains(t, err.Error(), "wrong job key")
	_, _, logs := j.snapshot()
	assert.Contains(t, logs, "wrong job key")

	// The slot stays free for the real rank 0.
	j.open(t, 0, 2).Close()
}

func TestRendezvousRefusesDuplicateRank(t *testing.T) {
	j := startJob(t, 2)
	b := j.open(t, 1, 2)
	defer b.Close()
	_, err := Open(j.options(1, 2))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "rank 1 is already taken")
	assert.Contains(t, err.Error(), "a program that a rank starts inherits its ACP_* variables: to run it as a job of its own, remove ACP_BOOTSTRAP_ADDR and ACP_JOB_KEY from its environment")
	_, _, logs := j.snapshot()
	assert.Contains(t, logs, "already taken")
}

func TestRendezvousRefusesWrongSize(t *testing.T) {
	j := startJob(t, 2)
	_, err := Open(j.options(0, 3))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "has 3 processes (ACP_NPROCS), but this job has 2")
}

func TestRendezvousUnequalRecords(t *testing.T) {
	j := startJob(t, 3)
	errs := eachRank(3, func(rank int) error {
		b, err := Open(j.options(rank, 3))
		if err != nil {
			return err
		}
		defer b.Close()
		_, err = b.AllGather(make([]byte, 4+rank%2))
		if err == nil {
			return nil
		}
		// Later collectives keep failing: the job cannot recover.
		if berr := b.Barrier(); berr == nil || berr.Error() != err.Error() {
			return fmt.Errorf("barrier after a failed all-gather: %v", berr)
		}
		return err
	})
	for r, err := range errs {
		require.Error(t, err, "rank %d", r)
		assert.Contains(t, err.Error(), "records must have the same length", "rank %d", r)
	}
}

func TestRendezvousBarrierAgainstAllGather(t *testing.T) {
	j := startJob(t, 2)
	errs := eachRank(2, func(rank int) error {
		b, err := Open(j.options(rank, 2))
		if err != nil {
			return err
		}
		defer b.Close()
		if rank == 0 {
			return b.Barrier()
		}
		_, err = b.AllGather(nil)
		return err
	})
	for r, err := range errs {
		require.Error(t, err, "rank %d", r)
		assert.Regexp(t, `rank \d called (Barrier|AllGather) while rank \d called (AllGather|Barrier): every process must make the same calls`, err.Error(), "rank %d", r)
	}
}

func TestRendezvousAbortReachesServer(t *testing.T) {
	j := startJob(t, 2)
	b0, b1 := j.open(t, 0, 2), j.open(t, 1, 2)
	defer b0.Close()
	done := make(chan error, 1)
	go func() { done <- b0.Barrier() }()
	b1.Abort(7, "out of cheese")
	j.waitEvent(t)
	aborts, lost, _ := j.snapshot()
	assert.Equal(t, []string{"1:7:out of cheese"}, aborts)
	assert.Empty(t, lost, "an abort is not also a lost rank")
	select {
	case err := <-done:
		require.Error(t, err)
		assert.Contains(t, err.Error(), "rank 1 aborted the job: out of cheese")
	case <-time.After(3 * time.Second):
		t.Fatal("rank 0's barrier did not fail after rank 1 aborted")
	}
	assert.NoError(t, b1.Close())
}

func TestRendezvousReportsDisconnect(t *testing.T) {
	j := startJob(t, 2)
	b0, b1 := j.open(t, 0, 2), j.open(t, 1, 2)
	defer b0.Close()
	done := make(chan error, 1)
	go func() { done <- b0.Barrier() }()
	b1.(*rendezvous).conn.Close() // as if the process died
	j.waitEvent(t)
	_, lost, _ := j.snapshot()
	assert.Equal(t, []int{1}, lost)
	select {
	case err := <-done:
		require.Error(t, err)
		assert.Contains(t, err.Error(), "rank 1 disconnected")
	case <-time.After(3 * time.Second):
		t.Fatal("rank 0's barrier did not fail after rank 1 vanished")
	}
}

func TestRendezvousTimeoutNamesMissingRank(t *testing.T) {
	j := startJob(t, 3)
	errs := eachRank(2, func(rank int) error {
		o := j.options(rank, 3)
		o.Timeout = 300 * time.Millisecond
		b, err := Open(o)
		if err != nil {
			return err
		}
		defer b.Close()
		return b.Barrier()
	})
	for r, err := range errs {
		require.Error(t, err, "rank %d", r)
		assert.Contains(t, err.Error(), "Barrier timed out after 300ms: rank 2 (never connected) did not arrive", "rank %d", r)
	}
}

func TestRendezvousClosedRankFailsCollective(t *testing.T) {
	j := startJob(t, 2)
	b0, b1 := j.open(t, 0, 2), j.open(t, 1, 2)
	require.NoError(t, b1.Close())
	err := b0.Barrier()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "rank 1 (closed its bootstrap)")
	b0.Close()
}

func TestRendezvousNeedsRankAndKey(t *testing.T) {
	j := startJob(t, 2)
	o := j.options(0, 2)
	o.RankSet = false
	_, err := Open(o)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "ACP_MYRANK and ACP_NPROCS are not")

	// Without the key it is not acprun's rendezvous: rank 0 would listen
	// there itself (env.go).
	o = j.options(0, 2)
	o.Key = ""
	c, err := Choose(o)
	require.NoError(t, err)
	assert.Equal(t, "env", c.Method)

	o = j.options(2, 2)
	_, err = Open(o)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "ACP_MYRANK) = 2 is out of range 0..1")
}

func TestRendezvousNotListening(t *testing.T) {
	port := freePorts(t, 1)[0]
	_, err := Open(Options{Rank: 0, NProcs: 2, RankSet: true, Addr: fmt.Sprintf("127.0.0.1:%d", port), Key: NewKey(), Timeout: time.Second})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "cannot reach the acprun rendezvous")
	assert.Contains(t, err.Error(), "has that acprun ended? ACP_BOOTSTRAP_ADDR, ACP_JOB_KEY, ACP_MYRANK and ACP_NPROCS left from one of its ranks make a process join its job: remove them from the environment to run a job of one")
}

func TestNewKey(t *testing.T) {
	a, b := NewKey(), NewKey()
	assert.Len(t, a, 2*keyBytes)
	assert.NotEqual(t, a, b)
	_, err := NewServer(1, "not hex")
	assert.Error(t, err)
}

// A rank whose process ended before it connected fails the collective the
// others wait in, and those after it, at once, naming it.
func TestExitedRankFailsCollectivesAtOnce(t *testing.T) {
	j := startJob(t, 3)
	b0, b2 := j.open(t, 0, 3), j.open(t, 2, 3)
	start := time.Now()
	waiting := make(chan error)
	go func() {
		_, err := b0.AllGather([]byte{0})
		waiting <- err
	}()
	time.Sleep(50 * time.Millisecond) // rank 0 waits for the others
	j.srv.Exited(1)
	j.srv.Exited(2) // connected: its connection says when it goes
	err := <-waiting
	require.Error(t, err)
	assert.Contains(t, err.Error(), "AllGather cannot complete: rank 1 (exited before it connected)")
	_, err = b2.AllGather([]byte{2})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "rank 1 (exited before it connected)")
	assert.Less(t, time.Since(start), 2*time.Second, "not at the 5 s timeout")

	j = startJob(t, 2)
	j.srv.Exited(1)
	_, err = j.open(t, 0, 2).AllGather([]byte{0})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "AllGather cannot complete: rank 1 (exited before it connected)")
}

// openWatched opens rank of an n-process job whose Gone reports on gone.
func (j *job) openWatched(t *testing.T, rank, n int, gone chan<- string) Bootstrap {
	t.Helper()
	o := j.options(rank, n)
	o.Gone = func(err error) { gone <- fmt.Sprintf("rank %d: %v", rank, err) }
	b, err := Open(o)
	require.NoError(t, err, "rank %d", rank)
	return b
}

// When acprun ends (here: its server closes) while the ranks are in the
// job, each is told; after Close or Abort nobody is.
func TestGoneWhenTheRendezvousEnds(t *testing.T) {
	gone := make(chan string, 4)
	j := startJob(t, 2)
	b0, b1 := j.openWatched(t, 0, 2, gone), j.openWatched(t, 1, 2, gone)
	require.NoError(t, j.srv.Close())
	why := " ended while this process was still in the job (the acprun rendezvous at " + j.srv.Addr() + " closed the connection): the job cannot finish"
	assert.ElementsMatch(t, []string{"rank 0: acprun" + why, "rank 1: acprun" + why}, []string{<-gone, <-gone})
	_ = b0.Close()
	_ = b1.Close()

	j = startJob(t, 2)
	b0, b1 = j.openWatched(t, 0, 2, gone), j.openWatched(t, 1, 2, gone)
	requireNoErrors(t, eachRank(2, func(rank int) error { return []Bootstrap{b0, b1}[rank].Close() }))
	require.NoError(t, j.srv.Close())

	j = startJob(t, 2)
	b0, b1 = j.openWatched(t, 0, 2, gone), j.openWatched(t, 1, 2, gone)
	b1.Abort(3, "stop")
	j.waitEvent(t)
	require.NoError(t, j.srv.Close())
	assert.Contains(t, <-gone, "rank 0: acprun ended while this process was still in the job")
	_ = b0.Close()
	select {
	case g := <-gone:
		t.Fatalf("told after Close or Abort: %s", g)
	case <-time.After(200 * time.Millisecond):
	}
}

// flakyListener fails its first accepts as a process out of file
// descriptors does.
type flakyListener struct {
	net.Listener
	fails atomic.Int32
}

func (l *flakyListener) Accept() (net.Conn, error) {
	if l.fails.Add(-1) >= 0 {
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.EMFILE)}
	}
	return l.Listener.Accept()
}

// A failed accept (too many open files) is reported and retried: the
// ranks still to come join once it passes.
func TestRendezvousSurvivesFailedAccept(t *testing.T) {
	key := NewKey()
	srv, err := NewServer(2, key)
	require.NoError(t, err)
	flaky := &flakyListener{Listener: srv.ln}
	flaky.fails.Store(3)
	srv.ln = flaky
	var logs []string
	var mu sync.Mutex
	srv.Start(Hooks{Logf: func(format string, args ...any) {
		mu.Lock()
		logs = append(logs, fmt.Sprintf(format, args...))
		mu.Unlock()
	}})
	defer srv.Close()
	requireNoErrors(t, eachRank(2, func(rank int) error {
		b, err := Open(Options{Rank: rank, NProcs: 2, RankSet: true, Addr: srv.Addr(), Key: key, Timeout: 3 * time.Second})
		if err != nil {
			return err
		}
		if err := b.Barrier(); err != nil {
			return err
		}
		return b.Close()
	}))
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{"rendezvous: cannot accept a connection: accept tcp: accept4: too many open files (retrying; the ranks still to come wait)"}, logs)
}
