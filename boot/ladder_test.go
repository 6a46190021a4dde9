package boot

import (
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSingleton(t *testing.T) {
	b, err := Open(Options{NProcs: 1})
	require.NoError(t, err)
	assert.Equal(t, "singleton", b.Method())
	assert.Equal(t, 0, b.Rank())
	assert.Equal(t, 1, b.Size())
	assert.Equal(t, "", b.LocalIP())
	require.NoError(t, exerciseCollectives(b))
	rec := []byte("abc")
	all, err := b.AllGather(rec)
	require.NoError(t, err)
	rec[0] = 'x'
	assert.Equal(t, "abc", string(all), "the result must not alias the record")
	b.Abort(1, "ignored")
	require.NoError(t, b.Close())
	assert.ErrorIs(t, b.Barrier(), errClosed)
}

func TestLadderChoice(t *testing.T) {
	j := startJob(t, 1)
	cases := []struct {
		name   string
		o      Options
		method string
		err    string
	}{
		{name: "zero options", o: Options{}, method: "singleton"},
		{name: "one process", o: Options{NProcs: 1}, method: "singleton"},
		{name: "explicit rank 0 of 1", o: Options{NProcs: 1, RankSet: true}, method: "singleton"},
		{name: "rendezvous wins", o: j.options(0, 1), method: "acprun"},
		{name: "rank beyond one process", o: Options{Rank: 2, NProcs: 1, RankSet: true},
			err: "--acp-myrank (ACP_MYRANK) = 2 but --acp-nprocs (ACP_NPROCS) = 1"},
		{name: "many processes without launcher", o: Options{NProcs: 4},
			err: "started 4 processes without a launcher? use acprun -np 4"},
		{name: "tree rank out of range", o: Options{Rank: 5, NProcs: 4, RankSet: true},
			err: "--acp-myrank (ACP_MYRANK) = 5 is out of range 0..3"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, err := Open(c.o)
			if c.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), c.err)
				return
			}
			require.NoError(t, err)
			defer b.Close()
			assert.Equal(t, c.method, b.Method())
		})
	}
}

func TestLadderTreeIsChosenForExplicitRanks(t *testing.T) {
	// Rank 1 of 2 with nobody listening: the tree rung is taken, and its
	// error is final rather than falling back to a singleton.
	ports := freePorts(t, 2)
	o := treeOptions(ports, 1, 2)
	o.Timeout = 200 * time.Millisecond
	_, err := Open(o)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "cannot reach its parent rank 0")
}

func TestChooseExplains(t *testing.T) {
	c, err := Choose(Options{NProcs: 1})
	require.NoError(t, err)
	assert.Equal(t, "singleton", c.Method)
	assert.Equal(t, []string{
		"acprun: no ACP_BOOTSTRAP_ADDR with ACP_JOB_KEY (not started by acprun)",
		"env: no ACP_MYRANK/ACP_NPROCS together with ACP_BOOTSTRAP_ADDR",
		"tree: no --acp-myrank/--acp-nprocs for more than one process",
		"pmi: no PMI_FD or PMI_PORT",
		"pmix: no PMIX_NAMESPACE",
		"env: no launcher variables (OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID) for more than one process",
	}, c.Skipped)

	// Explicit settings win over a launcher's services.
	c, err = Choose(Options{Rank: 1, NProcs: 2, RankSet: true, Env: map[string]string{"PMI_FD": "3"}})
	require.NoError(t, err)
	assert.Equal(t, "tree", c.Method)
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	require.NoError(t, err)
	defer syscall.Close(fds[0])
	defer syscall.Close(fds[1])
	fd := strconv.Itoa(fds[0])
	c, err = Choose(Options{Env: map[string]string{"PMI_FD": fd, "PMI_RANK": "0", "PMI_SIZE": "2", "OMPI_COMM_WORLD_RANK": "0", "OMPI_COMM_WORLD_SIZE": "2"}})
	require.NoError(t, err)
	assert.Equal(t, "pmi", c.Method, "PMI-1 before the launcher's variables")
	assert.Contains(t, c.Reason, "PMI_FD="+fd)
}

