package coretest

import (
	"os"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// CMem is n bytes (at least one page) outside the Go heap, as a C
// program's buffers are: memory that peers and adapters may touch and that
// may be registered. It is unmapped when the test ends.
func CMem(t testing.TB, n int) []byte {
	t.Helper()
	if n == 0 {
		n = 1
	}
	b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	require.NoError(t, err)
	t.Cleanup(func() { _ = unix.Munmap(b) })
	return b
}

// EnvNumber is the environment variable's number (decimal or 0x hex), or
// def when it is not set: how the random tests take another seed or
// length for a soak.
func EnvNumber(t testing.TB, name string, def uint64) uint64 {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.ParseUint(v, 0, 64)
	require.NoError(t, err, name)
	return n
}
