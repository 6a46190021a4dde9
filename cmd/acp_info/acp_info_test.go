package main

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func runInfo(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(args, &out, &errOut)
	return out.String(), errOut.String(), code
}

func TestHelpAndVersion(t *testing.T) {
	out, _, code := runInfo(t, "--help")
	require.Equal(t, 0, code)
	for _, s := range sections {
		assert.Contains(t, out, "  "+s+" ", "the help describes section %s", s)
	}
	assert.Contains(t, out, "--procs N[,N...]")
	out, _, code = runInfo(t, "-V")
	require.Equal(t, 0, code)
	assert.Contains(t, out, "acp_info (libacp)")
}

func TestBadArguments(t *testing.T) {
	for _, c := range []struct{ args, err string }{
		{"--procs x", `--procs "x": each value must be a number of processes from 1 to 10000000`},
		{"--procs 0", "from 1 to 10000000"},
		{"--procs", "option --procs needs a value"},
		{"--contacted -1", `--contacted "-1": must be a number of peers`},
		{"--frobnicate", `unknown option "--frobnicate"`},
		{"colours", `unknown section "colours"`},
	} {
		_, errOut, code := runInfo(t, strings.Fields(c.args)...)
		assert.Equal(t, 2, code, c.args)
		assert.Contains(t, errOut, c.err, c.args)
	}
	t.Setenv("ACP_QUEUE_DEPTH", "0")
	_, errOut, code := runInfo(t, "version")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, `ACP_QUEUE_DEPTH) = "0": out of range`, "a bad setting is named")
}

func TestSections(t *testing.T) {
	for _, v := range []string{"PMI_FD", "PMI_PORT", "PMIX_NAMESPACE", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID", "ACP_BOOTSTRAP_ADDR", "ACP_TRANSPORTS"} {
		t.Setenv(v, "") // restored after the test
		os.Unsetenv(v)
	}
	t.Setenv("PMI_FD", "7")
	t.Setenv("PMI_RANK", "1")
	t.Setenv("PMI_SIZE", "4")
	out, _, code := runInfo(t, "memory", "bootstrap", "--procs", "1000000", "transports", "settings", "cpus", "build")
	require.Equal(t, 0, code)
	order := []string{"\nBuild", "\nTransports", "\nBootstrap", "\nCPUs", "\nSettings", "\nMemory"}
	last := -1
	for _, h := range order {
		i := strings.Index(out, h)
		require.Greater(t, i, last, "section %q in the documented order", h)
		last = i
	}
	assert.Contains(t, out, "pmi: PMI_FD=7 is set")
	assert.Contains(t, out, "udp  available")
	assert.Contains(t, out, "ACP_PEER_TIMEOUT, --acp-peer-timeout VALUE  [default 30]")
	assert.Contains(t, out, "ACP_JOB_KEY, (environment only)")
	assert.Contains(t, out, "GOMAXPROCS")
	assert.Contains(t, out, "1,000,000 procs")
	assert.Contains(t, out, "registration table")
	assert.Contains(t, out, "udp per-peer state")

	t.Setenv("ACP_TRANSPORTS", "udp")
	t.Setenv("ACP_SIZE_SMEM", "1048576")
	out, _, code = runInfo(t, "memory", "settings", "--procs=2")
	require.Equal(t, 0, code)
	assert.NotContains(t, out, "shm (no estimate)", "only the transports in ACP_TRANSPORTS")
	assert.Contains(t, out, "in force here: 1048576 (environment)")
}

func TestHuman(t *testing.T) {
	assert.Equal(t, "1000 B", human(1000))
	assert.Equal(t, "1.5 KiB", human(1536))
	assert.Equal(t, "2.0 MiB", human(2<<20))
	assert.Equal(t, "1.50 GiB", human(3<<29))
	assert.Equal(t, "1,000,000", grouped(1_000_000))
	assert.Equal(t, "999", grouped(999))
}

// Variables left from another job select a rung that fails at once:
// the bootstrap section says so, and where the rank came from.
func TestBootstrapTellsWhenAcpInitWouldFail(t *testing.T) {
	for _, v := range []string{"PMI_FD", "PMI_PORT", "PMIX_NAMESPACE", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID", "ACP_BOOTSTRAP_ADDR", "ACP_JOB_KEY", "ACP_MYRANK", "ACP_NPROCS"} {
		t.Setenv(v, "") // restored after the test
		os.Unsetenv(v)
	}
	t.Setenv("ACP_BOOTSTRAP_ADDR", "127.0.0.1:1")
	t.Setenv("ACP_JOB_KEY", "00ff")
	out, _, code := runInfo(t, "bootstrap")
	require.Equal(t, 0, code)
	assert.Contains(t, out, "  acprun: ACP_BOOTSTRAP_ADDR=127.0.0.1:1 and ACP_JOB_KEY are set")
	assert.Contains(t, out, "  acp_init would fail: ACP_BOOTSTRAP_ADDR=127.0.0.1:1 is set but ACP_MYRANK and ACP_NPROCS are not")

	os.Unsetenv("ACP_BOOTSTRAP_ADDR")
	os.Unsetenv("ACP_JOB_KEY")
	t.Setenv("ACP_MYRANK", "4")
	t.Setenv("ACP_NPROCS", "4")
	out, _, code = runInfo(t, "bootstrap")
	require.Equal(t, 0, code)
	assert.Contains(t, out, "  tree: ACP_MYRANK=4 and ACP_NPROCS=4 (in the environment) are set")
	assert.Contains(t, out, "  acp_init would fail: --acp-myrank (ACP_MYRANK) = 4 is out of range 0..3")
}
