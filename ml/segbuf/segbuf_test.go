package segbuf_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/libacp/libacp/core"
	"github.com/libacp/libacp/core/coretest"
	_ "github.com/libacp/libacp/core/memnet"
	"github.com/libacp/libacp/ml/segbuf"
	_ "github.com/libacp/libacp/shm"
)

type world struct {
	*coretest.World
	libs []*segbuf.Lib
}

func newWorld(t *testing.T, n int, settings ...string) *world {
	t.Helper()
	return newWorldOn(t, "memnet", n, settings...)
}

func newWorldOn(t *testing.T, transport string, n int, settings ...string) *world {
	t.Helper()
	w := &world{World: coretest.NewWorld(t, n, transport, append([]string{"size-smem-cl=1024"}, settings...)...)}
	w.libs = make([]*segbuf.Lib, n)
	w.Run(func(r int, e *core.Engine) error {
		l, err := segbuf.Start(e)
		w.libs[r] = l
		return err
	})
	return w
}

func (w *world) close() {
	w.Run(func(r int, _ *core.Engine) error { return w.libs[r].Stop() })
	w.Close()
}

// roleOf is rank r's end in the two-rank tests: rank 0 the source, rank 1
// the destination.
func roleOf(r int) segbuf.Role {
	if r == 1 {
		return segbuf.Dest
	}
	return segbuf.Source
}

func check(cond bool, format string, args ...any) error {
	if !cond {
		return fmt.Errorf(format, args...)
	}
	return nil
}

func waitFor(cond func() bool) error {
	if !coretest.WaitFor(10*time.Second, cond) {
		return errors.New("timed out")
	}
	return nil
}

// The whole protocol: connect, fill the ring, release, wrap around several
// times, check counters and data, disconnect, free. Over shared memory
// each end publishes its counts with stores into the peer's record.
func TestFullCycle(t *testing.T) {
	t.Run("memnet", func(t *testing.T) { fullCycle(t, newWorld(t, 2, "memnet-shuffle=1")) })
	t.Run("shm", func(t *testing.T) { fullCycle(t, newWorldOn(t, "shm", 2)) })
}

func fullCycle(t *testing.T, w *world) {
	const segSize, segNum, rounds = 1000, 4, 11
	defer w.close()
	w.Run(func(r int, e *core.Engine) error {
		l := w.libs[r]
		buf := coretest.CMem(t, segSize*segNum)
		role := roleOf(r)
		s, err := l.CreateSegbuf(role, 1-r, unsafe.Pointer(&buf[0]), segSize, segNum)
		if err != nil {
			return err
		}
		if err := s.Connect(); err != nil {
			return err
		}
		if ok, err := s.IsConnected(); !ok || err != nil {
			return fmt.Errorf("IsConnected after Connect: %v, %v", ok, err)
		}
		for k := 0; k < rounds; k++ {
			seg := buf[(k%segNum)*segSize:][:segSize]
			if r == 0 {
				if err := waitFor(func() bool { ok, _ := s.IsReady(); return ok }); err != nil {
					return fmt.Errorf("segment %d: ring never had room: %v", k, err)
				}
				for i := range seg {
					seg[i] = byte(k + i)
				}
				if err := s.Ack(); err != nil {
					return err
				}
				if k == segNum-1 {
					// The destination releases nothing before it has
					// everything: the ring is full now.
					if ok, err := s.IsReady(); ok || err != nil {
						return fmt.Errorf("IsReady with a full ring: %v, %v", ok, err)
					}
					if err := s.Ack(); !errors.Is(err, segbuf.ErrFull) {
						return fmt.Errorf("Ack with a full ring: %v", err)
					}
				}
				continue
			}
			if k == 0 {
				// Wait until the first segNum segments are all there.
				if err := waitFor(func() bool {
					_, tail, _, _ := s.Counters()
					ok, _ := s.IsAcked()
					return tail == 0 && ok
				}); err != nil {
					return err
				}
				time.Sleep(20 * time.Millisecond)
			}
			if err := waitFor(func() bool { ok, _ := s.IsAcked(); return ok }); err != nil {
				return fmt.Errorf("segment %d never arrived: %v", k, err)
			}
			head, _, _, err := s.Counters()
			if err != nil {
				return err
			}
			if err := check(head == int64(k%segNum), "head %d before releasing segment %d", head, k); err != nil {
				return err
			}
			for i := range seg {
				if seg[i] != byte(k+i) {
					return fmt.Errorf("segment %d byte %d: %d", k, i, seg[i])
				}
			}
			if err := s.Ready(); err != nil {
				return err
			}
		}
		if r == 1 {
			if ok, err := s.IsAcked(); ok || err != nil {
				return fmt.Errorf("IsAcked with an empty ring: %v, %v", ok, err)
			}
			if err := s.Ready(); !errors.Is(err, segbuf.ErrEmpty) {
				return fmt.Errorf("Ready with an empty ring: %v", err)
			}
		} else {
			// Every copy completed once the destination released them all.
			if err := waitFor(func() bool { h, t, n, _ := s.Counters(); return h == t && n == t }); err != nil {
				return err
			}
			h, tl, n, _ := s.Counters()
			if err := check(tl == rounds%segNum && h == tl && n == tl, "source counters %d %d %d", h, tl, n); err != nil {
				return err
			}
		}
		if err := s.Free(); err == nil {
			return fmt.Errorf("Free before Disconnect succeeded")
		}
		if err := s.Disconnect(); err != nil {
			return err
		}
		if err := s.Ack(); err == nil {
			return fmt.Errorf("Ack after Disconnect succeeded")
		}
		if _, _, _, err := s.Counters(); err == nil {
			return fmt.Errorf("Counters after Disconnect succeeded")
		}
		if err := s.Free(); err != nil {
			return err
		}
		return check(s.Free() != nil, "second Free succeeded")
	})
}

