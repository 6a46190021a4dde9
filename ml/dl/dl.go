// Package dl is the data library's containers: vector, deque, list, set,
// multiset and map, kept in the global heap (package heap) and reached
// with global memory accesses alone, so that any rank operates on any
// container.
//
// Control blocks and elements keep the original ACP's byte layouts, which
// programs read directly through acp_query_address (the spec's Appendix
// B). Every call is blocking: it completes the caller's outstanding global
// memory accesses before it returns. Failures leave the container as it was
// where the original would have, and are returned so that the C face can
// say why with ACP_VERBOSE=1.
package dl

import (
	"bytes"
	"errors"
	"fmt"
	"math/bits"
	"strings"
	"sync"

	"github.com/libacp/libacp/core"
	"github.com/libacp/libacp/ml/heap"
)

// Library is one process's data library.
type Library struct {
	e       *core.Engine
	scratch *heap.Scratch
	seq     [seqStripes]sync.Mutex   // see hold
	life    [seqStripes]sync.RWMutex // see use
}

// seqStripes is how many locks the vectors, deques and lists of a
// process share (by control block GA).
const seqStripes = 64

// hold takes, in a fixed order, the locks of the vectors, deques or lists
// whose control blocks are at gas, and returns their release. Their
// control blocks have no lock word (the original's layout): a call reads
// the block, works, and writes it back, so two threads of this process
// pushing onto one vector at once each wrote back their own size and one
// element was lost (t_thr_dl: 4 threads, 48 push_backs of 8 bytes each,
// left 1000 to 1168 of 1536 bytes). Calls from other ranks are still not atomic
// with them. Held for the whole call, around the heap and slot locks,
// never while the program's code runs (merge and sort take it to read and
// to write back, and start again when a list changed in between).
func (l *Library) hold(gas ...core.GA) func() {
	s, n := stripes(gas)
	for _, i := range s[:n] {
		l.seq[i].Lock()
	}
	return func() {
		for _, i := range s[:n] {
			l.seq[i].Unlock()
		}
	}
}

// stripes returns the stripe indices of up to two GAs, in a fixed order
// and without repeats.
func stripes(gas []core.GA) ([2]int, int) {
	var s [2]int
	n := 0
	for _, g := range gas[:min(len(gas), 2)] {
		i := int(uint64(g) >> 3 * 0x9e3779b97f4a7c15 >> 58)
		if n == 0 || s[0] != i {
			s[n] = i
			n++
		}
	}
	if n == 2 && s[0] > s[1] {
		s[0], s[1] = s[1], s[0]
	}
	return s, n
}

// use keeps the sets, multisets or maps whose control blocks are at gas
// from being destroyed by another thread of this process while the call
// runs, and returns its release; gone, taken by their destruction, waits
// for every such call. Calls on one container still run at once (its slot
// locks order them). A destruction freed the tables under an insert of
// another thread, which then wrote its element into the freed blocks (or
// into blocks allocated again since) and broke the heap: the next
// acp_create_vector failed with "reading 24 bytes at 0x1" (t_thr_uwd).
func (l *Library) use(gas ...core.GA) func() {
	s, n := stripes(gas)
	for _, i := range s[:n] {
		l.life[i].RLock()
	}
	return func() {
		for _, i := range s[:n] {
			l.life[i].RUnlock()
		}
	}
}

func (l *Library) gone(ga core.GA) func() {
	s, _ := stripes([]core.GA{ga})
	l.life[s[0]].Lock()
	return l.life[s[0]].Unlock
}

// Start lays out this process's heap and waits until every rank did, so
// that no rank allocates from a heap not laid out yet. Collective.
func Start(e *core.Engine) (*Library, error) {
	heap.Init(e)
	s, err := heap.NewScratch(e)
	if err != nil {
		return nil, err
	}
	if err := e.Sync(); err != nil {
		s.Close()
		return nil, err
	}
	return &Library{e: e, scratch: s}, nil
}

// Stop releases the scratch memory. No call may be in progress.
func (l *Library) Stop() {
	l.scratch.Close()
	tableRooms.forgetEngine(l.e)
}

// Engine is the basic layer the library runs on.
func (l *Library) Engine() *core.Engine { return l.e }

// Call runs fn as one data-library call (for the workspace).
func (l *Library) Call(fn func(a *heap.Access) error) error { return l.call(fn) }

// call runs fn with a scratch buffer and completes every outstanding
// access of the caller afterwards (spec 1.9).
func (l *Library) call(fn func(a *heap.Access) error) error {
	a, err := l.scratch.Begin()
	if err != nil {
		return err
	}
	err = fn(a)
	if eerr := a.End(); err == nil {
		err = eerr
	}
	l.e.Complete(core.HandleAll)
	return err
}

// Malloc is acp_malloc.
func (l *Library) Malloc(size uint64, rank int) (ga core.GA, err error) {
	err = l.call(func(a *heap.Access) error {
		ga, err = heap.Malloc(a, size, rank)
		return err
	})
	return ga, err
}

// Free is acp_free.
func (l *Library) Free(ga core.GA) error {
	return l.call(func(a *heap.Access) error { return heap.Free(a, ga) })
}

// Element is acp_element_t: a byte range in global memory.
type Element struct {
	GA   core.GA
	Size uint64
}

// Pair is acp_pair_t.
type Pair struct{ First, Second Element }

func round8(n uint64) uint64 { return (n + 7) &^ 7 }

// errNull is the error for a container handle whose GA is ACP_GA_NULL.
func errNull(what string) error {
	return fmt.Errorf("the %s is ACP_GA_NULL (its creation failed?)", what)
}

