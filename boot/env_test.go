package boot

import (
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ompiEnv is what Open MPI's mpirun tells rank of n (without PMIx).
func ompiEnv(rank, n int) map[string]string {
	return map[string]string{"OMPI_COMM_WORLD_RANK": strconv.Itoa(rank), "OMPI_COMM_WORLD_SIZE": strconv.Itoa(n),
		"OMPI_MCA_ess_base_jobid": "4242"}
}

func envAddr(t *testing.T) string {
	return fmt.Sprintf("127.0.0.1:%d", freePorts(t, 1)[0])
}

func TestEnvCollectives(t *testing.T) {
	for _, n := range []int{2, 5} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			addr := envAddr(t)
			requireNoErrors(t, eachRank(n, func(rank int) error {
				// Rank 0 starts last: the others wait for it to listen.
				if rank == 0 {
					time.Sleep(200 * time.Millisecond)
				}
				b, err := Open(Options{Addr: addr, Env: ompiEnv(rank, n), Timeout: 5 * time.Second})
				if err != nil {
					return err
				}
				if b.Method() != "env" || b.Rank() != rank || b.Size() != n || b.LocalIP() != "127.0.0.1" {
					return fmt.Errorf("%s: rank %d of %d at %q", b.Method(), b.Rank(), b.Size(), b.LocalIP())
				}
				if err := exerciseCollectives(b); err != nil {
					return err
				}
				return b.Close()
			}))
			// Rank 0 closed its server when everybody had left.
			_, err := net.DialTimeout("tcp", addr, time.Second)
			assert.Error(t, err, "rank 0's rendezvous still listens after Close")
		})
	}
}

func TestEnvExplicitRanks(t *testing.T) {
	addr := envAddr(t)
	requireNoErrors(t, eachRank(3, func(rank int) error {
		o := Options{Rank: rank, NProcs: 3, RankSet: true, Addr: addr, Timeout: 5 * time.Second}
		c, err := Choose(o)
		if err != nil || c.Method != "env" {
			return fmt.Errorf("chose %q: %v", c.Method, err)
		}
		b, err := Open(o)
		if err != nil {
			return err
		}
		if err := exerciseCollectives(b); err != nil {
			return err
		}
		return b.Close()
	}))
}

func TestEnvLauncherVariables(t *testing.T) {
	cases := []struct {
		name       string
		env        map[string]string
		rank, size int
	}{
		{"Open MPI", ompiEnv(1, 4), 1, 4},
		{"MPICH-style", map[string]string{"PMI_RANK": "2", "PMI_SIZE": "3"}, 2, 3},
		{"Slurm", map[string]string{"SLURM_PROCID": "0", "SLURM_NTASKS": "8"}, 0, 8},
		{"Open MPI before Slurm", map[string]string{"OMPI_COMM_WORLD_RANK": "3", "OMPI_COMM_WORLD_SIZE": "4", "SLURM_PROCID": "0", "SLURM_NTASKS": "1"}, 3, 4},
	}
	for _, c := range cases {
		r, ok, err := rankFromLauncher(Options{Env: c.env})
		require.NoError(t, err, c.name)
		require.True(t, ok, c.name)
		assert.Equal(t, c.rank, r.rank, c.name)
		assert.Equal(t, c.size, r.size, c.name)
	}
	bad := []struct {
		env map[string]string
		err string
	}{
		{map[string]string{"OMPI_COMM_WORLD_RANK": "1"}, "OMPI_COMM_WORLD_RANK=1 is set but OMPI_COMM_WORLD_SIZE is not"},
		{map[string]string{"PMI_RANK": "-1", "PMI_SIZE": "2"}, `PMI_RANK="-1" is not a rank`},
		{map[string]string{"SLURM_PROCID": "0", "SLURM_NTASKS": "zero"}, `SLURM_NTASKS="zero" is not a number of processes`},
		{map[string]string{"SLURM_PROCID": "4", "SLURM_NTASKS": "4"}, "SLURM_PROCID=4 is out of range 0..3 for SLURM_NTASKS=4"},
	}
	for _, c := range bad {
		ok, why := appliesLauncherEnv(Options{Env: c.env})
		assert.True(t, ok, "a malformed variable is reported, not skipped")
		assert.Contains(t, why, c.err)
		_, err := Open(Options{Env: c.env})
		require.Error(t, err)
		assert.Contains(t, err.Error(), c.err)
	}
	// One process under a launcher is a singleton.
	c, err := Choose(Options{NProcs: 1, Env: map[string]string{"SLURM_PROCID": "0", "SLURM_NTASKS": "1"}})
	require.NoError(t, err)
	assert.Equal(t, "singleton", c.Method)
}

