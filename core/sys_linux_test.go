package core

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// acp_abort's wait for the launcher: it returns once the reader took what
// is in the pipe, and gives up at its limit when nobody reads.
func TestAwaitOutputRead(t *testing.T) {
	var p [2]int
	require.NoError(t, unix.Pipe2(p[:], unix.O_CLOEXEC))
	defer unix.Close(p[0])
	defer unix.Close(p[1])

	start := time.Now()
	awaitOutputRead([]int{p[1]}, 2*time.Second)
	assert.Less(t, time.Since(start), 100*time.Millisecond, "an empty pipe: nothing to wait for")

	_, err := unix.Write(p[1], []byte("acp[1]: acp_abort: test message\n"))
	require.NoError(t, err)
	go func() {
		time.Sleep(50 * time.Millisecond)
		b := make([]byte, 64)
		_, _ = unix.Read(p[0], b)
	}()
	start = time.Now()
	awaitOutputRead([]int{p[1]}, 2*time.Second)
	took := time.Since(start)
	assert.GreaterOrEqual(t, took, 40*time.Millisecond, "returned before the reader read")
	assert.Less(t, took, time.Second, "kept waiting after the reader read")

	_, err = unix.Write(p[1], []byte("unread"))
	require.NoError(t, err)
	start = time.Now()
	awaitOutputRead([]int{p[1], -1}, 100*time.Millisecond)
	took = time.Since(start)
	assert.GreaterOrEqual(t, took, 90*time.Millisecond, "nobody reads: waits up to the limit")
	assert.Less(t, took, time.Second, "nobody reads: gives up at the limit")
}
