package boot

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"strconv"
	"syscall"
	"time"
)

// The launcher-environment rung: a launcher that offers no key-value
// service still tells each process its rank and the job's size in the
// environment. The processes then meet on their own: rank 0 runs a
// rendezvous server (server.go) at ACP_BOOTSTRAP_ADDR, every rank (rank 0
// too) connects to it, and the collectives work as under acprun. The same
// rung serves ACP_MYRANK/ACP_NPROCS given by hand with ACP_BOOTSTRAP_ADDR.

// launcherRank is how one launcher names the rank and the job size.
type launcherRank struct{ rank, size, launcher string }

// launcherRanks are tried in order; the first whose rank variable is set
// decides.
var launcherRanks = []launcherRank{
	{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "Open MPI's mpirun"},
	{"PMI_RANK", "PMI_SIZE", "an MPICH-style launcher"},
	{"SLURM_PROCID", "SLURM_NTASKS", "Slurm's srun"},
}

// envRank is a rank and size from the environment and where they came from.
type envRank struct {
	rank, size int
	from       string // "OMPI_COMM_WORLD_RANK=1, OMPI_COMM_WORLD_SIZE=4"
	launcher   string
}

// rankFromLauncher returns the rank the launcher gave, ok = false if no
// launcher variable is set, or an error naming a malformed one.
func rankFromLauncher(o Options) (envRank, bool, error) {
	for _, l := range launcherRanks {
		rv, ok := o.Env[l.rank]
		if !ok {
			continue
		}
		sv, ok := o.Env[l.size]
		if !ok {
			return envRank{}, false, fmt.Errorf("%s=%s is set but %s is not: cannot tell the size of the job", l.rank, rv, l.size)
		}
		rank, err := strconv.Atoi(rv)
		if err != nil || rank < 0 {
			return envRank{}, false, fmt.Errorf("%s=%q is not a rank", l.rank, rv)
		}
		size, err := strconv.Atoi(sv)
		if err != nil || size < 1 {
			return envRank{}, false, fmt.Errorf("%s=%q is not a number of processes", l.size, sv)
		}
		if rank >= size {
			return envRank{}, false, fmt.Errorf("%s=%d is out of range 0..%d for %s=%d", l.rank, rank, size-1, l.size, size)
		}
		return envRank{rank: rank, size: size, from: describeEnv(o, l.rank, l.size), launcher: l.launcher}, true, nil
	}
	return envRank{}, false, nil
}

func appliesLauncherEnv(o Options) (bool, string) {
	r, ok, err := rankFromLauncher(o)
	switch {
	case err != nil:
		return true, err.Error()
	case ok && r.size > 1 && o.Addr != "":
		return true, fmt.Sprintf("%s (%s); the ranks meet at ACP_BOOTSTRAP_ADDR=%s, where rank 0 listens", r.from, r.launcher, o.Addr)
	case ok && r.size > 1:
		return true, fmt.Sprintf("%s (%s), but ACP_BOOTSTRAP_ADDR is not set, so the ranks cannot meet", r.from, r.launcher)
	case o.Addr != "":
		return true, fmt.Sprintf("ACP_BOOTSTRAP_ADDR=%s is set", o.Addr)
	}
	return false, "no launcher variables (OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID) for more than one process"
}

// envRankOf is this process's rank under the env rung and where it came
// from, or what keeps the processes from meeting.
func envRankOf(o Options) (envRank, error) {
	var r envRank
	if o.RankSet {
		if err := o.checkRank(); err != nil {
			return r, err
		}
		r = envRank{rank: o.Rank, size: o.NProcs, from: fmt.Sprintf("ACP_MYRANK=%d, ACP_NPROCS=%d", o.Rank, o.NProcs), launcher: "the settings"}
	} else {
		var ok bool
		var err error
		if r, ok, err = rankFromLauncher(o); err != nil {
			return r, err
		}
		if !ok {
			return r, fmt.Errorf("ACP_BOOTSTRAP_ADDR=%s is set but this process does not know its rank: no ACP_MYRANK/ACP_NPROCS and no launcher variables (OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID); start it with acprun, mpirun, mpiexec or srun, or set ACP_MYRANK and ACP_NPROCS", o.Addr)
		}
	}
	if o.Addr == "" {
		return r, fmt.Errorf("started by %s as rank %d of %d (%s), but the processes cannot find each other: %s. Set ACP_BOOTSTRAP_ADDR=host:port to a free port on the host of rank 0 for every rank (rank 0 listens there, the others connect), e.g. mpirun -x ACP_BOOTSTRAP_ADDR=%s:47000",
			r.launcher, r.rank, r.size, r.from, missingService(o), exampleHost())
	}
	if _, port, err := net.SplitHostPort(o.Addr); err != nil || port == "0" {
		return r, fmt.Errorf("ACP_BOOTSTRAP_ADDR=%q is not host:port with a fixed port (rank 0 listens there, the others connect)", o.Addr)
	}
	return r, nil
}

