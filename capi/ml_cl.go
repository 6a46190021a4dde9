package main

/*
#include <stdint.h>
#include <stdlib.h>
#include "acp.h"
#include "chfast.h"

int acpcl_program_starter_size(size_t *size);
*/
import "C"

import (
	"fmt"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/libacp/libacp/core"
	"github.com/libacp/libacp/ml/ch"
	"github.com/libacp/libacp/ml/segbuf"
)

// The communication library: segmented buffers and channels (ml/segbuf,
// ml/ch). It starts after the data library. C sees its objects as
// integer handles that carry a generation, so a handle used after its
// object went away is refused instead of reaching freed state.
func init() {
	registerLayer(layer{name: "communication library", order: 2, start: startCL, stop: stopCL})
}

type clLib struct {
	seg *segbuf.Lib
	ch  *ch.Lib
}

var (
	clState  atomic.Pointer[clLib]
	chans    = handles[ch.Channel]{kind: 1}
	requests = handles[ch.Request]{kind: 2}
	segbufs  = handles[segbuf.Segbuf]{kind: 3}

	// freeing maps a free request to its channel's handle, which goes
	// away when the free is waited for.
	freeing sync.Map // *ch.Request -> C.uintptr_t

	// orphans are requests of the C fast path whose channel end or handle
	// went before they were waited for: they live on as Go requests.
	orphans sync.Map // C.uintptr_t (bit 63) -> C.uintptr_t
)

func startCL(e *core.Engine) error {
	if len(e.StarterMemory(core.SegStarterCL)) == 0 {
		e.Logf(2, "communication library: its starter memory is 0 bytes (--acp-size-smem-cl, ACP_SIZE_SMEM_CL or the program's iacp_starter_memory_size_cl): channels and segmented buffers are off")
		return nil
	}
	seg, err := segbuf.Start(e)
	if err != nil {
		return err
	}
	C.acpch_copy_by_movsb(b2i(ch.RingCopyByMovsb()))
	seg.SetOutsideWaits(func() int32 { return int32(C.acpch_waiting()) })
	clState.Store(&clLib{seg: seg, ch: ch.New(seg)})
	return nil
}

func stopCL(*core.Engine) error {
	C.acpch_clear() // before the library's memory goes
	l := clState.Swap(nil)
	var err error
	if l != nil {
		err = l.seg.Stop()
	}
	chans.clear()
	requests.clear()
	segbufs.clear()
	freeing.Clear()
	orphans.Clear()
	return err
}

// programStarterSizeCL honours a program's own definition of
// iacp_starter_memory_size_cl (programs written for the original define it,
// often as 0, when they do not use the communication library) when neither
// --acp-size-smem-cl nor ACP_SIZE_SMEM_CL was given. Called by acp_init
// before the starter memories are made.
func programStarterSizeCL(s *core.Settings) {
	var v C.size_t
	if s.Source("size-smem-cl") != "default" || C.acpcl_program_starter_size(&v) == 0 {
		return
	}
	_ = s.Set("size-smem-cl", strconv.FormatUint(uint64(v), 10), "the program's iacp_starter_memory_size_cl")
}

// clFor returns the communication library, or nil after reporting why fn
// cannot run: before acp_init, after acp_finalize, or with the library off.
func clFor(fn string) *clLib {
	e := engineFor(fn)
	if e == nil {
		return nil
	}
	if l := clState.Load(); l != nil {
		return l
	}
	e.Logf(1, "%s: the communication library is off: its starter memory is 0 bytes; give --acp-size-smem-cl / ACP_SIZE_SMEM_CL at least %d (or do not define iacp_starter_memory_size_cl = 0)", fn, segbuf.MinStarter)
	return nil
}

func (l *clLib) fail(format string, args ...any) {
	l.seg.Engine().Logf(1, format, args...)
}

// errSize is (size_t)-1, acp_wait_ch's failure value.
const errSize = C.size_t(math.MaxUint64)

// ---- channels --------------------------------------------------------------

