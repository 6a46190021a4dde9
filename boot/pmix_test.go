package boot

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/libacp/libacp/boot/pmix"
)

// childEnv marks a test process started by mpirun for TestPMIxUnderMpirun.
const childEnv = "ACP_BOOT_TEST_PMIX_CHILD"

// TestPMIxUnderMpirun runs this test binary as 3 processes under Open MPI's
// mpirun, each of which opens the bootstrap from its real environment.
func TestPMIxUnderMpirun(t *testing.T) {
	if os.Getenv(childEnv) != "" {
		t.Skip("inside the job")
	}
	mpirun, err := exec.LookPath("mpirun.openmpi")
	if err != nil {
		t.Skip("Open MPI's mpirun.openmpi is not installed (Debian: openmpi-bin)")
	}
	if _, err := pmix.Open(); err != nil {
		t.Skipf("no PMIx library: %v", err)
	}
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(mpirun, "--allow-run-as-root", "--oversubscribe", "--timeout", "60", "-np", "3",
		"-x", childEnv+"=1", exe, "-test.run", "^TestPMIxRank$", "-test.v", "-test.count=1")
	start := time.Now()
	out, err := cmd.CombinedOutput()
	t.Logf("mpirun -np 3 took %v:\n%s", time.Since(start).Round(time.Millisecond), out)
	require.NoError(t, err)
	assert.Equal(t, 3, strings.Count(string(out), "--- PASS: TestPMIxRank"))
}

// TestPMIxRank is one process of TestPMIxUnderMpirun's job.
func TestPMIxRank(t *testing.T) {
	if os.Getenv(childEnv) == "" {
		t.Skip("runs only under TestPMIxUnderMpirun")
	}
	o := Options{NProcs: 1, Env: LauncherEnv(nil), Timeout: 30 * time.Second}
	c, err := Choose(o)
	require.NoError(t, err)
	require.Equal(t, "pmix", c.Method, "%+v", c)

	// An MPI library would have initialised PMIx before us: PMIx_Init is
	// reference-counted, so ours is a second handle in the same process.
	lib, err := pmix.Open()
	require.NoError(t, err)
	first, err := lib.Init()
	require.NoError(t, err)

	b, err := Open(o)
	require.NoError(t, err)
	assert.Equal(t, "pmix", b.Method())
	assert.Equal(t, 3, b.Size())
	assert.Equal(t, first.Rank(), b.Rank())
	assert.Equal(t, "", b.LocalIP(), "all ranks on this host: loopback")
	require.NoError(t, exerciseCollectives(b))
	big := make([]byte, 100000) // larger than any PMI-1 value
	for i := range big {
		big[i] = byte(i * (b.Rank() + 1))
	}
	all, err := b.AllGather(big)
	require.NoError(t, err)
	for r := range b.Size() {
		assert.Equal(t, byte(7*(r+1)), all[r*len(big)+7], fmt.Sprintf("rank %d's record", r))
	}
	require.NoError(t, b.Close())

	// The first handle still works after ours was finalized.
	require.NoError(t, first.Fence(false))
	require.NoError(t, first.Finalize())
}

func TestPMIxNotAvailable(t *testing.T) {
	o := Options{Env: map[string]string{"PMIX_NAMESPACE": "job1"}, PMIxLibrary: "libpmix-missing.so.9"}
	ok, why := appliesPMIx(o)
	assert.False(t, ok, "an unloadable PMIx is skipped, so the launcher-environment rung can explain")
	assert.Contains(t, why, "PMIX_NAMESPACE=job1 is set but PMIx cannot be used")
	assert.Contains(t, why, "libpmix-missing.so.9")
	_, err := PMIxStatus("libpmix-missing.so.9")
	assert.Error(t, err)

	ok, why = appliesPMIx(Options{})
	assert.False(t, ok)
	assert.Equal(t, "no PMIX_NAMESPACE", why)
}

// staleEnv marks a test process whose PMIX_NAMESPACE no server knows.
const staleEnv = "ACP_BOOT_TEST_PMIX_STALE"

// A PMIX_NAMESPACE that no PMIx server knows (left from another job) makes
// PMIx_Init fail: the message says what to remove. PMIx_Init reads the
// process's environment, so a child process tries it.
func TestPMIxStaleNamespace(t *testing.T) {
	if os.Getenv(staleEnv) != "" {
		_, err := Open(Options{NProcs: 1, Env: LauncherEnv(nil), Timeout: 10 * time.Second})
		require.Error(t, err)
		fmt.Println(err)
		return
	}
	if _, err := pmix.Open(); err != nil {
		t.Skipf("no PMIx library: %v", err)
	}
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe, "-test.run", "^TestPMIxStaleNamespace$", "-test.count=1")
	cmd.Env = append(os.Environ(), staleEnv+"=1", "PMIX_NAMESPACE=stale-job")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "PMIX_NAMESPACE=stale-job: PMIx_Init failed")
	assert.Contains(t, string(out), "PMIX_* variables it inherited from a process of another job make it look so: remove them from its environment to run a job of one")
}