func TestEnvExplainsWhatIsMissing(t *testing.T) {
	// mpirun's variables, but no PMIx library and no ACP_BOOTSTRAP_ADDR.
	env := ompiEnv(1, 4)
	env["PMIX_NAMESPACE"] = "4242"
	o := Options{Env: env, PMIxLibrary: "libpmix-missing.so.9"}
	c, err := Choose(o)
	require.Error(t, err, "Choose tells why Open fails")
	assert.Contains(t, err.Error(), "Set ACP_BOOTSTRAP_ADDR=host:port")
	assert.Equal(t, "env", c.Method)
	assert.Contains(t, c.Reason, "ACP_BOOTSTRAP_ADDR is not set")
	assert.Contains(t, c.Skipped, "pmi: no PMI_FD or PMI_PORT")
	_, err = Open(o)
	require.Error(t, err)
	for _, want := range []string{
		"started by Open MPI's mpirun as rank 1 of 4 (OMPI_COMM_WORLD_RANK=1, OMPI_COMM_WORLD_SIZE=4)",
		"PMIX_NAMESPACE=4242 is set but PMIx cannot be used",
		"libpmix-missing.so.9",
		"Set ACP_BOOTSTRAP_ADDR=host:port",
		"rank 0 listens there",
	} {
		assert.Contains(t, err.Error(), want)
	}

	// Slurm without any service.
	_, err = Open(Options{Env: map[string]string{"SLURM_PROCID": "1", "SLURM_NTASKS": "2"}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the launcher offers no PMI-1 (PMI_FD, PMI_PORT) or PMIx (PMIX_NAMESPACE) service")

	// An address but no rank.
	_, err = Open(Options{NProcs: 1, Addr: "127.0.0.1:47000"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "ACP_BOOTSTRAP_ADDR=127.0.0.1:47000 is set but this process does not know its rank")

	// An address without a fixed port.
	_, err = Open(Options{Addr: "127.0.0.1:0", Env: ompiEnv(0, 2)})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `ACP_BOOTSTRAP_ADDR="127.0.0.1:0" is not host:port with a fixed port`)
}

func TestEnvRankZeroMissing(t *testing.T) {
	addr := envAddr(t)
	_, err := Open(Options{Addr: addr, Env: ompiEnv(1, 2), Timeout: 300 * time.Millisecond})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "rank 1 cannot reach rank 0 at ACP_BOOTSTRAP_ADDR="+addr)
}

func TestEnvRankZeroOnAnotherHost(t *testing.T) {
	// 192.0.2.1 (TEST-NET-1) is not an address of this host.
	_, err := Open(Options{Addr: "192.0.2.1:47000", Env: ompiEnv(0, 2), Timeout: 300 * time.Millisecond})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "rank 0 cannot listen at ACP_BOOTSTRAP_ADDR=192.0.2.1:47000")
	assert.Contains(t, err.Error(), "rank 0 must run on that host")
}

func TestEnvOtherJobIsRefused(t *testing.T) {
	addr := envAddr(t)
	done := make(chan error, 1)
	go func() {
		b, err := Open(Options{Addr: addr, Env: ompiEnv(0, 2), Timeout: 3 * time.Second})
		if err == nil {
			_, err = b.AllGather([]byte{1})
			b.Close()
		}
		done <- err
	}()
	other := ompiEnv(1, 2)
	other["OMPI_MCA_ess_base_jobid"] = "999"
	_, err := Open(Options{Addr: addr, Env: other, Timeout: 3 * time.Second})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "refused rank 1")
	assert.Contains(t, err.Error(), "wrong job key")
	// Rank 0 times out naming the missing rank.
	err = <-done
	require.Error(t, err)
	assert.Contains(t, err.Error(), "rank 1")
}
