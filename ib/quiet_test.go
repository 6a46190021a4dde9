package ib

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// These tests need no RDMA device: they check the progress goroutine's
// choice of sleep while the application's threads poll in their waits.

func TestSleepsQuietWhileAWaitPolls(t *testing.T) {
	e := &endpoint{}
	var seen uint64
	assert.False(t, e.sleepQuiet(false, &seen), "nobody waits: armed")

	e.WaitPolls()
	assert.True(t, e.sleepQuiet(false, &seen), "a wait polls")
	assert.True(t, e.quiet.Load())
	assert.True(t, e.sleepQuiet(true, &seen), "the same wait still polls")
	e.WaitEnds()

	// After a quiet sleep: quiet again only if a wait began meanwhile.
	assert.False(t, e.sleepQuiet(true, &seen), "no wait began during the quiet sleep")
	assert.False(t, e.quiet.Load())
	e.WaitPolls()
	e.WaitEnds()
	assert.False(t, e.sleepQuiet(false, &seen), "a wait began, but the sleep before was armed")
	e.WaitPolls()
	e.WaitEnds()
	e.WaitPolls()
	e.WaitEnds()
	assert.True(t, e.sleepQuiet(true, &seen), "waits began during the quiet sleep")
	assert.False(t, e.sleepQuiet(true, &seen), "then none")
}

func TestIssueWakesNoQuietSleeper(t *testing.T) {
	fd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	require.NoError(t, err)
	defer unix.Close(fd)
	e := &endpoint{wakeFD: fd}
	signalled := func() bool {
		var b [8]byte
		n, _ := unix.Read(fd, b[:])
		return n == 8
	}

	e.deaf.Store(true)
	e.wakeIdle()
	assert.True(t, signalled(), "a deaf sleeper is woken")

	// A quiet sleep ends within quietLease by itself.
	e.quiet.Store(true)
	e.wakeIdle()
	assert.False(t, signalled(), "a quiet sleeper is left alone")

	e.quiet.Store(false)
	e.deaf.Store(false)
	e.wakeIdle()
	assert.False(t, signalled(), "a sleeper that sees completions is left alone")
}
