// Package boot is how the processes of a job find each other: who is rank
// 0..N-1, an all-gather to exchange contact records once, a barrier, and a
// way to ask the launcher to stop the job. Each method of finding peers
// lives in its own file; Open (ladder.go) picks one.
//
// The package uses only the standard library so that it can be tested,
// and reused by the launcher, without the engine.
package boot

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"time"
)

// Bootstrap connects this process to the others of its job. Collectives
// (AllGather, Barrier) must be called by every process in the same order;
// they are not safe for concurrent use by one process. Abort may be called
// from any goroutine at any time.
type Bootstrap interface {
	Rank() int // physical index 0..Size-1
	Size() int
	// AllGather contributes rec, which must have the same length on every
	// process, and returns every record concatenated in rank order. No
	// process returns before all have called it.
	AllGather(rec []byte) ([]byte, error)
	// Barrier returns when every process has called it.
	Barrier() error
	// Abort asks the launcher to stop the whole job (best effort; it never
	// blocks for long). The bootstrap is unusable afterwards.
	Abort(code int, msg string)
	Close() error
	// Method names how the peers were found: "acprun", "tree", "pmi",
	// "pmix", "env" or "singleton".
	Method() string
	// LocalIP is the local address this process used to reach the others,
	// "" if unknown. Transports bind to it so that they use the same network.
	LocalIP() string
}

// Options are what the launcher or the user told this process.
type Options struct {
	Rank, NProcs int // --acp-myrank / --acp-nprocs (ACP_MYRANK / ACP_NPROCS)
	// RankSet is true when the launcher or the user gave myrank or nprocs
	// explicitly (rather than the defaults 0 of 1).
	RankSet bool
	// RankFromEnv is true when they came from ACP_MYRANK/ACP_NPROCS rather
	// than the command line, for messages.
	RankFromEnv bool
	// Addr is host:port of an acprun rendezvous (ACP_BOOTSTRAP_ADDR), "" if none.
	Addr string
	// Key is the rendezvous secret in hex (ACP_JOB_KEY), passed privately
	// by acprun through the environment.
	Key string
	// The original launcher's tree start-up: this process's port
	// (--acp-port-local) and its parent's host and port
	// (--acp-host-remote, --acp-port-remote).
	PortLocal, PortRemote int
	HostRemote            string
	// Timeout bounds connecting and each collective; the error then names
	// who is missing. Zero means DefaultTimeout.
	Timeout time.Duration

	// Env holds the variables of other launchers (LauncherVars) that the
	// PMI-1, PMIx and launcher-environment rungs read; see LauncherEnv.
	Env map[string]string
	// PMIxLibrary is the libpmix to load; "" tries pmix.DefaultLibraries.
	PMIxLibrary string
	// MPI reports whether an MPI library is linked into this process, and
	// whether it is initialised and not yet finalised (nil: no MPI). Under
	// MPICH's mpiexec such a library uses the same PMI-1 connection and
	// ends it itself, so the PMI rung must not.
	MPI func() (linked, active bool)
	// Logf receives start-up details (ACP_VERBOSE=2); nil: none.
	Logf func(format string, args ...any)
	// Gone is called once, from a goroutine of the bootstrap's own, when
	// the process that serves the job's rendezvous (acprun, or rank 0 of
	// the env rung) ends while this process is in the job: the job can
	// never finish, and the caller should end this process. Never after
	// Close or Abort. Nil: nobody is told (the next collective fails).
	Gone func(err error)
}

func (o Options) logf(format string, args ...any) {
	if o.Logf != nil {
		o.Logf(format, args...)
	}
}

// DefaultTimeout applies when Options.Timeout is zero.
const DefaultTimeout = 60 * time.Second

func (o Options) timeout() time.Duration {
	if o.Timeout <= 0 {
		return DefaultTimeout
	}
	return o.Timeout
}

// rankText names the rank and size as the user gave them.
func (o Options) rankText() string {
	if o.RankFromEnv {
		return fmt.Sprintf("ACP_MYRANK=%d and ACP_NPROCS=%d (in the environment)", o.Rank, o.NProcs)
	}
	return fmt.Sprintf("--acp-myrank %d and --acp-nprocs %d", o.Rank, o.NProcs)
}

// checkRank validates the rank and size every method relies on.
func (o Options) checkRank() error {
	if o.NProcs < 1 {
		return fmt.Errorf("--acp-nprocs (ACP_NPROCS) = %d: a job needs at least 1 process", o.NProcs)
	}
	if o.Rank < 0 || o.Rank >= o.NProcs {
		return fmt.Errorf("--acp-myrank (ACP_MYRANK) = %d is out of range 0..%d for --acp-nprocs (ACP_NPROCS) = %d", o.Rank, o.NProcs-1, o.NProcs)
	}
	return nil
}

// within runs f, giving up after limit. PMI and PMIx requests cannot be
// interrupted, so f may go on in the background; the caller treats the
// bootstrap as broken.
func within(limit time.Duration, what string, f func() error) error {
	done := make(chan error, 1)
	go func() { done <- f() }()
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
		return fmt.Errorf("%s did not complete within %v (--acp-peer-timeout): did every process reach acp_init, and is the launcher still running?", what, limit.Round(time.Millisecond))
	}
}

// errClosed is returned by collectives after Close.
var errClosed = errors.New("bootstrap is closed (acp_finalize was called)")

// Kinds of collective, sent along so that a process calling Barrier while
// another calls AllGather gets a clear error instead of a length mismatch.
const (
	opAllGather byte = 1
	opBarrier   byte = 2
)

func opName(op byte) string {
	switch op {
	case opAllGather:
		return "AllGather"
	case opBarrier:
		return "Barrier"
	}
	return fmt.Sprintf("collective %d", op)
}

// listRanks formats ranks for an error message, eliding long lists.
func listRanks(ranks []int, note func(r int) string) string {
	const show = 16
	var parts []string
	for i, r := range ranks {
		if i == show {
			parts = append(parts, fmt.Sprintf("and %d more", len(ranks)-show))
			break
		}
		s := fmt.Sprintf("%d", r)
		if note != nil {
			if n := note(r); n != "" {
				s += " (" + n + ")"
			}
		}
		parts = append(parts, s)
	}
	word := "rank "
	if len(ranks) > 1 {
		word = "ranks "
	}
	return word + strings.Join(parts, ", ")
}

// localIPOf is the IP of a connection's local end.
func localIPOf(c net.Conn) string {
	if c == nil {
		return ""
	}
	if a, ok := c.LocalAddr().(*net.TCPAddr); ok {
		return a.IP.String()
	}
	return ""
}
