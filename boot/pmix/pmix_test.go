package pmix

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestOpenMissingLibrary(t *testing.T) {
	_, err := Open("libpmix-missing.so.9")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "libpmix-missing.so.9")
	assert.Contains(t, err.Error(), "install libpmix2")
	// Remembered, and tried in order with the next name.
	_, err = Open("libpmix-missing.so.9", "libc.so.6")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "libc.so.6 has no PMIx_Init (not a PMIx client library?)")
}

// The declarations in pmix_dl.h against the real headers, where installed
// (Debian: libpmix-dev).
func TestABIMatchesHeaders(t *testing.T) {
	flags, err := exec.Command("pkg-config", "--cflags", "pmix").Output()
	if err != nil {
		t.Skip("no PMIx headers (pkg-config pmix): install libpmix-dev to check the declarations")
	}
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "cc"
	}
	dir := t.TempDir()
	src := `#include <stdio.h>
#include <pmix.h>
int main(void) {
	printf("sizeof(pmix_proc_t) %zu\nsizeof(pmix_value_t) %zu\nsizeof(pmix_info_t) %zu\n",
	       sizeof(pmix_proc_t), sizeof(pmix_value_t), sizeof(pmix_info_t));
	printf("PMIX_BOOL %d\nPMIX_SIZE %d\nPMIX_INT %d\nPMIX_INT32 %d\nPMIX_UINT %d\nPMIX_UINT32 %d\nPMIX_UINT64 %d\n",
	       PMIX_BOOL, PMIX_SIZE, PMIX_INT, PMIX_INT32, PMIX_UINT, PMIX_UINT32, PMIX_UINT64);
	printf("PMIX_BYTE_OBJECT %d\nPMIX_GLOBAL %d\nPMIX_MAX_NSLEN %d\nPMIX_MAX_KEYLEN %d\n",
	       PMIX_BYTE_OBJECT, PMIX_GLOBAL, PMIX_MAX_NSLEN, PMIX_MAX_KEYLEN);
	return 0;
}
`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "abi.c"), []byte(src), 0o600))
	args := append(strings.Fields(string(flags)), "-o", filepath.Join(dir, "abi"), filepath.Join(dir, "abi.c"))
	out, err := exec.Command(cc, args...).CombinedOutput()
	require.NoError(t, err, "%s", out)
	out, err = exec.Command(filepath.Join(dir, "abi")).Output()
	require.NoError(t, err)
	real := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		n, err := strconv.Atoi(f[1])
		require.NoError(t, err)
		real[f[0]] = n
	}
	assert.Equal(t, real, abi())
}