// Mismatched segment sizes: both ends fail to connect.
func TestMismatchRefused(t *testing.T) {
	w := newWorld(t, 2)
	defer w.close()
	w.Run(func(r int, e *core.Engine) error {
		buf := coretest.CMem(t, 4096)
		role := roleOf(r)
		s, err := w.libs[r].CreateSegbuf(role, 1-r, unsafe.Pointer(&buf[0]), uint64(64*(r+1)), 4)
		if err != nil {
			return err
		}
		err = s.Connect()
		return check(err != nil && bytes.Contains([]byte(err.Error()), []byte("segment")), "Connect: %v", err)
	})
}

// Several segmented buffers between the same ranks meet in creation order.
func TestCreationOrder(t *testing.T) {
	const n = 5
	w := newWorld(t, 2)
	defer w.close()
	w.Run(func(r int, e *core.Engine) error {
		var ss []*segbuf.Segbuf
		var bufs [][]byte
		for i := 0; i < n; i++ {
			buf := coretest.CMem(t, 64)
			role := roleOf(r)
			s, err := w.libs[r].CreateSegbuf(role, 1-r, unsafe.Pointer(&buf[0]), 8, 8)
			if err != nil {
				return err
			}
			ss, bufs = append(ss, s), append(bufs, buf)
		}
		for i := n - 1; i >= 0; i-- {
			if err := ss[i].Connect(); err != nil {
				return err
			}
			if r == 0 {
				bufs[i][0] = byte(100 + i)
				if err := ss[i].Ack(); err != nil {
					return err
				}
				continue
			}
			if err := waitFor(func() bool { ok, _ := ss[i].IsAcked(); return ok }); err != nil {
				return err
			}
			if err := check(bufs[i][0] == byte(100+i), "segbuf %d carried %d", i, bufs[i][0]); err != nil {
				return err
			}
		}
		for _, s := range ss {
			if err := s.Disconnect(); err != nil {
				return err
			}
		}
		for _, s := range ss {
			if err := s.Free(); err != nil {
				return err
			}
		}
		return nil
	})
}

