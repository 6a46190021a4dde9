package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseOriginalForms(t *testing.T) {
	prog := []string{"./a.out", "-np", "9", "--acp-verbose", "3"} // the program's own argv is left alone
	cases := []struct {
		args []string
		np   int
		env  map[string]string
	}{
		{args: nil, np: 1, env: map[string]string{}},
		{args: []string{"-n", "4"}, np: 4},
		{args: []string{"-np", "4"}, np: 4},
		{args: []string{"--acp-n=5"}, np: 5},
		{args: []string{"--acp-np=6"}, np: 6},
		{args: []string{"--acp-nprocs=7"}, np: 7},
		{args: []string{"--acp-nprocs", "8"}, np: 8},
		{args: []string{"-np", "0x10"}, np: 16},
		{args: []string{"-smemsize", "2048"}, np: 1, env: map[string]string{"ACP_SIZE_SMEM": "2048"}},
		{args: []string{"-startermemsize", "0x1000"}, np: 1, env: map[string]string{"ACP_SIZE_SMEM": "0x1000"}},
		{args: []string{"--acp-smemsize=11"}, np: 1, env: map[string]string{"ACP_SIZE_SMEM": "11"}},
		{args: []string{"--acp-startermemsize=12"}, np: 1, env: map[string]string{"ACP_SIZE_SMEM": "12"}},
		{args: []string{"-smemsize-cl", "400", "-startermemsize-dl", "1048576"}, np: 1,
			env: map[string]string{"ACP_SIZE_SMEM_CL": "400", "ACP_SIZE_SMEM_DL": "1048576"}},
		{args: []string{"-startermemsize-cl", "401", "-smemsize-dl", "402"}, np: 1,
			env: map[string]string{"ACP_SIZE_SMEM_CL": "401", "ACP_SIZE_SMEM_DL": "402"}},
		{args: []string{"--acp-smemsize-cl=13", "--acp-startermemsize-dl=14"}, np: 1,
			env: map[string]string{"ACP_SIZE_SMEM_CL": "13", "ACP_SIZE_SMEM_DL": "14"}},
		{args: []string{"--acp-startermemsize-cl=15", "--acp-smemsize-dl=16"}, np: 1,
			env: map[string]string{"ACP_SIZE_SMEM_CL": "15", "ACP_SIZE_SMEM_DL": "16"}},
		{args: []string{"-net", "UDP"}, np: 1, env: map[string]string{"ACP_TRANSPORTS": "udp"}},
		{args: []string{"-ndev", "udp"}, np: 1, env: map[string]string{"ACP_TRANSPORTS": "udp"}},
		{args: []string{"-envnet", "IB"}, np: 1, env: map[string]string{"ACP_TRANSPORTS": "ib"}},
		{args: []string{"--acp-envnet", "SHM"}, np: 1, env: map[string]string{"ACP_TRANSPORTS": "shm"}},
		{args: []string{"--acp-net=INFINIBAND"}, np: 1, env: map[string]string{"ACP_TRANSPORTS": "ib"}},
		{args: []string{"--acp-ndev=inifiniband"}, np: 1, env: map[string]string{"ACP_TRANSPORTS": "ib"}},
		{args: []string{"--acp-envnet=ib"}, np: 1, env: map[string]string{"ACP_TRANSPORTS": "ib"}},
		{args: []string{"-rsh", "rsh", "-ssh", "ssh", "-remoteshell", "x", "--acp-rsh=a", "--acp-ssh=b", "--acp-remoteshell=c"}, np: 1},
		{args: []string{"-host", "localhost,127.0.0.1", "-node", "localhost"}, np: 1},
		{args: []string{"--acp-host=127.0.0.2", "--acp-node=localhost"}, np: 1},
		{args: []string{"-mhooksmall", "-mhooklarge", "-mhookhuge"}, np: 1, env: map[string]string{
			"ACP_MALLOC_HOOK_SMALL": "1", "ACP_MALLOC_HOOK_LARGE": "1", "ACP_MALLOC_HOOK_HUGE": "1"}},
		{args: []string{"--acp-malloc-hook-small", "--acp-malloc-hook-large", "0", "--acp-malloc-hook-huge=1"}, np: 1, env: map[string]string{
			"ACP_MALLOC_HOOK_SMALL": "1", "ACP_MALLOC_HOOK_LARGE": "0", "ACP_MALLOC_HOOK_HUGE": "1"}},
		{args: []string{"-mhooklow", "0", "-mhookhigh", "262144"}, np: 1, env: map[string]string{
			"ACP_MALLOC_HOOK_LOW": "0", "ACP_MALLOC_HOOK_HIGH": "262144"}},
		{args: []string{"--acp-malloc-hook-low=64", "--acp-malloc-hook-high=65536"}, np: 1, env: map[string]string{
			"ACP_MALLOC_HOOK_LOW": "64", "ACP_MALLOC_HOOK_HIGH": "65536"}},
		{args: []string{"-ethspeed", "10000"}, np: 1, env: map[string]string{"ACP_ETHERNET_SPEED": "10000"}},
		{args: []string{"--acp-ethernet-speed=100"}, np: 1, env: map[string]string{"ACP_ETHERNET_SPEED": "100"}},
		// Every library setting, in both forms.
		{args: []string{"--acp-verbose", "2", "--acp-queue-depth=64", "--acp-size-smem", "0"}, np: 1, env: map[string]string{
			"ACP_VERBOSE": "2", "ACP_QUEUE_DEPTH": "64", "ACP_SIZE_SMEM": "0"}},
		{args: []string{"--acp-peer-timeout=2.5", "--acp-transports", "udp", "--acp-taskid", "100"}, np: 1, env: map[string]string{
			"ACP_PEER_TIMEOUT": "2.5", "ACP_TRANSPORTS": "udp", "ACP_TASKID": "100"}},
		// Options in any order; the last one wins.
		{args: []string{"-smemsize", "1", "-np", "2", "--acp-size-smem=3", "-debug"}, np: 2, env: map[string]string{"ACP_SIZE_SMEM": "3"}},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			got, err := parseArgs(append(append([]string(nil), c.args...), prog...))
			require.NoError(t, err)
			assert.Equal(t, c.np, got.np)
			if c.env == nil {
				c.env = map[string]string{}
			}
			assert.Equal(t, c.env, got.env)
			assert.Equal(t, prog, got.argv)
		})
	}
}