//export goacp_create_ch
func goacp_create_ch(sender, receiver C.int) C.uintptr_t {
	l := clFor("acp_create_ch")
	if l == nil {
		return 0
	}
	c, err := l.ch.Create(int(sender), int(receiver))
	if err != nil {
		l.fail("acp_create_ch(%d, %d): %v", int(sender), int(receiver), err)
		return 0
	}
	h := chans.put(c)
	// The C fast path (chfast.c) finds the channel by its handle's index.
	c.SetFast(uint64(h), func(r *ch.Request) uint64 { return uint64(requests.put(r)) },
		func(h, gh uint64) { orphans.Store(C.uintptr_t(h), C.uintptr_t(gh)) })
	C.acpch_set(C.uint64_t(h&math.MaxUint32), c.Fast())
	return h
}

// forgetChannel releases a channel's handle, in C too.
func forgetChannel(h C.uintptr_t) {
	C.acpch_set(C.uint64_t(h&math.MaxUint32), nil)
	if c := chans.get(h); c != nil {
		c.Forget()
	}
	chans.del(h)
}

// goacp_ch_adopt hands the receives the C fast path posted on channel h to
// Go, in order (their messages are not for C, or C stopped waiting).
//
//export goacp_ch_adopt
func goacp_ch_adopt(h C.uint64_t) {
	if c := chans.get(C.uintptr_t(h)); c != nil {
		c.Adopt()
	}
}

// goacp_ch_publish tells the sender of channel h about slots the C fast
// path took.
//
//export goacp_ch_publish
func goacp_ch_publish(h C.uint64_t) {
	if c := chans.get(C.uintptr_t(h)); c != nil {
		c.Publish()
	}
}

// goacp_ch_pass runs a pass of the communication library's background
// progress for a wait of the C fast path, which keeps that goroutine away.
//
//export goacp_ch_pass
func goacp_ch_pass() {
	if l := clState.Load(); l != nil {
		l.seg.Pass()
	}
}

// channel finds a channel handle, reporting a bad one.
func (l *clLib) channel(fn string, h C.uintptr_t) *ch.Channel {
	c := chans.get(h)
	if c == nil {
		l.fail("%s(%#x): %s", fn, uintptr(h), badHandle("channel", h))
	}
	return c
}

func badHandle(what string, h C.uintptr_t) string {
	switch {
	case h == 0:
		return what + " is NULL"
	case what == "request":
		return "not a live request (waited for already, from before acp_reset, never posted, or a handle of another kind)"
	}
	return "not a live " + what + " (freed already, from before acp_reset, never created, or a handle of another kind)"
}

//export goacp_nbsend_ch
func goacp_nbsend_ch(h C.uintptr_t, buf unsafe.Pointer, size C.size_t) C.uintptr_t {
	l := clFor("acp_nbsend_ch")
	if l == nil {
		return 0
	}
	c := l.channel("acp_nbsend_ch", h)
	if c == nil {
		return 0
	}
	r, err := c.Send(buf, uint64(size))
	if err != nil {
		l.fail("acp_nbsend_ch(%#x, %p, %d): %v", uintptr(h), buf, uint64(size), err)
		return 0
	}
	return requests.put(r)
}

//export goacp_nbrecv_ch
func goacp_nbrecv_ch(h C.uintptr_t, buf unsafe.Pointer, size C.size_t) C.uintptr_t {
	l := clFor("acp_nbrecv_ch")
	if l == nil {
		return 0
	}
	c := l.channel("acp_nbrecv_ch", h)
	if c == nil {
		return 0
	}
	r, err := c.Recv(buf, uint64(size))
	if err != nil {
		l.fail("acp_nbrecv_ch(%#x, %p, %d): %v", uintptr(h), buf, uint64(size), err)
		return 0
	}
	return requests.put(r)
}

//export goacp_nbfree_ch
func goacp_nbfree_ch(h C.uintptr_t) C.uintptr_t {
	l := clFor("acp_nbfree_ch")
	if l == nil {
		return 0
	}
	c := l.channel("acp_nbfree_ch", h)
	if c == nil {
		return 0
	}
	r, err := c.Free()
	if err != nil {
		l.fail("acp_nbfree_ch(%#x): %v", uintptr(h), err)
		return 0
	}
	freeing.Store(r, h)
	return requests.put(r)
}