// block reads the n words at ga of a container's block (a control block,
// a list element, a directory), after checking that ga is the start of an
// allocated heap block that holds them: its header word comes with the
// same read. Containers live in the data-library heaps, so a GA of other
// registered memory, of a freed block or of the middle of a block is
// refused before its bytes are taken for links or sizes.
func block(a *heap.Access, what string, ga core.GA, n int) ([]uint64, error) {
	if ga == core.GANull {
		return nil, errNull(what)
	}
	if err := inHeap(a, what, ga); err != nil {
		return nil, err
	}
	w, err := a.Words(ga-8, n+1)
	if err != nil {
		return nil, err
	}
	if room, ok := heap.BlockBytes(w[0]); !ok || room < 8*uint64(n) {
		return nil, fmt.Errorf("%#x is no %s: its heap block header is %#x, not an allocated block of %d bytes or more (freed, or not a block's start?)",
			uint64(ga), what, w[0], 8*n)
	}
	return w, nil
}

// inHeap checks that ga lies in a data-library heap (some rank's
// data-library starter memory), where every container block is.
func inHeap(a *heap.Access, what string, ga core.GA) error {
	e := a.Engine()
	if e.QueryRank(ga) < 0 || e.Layout().Seg(ga) != core.SegStarterDL {
		return fmt.Errorf("%#x is no %s: it is not in a data-library heap (containers are made by acp_create_*)", uint64(ga), what)
	}
	return nil
}

// ErrDifferent reports iterators of two containers where one is needed.
var ErrDifferent = errors.New("the iterators belong to different containers")

func malloc(a *heap.Access, size uint64, rank int) (core.GA, error) {
	return heap.Malloc(a, size, rank)
}

func free(a *heap.Access, ga core.GA) {
	if ga != core.GANull {
		if err := heap.Free(a, ga); err != nil {
			a.Engine().Logf(1, "data library: freeing %#x: %v", uint64(ga), err)
		}
	}
}

// landed waits for the copies issued so far; when one failed (a bad GA
// from the caller) it frees the blocks allocated for the operation, which
// then changes nothing.
func landed(a *heap.Access, allocated ...core.GA) error {
	err := a.Flush()
	if err == nil {
		return nil
	}
	a.ClearErr()
	for _, g := range allocated {
		free(a, g)
	}
	a.ClearErr()
	return err
}

func rankOf(a *heap.Access, ga core.GA) int { return a.Engine().QueryRank(ga) }

// clamp limits an iterator index to 0..n.
func clamp(i int, n uint64) uint64 {
	if i < 0 {
		return 0
	}
	return min(uint64(i), n)
}

// blob is bytes to hash, compare or store: held here (taken out of a
// container, so at most a heap block's worth) or at a GA (a caller's key,
// value or data, read a scratch buffer at a time, so that a size the
// caller gives never becomes an allocation here). Held bytes have no GA.
type blob struct {
	ga   core.GA
	held []byte
	n    uint64
}

func heldBytes(b []byte) blob { return blob{held: b, n: uint64(len(b))} }

// callerBytes checks a byte range the caller gives before anything is
// read or allocated for it: a garbage size fails here, naming itself.
func callerBytes(a *heap.Access, what string, e Element) (blob, error) {
	l := a.Engine().Layout()
	switch {
	case e.Size == 0:
		return blob{}, nil
	case e.GA == core.GANull:
		return blob{}, fmt.Errorf("%s {ACP_GA_NULL, %d}: the GA is ACP_GA_NULL", what, e.Size)
	case e.Size > l.MaxOffset()-l.Offset(e.GA):
		return blob{}, fmt.Errorf("%s {%#x, %d}: no registered memory holds %d bytes from that GA (at most %d)",
			what, uint64(e.GA), e.Size, e.Size, l.MaxOffset()-l.Offset(e.GA))
	}
	return blob{ga: e.GA, n: e.Size}, nil
}

// store writes the bytes at dst.
func (b blob) store(a *heap.Access, dst core.GA) error {
	if b.ga == core.GANull {
		return a.Write(dst, b.held)
	}
	return a.Copy(dst, b.ga, b.n)
}

// equalAt reports whether the b.n bytes at ga are b's.
func (b blob) equalAt(a *heap.Access, ga core.GA) (bool, error) {
	if b.ga != core.GANull {
		return a.Equal(ga, b.ga, b.n)
	}
	same, rest := true, b.held
	err := a.Each(ga, b.n, func(p []byte) bool {
		same, rest = bytes.Equal(p, rest[:len(p)]), rest[len(p):]
		return same
	})
	return same, err
}

// readable checks, before anything changes, that the caller's bytes can
// be read: their first and last byte (a registered region is contiguous,
// and callerBytes keeps the range within one GA segment).
func (b blob) readable(a *heap.Access) error {
	if b.ga == core.GANull || b.n == 0 {
		return nil
	}
	var x [1]byte
	if err := a.ReadInto(x[:], b.ga); err != nil {
		return err
	}
	return a.ReadInto(x[:], b.ga+core.GA(b.n-1))
}

// blockSize adds the parts of a heap block (a header and the caller's
// bytes) without wrapping: (size_t)-17 plus a 24-byte header must fail,
// not become an 8-byte block that the header then overruns.
func blockSize(parts ...uint64) (uint64, error) {
	var sum, carry uint64
	for _, p := range parts {
		if sum, carry = bits.Add64(sum, p, 0); carry != 0 || sum > heap.MaxSize {
			return 0, fmt.Errorf("a block of %s bytes: more than any heap holds (less than %d)", plus(parts), uint64(heap.MaxSize))
		}
	}
	return sum, nil
}

func plus(parts []uint64) string {
	s := make([]string, len(parts))
	for i, p := range parts {
		s[i] = fmt.Sprint(p)
	}
	return strings.Join(s, " + ")
}
