package boot

import (
	"strconv"
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
	c, err = Choose(Options{Env: map[string]string{"PMI_FD": "3", "PMI_RANK": "0", "PMI_SIZE": "2"}})
	require.NoError(t, err)
	assert.Equal(t, "pmi", c.Method, "PMI-1 before the launcher's variables")
	assert.Contains(t, c.Reason, "PMI_FD=3")
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