// wait waits for request h, element index of acp_waitall_ch's array (-1:
// acp_wait_ch's request), releases its handle (and a freed channel's) and
// hands the request back to its channel; (size_t)-1 when h is bad or the
// request failed. The index is formatted only for a message: a window of
// small messages waited for together allocated a string each.
func (l *clLib) wait(index int, h C.uintptr_t) C.size_t {
	if gh, ok := orphans.LoadAndDelete(h); ok {
		h = gh.(C.uintptr_t)
	}
	fn := func() string {
		if index < 0 {
			return "acp_wait_ch"
		}
		return fmt.Sprintf("acp_waitall_ch: request [%d]", index)
	}
	r := requests.take(h)
	if r == nil {
		l.fail("%s(%#x): %s", fn(), uintptr(h), badHandle("request", h))
		return errSize
	}
	n, err := r.Wait()
	if c, ok := freeing.LoadAndDelete(r); ok && err == nil {
		forgetChannel(c.(C.uintptr_t))
	}
	r.Release() // its handle is gone: the channel may reuse it
	if err != nil {
		l.fail("%s(%#x): %v", fn(), uintptr(h), err)
		return errSize
	}
	return C.size_t(n)
}

//export goacp_wait_ch
func goacp_wait_ch(h C.uintptr_t) C.size_t {
	l := clFor("acp_wait_ch")
	if l == nil {
		return errSize
	}
	return l.wait(-1, h)
}

//export goacp_waitall_ch
func goacp_waitall_ch(hs *C.uintptr_t, n C.int, sizes *C.size_t) C.int {
	l := clFor("acp_waitall_ch")
	if l == nil {
		return -1
	}
	if n < 0 || (hs == nil && n > 0) {
		l.fail("acp_waitall_ch(%p, %d, %p): needs an array of %d requests", hs, int(n), sizes, int(n))
		return -1
	}
	if n == 0 {
		return 0
	}
	reqs := unsafe.Slice(hs, int(n))
	var out []C.size_t
	if sizes != nil {
		out = unsafe.Slice(sizes, int(n))
	}
	rc := C.int(0)
	for i, h := range reqs {
		v := l.wait(i, h)
		if v == errSize {
			rc = -1
		}
		if out != nil {
			out[i] = v
		}
	}
	return rc
}

//export goacp_free_ch
func goacp_free_ch(h C.uintptr_t) C.int {
	l := clFor("acp_free_ch")
	if l == nil {
		return -1
	}
	c := l.channel("acp_free_ch", h)
	if c == nil {
		return -1
	}
	r, err := c.Free()
	if err == nil {
		_, err = r.Wait()
	}
	if err != nil {
		l.fail("acp_free_ch(%#x): %v", uintptr(h), err)
		return -1
	}
	forgetChannel(h)
	return 0
}

//export goacp_send_ch
func goacp_send_ch(h C.uintptr_t, buf unsafe.Pointer, size C.size_t) C.int {
	l := clFor("acp_send_ch")
	if l == nil {
		return -1
	}
	c := l.channel("acp_send_ch", h)
	if c == nil {
		return -1
	}
	r, err := c.Send(buf, uint64(size))
	if err == nil {
		_, err = r.Wait()
	}
	if err != nil {
		l.fail("acp_send_ch(%#x, %p, %d): %v", uintptr(h), buf, uint64(size), err)
		return -1
	}
	return 0
}

// goacp_recv_ch returns the bytes received (INT_MAX when more), as the
// documentation says; the original returned 0.
//
//export goacp_recv_ch
func goacp_recv_ch(h C.uintptr_t, buf unsafe.Pointer, size C.size_t) C.int {
	l := clFor("acp_recv_ch")
	if l == nil {
		return -1
	}
	c := l.channel("acp_recv_ch", h)
	if c == nil {
		return -1
	}
	r, err := c.Recv(buf, uint64(size))
	var n uint64
	if err == nil {
		n, err = r.Wait()
	}
	if err != nil {
		l.fail("acp_recv_ch(%#x, %p, %d): %v", uintptr(h), buf, uint64(size), err)
		return -1
	}
	return C.int(min(n, math.MaxInt32))
}

