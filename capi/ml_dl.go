package main

/*
#include <stdlib.h>
#include "acp.h"

int acpdl_program_starter_size(size_t *size);
int acpdl_call_comp(void *comp, acp_ga_t ga1, size_t size1, acp_ga_t ga2, size_t size2);
*/
import "C"

import (
	"strconv"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/libacp/libacp/core"
	"github.com/libacp/libacp/ml/dl"
	"github.com/libacp/libacp/ml/heap"
	"github.com/libacp/libacp/ml/ws"
)

// The data library: heap, containers and workspaces (ml/heap, ml/dl,
// ml/ws). It starts before the communication library.
func init() {
	registerLayer(layer{name: "data library", order: 1, start: startDL, stop: stopDL})
}

var dlState struct {
	lib atomic.Pointer[dl.Library]
	ws  atomic.Pointer[ws.Module]

	mu    sync.Mutex // guards descs
	descs map[*C.acp_wsditem]*ws.Workspace
}

func startDL(e *core.Engine) error {
	if !heap.Usable(e) {
		e.Logf(2, "data library: %d bytes of data-library starter memory hold no heap (at least %d are needed): acp_malloc and the containers will fail; raise --acp-size-smem-dl / ACP_SIZE_SMEM_DL (or a program's own iacp_starter_memory_size_dl)",
			len(e.StarterMemory(core.SegStarterDL)), heap.MinStarter)
	}
	l, err := dl.Start(e)
	if err != nil {
		return err
	}
	dlState.ws.Store(ws.New(e))
	dlState.lib.Store(l)
	return nil
}

func stopDL(e *core.Engine) error {
	l := dlState.lib.Swap(nil)
	if m := dlState.ws.Swap(nil); m != nil {
		m.Close()
	}
	dlState.mu.Lock()
	dlState.descs = nil // their chunks are gone; the descriptors stay allocated
	dlState.mu.Unlock()
	if l != nil {
		l.Stop()
	}
	return nil
}

// programStarterSizeDL honours a program's own definition of
// iacp_starter_memory_size_dl (programs written for the original define it,
// often as 0, to size the data library's starter memory) when neither
// --acp-size-smem-dl nor ACP_SIZE_SMEM_DL was given. Called by acp_init
// before the starter memories are made.
func programStarterSizeDL(s *core.Settings) {
	var v C.size_t
	if s.Source("size-smem-dl") != "default" || C.acpdl_program_starter_size(&v) == 0 {
		return
	}
	_ = s.Set("size-smem-dl", strconv.FormatUint(uint64(v), 10), "the program's iacp_starter_memory_size_dl")
}

// dlFor returns the data library, or nil after reporting that fn was called
// before acp_init or after acp_finalize.
func dlFor(fn string) *dl.Library {
	if engineFor(fn) == nil {
		return nil
	}
	return dlState.lib.Load()
}

// dlFailed reports a failed call with ACP_VERBOSE=1.
func dlFailed(l *dl.Library, call string, err error) {
	if err != nil {
		l.Engine().Logf(1, "%s: %v", call, err)
	}
}

func ga(g C.acp_ga_t) core.GA { return core.GA(g) }