func TestBadInput(t *testing.T) {
	w := newWorld(t, 2)
	defer w.close()
	w.Run(func(r int, e *core.Engine) error {
		l := w.libs[r]
		buf := coretest.CMem(t, 64)
		p := unsafe.Pointer(&buf[0])
		for _, c := range []struct {
			peer       int
			buf        unsafe.Pointer
			size, nseg uint64
		}{{r, p, 8, 8}, {-1, p, 8, 8}, {2, p, 8, 8}, {1 - r, nil, 8, 8}, {1 - r, p, 0, 8}, {1 - r, p, 8, 0}, {1 - r, p, 1 << 62, 8}} {
			if _, err := l.CreateSegbuf(segbuf.Source, c.peer, c.buf, c.size, c.nseg); err == nil {
				return fmt.Errorf("CreateSegbuf(%d, %p, %d, %d) succeeded", c.peer, c.buf, c.size, c.nseg)
			}
		}
		role := roleOf(r)
		s, err := l.CreateSegbuf(role, 1-r, p, 8, 8)
		if err != nil {
			return err
		}
		if err := s.Connect(); err != nil {
			return err
		}
		if r == 1 {
			if err := s.Ack(); err == nil {
				return fmt.Errorf("Ack on the destination succeeded")
			}
		} else if err := s.Ready(); err == nil {
			return fmt.Errorf("Ready on the source succeeded")
		}
		if err := s.Disconnect(); err != nil {
			return err
		}
		if err := s.Disconnect(); err == nil {
			return fmt.Errorf("second Disconnect succeeded")
		}
		return s.Free()
	})
}

// A library nobody used stops with two barriers; one whose endpoints never
// connected stops too.
func TestStopUnused(t *testing.T) {
	w := newWorld(t, 3)
	w.Run(func(r int, e *core.Engine) error {
		if r == 2 {
			buf := coretest.CMem(t, 64)
			_, err := w.libs[r].CreateSegbuf(segbuf.Dest, 0, unsafe.Pointer(&buf[0]), 8, 8)
			return err
		}
		return nil
	})
	w.close()
}

func TestStarterTooSmall(t *testing.T) {
	w := coretest.NewWorld(t, 1, "memnet", "size-smem-cl=64")
	defer w.Close()
	_, err := segbuf.Start(w.Engines[0])
	assert.ErrorContains(t, err, "--acp-size-smem-cl")
}

// countingWaiter is done after n steps and records whether the engine
// said, at each step, that a thread polls in a wait.
type countingWaiter struct {
	e      *core.Engine
	n      int
	polled []bool
}

func (w *countingWaiter) Done() bool { return len(w.polled) >= w.n }
func (w *countingWaiter) Step() bool {
	w.polled = append(w.polled, w.e.Polled())
	return false
}

// turnWaiter counts, while the wait spins (Engine.Polled), the times it
// is asked whether it is done (once or twice a turn) and stepped; it is
// done after n such questions or at the first asked outside the spin.
type turnWaiter struct {
	e            *core.Engine
	first        bool
	n            int
	asked, steps int
	outside      bool
}

func (w *turnWaiter) PollFirst() bool { return w.first }
func (w *turnWaiter) Done() bool {
	if w.e.Polled() {
		w.asked++
	} else {
		w.outside = true
	}
	return w.asked >= w.n || w.outside
}
func (w *turnWaiter) Step() bool {
	if w.e.Polled() {
		w.steps++
	}
	return false
}

// A waiter that only a receipt can move (PollFirst) is stepped after a
// poll that found work, and every 8th turn otherwise (here no poll finds
// any); another is stepped at every turn.
func TestPollFirstWaiterIsSteppedAfterPolls(t *testing.T) {
	w := newWorld(t, 1)
	defer w.close()
	for _, first := range []bool{false, true} {
		tw := &turnWaiter{e: w.Engines[0], first: first, n: 800}
		w.libs[0].Wait(tw)
		require.GreaterOrEqual(t, tw.asked, 64, "the wait stopped spinning after %d questions (a loaded machine?)", tw.asked)
		if first {
			// One question a turn.
			assert.LessOrEqual(t, tw.steps*8, tw.asked+8, "PollFirst: %d steps in %d turns", tw.steps, tw.asked)
			assert.GreaterOrEqual(t, tw.steps*8, tw.asked-8, "PollFirst: %d steps in %d turns", tw.steps, tw.asked)
		} else {
			// Two questions a turn, around the step.
			assert.GreaterOrEqual(t, tw.steps*2, tw.asked-2, "%d steps in %d questions", tw.steps, tw.asked)
		}
	}
}