// goacp_abort_cl is the original's internal iacp_abort_cl, which some
// programs call: it ends the process as acp_abort does.
//
//export goacp_abort_cl
func goacp_abort_cl() {
	msg := C.CString("iacp_abort_cl: the program gave up")
	goacp_abort(msg)
}

// ---- segmented buffers -------------------------------------------------------

//export goacp_create_segbuf
func goacp_create_segbuf(dest C.int, rank C.int, buf unsafe.Pointer, segsize, segnum C.size_t) C.uintptr_t {
	fn, role := "acp_create_src_segbuf", segbuf.Source
	if dest != 0 {
		fn, role = "acp_create_dst_segbuf", segbuf.Dest
	}
	l := clFor(fn)
	if l == nil {
		return 0
	}
	s, err := l.seg.CreateSegbuf(role, int(rank), buf, uint64(segsize), uint64(segnum))
	if err != nil {
		l.fail("%s(%d, %p, %d, %d): %v", fn, int(rank), buf, uint64(segsize), uint64(segnum), err)
		return 0
	}
	return segbufs.put(s)
}

// segbufCall runs f on segmented buffer h and maps its outcome: -1 for a
// bad handle or an error, f's value otherwise.
func segbufCall(fn string, h C.uintptr_t, f func(*segbuf.Segbuf) (int64, error)) int64 {
	l := clFor(fn)
	if l == nil {
		return -1
	}
	s := segbufs.get(h)
	if s == nil {
		l.fail("%s(%#x): %s", fn, uintptr(h), badHandle("segmented buffer", h))
		return -1
	}
	v, err := f(s)
	if err != nil {
		l.fail("%s(%#x): %v", fn, uintptr(h), err)
		return -1
	}
	return v
}

func b01(b bool) int64 {
	if b {
		return 0
	}
	return 1
}

//export goacp_connect_segbuf
func goacp_connect_segbuf(h C.uintptr_t) C.int {
	return C.int(segbufCall("acp_connect_segbuf", h, func(s *segbuf.Segbuf) (int64, error) { return 0, s.Connect() }))
}

//export goacp_isconnected_segbuf
func goacp_isconnected_segbuf(h C.uintptr_t) C.int {
	return C.int(segbufCall("acp_isconnected_segbuf", h, func(s *segbuf.Segbuf) (int64, error) {
		ok, err := s.IsConnected()
		return b01(ok), err
	}))
}

//export goacp_ack_segbuf
func goacp_ack_segbuf(h C.uintptr_t) C.int {
	return C.int(segbufCall("acp_ack_segbuf", h, func(s *segbuf.Segbuf) (int64, error) { return 0, s.Ack() }))
}

//export goacp_ready_segbuf
func goacp_ready_segbuf(h C.uintptr_t) C.int {
	return C.int(segbufCall("acp_ready_segbuf", h, func(s *segbuf.Segbuf) (int64, error) { return 0, s.Ready() }))
}

//export goacp_isready_segbuf
func goacp_isready_segbuf(h C.uintptr_t) C.int {
	return C.int(segbufCall("acp_isready_segbuf", h, func(s *segbuf.Segbuf) (int64, error) {
		ok, err := s.IsReady()
		return b01(ok), err
	}))
}

//export goacp_isacked_segbuf
func goacp_isacked_segbuf(h C.uintptr_t) C.int {
	return C.int(segbufCall("acp_isacked_segbuf", h, func(s *segbuf.Segbuf) (int64, error) {
		ok, err := s.IsAcked()
		return b01(ok), err
	}))
}

// Counters for goacp_query_segbuf.
const (
	queryHead = 0
	queryTail = 1
	querySent = 2
)

