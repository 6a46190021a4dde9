package ib

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/libacp/libacp/core"
)

// The progress goroutine's sleep, on eventfds in place of a device's
// descriptors: it needs no RDMA device.
func TestEventWaiter(t *testing.T) {
	var fds []int32
	for range 3 {
		fd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
		require.NoError(t, err)
		defer unix.Close(fd)
		fds = append(fds, int32(fd))
	}
	w, err := newEventWaiter(fds)
	require.NoError(t, err, "the epoll instance must be pollable by the runtime")
	defer w.close()

	start := time.Now()
	assert.Zero(t, w.wait(20*time.Millisecond), "nothing readable: the deadline ends the wait")
	assert.GreaterOrEqual(t, time.Since(start), 20*time.Millisecond)

	core.SignalEventfd(int(fds[2]))
	assert.Equal(t, uint64(1<<2), w.wait(10*time.Second), "the third descriptor is readable")
	// Still readable (level-triggered) until drained.
	core.SignalEventfd(int(fds[0]))
	assert.Equal(t, uint64(1<<0|1<<2), w.wait(10*time.Second))
	core.DrainEventfd(int(fds[0]))
	core.DrainEventfd(int(fds[2]))

	// A descriptor that becomes readable while the goroutine is parked
	// wakes it at once, not at the deadline.
	go func() {
		time.Sleep(20 * time.Millisecond)
		core.SignalEventfd(int(fds[1]))
	}()
	start = time.Now()
	assert.Equal(t, uint64(1<<1), w.wait(time.Minute))
	assert.Less(t, time.Since(start), 30*time.Second)
}

func TestEventWaiterRefusesTooManyDescriptors(t *testing.T) {
	_, err := newEventWaiter(make([]int32, 65))
	assert.ErrorContains(t, err, "more than 64")
}