func b2i(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

// ---- workspace ------------------------------------------------------------

//export goacpdl_setparams_ws
func goacpdl_setparams_ws(procStart, sizeDefault C.size_t) C.int {
	l := dlFor("acp_setparams_ws")
	if l == nil {
		return 1
	}
	if err := dlState.ws.Load().SetParams(uint64(procStart), uint64(sizeDefault)); err != nil {
		dlFailed(l, "acp_setparams_ws("+z(procStart)+", "+z(sizeDefault)+")", err)
		return 1
	}
	return 0
}

func u[T ~uint64 | ~uint32 | ~int64 | ~int32 | ~int | ~uint](v T) string {
	return strconv.FormatInt(int64(v), 10)
}

func hexGA(g C.acp_ga_t) string { return "0x" + strconv.FormatUint(uint64(g), 16) }

//export goacpdl_create_ws
func goacpdl_create_ws(size C.size_t) C.acp_wsd_t {
	l := dlFor("acp_create_ws")
	if l == nil {
		return nil
	}
	var w *ws.Workspace
	err := l.Call(func(a *heap.Access) (err error) {
		w, err = dlState.ws.Load().Create(a, uint64(size))
		return err
	})
	if err != nil {
		dlFailed(l, "acp_create_ws("+z(size)+")", err)
		return nil
	}
	n := C.size_t(len(w.GAs))
	d := (*C.acp_wsditem)(C.calloc(1, C.size_t(unsafe.Sizeof(C.acp_wsditem{}))))
	d.size_ws, d.size_default, d.size_remainder, d.ngas = size, C.size_t(w.Chunk), C.size_t(w.Remainder), n
	d.key_data, d.ga_data, d.data = C.acp_atkey_t(w.Key), C.acp_ga_t(w.GA), w.Data
	d.keys = (*C.acp_atkey_t)(C.calloc(n+1, 8))
	d.gas = (*C.acp_ga_t)(C.calloc(n+1, 8))
	d.procs = (*C.int)(C.calloc(n+1, 4))
	d.sizes = (*C.int)(C.calloc(n+1, 4))
	keys, gas := unsafe.Slice(d.keys, n), unsafe.Slice(d.gas, n)
	procs, sizes := unsafe.Slice(d.procs, n), unsafe.Slice(d.sizes, n)
	for i := range gas {
		gas[i] = C.acp_ga_t(w.GAs[i])
		procs[i] = C.int(w.Procs[i])
		sizes[i] = C.int(w.Sizes[i])
		if w.Procs[i] == l.Engine().Rank() {
			keys[i] = C.acp_atkey_t(w.Key)
		}
	}
	dlState.mu.Lock()
	if dlState.descs == nil {
		dlState.descs = map[*C.acp_wsditem]*ws.Workspace{}
	}
	dlState.descs[d] = w
	dlState.mu.Unlock()
	return d
}

func workspaceOf(d C.acp_wsd_t) *ws.Workspace {
	dlState.mu.Lock()
	defer dlState.mu.Unlock()
	return dlState.descs[d]
}

//export goacpdl_destroy_ws
func goacpdl_destroy_ws(d C.acp_wsd_t) {
	l := dlFor("acp_destroy_ws")
	if l == nil {
		return
	}
	call := "acp_destroy_ws(" + strconv.FormatUint(uint64(uintptr(unsafe.Pointer(d))), 16) + ")"
	// Taken out of the table at once, so that of several threads
	// destroying one workspace exactly one frees the descriptor: each
	// found it before the first had removed it, and all freed it ("double
	// free or corruption", SIGABRT).
	dlState.mu.Lock()
	w := dlState.descs[d]
	delete(dlState.descs, d)
	dlState.mu.Unlock()
	if w == nil {
		dlFailed(l, call, errNotWorkspace)
		return
	}
	dlFailed(l, call, dlState.ws.Load().Destroy(w))
	C.free(unsafe.Pointer(d.keys))
	C.free(unsafe.Pointer(d.gas))
	C.free(unsafe.Pointer(d.procs))
	C.free(unsafe.Pointer(d.sizes))
	C.free(unsafe.Pointer(d))
}

var errNotWorkspace = wsError("not a workspace of this library (ACP_WSD_NULL, destroyed, or from before acp_reset)")

type wsError string

func (e wsError) Error() string { return string(e) }

//export goacpdl_read_ws
func goacpdl_read_ws(d C.acp_wsd_t, g C.acp_ga_t, size, offset C.size_t, write C.int) C.int {
	name := "acp_read_ws"
	if write != 0 {
		name = "acp_write_ws"
	}
	l := dlFor(name)
	if l == nil {
		return 1
	}
	w := workspaceOf(d)
	call := name + "(" + hexGA(g) + ", " + z(size) + ", " + z(offset) + ")"
	if w == nil {
		dlFailed(l, call, errNotWorkspace)
		return 1
	}
	err := l.Call(func(a *heap.Access) error {
		if write != 0 {
			return w.Write(a, ga(g), uint64(size), uint64(offset))
		}
		return w.Read(a, ga(g), uint64(size), uint64(offset))
	})
	if err != nil {
		dlFailed(l, call, err)
		return 1
	}
	return 0
}

// ---- global heap -----------------------------------------------------------

//export goacpdl_malloc
func goacpdl_malloc(size C.size_t, rank C.int) C.acp_ga_t {
	l := dlFor("acp_malloc")
	if l == nil {
		return C.ACP_GA_NULL
	}
	g, err := l.Malloc(uint64(size), int(rank))
	if err != nil {
		dlFailed(l, "acp_malloc("+z(size)+", "+u(rank)+")", err)
		return C.ACP_GA_NULL
	}
	return C.acp_ga_t(g)
}

//export goacpdl_free
func goacpdl_free(g C.acp_ga_t) {
	if l := dlFor("acp_free"); l != nil {
		dlFailed(l, "acp_free("+hexGA(g)+")", l.Free(ga(g)))
	}
}

// ---- vector ------------------------------------------------------------------

var vectorOp2Names = [...]string{"acp_assign_vector", "acp_swap_vector"}

//export goacpdl_vector_op2
func goacpdl_vector_op2(op C.int, v1, v2 C.acp_ga_t) {
	name := vectorOp2Names[op]
	l := dlFor(name)
	if l == nil {
		return
	}
	a, b := dl.Vector{GA: ga(v1)}, dl.Vector{GA: ga(v2)}
	var err error
	if op == 0 {
		err = l.AssignVector(a, b)
	} else {
		err = l.SwapVector(a, b)
	}
	dlFailed(l, name+"("+hexGA(v1)+", "+hexGA(v2)+")", err)
}

func vit(v C.acp_ga_t, i C.int) dl.VectorIt {
	return dl.VectorIt{Vector: dl.Vector{GA: ga(v)}, Index: int(i)}
}

//export goacpdl_assign_range_vector
func goacpdl_assign_range_vector(v, s C.acp_ga_t, si C.int, e C.acp_ga_t, ei C.int) {
	if l := dlFor("acp_assign_range_vector"); l != nil {
		dlFailed(l, "acp_assign_range_vector("+hexGA(v)+")", l.AssignRangeVector(dl.Vector{GA: ga(v)}, vit(s, si), vit(e, ei)))
	}
}

//export goacpdl_at_vector
func goacpdl_at_vector(v C.acp_ga_t, index C.int, deref C.int) C.acp_ga_t {
	name := "acp_at_vector"
	if deref != 0 {
		name = "acp_dereference_vector_it"
	}
	l := dlFor(name)
	if l == nil {
		return C.ACP_GA_NULL
	}
	var g core.GA
	var err error
	if deref != 0 {
		g, err = l.DereferenceVectorIt(vit(v, index))
	} else {
		g, err = l.AtVector(dl.Vector{GA: ga(v)}, int(index))
	}
	dlFailed(l, name+"("+hexGA(v)+", "+u(index)+")", err)
	return C.acp_ga_t(g)
}

var vectorQueryNames = [...]string{"acp_size_vector", "acp_capacity_vector", "acp_empty_vector", "acp_end_vector"}

//export goacpdl_vector_query
func goacpdl_vector_query(op C.int, v C.acp_ga_t) C.size_t {
	name := vectorQueryNames[op]
	l := dlFor(name)
	if l == nil {
		return C.size_t(b2i(op == 2))
	}
	var n uint64
	var err error
	switch op {
	case 0, 2, 3:
		n, err = l.SizeVector(dl.Vector{GA: ga(v)})
	case 1:
		n, err = l.CapacityVector(dl.Vector{GA: ga(v)})
	}
	dlFailed(l, name+"("+hexGA(v)+")", err)
	if op == 2 {
		return C.size_t(b2i(n == 0))
	}
	return C.size_t(n)
}

var vectorSizedNames = [...]string{"acp_clear_vector", "acp_pop_back_vector", "acp_reserve_vector", "acp_destroy_vector"}

//export goacpdl_vector_sized
func goacpdl_vector_sized(op C.int, v C.acp_ga_t, size C.size_t) {
	name := vectorSizedNames[op]
	l := dlFor(name)
	if l == nil {
		return
	}
	vec := dl.Vector{GA: ga(v)}
	var err error
	switch op {
	case 0:
		err = l.ClearVector(vec)
	case 1:
		err = l.PopBackVector(vec, uint64(size))
	case 2:
		err = l.ReserveVector(vec, uint64(size))
	case 3:
		err = l.DestroyVector(vec)
	}
	dlFailed(l, name+"("+hexGA(v)+", "+z(size)+")", err)
}

//export goacpdl_create_vector
func goacpdl_create_vector(size C.size_t, rank C.int) C.acp_ga_t {
	l := dlFor("acp_create_vector")
	if l == nil {
		return C.ACP_GA_NULL
	}
	v, err := l.CreateVector(uint64(size), int(rank))
	dlFailed(l, "acp_create_vector("+z(size)+", "+u(rank)+")", err)
	return C.acp_ga_t(v.GA)
}

//export goacpdl_erase_vector
func goacpdl_erase_vector(v C.acp_ga_t, i C.int, size C.size_t) {
	if l := dlFor("acp_erase_vector"); l != nil {
		_, err := l.EraseVector(vit(v, i), uint64(size))
		dlFailed(l, "acp_erase_vector("+hexGA(v)+", "+u(i)+", "+z(size)+")", err)
	}
}

// goacpdl_erase_range_vector returns 1 when the result is start (the
// range was erased), 0 when it is end (ml/dl decides).
//
//export goacpdl_erase_range_vector
func goacpdl_erase_range_vector(s C.acp_ga_t, si C.int, e C.acp_ga_t, ei C.int) C.int {
	l := dlFor("acp_erase_range_vector")
	if l == nil {
		return 0
	}
	end := vit(e, ei)
	it, err := l.EraseRangeVector(vit(s, si), end)
	dlFailed(l, "acp_erase_range_vector("+hexGA(s)+", "+u(si)+", "+hexGA(e)+", "+u(ei)+")", err)
	return b2i(it != end)
}

//export goacpdl_insert_vector
func goacpdl_insert_vector(v C.acp_ga_t, i C.int, g C.acp_ga_t, size C.size_t) {
	if l := dlFor("acp_insert_vector"); l != nil {
		_, err := l.InsertVector(vit(v, i), ga(g), uint64(size))
		dlFailed(l, "acp_insert_vector("+hexGA(v)+", "+u(i)+", "+hexGA(g)+", "+z(size)+")", err)
	}
}

//export goacpdl_insert_range_vector
func goacpdl_insert_range_vector(v C.acp_ga_t, i C.int, s C.acp_ga_t, si C.int, e C.acp_ga_t, ei C.int) {
	if l := dlFor("acp_insert_range_vector"); l != nil {
		_, err := l.InsertRangeVector(vit(v, i), vit(s, si), vit(e, ei))
		dlFailed(l, "acp_insert_range_vector("+hexGA(v)+", "+u(i)+")", err)
	}
}

//export goacpdl_push_vector
func goacpdl_push_vector(v, g C.acp_ga_t, size C.size_t) {
	if l := dlFor("acp_push_back_vector"); l != nil {
		dlFailed(l, "acp_push_back_vector("+hexGA(v)+", "+hexGA(g)+", "+z(size)+")", l.PushBackVector(dl.Vector{GA: ga(v)}, ga(g), uint64(size)))
	}
}

// ---- deque ---------------------------------------------------------------------

func dit(d C.acp_ga_t, i C.int) dl.DequeIt {
	return dl.DequeIt{Deque: dl.Deque{GA: ga(d)}, Index: int(i)}
}

var dequeOp2Names = [...]string{"acp_assign_deque", "acp_swap_deque"}

//export goacpdl_deque_op2
func goacpdl_deque_op2(op C.int, d1, d2 C.acp_ga_t) {
	name := dequeOp2Names[op]
	l := dlFor(name)
	if l == nil {
		return
	}
	a, b := dl.Deque{GA: ga(d1)}, dl.Deque{GA: ga(d2)}
	var err error
	if op == 0 {
		err = l.AssignDeque(a, b)
	} else {
		err = l.SwapDeque(a, b)
	}
	dlFailed(l, name+"("+hexGA(d1)+", "+hexGA(d2)+")", err)
}

//export goacpdl_assign_range_deque
func goacpdl_assign_range_deque(d, s C.acp_ga_t, si C.int, e C.acp_ga_t, ei C.int) {
	if l := dlFor("acp_assign_range_deque"); l != nil {
		dlFailed(l, "acp_assign_range_deque("+hexGA(d)+")", l.AssignRangeDeque(dl.Deque{GA: ga(d)}, dit(s, si), dit(e, ei)))
	}
}

//export goacpdl_at_deque
func goacpdl_at_deque(d C.acp_ga_t, index C.int) C.acp_ga_t {
	l := dlFor("acp_at_deque")
	if l == nil {
		return C.ACP_GA_NULL
	}
	g, err := l.AtDeque(dl.Deque{GA: ga(d)}, int(index))
	dlFailed(l, "acp_at_deque("+hexGA(d)+", "+u(index)+")", err)
	return C.acp_ga_t(g)
}

var dequeQueryNames = [...]string{"acp_size_deque", "acp_capacity_deque", "acp_empty_deque", "acp_end_deque"}

//export goacpdl_deque_query
func goacpdl_deque_query(op C.int, d C.acp_ga_t) C.size_t {
	name := dequeQueryNames[op]
	l := dlFor(name)
	if l == nil {
		return C.size_t(b2i(op == 2))
	}
	var n uint64
	var err error
	switch op {
	case 0, 2, 3:
		n, err = l.SizeDeque(dl.Deque{GA: ga(d)})
	case 1:
		n, err = l.CapacityDeque(dl.Deque{GA: ga(d)})
	}
	dlFailed(l, name+"("+hexGA(d)+")", err)
	if op == 2 {
		return C.size_t(b2i(n == 0))
	}
	return C.size_t(n)
}

var dequeSizedNames = [...]string{"acp_clear_deque", "acp_pop_back_deque", "acp_reserve_deque", "acp_destroy_deque", "acp_pop_front_deque"}

//export goacpdl_deque_sized
func goacpdl_deque_sized(op C.int, d C.acp_ga_t, size C.size_t) {
	name := dequeSizedNames[op]
	l := dlFor(name)
	if l == nil {
		return
	}
	dq := dl.Deque{GA: ga(d)}
	var err error
	switch op {
	case 0:
		err = l.ClearDeque(dq)
	case 1:
		err = l.PopBackDeque(dq, uint64(size))
	case 2:
		err = l.ReserveDeque(dq, uint64(size))
	case 3:
		err = l.DestroyDeque(dq)
	case 4:
		err = l.PopFrontDeque(dq, uint64(size))
	}
	dlFailed(l, name+"("+hexGA(d)+", "+z(size)+")", err)
}

//export goacpdl_create_deque
func goacpdl_create_deque(size C.size_t, rank C.int) C.acp_ga_t {
	l := dlFor("acp_create_deque")
	if l == nil {
		return C.ACP_GA_NULL
	}
	d, err := l.CreateDeque(uint64(size), int(rank))
	dlFailed(l, "acp_create_deque("+z(size)+", "+u(rank)+")", err)
	return C.acp_ga_t(d.GA)
}

//export goacpdl_erase_deque
func goacpdl_erase_deque(d C.acp_ga_t, i C.int, size C.size_t) {
	if l := dlFor("acp_erase_deque"); l != nil {
		_, err := l.EraseDeque(dit(d, i), uint64(size))
		dlFailed(l, "acp_erase_deque("+hexGA(d)+", "+u(i)+", "+z(size)+")", err)
	}
}

// goacpdl_erase_range_deque returns 1 when the result is start.
//
//export goacpdl_erase_range_deque
func goacpdl_erase_range_deque(s C.acp_ga_t, si C.int, e C.acp_ga_t, ei C.int) C.int {
	l := dlFor("acp_erase_range_deque")
	if l == nil {
		return 0
	}
	end := dit(e, ei)
	it, err := l.EraseRangeDeque(dit(s, si), end)
	dlFailed(l, "acp_erase_range_deque("+hexGA(s)+", "+u(si)+", "+hexGA(e)+", "+u(ei)+")", err)
	return b2i(it != end)
}

//export goacpdl_insert_deque
func goacpdl_insert_deque(d C.acp_ga_t, i C.int, g C.acp_ga_t, size C.size_t) {
	if l := dlFor("acp_insert_deque"); l != nil {
		_, err := l.InsertDeque(dit(d, i), ga(g), uint64(size))
		dlFailed(l, "acp_insert_deque("+hexGA(d)+", "+u(i)+", "+hexGA(g)+", "+z(size)+")", err)
	}
}

// goacpdl_insert_range_deque returns 1 when the result is it, 0 when it is
// end (an empty range or two deques, as in the original).
//
//export goacpdl_insert_range_deque
func goacpdl_insert_range_deque(d C.acp_ga_t, i C.int, s C.acp_ga_t, si C.int, e C.acp_ga_t, ei C.int) C.int {
	l := dlFor("acp_insert_range_deque")
	if l == nil {
		return 1
	}
	if s != e || si >= ei {
		if s != e {
			dlFailed(l, "acp_insert_range_deque", dl.ErrDifferent)
		}
		return 0
	}
	_, err := l.InsertRangeDeque(dit(d, i), dit(s, si), dit(e, ei))
	dlFailed(l, "acp_insert_range_deque("+hexGA(d)+", "+u(i)+")", err)
	return 1
}

//export goacpdl_push_deque
func goacpdl_push_deque(d, g C.acp_ga_t, size C.size_t, front C.int) {
	name := "acp_push_back_deque"
	if front != 0 {
		name = "acp_push_front_deque"
	}
	l := dlFor(name)
	if l == nil {
		return
	}
	var err error
	if front != 0 {
		err = l.PushFrontDeque(dl.Deque{GA: ga(d)}, ga(g), uint64(size))
	} else {
		err = l.PushBackDeque(dl.Deque{GA: ga(d)}, ga(g), uint64(size))
	}
	dlFailed(l, name+"("+hexGA(d)+", "+hexGA(g)+", "+z(size)+")", err)
}

//export goacpdl_dereference_deque_it
func goacpdl_dereference_deque_it(d C.acp_ga_t, i C.int, size C.size_t, out *C.acp_pair_t) {
	l := dlFor("acp_dereference_deque_it")
	if l == nil {
		return
	}
	p, err := l.DereferenceDequeIt(dit(d, i), uint64(size))
	dlFailed(l, "acp_dereference_deque_it("+hexGA(d)+", "+u(i)+", "+z(size)+")", err)
	setPair(out, p)
}

func setPair(out *C.acp_pair_t, p dl.Pair) {
	out.first.ga, out.first.size = C.acp_ga_t(p.First.GA), C.size_t(p.First.Size)
	out.second.ga, out.second.size = C.acp_ga_t(p.Second.GA), C.size_t(p.Second.Size)
}

// ---- list ------------------------------------------------------------------------

func lst(g C.acp_ga_t) dl.List { return dl.List{GA: ga(g)} }

func lit(l, e C.acp_ga_t) dl.ListIt { return dl.ListIt{List: lst(l), Elem: ga(e)} }

//export goacpdl_create_list
func goacpdl_create_list(rank C.int) C.acp_ga_t {
	l := dlFor("acp_create_list")
	if l == nil {
		return C.ACP_GA_NULL
	}
	li, err := l.CreateList(int(rank))
	dlFailed(l, "acp_create_list("+u(rank)+")", err)
	return C.acp_ga_t(li.GA)
}

var listOpNames = [...]string{"acp_destroy_list", "acp_clear_list", "acp_pop_back_list", "acp_pop_front_list", "acp_reverse_list", "acp_unique_list"}

//export goacpdl_list_op
func goacpdl_list_op(op C.int, g C.acp_ga_t) {
	name := listOpNames[op]
	l := dlFor(name)
	if l == nil {
		return
	}
	fns := [...]func(dl.List) error{l.DestroyList, l.ClearList, l.PopBackList, l.PopFrontList, l.ReverseList, l.UniqueList}
	dlFailed(l, name+"("+hexGA(g)+")", fns[op](lst(g)))
}

var listQueryNames = [...]string{"acp_size_list", "acp_empty_list", "acp_begin_list"}

//export goacpdl_list_query
func goacpdl_list_query(op C.int, g C.acp_ga_t) C.uint64_t {
	name := listQueryNames[op]
	l := dlFor(name)
	if l == nil {
		return C.uint64_t(b2i(op == 1))
	}
	var v uint64
	var err error
	switch op {
	case 0:
		v, err = l.SizeList(lst(g))
	case 1:
		var empty bool
		empty, err = l.EmptyList(lst(g))
		v = uint64(b2i(empty))
	case 2:
		var it dl.ListIt
		it, err = l.BeginList(lst(g))
		v = uint64(it.Elem)
	}
	dlFailed(l, name+"("+hexGA(g)+")", err)
	return C.uint64_t(v)
}

var listOp2Names = [...]string{"acp_assign_list", "acp_swap_list"}

//export goacpdl_list_op2
func goacpdl_list_op2(op C.int, l1, l2 C.acp_ga_t) {
	name := listOp2Names[op]
	l := dlFor(name)
	if l == nil {
		return
	}
	var err error
	if op == 0 {
		err = l.AssignList(lst(l1), lst(l2))
	} else {
		err = l.SwapList(lst(l1), lst(l2))
	}
	dlFailed(l, name+"("+hexGA(l1)+", "+hexGA(l2)+")", err)
}

var listRangeNames = [...]string{"acp_assign_range_list", "acp_insert_range_list", "acp_splice_range_list", "acp_erase_range_list", "acp_splice_list"}

// goacpdl_list_range runs the list functions that take a position and a
// range: it is (l, e), the range [(sl, se), (el, ee)). It returns the
// element of the iterator that acp_insert_range_list returns.
//
//export goacpdl_list_range
func goacpdl_list_range(op C.int, li, e, sl, se, el, ee C.acp_ga_t) C.acp_ga_t {
	name := listRangeNames[op]
	l := dlFor(name)
	if l == nil {
		return e
	}
	it, start, end := lit(li, e), lit(sl, se), lit(el, ee)
	var err error
	res := it
	switch op {
	case 0:
		err = l.AssignRangeList(lst(li), start, end)
	case 1:
		res, err = l.InsertRangeList(it, start, end)
	case 2:
		err = l.SpliceRangeList(it, start, end)
	case 3:
		_, err = l.EraseRangeList(start, end)
	case 4:
		err = l.SpliceList(it, start)
	}
	dlFailed(l, name+"("+hexGA(li)+", "+hexGA(e)+", "+hexGA(se)+", "+hexGA(ee)+")", err)
	return C.acp_ga_t(res.Elem)
}

var listStepNames = [...]string{"acp_erase_list", "acp_advance_list_it", "acp_increment_list_it", "acp_decrement_list_it"}

// goacpdl_list_step is acp_erase_list (op 0) and the iterator moves (ops
// 1..3, n steps); it returns the new iterator's element.
//
//export goacpdl_list_step
func goacpdl_list_step(op C.int, li, e C.acp_ga_t, n C.int) C.acp_ga_t {
	name := listStepNames[op]
	l := dlFor(name)
	if l == nil {
		if op == 0 {
			return C.ACP_GA_NULL
		}
		return e
	}
	var it dl.ListIt
	var err error
	if op == 0 {
		it, err = l.EraseList(lit(li, e))
	} else {
		it, err = l.AdvanceListIt(lit(li, e), int(n))
	}
	args := hexGA(li) + ", " + hexGA(e)
	if op == 1 {
		args += ", " + u(n)
	}
	dlFailed(l, name+"("+args+")", err)
	return C.acp_ga_t(it.Elem)
}

//export goacpdl_list_distance
func goacpdl_list_distance(l1, e1, l2, e2 C.acp_ga_t) C.int {
	l := dlFor("acp_distance_list_it")
	if l == nil {
		return 0
	}
	d, err := l.DistanceListIt(lit(l1, e1), lit(l2, e2))
	dlFailed(l, "acp_distance_list_it("+hexGA(e1)+", "+hexGA(e2)+")", err)
	return C.int(d)
}

var listInsertNames = [...]string{"acp_insert_list", "acp_push_back_list", "acp_push_front_list", "acp_remove_list"}

// goacpdl_list_insert runs the functions that take a value: insert before
// (li, e), push back, push front, remove. It returns the inserted element
// (insert only).
//
//export goacpdl_list_insert
func goacpdl_list_insert(op C.int, li, e, g C.acp_ga_t, size C.size_t, rank C.int) C.acp_ga_t {
	name := listInsertNames[op]
	l := dlFor(name)
	if l == nil {
		return C.ACP_GA_NULL
	}
	v := dl.Element{GA: ga(g), Size: uint64(size)}
	var err error
	var res dl.ListIt
	switch op {
	case 0:
		res, err = l.InsertList(lit(li, e), v, int(rank))
	case 1:
		err = l.PushBackList(lst(li), v, int(rank))
	case 2:
		err = l.PushFrontList(lst(li), v, int(rank))
	case 3:
		err = l.RemoveList(lst(li), v)
	}
	dlFailed(l, name+"("+hexGA(li)+", "+hexGA(e)+", {"+hexGA(g)+", "+z(size)+"}, "+u(rank)+")", err)
	return C.acp_ga_t(res.Elem)
}

//export goacpdl_dereference_list_it
func goacpdl_dereference_list_it(li, e C.acp_ga_t, out *C.acp_element_t) {
	l := dlFor("acp_dereference_list_it")
	if l == nil {
		return
	}
	v, err := l.DereferenceListIt(lit(li, e))
	dlFailed(l, "acp_dereference_list_it("+hexGA(li)+", "+hexGA(e)+")", err)
	out.ga, out.size = C.acp_ga_t(v.GA), C.size_t(v.Size)
}

// goacpdl_list_order is acp_merge_list (merge != 0) and acp_sort_list;
// comp is the program's comparator, called through acpdl_call_comp. merge
// says which, not l2: a merge with a NULL list must fail, not sort l1.
//
//export goacpdl_list_order
func goacpdl_list_order(merge C.int, l1, l2 C.acp_ga_t, comp unsafe.Pointer) {
	name, call := "acp_sort_list", "acp_sort_list("+hexGA(l1)+")"
	if merge != 0 {
		name, call = "acp_merge_list", "acp_merge_list("+hexGA(l1)+", "+hexGA(l2)+")"
	}
	l := dlFor(name)
	if l == nil {
		return
	}
	if comp == nil {
		dlFailed(l, call, errNoComparator)
		return
	}
	cmp := func(x, y dl.Element) int {
		return int(C.acpdl_call_comp(comp, C.acp_ga_t(x.GA), C.size_t(x.Size), C.acp_ga_t(y.GA), C.size_t(y.Size)))
	}
	var err error
	if merge != 0 {
		err = l.MergeList(lst(l1), lst(l2), cmp)
	} else {
		err = l.SortList(lst(l1), cmp)
	}
	dlFailed(l, call, err)
}

var errNoComparator = wsError("the comparison function is NULL")

// ---- set, multiset, map ------------------------------------------------------------

var kindNames = [...]string{"set", "multiset", "map"}

func hashed(g C.acp_ga_t, nr, ns C.uint64_t) dl.Hashed {
	return dl.Hashed{GA: ga(g), NumRanks: uint64(nr), NumSlots: uint64(ns)}
}

//export goacpdl_h_create
func goacpdl_h_create(kind C.int, numRanks C.int, ranks *C.int, numSlots, rank C.int, nr *C.uint64_t) C.acp_ga_t {
	name := "acp_create_" + kindNames[kind]
	l := dlFor(name)
	if l == nil {
		return C.ACP_GA_NULL
	}
	var rs []int
	if numRanks > 0 {
		if ranks == nil {
			dlFailed(l, name, wsError("ranks is NULL but num_ranks is "+u(numRanks)))
			return C.ACP_GA_NULL
		}
		for _, r := range unsafe.Slice(ranks, int(numRanks)) {
			rs = append(rs, int(r))
		}
	}
	h, err := l.CreateHashed(dl.Kind(kind), int(numRanks), rs, int(numSlots), int(rank))
	dlFailed(l, name+"("+u(numRanks)+", "+u(numSlots)+", "+u(rank)+")", err)
	*nr = C.uint64_t(h.NumRanks)
	return C.acp_ga_t(h.GA)
}

var hOpNames = [...]string{"destroy", "clear", "empty", "empty_local", "size", "size_local", "clear_local"}

//export goacpdl_h_op
func goacpdl_h_op(kind, op C.int, g C.acp_ga_t, nr, ns C.uint64_t) C.uint64_t {
	name := "acp_" + hOpNames[op] + "_" + kindNames[kind]
	l := dlFor(name)
	if l == nil {
		return C.uint64_t(b2i(op == 2 || op == 3))
	}
	k, h := dl.Kind(kind), hashed(g, nr, ns)
	var n uint64
	var err error
	switch op {
	case 0:
		err = l.DestroyHashed(k, h)
	case 1, 6:
		err = l.ClearHashed(k, h, op == 6)
	case 2, 3, 4, 5:
		n, err = l.SizeHashed(h, op == 3 || op == 5)
		if op == 2 || op == 3 {
			n = uint64(b2i(n == 0))
		}
	}
	dlFailed(l, name+"("+hexGA(g)+")", err)
	return C.uint64_t(n)
}

var hIterNames = [...]string{"begin", "begin_local", "end_local", "increment", "find"}

// goacpdl_h_iter computes an iterator into *rank, *slot, *elem: begin,
// begin_local, end_local, increment (from the iterator given there) and
// find (of the key kga/ksize).
//
//export goacpdl_h_iter
func goacpdl_h_iter(kind, op C.int, g C.acp_ga_t, nr, ns C.uint64_t, rank, slot *C.int, elem *C.acp_ga_t, kga C.acp_ga_t, ksize C.size_t) {
	name := "acp_" + hIterNames[op] + "_" + kindNames[kind]
	if op == 3 {
		name += "_it"
	}
	h := hashed(g, nr, ns)
	from := dl.HashedIt{H: h, Rank: int(*rank), Slot: int(*slot), Elem: ga(*elem)}
	end := h.End()
	*rank, *slot, *elem = C.int(end.Rank), 0, 0
	l := dlFor(name)
	if l == nil {
		return
	}
	var it dl.HashedIt
	var err error
	switch op {
	case 0:
		it, err = l.BeginHashed(h)
	case 1:
		it, err = l.BeginLocalHashed(h)
	case 2:
		it, err = l.EndLocalHashed(h)
	case 3:
		it, err = l.IncrementHashedIt(from)
	case 4:
		it, err = l.FindHashed(dl.Kind(kind), h, dl.Element{GA: ga(kga), Size: uint64(ksize)})
	}
	dlFailed(l, name+"("+hexGA(g)+")", err)
	*rank, *slot, *elem = C.int(it.Rank), C.int(it.Slot), C.acp_ga_t(it.Elem)
}

var hKeyNames = [...]string{"insert", "remove", "remove_all", "retrieve"}

// goacpdl_h_key runs the functions of one key (and a map's value): insert,
// remove, remove_all, retrieve.
//
//export goacpdl_h_key
func goacpdl_h_key(kind, op C.int, g C.acp_ga_t, nr, ns C.uint64_t, kga C.acp_ga_t, ksize C.size_t, vga C.acp_ga_t, vsize C.size_t) C.uint64_t {
	name := "acp_" + hKeyNames[op] + "_" + kindNames[kind]
	l := dlFor(name)
	if l == nil {
		return 0
	}
	k, h := dl.Kind(kind), hashed(g, nr, ns)
	key, val := dl.Element{GA: ga(kga), Size: uint64(ksize)}, dl.Element{GA: ga(vga), Size: uint64(vsize)}
	var n uint64
	var err error
	switch op {
	case 0:
		var ok bool
		ok, err = l.InsertHashed(k, h, key, val)
		n = uint64(b2i(ok))
	case 1, 2:
		err = l.RemoveHashed(k, h, key, op == 2)
	case 3:
		if k == dl.KindMap {
			n, err = l.RetrieveMap(h, key, val)
		} else {
			n, err = l.RetrieveMultiset(h, key)
		}
	}
	dlFailed(l, name+"("+hexGA(g)+", {"+hexGA(kga)+", "+z(ksize)+"})", err)
	return C.uint64_t(n)
}

var hOp2Names = [...]string{"assign", "assign_local", "merge", "merge_local", "move", "move_local", "swap"}

//export goacpdl_h_op2
func goacpdl_h_op2(kind, op C.int, g1 C.acp_ga_t, nr1, ns1 C.uint64_t, g2 C.acp_ga_t, nr2, ns2 C.uint64_t) {
	name := "acp_" + hOp2Names[op] + "_" + kindNames[kind]
	l := dlFor(name)
	if l == nil {
		return
	}
	k, h1, h2 := dl.Kind(kind), hashed(g1, nr1, ns1), hashed(g2, nr2, ns2)
	var err error
	switch op {
	case 0, 1:
		err = l.AssignHashed(k, h1, h2, op == 1)
	case 2, 3:
		err = l.MergeHashed(k, h1, h2, op == 3)
	case 4, 5:
		err = l.MoveHashed(k, h1, h2, op == 5)
	case 6:
		err = l.SwapHashed(k, h1, h2)
	}
	dlFailed(l, name+"("+hexGA(g1)+", "+hexGA(g2)+")", err)
}

//export goacpdl_h_dereference
func goacpdl_h_dereference(kind C.int, elem C.acp_ga_t, out *C.acp_pair_t) {
	name := "acp_dereference_" + kindNames[kind] + "_it"
	l := dlFor(name)
	if l == nil {
		return
	}
	p, err := l.DereferenceHashedIt(dl.Kind(kind), dl.HashedIt{Elem: ga(elem)})
	dlFailed(l, name+"("+hexGA(elem)+")", err)
	setPair(out, p)
}

func z(v C.size_t) string { return strconv.FormatUint(uint64(v), 10) }