func TestParseFlags(t *testing.T) {
	c, err := parseArgs([]string{"-debug", "--timeout", "1.5", "prog"})
	require.NoError(t, err)
	assert.True(t, c.debug)
	assert.Equal(t, 1500*time.Millisecond, c.timeout)

	c, err = parseArgs([]string{"--acp-debug", "--timeout=250ms", "prog"})
	require.NoError(t, err)
	assert.True(t, c.debug)
	assert.Equal(t, 250*time.Millisecond, c.timeout)

	for _, h := range []string{"-h", "-help", "--acp-help", "--help"} {
		c, err := parseArgs([]string{h})
		require.NoError(t, err, h)
		assert.True(t, c.help, h)
	}
	for _, v := range []string{"-v", "-version", "--acp-version", "--version"} {
		c, err := parseArgs([]string{"-np", "2", v})
		require.NoError(t, err, v)
		assert.True(t, c.version, v)
	}

	// "--" ends the options, so that a program may start with '-'.
	c, err = parseArgs([]string{"-np", "2", "--", "-prog", "x"})
	require.NoError(t, err)
	assert.Equal(t, []string{"-prog", "x"}, c.argv)
}

func TestParseMachineFile(t *testing.T) {
	dir := t.TempDir()
	local := filepath.Join(dir, "local")
	require.NoError(t, os.WriteFile(local, []byte("# our nodes\nlocalhost\n127.0.0.1 slots=4\n\n"), 0o644))
	remote := filepath.Join(dir, "remote")
	require.NoError(t, os.WriteFile(remote, []byte("localhost\n192.0.2.7\n"), 0o644))

	for _, opt := range []string{"-machinefile", "-nodefile"} {
		c, err := parseArgs([]string{opt, local, "prog"})
		require.NoError(t, err, opt)
		assert.Equal(t, []string{"localhost", "127.0.0.1"}, c.machineFile)
	}
	_, err := parseArgs([]string{"--acp-nodefile=" + local, "prog"})
	require.NoError(t, err)

	_, err = parseArgs([]string{"--acp-machinefile=" + remote, "prog"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `host "192.0.2.7" (-machinefile) is not this machine`)
	assert.Contains(t, err.Error(), "remote hosts are not supported yet")

	// A host list overrides the file's contents, as in the original.
	_, err = parseArgs([]string{"-machinefile", remote, "-host", "localhost", "prog"})
	require.NoError(t, err)

	_, err = parseArgs([]string{"-machinefile", filepath.Join(dir, "missing"), "prog"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no such file")
}

func TestParseErrors(t *testing.T) {
	hostname, _ := os.Hostname()
	_, err := parseArgs([]string{"-host", hostname, "prog"})
	require.NoError(t, err, "this machine's own name is local")

	cases := []struct {
		args []string
		err  string
	}{
		{[]string{}, "no program to run"},
		{[]string{"-np", "4"}, "no program to run"},
		{[]string{"-np"}, "option -np needs a value"},
		{[]string{"-np", "0", "prog"}, `option -np (number of processes): "0" must be a number from 1 to`},
		{[]string{"-n", "many", "prog"}, `option -n (number of processes): "many"`},
		{[]string{"--acp-np=-2", "prog"}, "must be a number"},
		{[]string{"-smemsize", "0", "prog"}, "option -smemsize 0: the size must be greater than 0"},
		{[]string{"-smemsize-dl", "big", "prog"}, "option -smemsize-dl: --acp-size-smem-dl (ACP_SIZE_SMEM_DL) = \"big\": not an unsigned number"},
		{[]string{"-ethspeed", "0", "prog"}, "option -ethspeed: --acp-ethernet-speed (ACP_ETHERNET_SPEED) = \"0\": out of range"},
		{[]string{"-mhooklow", "-1", "prog"}, "option -mhooklow: --acp-malloc-hook-low"},
		{[]string{"-net", "tofu", "prog"}, "Tofu is not supported"},
		{[]string{"--acp-net=TOFU2", "prog"}, "Tofu is not supported"},
		{[]string{"-net", "myrinet", "prog"}, "unknown network device"},
		{[]string{"-host", "192.0.2.7", "prog"}, "remote hosts are not supported yet"},
		{[]string{"-multirun", "prog"}, "option -multirun is not supported"},
		{[]string{"--acp-multirun", "prog"}, "option --acp-multirun is not supported"},
		{[]string{"-portfile", "f", "prog"}, "option -portfile is not supported"},
		{[]string{"--acp-portfile=f", "prog"}, "option --acp-portfile is not supported"},
		{[]string{"-offsetrank", "3", "prog"}, "option -offsetrank is not supported"},
		{[]string{"--acp-offsetrank=3", "prog"}, "option --acp-offsetrank is not supported"},
		{[]string{"--acp-nosuch", "1", "prog"}, "unknown option --acp-nosuch (library settings: "},
		{[]string{"--acp-nosuch=1", "prog"}, "unknown option --acp-nosuch"},
		{[]string{"--acp-verbose", "9", "prog"}, "--acp-verbose (ACP_VERBOSE) = \"9\": out of range 0..3"},
		{[]string{"--acp-verbose", "-1", "prog"}, "value \"-1\" must not start with '-'"},
		{[]string{"--acp-verbose"}, "option --acp-verbose needs a value"},
		{[]string{"--acp-myrank", "1", "prog"}, "acprun numbers the ranks itself"},
		{[]string{"--acp-bootstrap-addr=x:1", "prog"}, "acprun starts the rendezvous itself"},
		{[]string{"--acp-job-key", "00", "prog"}, "passes it in the environment only"},
		{[]string{"-debug=1", "prog"}, "unknown option -debug=1"},
		{[]string{"--acp-debug=1", "prog"}, "option --acp-debug takes no value"},
		{[]string{"-x", "prog"}, "unknown option -x"},
		{[]string{"--timeout", "0", "prog"}, "give the time limit in seconds"},
		{[]string{"--timeout=soon", "prog"}, "give the time limit in seconds"},
		{[]string{"-np", "5000000", "prog"}, "option -np 5000000: this machine cannot run so many processes (kernel.pid_max is "},
		{[]string{"--timeout", "1e30", "prog"}, `option --timeout "1e30": more than the longest time limit, 9223372036 seconds`},
		{[]string{"--host-groups", "0", "prog"}, "give the number of host groups"},
		{[]string{"--host-groups=two", "prog"}, "give the number of host groups"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			_, err := parseArgs(c.args)
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.err)
		})
	}
	// The list of settings names only those acprun passes on from a
	// command line.
	_, err = parseArgs([]string{"--acp-nosuch", "1", "prog"})
	require.Error(t, err)
	for _, notHere := range []string{"--acp-bind-thread-cpu", "--acp-launcher-defaults", "--acp-job-key", "--acp-myrank", "--acp-portfile"} {
		assert.NotContains(t, err.Error(), notHere+" ")
	}
}

func TestJobEnv(t *testing.T) {
	c := &config{np: 3, env: map[string]string{"ACP_SIZE_SMEM": "4096", "ACP_VERBOSE": "1"}}
	inherited := []string{
		"PATH=/bin", "ACP_SIZE_SMEM=1", "ACP_SIZE_SMEM_DL=65536", "ACP_PEER_TIMEOUT=9",
		"ACP_MYRANK=7", "ACP_NPROCS=99", "ACP_BOOTSTRAP_ADDR=elsewhere:1", "ACP_JOB_KEY=stale",
	}
	env := rankEnv(jobEnv(inherited, c, "127.0.0.1:5", "k3y"), 2)
	assert.ElementsMatch(t, []string{
		"PATH=/bin",
		"ACP_SIZE_SMEM=4096",     // option beats the environment
		"ACP_SIZE_SMEM_DL=65536", // inherited, respected
		// acprun's starter sizes are defaults, below a program's own sizes
		"ACP_LAUNCHER_DEFAULTS=size-smem=1024,size-smem-cl=1024,size-smem-dl=1024",
		"ACP_PEER_TIMEOUT=9", // inherited, respected
		"ACP_VERBOSE=1",
		"ACP_MYRANK=2", "ACP_NPROCS=3", "ACP_BOOTSTRAP_ADDR=127.0.0.1:5", "ACP_JOB_KEY=k3y", // always ours
	}, env)

	// A time limit makes half of it the default hang report, and 9/10 of
	// it the default state report.
	c.timeout = 45 * time.Second
	assert.Contains(t, jobEnv(inherited, c, "127.0.0.1:5", "k3y"),
		"ACP_LAUNCHER_DEFAULTS=size-smem=1024,size-smem-cl=1024,size-smem-dl=1024,hang-report=22.5,state-report-at=40.5")
}
