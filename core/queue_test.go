package core

import (
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// manualNet is a transport whose operations complete only when the test
// says so, to observe the command queue's ordering rules exactly.
type manualNet struct {
	mu         sync.Mutex
	pending    []manualOp
	sent       [][]byte
	orderWaits int // OrderWaits calls
}

type manualOp struct {
	kind string
	c    Completion
}

func (m *manualNet) Name() string                      { return "manual" }
func (m *manualNet) Address() []byte                   { return []byte{0} }
func (m *manualNet) Connect(AddressBook, uint64) error { return nil }
func (m *manualNet) Poll() bool                        { return false }
func (m *manualNet) Quiesce(time.Time) error           { return nil }
func (m *manualNet) Close() error                      { return nil }
func (m *manualNet) Send(_ int, msg []byte)            { m.mu.Lock(); m.sent = append(m.sent, msg); m.mu.Unlock() }
func (m *manualNet) add(kind string, c Completion) {
	m.mu.Lock()
	m.pending = append(m.pending, manualOp{kind, c})
	m.mu.Unlock()
}
func (m *manualNet) Put(_ int, _ GA, _ unsafe.Pointer, _ uint64, c Completion) { m.add("put", c) }
func (m *manualNet) Get(_ int, _ GA, _ unsafe.Pointer, _ uint64, c Completion) { m.add("get", c) }
func (m *manualNet) Atomic(_ int, _ AtomicOp, _ GA, _, _ uint64, c Completion) { m.add("atomic", c) }

func (m *manualNet) OrderWaits()    { m.mu.Lock(); m.orderWaits++; m.mu.Unlock() }
func (m *manualNet) toldWaits() int { m.mu.Lock(); defer m.mu.Unlock(); return m.orderWaits }

func (m *manualNet) started() int { m.mu.Lock(); defer m.mu.Unlock(); return len(m.pending) }

// finish completes the i-th operation the transport was given.
func (m *manualNet) finish(i int, err error) {
	m.mu.Lock()
	c := m.pending[i].c
	m.mu.Unlock()
	c.OnComplete(0, err)
}

var manual = &manualNet{}

func init() {
	RegisterTransport(TransportInfo{Name: "manual", Colors: 1, Open: func(TransportConfig) (Transport, error) { return manual, nil }})
}

// pairExchanger pretends to be a two-process job whose peer publishes the
// same record as we do.
type pairExchanger struct{}

func (pairExchanger) Rank() int { return 0 }
func (pairExchanger) Size() int { return 2 }
func (pairExchanger) AllGather(r []byte) ([]byte, error) {
	return append(append([]byte{}, r...), r...), nil
}
func (pairExchanger) Barrier() error    { return nil }
func (pairExchanger) Abort(int, string) {}
func (pairExchanger) Close() error      { return nil }

// newManualEngine starts rank 0 of two over the manual transport, with
// settings given as name, value pairs.
func newManualEngine(t *testing.T, settings ...string) *Engine {
	*manual = manualNet{}
	s := NewSettings(BaseSettings)
	require.NoError(t, s.Set("transports", "manual", "test"))
	for i := 0; i+1 < len(settings); i += 2 {
		require.NoError(t, s.Set(settings[i], settings[i+1], "test"))
	}
	e, err := New(Config{Settings: s, Exchanger: pairExchanger{}})
	require.NoError(t, err)
	return e
}

func TestHandlesCompleteInOrder(t *testing.T) {
	e := newManualEngine(t)
	me, _ := e.StarterGA(0)
	peer, _ := e.StarterGA(1)

	h1, err := e.Copy(peer, me, 8, HandleNull) // put: waits for the transport
	require.NoError(t, err)
	h2, err := e.Copy(me+64, me, 8, HandleNull) // local: done inline
	require.NoError(t, err)
	assert.Equal(t, h1+1, h2, "handles are consecutive")
	assert.Equal(t, Handle(1), h1, "handles start at 1")
	assert.True(t, e.Inquire(h2), "h2 finished but h1 before it did not: incomplete")
	assert.True(t, e.Inquire(HandleAll))
	assert.False(t, e.Inquire(HandleNull))
	assert.False(t, e.Inquire(h2+100), "never issued")

	manual.finish(0, nil)
	assert.False(t, e.Inquire(h1))
	assert.False(t, e.Inquire(h2), "the finished prefix covers h2 now")
	e.Complete(h2)
}

// OpDone looks at one operation: an operation whose predecessors are still
// in flight is done by itself, and a done flag left in a slot is never
// taken for the operation that reuses the slot later.
func TestOpDoneIgnoresEarlierOperations(t *testing.T) {
	e := newManualEngine(t, "queue-depth", "4")
	me, _ := e.StarterGA(0)
	peer, _ := e.StarterGA(1)

	h1, _ := e.Copy(peer, me, 8, HandleNull)      // waits for the transport
	h2, _ := e.Copy(peer+8, me, 8, HandleNull)    // waits too
	h3, _ := e.Copy(me+64, me+128, 8, HandleNull) // local: done inline
	assert.False(t, e.OpDone(h1))
	assert.False(t, e.OpDone(h2))
	assert.True(t, e.OpDone(h3), "done, though h1 and h2 before it are not")
	assert.True(t, e.Inquire(h3), "Inquire waits for those too")
	assert.True(t, e.OpDone(HandleNull))
	assert.True(t, e.OpDone(h3+100), "never issued")

	manual.finish(1, nil) // h2
	assert.True(t, e.OpDone(h2))
	assert.False(t, e.OpDone(h1))
	manual.finish(0, nil) // h1: the mark passes h3
	assert.True(t, e.OpDone(h1))

	// h5 takes h1's slot again (depth 4), h6 h2's: their flags are theirs.
	h4, _ := e.Copy(me+64, me+128, 8, HandleNull)
	h5, _ := e.Copy(peer+16, me, 8, HandleNull)
	h6, _ := e.Copy(me+64, me+128, 8, HandleNull)
	require.Equal(t, h1+4, h5)
	assert.True(t, e.OpDone(h4))
	assert.False(t, e.OpDone(h5), "h1's slot, h1 done long ago")
	assert.True(t, e.OpDone(h6))
	assert.True(t, e.OpDone(h1))
	manual.finish(2, nil) // h5
	assert.True(t, e.OpDone(h5))
	assert.False(t, e.Inquire(h6))
}

func TestOrderDelaysStart(t *testing.T) {
	e := newManualEngine(t)
	me, _ := e.StarterGA(0)
	peer, _ := e.StarterGA(1)

	h1, _ := e.Copy(peer, me, 8, HandleNull)
	_, _ = e.Copy(peer+8, me, 8, HandleNull)
	require.Equal(t, 2, manual.started(), "unordered operations start at once")

	h3, _ := e.Copy(peer+16, me, 8, h1) // after h1
	h4, _ := e.Copy(peer+24, me, 8, HandleAll)
	h5, _ := e.Copy(peer+32, me, 8, HandleCont)
	assert.Equal(t, 2, manual.started(), "ordered operations wait")

	manual.finish(0, nil) // h1 done: h3 may start, h4 still waits for h2 and h3
	assert.Equal(t, 3, manual.started())
	manual.finish(1, nil) // h2
	assert.Equal(t, 3, manual.started(), "h4 also waits for h3")
	manual.finish(2, nil) // h3: h4 starts
	assert.Equal(t, 4, manual.started())
	manual.finish(3, nil) // h4: h5 starts
	assert.Equal(t, 5, manual.started())
	assert.True(t, e.Inquire(h5))
	manual.finish(4, nil)
	assert.False(t, e.Inquire(h5))
	_, _ = h3, h4
}

// A transport whose progress thread may sleep through completions that
// the application polls for (OrderWatcher) is told whenever an operation
// begins to wait for earlier ones, and OrderWaiting holds until none
// waits.
func TestTransportToldOfOrderedWaits(t *testing.T) {
	e := newManualEngine(t)
	me, _ := e.StarterGA(0)
	peer, _ := e.StarterGA(1)
	h1, _ := e.Copy(peer, me, 8, HandleNull)
	assert.Zero(t, manual.toldWaits(), "an operation that starts at once")
	assert.False(t, e.OrderWaiting())
	_, _ = e.Copy(peer+8, me, 8, h1)
	_, _ = e.Copy(peer+16, me, 8, HandleAll)
	assert.Equal(t, 2, manual.toldWaits(), "one call per operation that waits")
	assert.True(t, e.OrderWaiting())
	manual.finish(0, nil) // h2 starts; h3 waits for it
	assert.True(t, e.OrderWaiting())
	manual.finish(1, nil) // h3 starts
	assert.False(t, e.OrderWaiting(), "nothing waits")
	manual.finish(2, nil)
	assert.Equal(t, 2, manual.toldWaits())
}

func TestOrderedLocalChainRunsInline(t *testing.T) {
	e := newManualEngine(t)
	me, _ := e.StarterGA(0)
	peer, _ := e.StarterGA(1)
	mem := e.StarterMemory(SegStarter)
	mem[0] = 7
	h, _ := e.Copy(peer, me, 8, HandleNull)
	// A chain of local copies behind a remote one: none may run before it.
	prev := h
	for i := 1; i <= 100; i++ {
		prev, _ = e.Copy(me+GA(i), me+GA(i-1), 1, prev)
	}
	assert.Zero(t, mem[100], "a local copy ran before the operation it is ordered after")
	manual.finish(0, nil)
	assert.Equal(t, byte(7), mem[100], "the whole chain ran when the first operation finished")
	assert.False(t, e.Inquire(HandleAll))
}

func TestOrderHandleMustBeIssued(t *testing.T) {
	e := newManualEngine(t)
	me, _ := e.StarterGA(0)
	_, err := e.Copy(me+8, me, 8, 5)
	assert.ErrorContains(t, err, "not been issued")
	_, err = e.Copy(me+8, me, 8, -7)
	assert.Error(t, err)
	h, err := e.Copy(me+8, me, 8, HandleNull)
	require.NoError(t, err)
	assert.Equal(t, Handle(1), h, "rejected calls consume no handle")
}

func TestErrorCompletionCounts(t *testing.T) {
	e := newManualEngine(t)
	me, _ := e.StarterGA(0)
	peer, _ := e.StarterGA(1)
	h, _ := e.Copy(peer, me, 8, HandleNull)
	manual.finish(0, StatusOutOfBounds.Err())
	assert.False(t, e.Inquire(h), "an operation that failed is complete")
	assert.Equal(t, int64(1), e.Errors())
	assert.True(t, e.Failed(h))
	h2, _ := e.Copy(peer, me, 8, HandleNull)
	manual.finish(1, nil)
	assert.False(t, e.Failed(h2), "only the failed handle is reported")
}

func TestReportHoldsOnlyItsOwnFailures(t *testing.T) {
	e := newManualEngine(t)
	me, _ := e.StarterGA(0)
	peer, _ := e.StarterGA(1)
	var r Report
	mine, _ := e.CopyFor(&r, peer, me, 8, HandleNull)
	_, _ = e.Copy(peer, me, 8, HandleNull)
	manual.finish(1, StatusOutOfBounds.Err())
	assert.NoError(t, r.Take(), "another operation's failure")
	manual.finish(0, StatusBadSegment.Err())
	assert.False(t, e.Inquire(mine))
	err := r.Take()
	var ae *AccessError
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, StatusBadSegment, ae.Status, "the failure of the operation issued with the report")
	assert.NoError(t, r.Take(), "taken")
	assert.Equal(t, int64(2), e.Errors(), "both still count for the process")
}

func TestBackPressureWaitsForCompletion(t *testing.T) {
	e := newManualEngine(t, "queue-depth", "4")
	me, _ := e.StarterGA(0)
	peer, _ := e.StarterGA(1)
	for i := 0; i < 4; i++ {
		_, err := e.Copy(peer, me, 8, HandleNull)
		require.NoError(t, err)
	}
	issued := make(chan Handle)
	go func() {
		h, _ := e.Copy(peer, me, 8, HandleNull)
		issued <- h
	}()
	select {
	case <-issued:
		t.Fatal("a fifth operation was accepted into a queue of 4")
	case <-time.After(30 * time.Millisecond):
	}
	manual.finish(0, nil)
	assert.Equal(t, Handle(5), <-issued)
}
