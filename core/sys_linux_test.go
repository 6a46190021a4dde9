package core

import (
	"context"
	"os"
	"os/exec"
	"runtime"
	"testing"
	"time"
	"unsafe"

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

// A waiter for a lock word or a user count must let the holder run when
// the holder is a goroutine the scheduler took off its P. The scenario runs
// in a child process with one P and no asynchronous preemption (the
// runtime can seldom preempt a thread that spins in sched_yield anyway, on
// a loaded CPU never): a waiter that kept the P would hang it for good.
func TestSpinWaitersHandOverTheP(t *testing.T) {
	if os.Getenv("ACP_TEST_SPINWAIT_CHILD") == "1" {
		spinWaitScenario(t)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run", "^TestSpinWaitersHandOverTheP$", "-test.v")
	cmd.Env = append(os.Environ(), "ACP_TEST_SPINWAIT_CHILD=1", "GOMAXPROCS=1", "GODEBUG=asyncpreemptoff=1")
	out, err := cmd.CombinedOutput()
	require.NoError(t, ctx.Err(), "the child hung: a waiter kept the only P from the holder it waited for\n%s", out)
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "--- PASS: TestSpinWaitersHandOverTheP")
}

func spinWaitScenario(t *testing.T) {
	require.Equal(t, 1, runtime.GOMAXPROCS(0))

	// The command queue's lock, held by this goroutine while it is off
	// the P (as if preempted) and the waiter runs.
	f, err := newFastState(64)
	require.NoError(t, err)
	f.lock()
	locked := make(chan struct{})
	go func() {
		f.lock()
		f.unlock()
		close(locked)
	}()
	runtime.Gosched() // the waiter runs now and finds the lock held
	f.unlock()
	<-locked

	// Unregistering waits for an access in progress the same way.
	tab, l := newTable(t)
	buf := make([]byte, 64)
	r, err := tab.Add(unsafe.Pointer(&buf[0]), 64, 0)
	require.NoError(t, err)
	_, pinned, st := tab.Acquire(l.GAOf(2, r, r.Base), 8)
	require.Equal(t, StatusOK, st)
	removed := make(chan struct{})
	go func() {
		assert.NoError(t, tab.Remove(r.Seg))
		close(removed)
	}()
	runtime.Gosched()
	pinned.Release()
	<-removed
}

// affinity is the calling thread's CPU mask.
func affinity(t *testing.T) unix.CPUSet {
	var set unix.CPUSet
	require.NoError(t, unix.SchedGetaffinity(0, &set))
	return set
}

// onLockedThread runs f on a goroutine locked to its own thread, which ends
// with it (the goroutine exits locked): a test may change its mask freely.
func onLockedThread(f func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread()
		f()
	}()
	<-done
}

func TestPinCallingThreadPinsThatThreadOnly(t *testing.T) {
	var wide unix.CPUSet
	onLockedThread(func() { wide = affinity(t) })
	if wide.Count() < 2 {
		t.Skip("needs 2 CPUs")
	}
	last := 0
	for c := 0; c < 1024; c++ {
		if wide.IsSet(c) {
			last = c
		}
	}
	var one unix.CPUSet
	one.Set(last)

	onLockedThread(func() {
		err := PinCallingThread(1023)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "CPU 1023 is not one this process may use")
		assert.Equal(t, wide, affinity(t), "a refused pin changes nothing")

		require.NoError(t, PinCallingThread(last))
		assert.Equal(t, one, affinity(t))
		// Threads that goroutines started from here run on keep every CPU
		// (they hold their threads at once, so the runtime makes some).
		const n = 4
		got := make(chan unix.CPUSet, n)
		release := make(chan struct{})
		for range n {
			go func() {
				runtime.LockOSThread()
				got <- affinity(t)
				<-release
			}()
		}
		for range n {
			assert.Equal(t, wide, <-got)
		}
		close(release)
	})
	// Other threads keep their CPUs.
	onLockedThread(func() { assert.Equal(t, wide, affinity(t)) })
}