// Variables left from another job (a process started by a rank, a shell
// that kept them) make the rung they select fail at once: Choose says so,
// as Open would, so that acp_info does not promise a start-up that fails.
func TestChooseTellsWhyOpenWouldFail(t *testing.T) {
	cases := []struct {
		name, method, reason, err string
		o                         Options
	}{
		{name: "acprun's address and key alone", method: "acprun",
			o:   Options{NProcs: 1, Addr: "127.0.0.1:1", Key: NewKey()},
			err: "ACP_BOOTSTRAP_ADDR=127.0.0.1:1 is set but ACP_MYRANK and ACP_NPROCS are not"},
		{name: "acprun's rank out of range", method: "acprun",
			o:   Options{Rank: 3, NProcs: 2, RankSet: true, RankFromEnv: true, Addr: "127.0.0.1:1", Key: NewKey()},
			err: "--acp-myrank (ACP_MYRANK) = 3 is out of range 0..1"},
		{name: "a garbled key", method: "acprun",
			o:   Options{NProcs: 2, RankSet: true, Addr: "127.0.0.1:1", Key: "xyz"},
			err: "job key (ACP_JOB_KEY) is not a non-empty hex string"},
		{name: "a rank from the environment", method: "tree",
			o:      Options{Rank: 5, NProcs: 2, RankSet: true, RankFromEnv: true},
			reason: "ACP_MYRANK=5 and ACP_NPROCS=2 (in the environment) are set",
			err:    "--acp-myrank (ACP_MYRANK) = 5 is out of range 0..1"},
		{name: "a rank on the command line", method: "tree",
			o:      Options{Rank: 1, NProcs: 2, RankSet: true},
			reason: "--acp-myrank 1 and --acp-nprocs 2 are set"},
		{name: "an address without a port", method: "env",
			o:   Options{NProcs: 2, RankSet: true, Addr: "somewhere"},
			err: `ACP_BOOTSTRAP_ADDR="somewhere" is not host:port with a fixed port`},
		{name: "a PMI_FD not inherited", method: "pmi",
			o:   Options{Env: map[string]string{"PMI_FD": "99999", "PMI_RANK": "0", "PMI_SIZE": "2"}},
			err: "PMI_FD=99999: not an open file descriptor"},
		{name: "PMI_PORT without PMI_ID", method: "pmi",
			o:   Options{Env: map[string]string{"PMI_PORT": "h:1"}},
			err: "PMI_PORT=h:1 is set but PMI_ID is not"},
		{name: "a launcher without service or address", method: "env",
			o:   Options{Env: map[string]string{"SLURM_PROCID": "0", "SLURM_NTASKS": "4"}},
			err: "Set ACP_BOOTSTRAP_ADDR=host:port"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Choose(c.o)
			assert.Equal(t, c.method, got.Method)
			assert.Contains(t, got.Reason, c.reason)
			if c.err == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.err)
			_, oerr := Open(c.o)
			require.Error(t, oerr)
			assert.Equal(t, err.Error(), oerr.Error(), "Open fails as Choose said")
		})
	}
}

func TestOptionsFrom(t *testing.T) {
	env := map[string]string{"PMI_RANK": "1", "PMI_SIZE": "2", "HOME": "/root"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	o := OptionsFrom(fakeSettings{"myrank": "0", "nprocs": "1", "bootstrap-addr": "h:1", "peer-timeout": "2s"}, lookup)
	assert.False(t, o.RankSet)
	assert.Equal(t, "h:1", o.Addr)
	assert.Equal(t, 2*time.Second, o.Timeout)
	assert.Equal(t, map[string]string{"PMI_RANK": "1", "PMI_SIZE": "2"}, o.Env, "only the launchers' variables")
}

// fakeSettings holds raw values; every one not listed is at its default.
type fakeSettings map[string]string

func (f fakeSettings) Int(n string) int {
	v, _ := strconv.Atoi(f[n])
	return v
}
func (f fakeSettings) String(n string) string { return f[n] }
func (f fakeSettings) Duration(n string) time.Duration {
	d, _ := time.ParseDuration(f[n])
	return d
}
func (f fakeSettings) Source(string) string { return "default" }