//export goacp_query_segbuf
func goacp_query_segbuf(h C.uintptr_t, which C.int) C.int64_t {
	fn := [...]string{"acp_query_segbuf_head", "acp_query_segbuf_tail", "acp_query_segbuf_sent"}[which]
	return C.int64_t(segbufCall(fn, h, func(s *segbuf.Segbuf) (int64, error) {
		head, tail, sent, err := s.Counters()
		return [...]int64{head, tail, sent}[which], err
	}))
}

//export goacp_disconnect_segbuf
func goacp_disconnect_segbuf(h C.uintptr_t) C.int {
	return C.int(segbufCall("acp_disconnect_segbuf", h, func(s *segbuf.Segbuf) (int64, error) { return 0, s.Disconnect() }))
}

//export goacp_free_segbuf
func goacp_free_segbuf(h C.uintptr_t) C.int {
	rc := segbufCall("acp_free_segbuf", h, func(s *segbuf.Segbuf) (int64, error) { return 0, s.Free() })
	if rc == 0 {
		segbufs.del(h)
	}
	return C.int(rc)
}

// ---- handles ---------------------------------------------------------------

// handles maps Go objects to the integers C holds: slot index + 1 in the
// low 32 bits, the slot's generation in the next 24 and the table's kind
// in bits 56..62. A slot's generation changes whenever its object goes,
// so stale handles are refused; the kind keeps a live handle of one table
// (a segmented buffer) from naming a live object of another (a channel),
// whose slots are numbered alike. Bit 63 stays clear: handles with it are
// the C fast path's requests (chfast.h).
type handles[T any] struct {
	kind  uint64
	mu    sync.Mutex
	slots []handleSlot[T]
	free  []uint32
}

const (
	genBits   = 24
	kindShift = 56
)

type handleSlot[T any] struct {
	gen uint32
	v   *T
}

func (t *handles[T]) put(v *T) C.uintptr_t {
	t.mu.Lock()
	defer t.mu.Unlock()
	var i uint32
	if n := len(t.free); n > 0 {
		i = t.free[n-1]
		t.free = t.free[:n-1]
	} else {
		t.slots = append(t.slots, handleSlot[T]{gen: 1})
		i = uint32(len(t.slots) - 1)
	}
	t.slots[i].v = v
	return C.uintptr_t(t.kind<<kindShift | uint64(t.slots[i].gen)<<32 | uint64(i+1))
}

// index finds a live slot; called with t.mu held.
func (t *handles[T]) index(h C.uintptr_t) (uint32, bool) {
	i := uint64(h) & math.MaxUint32
	if i == 0 || i > uint64(len(t.slots)) || uint64(h)>>kindShift != t.kind {
		return 0, false
	}
	s := &t.slots[i-1]
	return uint32(i - 1), s.v != nil && uint64(s.gen) == uint64(h)>>32&(1<<genBits-1)
}

func (t *handles[T]) get(h C.uintptr_t) *T {
	t.mu.Lock()
	defer t.mu.Unlock()
	if i, ok := t.index(h); ok {
		return t.slots[i].v
	}
	return nil
}

// take returns the object and releases its handle.
func (t *handles[T]) take(h C.uintptr_t) *T {
	t.mu.Lock()
	defer t.mu.Unlock()
	i, ok := t.index(h)
	if !ok {
		return nil
	}
	v := t.slots[i].v
	t.releaseLocked(i)
	return v
}

func (t *handles[T]) del(h C.uintptr_t) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if i, ok := t.index(h); ok {
		t.releaseLocked(i)
	}
}

func (t *handles[T]) releaseLocked(i uint32) {
	s := &t.slots[i]
	s.v = nil
	if s.gen++; s.gen >= 1<<genBits {
		s.gen = 1
	}
	t.free = append(t.free, i)
}

// clear releases every handle (the library stops).
func (t *handles[T]) clear() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for i := range t.slots {
		if t.slots[i].v != nil {
			t.releaseLocked(uint32(i))
		}
	}
}

// chSlotSum is C's checksum of a channel slot written by a put
// (acpch_slot_sum), which must be ml/ch's (the test compares them).
func chSlotSum(slot []byte, n uint64) uint64 {
	return uint64(C.acpch_slot_sum(unsafe.Pointer(&slot[0]), C.uint64_t(n)))
}