// A thread in Wait counts as polling the transports (Engine.Polled, which
// keeps a transport's progress goroutine from competing with it) while it
// spins, no longer once it sleeps, and not after the wait. Whether 100
// steps without progress fit in the spin depends on the machine (on a
// loaded one they took more than its millisecond by step 64), so the test
// asks for the order: polled from the first step, then at most a switch
// to not polled.
func TestWaitCountsAsPolling(t *testing.T) {
	w := newWorld(t, 1)
	defer w.close()
	e := w.Engines[0]
	require.False(t, e.Polled())
	cw := &countingWaiter{e: e, n: 100}
	w.libs[0].Wait(cw)
	require.True(t, cw.polled[0], "the first step, in the spin")
	for i := 1; i < len(cw.polled); i++ {
		require.False(t, cw.polled[i] && !cw.polled[i-1], "step %d polls again after the wait slept", i)
	}
	require.False(t, e.Polled(), "after the wait")
}

// busyPoller always has work and counts the passes over it.
type busyPoller struct {
	background, foreground atomic.Int32
}

func (p *busyPoller) Progress(background bool) (changed, pending bool) {
	if background {
		p.background.Add(1)
	} else {
		p.foreground.Add(1)
	}
	return false, true
}

func (p *busyPoller) Abandon() {}

// While a thread waits outside Wait (SetOutsideWaits), the background
// goroutine leaves the endpoints to it; Pass is its pass. When it stops
// waiting, the goroutine goes on.
func TestOutsideWaitKeepsBackgroundAway(t *testing.T) {
	w := newWorld(t, 1)
	defer w.close()
	l := w.libs[0]
	var outside atomic.Int32
	outside.Store(1)
	l.SetOutsideWaits(outside.Load)
	p := &busyPoller{}
	l.Add(p)
	defer l.Remove(p)

	time.Sleep(50 * time.Millisecond)
	// One pass may have begun before the goroutine saw the waiter.
	assert.LessOrEqual(t, p.background.Load(), int32(1), "passes while a thread waits outside")
	before := p.background.Load()
	l.Pass()
	assert.Equal(t, before+1, p.background.Load(), "Pass is a background pass")

	outside.Store(0)
	require.True(t, coretest.WaitFor(10*time.Second, func() bool { return p.background.Load() > before+3 }),
		"the goroutine passes again once nobody waits")
}

// A connect that waits longer than the hang-report setting for its peer
// prints the segmented buffer it waits on; the peer, which did not wait,
// prints nothing.
func TestHangReportListsTheSegbuf(t *testing.T) {
	w := newWorld(t, 2, "hang-report=0.05")
	defer w.close()
	w.Run(func(r int, _ *core.Engine) error {
		if r == 1 {
			time.Sleep(400 * time.Millisecond) // rank 0's Connect waits for this end
		}
		buf := coretest.CMem(t, 64)
		s, err := w.libs[r].CreateSegbuf(roleOf(r), 1-r, unsafe.Pointer(&buf[0]), 16, 4)
		if err == nil {
			err = s.Connect()
		}
		if err == nil {
			err = s.Disconnect()
		}
		if err == nil {
			err = s.Free()
		}
		return err
	})
	out := w.Stderr.String()
	assert.Equal(t, 1, strings.Count(out, "acp[0]: hang report: a wait on a channel or segmented buffer has waited"), out)
	assert.Regexp(t, `acp\[0\]: hang report:   segmented buffer, source end with rank 1: connected false .*; tail 0, head 0, sent 0, 0 copies in flight`, out)
	assert.NotContains(t, out, "acp[1]: hang report")
}
