package coretest

import (
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