func checkEnv(o Options) error {
	_, err := envRankOf(o)
	return err
}

func openEnv(o Options) (Bootstrap, error) {
	r, err := envRankOf(o)
	if err != nil {
		return nil, err
	}
	o.logf("bootstrap env: rank %d of %d from %s; rank 0's rendezvous at %s", r.rank, r.size, r.from, o.Addr)

	key := envKey(o, r.size)
	rv := &rendezvous{rank: r.rank, size: r.size, addr: o.Addr, timeout: o.timeout(),
		method: "env", who: "rank 0's rendezvous", owner: "rank 0"}
	deadline := time.Now().Add(rv.timeout)
	if r.rank == 0 {
		srv, err := listenUntil(o.Addr, r.size, key, deadline)
		if err != nil {
			return nil, err
		}
		srv.Start(Hooks{Logf: o.Logf})
		rv.server = srv
	}
	c, err := dialUntil(o.Addr, deadline)
	if err != nil {
		if rv.server != nil {
			_ = rv.server.Close()
		}
		return nil, fmt.Errorf("rank %d cannot reach rank 0 at ACP_BOOTSTRAP_ADDR=%s within %v: %v (does rank 0 run on that host, and can this host reach it?)", r.rank, o.Addr, rv.timeout, err)
	}
	k, _ := hex.DecodeString(key)
	if err := rv.join(c, k); err != nil {
		if rv.server != nil {
			_ = rv.server.Close()
		}
		return nil, err
	}
	rv.watchServer(o)
	return rv, nil
}

// missingService explains why no launcher service was used.
func missingService(o Options) string {
	if ns, ok := o.Env["PMIX_NAMESPACE"]; ok {
		return fmt.Sprintf("PMIX_NAMESPACE=%s is set but PMIx cannot be used (%v)", ns, pmixLoadError(o))
	}
	return "the launcher offers no PMI-1 (PMI_FD, PMI_PORT) or PMIx (PMIX_NAMESPACE) service"
}

// exampleHost is this host's name for the example in an error message.
func exampleHost() string {
	if ip := hostIPv4(); ip != "" {
		return ip
	}
	return "127.0.0.1"
}

// envKey is the rendezvous key of the job: not a secret (every rank
// derives it from what its launcher says about the job), but it keeps
// processes of another job, or of an earlier one still holding the port,
// out of this one.
func envKey(o Options, size int) string {
	h := sha256.New()
	fmt.Fprintf(h, "libacp-env-rendezvous\x00%s\x00%d", o.Addr, size)
	for _, v := range []string{"OMPI_MCA_ess_base_jobid", "PMIX_NAMESPACE", "SLURM_JOB_ID", "SLURM_STEP_ID"} {
		fmt.Fprintf(h, "\x00%s", o.Env[v])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// retryEvery is how often rank 0's busy port or a rendezvous not yet
// listening is tried again.
const retryEvery = 50 * time.Millisecond

// listenUntil starts rank 0's server, waiting while an earlier job still
// holds the port.
func listenUntil(addr string, n int, key string, deadline time.Time) (*Server, error) {
	for {
		srv, err := listenServer(addr, n, key)
		if err == nil {
			return srv, nil
		}
		if !errors.Is(err, syscall.EADDRINUSE) || time.Now().After(deadline) {
			return nil, fmt.Errorf("rank 0 cannot listen at ACP_BOOTSTRAP_ADDR=%s: %v (rank 0 must run on that host, and the port must be free)", addr, err)
		}
		time.Sleep(retryEvery)
	}
}

// dialUntil connects, retrying while nobody listens yet (rank 0 may start
// last).
func dialUntil(addr string, deadline time.Time) (net.Conn, error) {
	for {
		c, err := net.DialTimeout("tcp", addr, time.Until(deadline))
		if err == nil {
			return c, nil
		}
		if !errors.Is(err, syscall.ECONNREFUSED) || time.Now().After(deadline) {
			return nil, err
		}
		time.Sleep(retryEvery)
	}
}
