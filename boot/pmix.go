package boot

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/libacp/libacp/boot/pmix"
)

// pmixBoot uses the PMIx server of the launcher (Open MPI's mpirun, PRRTE,
// srun --mpi=pmix). AllGather: every process puts its record under a key
// of the round, commits, fences with PMIX_COLLECT_DATA, and gets every
// rank's record.
type pmixBoot struct {
	c          *pmix.Client
	rank, size int
	localIP    string
	timeout    time.Duration

	coll    sync.Mutex
	rounds  int   // guarded by coll
	broken  error // guarded by coll
	closed  bool  // guarded by coll
	aborted atomic.Bool
}

func pmixLibraries(o Options) []string {
	if o.PMIxLibrary != "" {
		return []string{o.PMIxLibrary}
	}
	return pmix.DefaultLibraries
}

// pmixLoadError says why PMIx cannot be used here, nil if it can.
func pmixLoadError(o Options) error {
	_, err := pmix.Open(pmixLibraries(o)...)
	return err
}

// PMIxStatus says whether a PMIx library loads in this process, and which.
func PMIxStatus(library string) (string, error) {
	o := Options{PMIxLibrary: library}
	lib, err := pmix.Open(pmixLibraries(o)...)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%s, %s", lib.Name(), shortVersion(lib.Version())), nil
}

// shortVersion keeps "OpenPMIx 4.2.2rc2" of a long version string.
func shortVersion(v string) string {
	if i := strings.Index(v, " ("); i > 0 {
		return v[:i]
	}
	return v
}

func appliesPMIx(o Options) (bool, string) {
	ns, ok := o.Env["PMIX_NAMESPACE"]
	if !ok {
		return false, "no PMIX_NAMESPACE"
	}
	lib, err := pmix.Open(pmixLibraries(o)...)
	if err != nil {
		return false, fmt.Sprintf("PMIX_NAMESPACE=%s is set but PMIx cannot be used: %v", ns, err)
	}
	return true, fmt.Sprintf("PMIX_NAMESPACE=%s is set (a PMIx launcher such as Open MPI's mpirun) and %s loads (%s)", ns, lib.Name(), shortVersion(lib.Version()))
}

func openPMIx(o Options) (Bootstrap, error) {
	lib, err := pmix.Open(pmixLibraries(o)...)
	if err != nil {
		return nil, err
	}
	b := &pmixBoot{timeout: o.timeout()}
	err = within(b.timeout, "PMIx start-up", func() error {
		c, err := lib.Init()
		if err != nil {
			return err
		}
		size, err := c.JobUint("pmix.job.size")
		if err != nil {
			_ = c.Finalize()
			return err
		}
		b.c, b.rank, b.size = c, c.Rank(), int(size)
		local, err := c.JobUint("pmix.local.size")
		b.localIP = ipForJob(err == nil && int(local) == b.size)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("PMIX_NAMESPACE=%s: %v%s", o.Env["PMIX_NAMESPACE"], err, pmixInitHint(err))
	}
	if b.rank < 0 || b.rank >= b.size {
		_ = b.c.Finalize()
		return nil, fmt.Errorf("PMIx gave rank %d of a %d-process job", b.rank, b.size)
	}
	o.logf("bootstrap pmix: rank %d of %d in namespace %s (%s)", b.rank, b.size, b.c.Namespace(), shortVersion(lib.Version()))
	return b, nil
}

// pmixInitHint explains a failed PMIx_Init: no PMIx server knows this
// process, most likely because it inherited the PMIX_* variables of
// another job's process (a shell started by mpirun or srun --pty, a
// program a rank started).
func pmixInitHint(err error) string {
	var pe *pmix.Error
	if !errors.As(err, &pe) || pe.Call != "PMIx_Init" {
		return ""
	}
	return " (no PMIx server knows this process: was it started by mpirun, prterun or srun --mpi=pmix? PMIX_* variables it inherited from a process of another job make it look so: remove them from its environment to run a job of one)"
}

func (b *pmixBoot) Rank() int       { return b.rank }
func (b *pmixBoot) Size() int       { return b.size }
func (b *pmixBoot) Method() string  { return "pmix" }
func (b *pmixBoot) LocalIP() string { return b.localIP }

func (b *pmixBoot) Barrier() error {
	_, err := b.collective("Barrier", func(int) ([]byte, error) { return nil, b.c.Fence(false) })
	return err
}

func (b *pmixBoot) AllGather(rec []byte) ([]byte, error) {
	return b.collective("AllGather", func(round int) ([]byte, error) {
		if len(rec) == 0 {
			return nil, b.c.Fence(false)
		}
		key := fmt.Sprintf("libacp.%d", round)
		if err := b.c.Put(key, rec); err != nil {
			return nil, err
		}
		if err := b.c.Commit(); err != nil {
			return nil, err
		}
		if err := b.c.Fence(true); err != nil {
			return nil, err
		}
		all := make([]byte, 0, len(rec)*b.size)
		for r := range b.size {
			v, err := b.c.Get(r, key)
			if err != nil {
				return nil, err
			}
			if len(v) != len(rec) {
				return nil, fmt.Errorf("rank %d contributed %d bytes, this process %d: records must have the same length on every process", r, len(v), len(rec))
			}
			all = append(all, v...)
		}
		return all, nil
	})
}

// collective runs one collective; only the start-up one is bounded.
func (b *pmixBoot) collective(name string, f func(round int) ([]byte, error)) ([]byte, error) {
	b.coll.Lock()
	defer b.coll.Unlock()
	switch {
	case b.closed:
		return nil, errClosed
	case b.aborted.Load():
		return nil, errors.New("bootstrap was aborted")
	case b.broken != nil:
		return nil, b.broken
	}
	b.rounds++
	round := b.rounds
	var out []byte
	run := func() error {
		var err error
		out, err = f(round)
		return err
	}
	var err error
	if round == 1 {
		err = within(b.timeout, name, run)
	} else {
		err = run()
	}
	if err != nil {
		err = fmt.Errorf("%s over PMIx: %v", name, err)
		b.broken = err
	}
	return out, err
}

// Abort asks the launcher to stop the job; the server may kill us before
// PMIx_Abort returns, so it is not waited for long.
func (b *pmixBoot) Abort(code int, msg string) {
	if b.aborted.Swap(true) {
		return
	}
	_ = within(closeLimit, "PMIx_Abort", func() error { return b.c.Abort(code, msg) })
}

func (b *pmixBoot) Close() error {
	b.coll.Lock()
	defer b.coll.Unlock()
	if b.closed {
		return nil
	}
	b.closed = true
	if b.aborted.Load() {
		return nil
	}
	return within(closeLimit, "PMIx_Finalize", b.c.Finalize)
}
