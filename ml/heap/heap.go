// Package heap is the data library's global heap (acp_malloc/acp_free):
// every rank's heap lives in its data-library starter memory, and any rank
// allocates from any heap with global memory accesses alone.
//
// The layout and the algorithm are the original ACP's, so that programs
// which print or walk heap addresses see the same placement (first fit from
// the front of the first listed free block, 8-byte granularity, 16 bytes of
// boundary tags per block). Offsets from D, the GA of a DL starter region of
// S bytes, with H = D+16 and W = (S-16) rounded down to a multiple of 8:
//
//	D+0       unused
//	D+8       W, written when the heap is laid out (0: no heap)
//	H+0..H+47 unused (the original's per-process scratch words and local lock)
//	H+48      heap lock: 0 free, else the holder's rank + 1
//	H+56      GA of the first free-list entry (0: none)
//	H+64      start sentinel, 3
//	H+72..    blocks
//	H+W-8     end sentinel, 3
//
// A block of B bytes at A has its header at A and its footer at A+B-8, both
// B + tag: tag 3 allocated, 5 free and listed, 6 free and not listed (to be
// absorbed by the listed free block physically before it). The user's bytes
// of an allocated block start at A+8. A listed block's entry is A+B-16 and
// holds the GA of the next entry, so reading 24 bytes at an entry gives
// {next, own footer, header of the following block}.
package heap

import (
	"errors"
	"fmt"

	"github.com/libacp/libacp/core"
)

// Offsets in the DL starter memory.
const (
	offHeapSize = 8
	offH        = 16
	offLock     = offH + 48
	offHead     = offH + 56
	offStart    = offH + 64
	offFirst    = offH + 72

	// MinStarter is the smallest DL starter memory that holds a heap with
	// one block of 8 bytes.
	MinStarter = offH + 80 + 24

	tagUsed     = 3
	tagFree     = 5
	tagExtended = 6
)

// MaxSize is more than any heap can hold (a GA offset has at most 48
// bits): Malloc refuses larger sizes before they reach its arithmetic.
const MaxSize = 1 << 47

// BlockBytes gives the bytes an allocated block offers (what Malloc was
// asked for, rounded) from its header word, the word before the GA Malloc
// returned; ok is false when the word is no allocated block's header.
func BlockBytes(header uint64) (n uint64, ok bool) {
	b := header &^ 7
	if header&7 != tagUsed || b < 24 {
		return 0, false
	}
	return b - 16, true
}

// Errors of Malloc and Free.
var (
	ErrNoMemory = errors.New("no free block large enough")
	ErrCorrupt  = errors.New("heap metadata is corrupt")
	ErrNoHeap   = errors.New("no heap")
	ErrNotBlock = errors.New("not an allocated block")
)

// Init lays out this process's heap in its DL starter memory (all zero at
// start and after acp_reset). Every rank does this before any rank
// allocates: the caller synchronises afterwards.
func Init(e *core.Engine) {
	mem := e.StarterMemory(core.SegStarterDL)
	if len(mem) < MinStarter {
		return // no heap: every acp_malloc on this rank fails and says so
	}
	w := uint64(len(mem)-offH) &^ 7
	d, _ := e.StarterGADL(e.Rank())
	h := uint64(d) + offH
	b := w - 80
	put64(mem[offHeapSize:], w)
	put64(mem[offLock:], 0)
	put64(mem[offStart:], tagUsed)
	put64(mem[offH+w-8:], tagUsed)
	put64(mem[offFirst:], b+tagFree)
	put64(mem[offFirst+b-8:], b+tagFree)
	put64(mem[offFirst+b-16:], 0)
	put64(mem[offHead:], h+w-24)
}

// heapOf describes rank's heap as seen from the words read at its start.
type heapOf struct {
	rank   int
	d      core.GA // DL starter
	lo, hi core.GA // blocks live in [lo, hi)
}

func (h *heapOf) lock() core.GA { return h.d + offLock }
func (h *heapOf) head() core.GA { return h.d + offHead }

// open reads the size word of rank's heap (it never changes while the
// library runs) and checks that the heap exists.
func open(a *Access, rank int) (*heapOf, error) {
	d, err := a.Engine().StarterGADL(rank)
	if err != nil {
		return nil, err
	}
	h := &heapOf{rank: rank, d: d}
	return h, h.bounds(a)
}

func (h *heapOf) bounds(a *Access) error {
	if len(a.Engine().StarterMemory(core.SegStarterDL)) < MinStarter && h.rank == a.Engine().Rank() {
		return noHeap(h.rank)
	}
	w, err := a.Word(h.d + offHeapSize)
	var ae *core.AccessError
	switch {
	case errors.As(err, &ae) && ae.Status == core.StatusOutOfBounds:
		// The size word itself is beyond that rank's starter memory.
		return fmt.Errorf("%w (%v)", noHeap(h.rank), err)
	case err != nil:
		return fmt.Errorf("cannot read the heap size of rank %d: %w", h.rank, err)
	case w < 104 || w&7 != 0:
		return noHeap(h.rank)
	}
	h.lo = h.d + offFirst
	h.hi = h.d + offH + core.GA(w) - 8
	return nil
}

func noHeap(rank int) error {
	return fmt.Errorf("%w on rank %d: its data-library starter memory cannot hold one (at least %d bytes are needed); raise --acp-size-smem-dl / ACP_SIZE_SMEM_DL (or a program's own iacp_starter_memory_size_dl)", ErrNoHeap, rank, MinStarter)
}

// block checks that [A, A+B) is a possible block of this heap.
func (h *heapOf) block(a core.GA, b uint64) bool {
	return b >= 24 && b&7 == 0 && a >= h.lo && a < h.hi && b <= uint64(h.hi-a)
}

func roundSize(size uint64) uint64 {
	n := (size + 7) &^ 7
	return max(n, 8)
}

// Malloc allocates size bytes on rank's heap (acp_malloc). The result is
// 8-byte aligned; the memory is not cleared.
func Malloc(a *Access, size uint64, rank int) (core.GA, error) {
	if size > MaxSize {
		return core.GANull, fmt.Errorf("%w: %d bytes is larger than any heap can be", ErrNoMemory, size)
	}
	h, err := open(a, rank)
	if err != nil {
		return core.GANull, err
	}
	if err := a.Lock(h.lock(), fmt.Sprintf("the heap of rank %d", rank)); err != nil {
		return core.GANull, err
	}
	ga, err := h.malloc(a, roundSize(size))
	if uerr := a.Unlock(h.lock()); err == nil && uerr != nil {
		ga, err = core.GANull, uerr
	}
	return ga, err
}

func (h *heapOf) malloc(a *Access, n uint64) (core.GA, error) {
restart:
	prev := h.head() // the word that points at entry e
	e, err := a.Word(prev)
	if err != nil {
		return core.GANull, err
	}
	for e != 0 {
		w, err := a.Words(core.GA(e), 3)
		if err != nil {
			return core.GANull, err
		}
		next, footer, f := w[0], w[1], w[2]
		b := footer &^ 7
		blk := core.GA(e) + 16 - core.GA(b)
		if footer&7 != tagFree || !h.block(blk, b) {
			return core.GANull, fmt.Errorf("%w: free-list entry %#x on rank %d has footer %#x", ErrCorrupt, e, h.rank, footer)
		}
		// Absorb extended blocks that follow: the entry moves to the new end.
		for f&7 == tagExtended {
			fb := f &^ 7
			if !h.block(blk+core.GA(b), fb) {
				return core.GANull, fmt.Errorf("%w: block at %#x on rank %d has header %#x", ErrCorrupt, uint64(blk)+b, h.rank, f)
			}
			b += fb
			ne := blk + core.GA(b) - 16
			a.PutWords(ne, next, b+tagFree)
			a.PutWords(blk, b+tagFree)
			a.PutWords(prev, uint64(ne))
			e = uint64(ne)
			if f, err = a.Word(blk + core.GA(b)); err != nil {
				return core.GANull, err
			}
		}
		if f&7 == tagFree {
			// Merge into the listed block that follows, unlink this entry,
			// and look again from the head.
			fb := f &^ 7
			if !h.block(blk+core.GA(b), fb) {
				return core.GANull, fmt.Errorf("%w: block at %#x on rank %d has header %#x", ErrCorrupt, uint64(blk)+b, h.rank, f)
			}
			sum := b + fb
			a.PutWords(blk, sum+tagFree)
			a.PutWords(blk+core.GA(sum)-8, sum+tagFree)
			a.PutWords(prev, next)
			if err := a.Flush(); err != nil {
				return core.GANull, err
			}
			goto restart
		}
		switch {
		case b >= n+16 && b <= n+40:
			// Small remainder: the whole block.
			a.PutWords(blk, b+tagUsed)
			a.PutWords(blk+core.GA(b)-8, b+tagUsed)
			a.PutWords(prev, next)
			return blk + 8, a.Flush()
		case b > n+40:
			// Split: the front is allocated, the rest stays listed with the
			// same entry, which moves to the head of the list.
			u := n + 16
			a.PutWords(blk, u+tagUsed)
			a.PutWords(blk+core.GA(u)-8, u+tagUsed)
			a.PutWords(blk+core.GA(u), b-u+tagFree)
			a.PutWords(blk+core.GA(b)-8, b-u+tagFree)
			if prev != h.head() {
				old, err := a.Word(h.head())
				if err != nil {
					return core.GANull, err
				}
				a.PutWords(prev, next)
				a.PutWords(core.GA(e), old)
				a.PutWords(h.head(), e)
			}
			return blk + 8, a.Flush()
		}
		prev, e = core.GA(e), next
	}
	return core.GANull, fmt.Errorf("%w: the data-library heap of rank %d (%d bytes) has no free block for %d bytes; raise --acp-size-smem-dl / ACP_SIZE_SMEM_DL (or a program's own iacp_starter_memory_size_dl)",
		ErrNoMemory, h.rank, uint64(h.hi-h.lo), n)
}

// Free returns the block at ga to its heap (acp_free). ACP_GA_NULL and GAs
// that are not 8-byte aligned are ignored; so are GAs that are not the
// start of an allocated block (the error says why).
func Free(a *Access, ga core.GA) error {
	if ga == core.GANull || ga&7 != 0 {
		return nil
	}
	rank := a.Engine().QueryRank(ga)
	if rank < 0 {
		return fmt.Errorf("%w: %#x is not a global address", ErrNotBlock, uint64(ga))
	}
	h, err := open(a, rank)
	if err != nil {
		return err
	}
	if ga < h.d+offFirst+8 || a.Engine().Layout().Seg(ga) != core.SegStarterDL {
		return fmt.Errorf("%w: %#x is not in the data-library heap of rank %d", ErrNotBlock, uint64(ga), rank)
	}
	if err := a.Lock(h.lock(), fmt.Sprintf("the heap of rank %d", rank)); err != nil {
		return err
	}
	err = h.free(a, ga)
	if uerr := a.Unlock(h.lock()); err == nil {
		err = uerr
	}
	return err
}

func (h *heapOf) free(a *Access, ga core.GA) error {
	blk := ga - 8
	if blk >= h.hi {
		return fmt.Errorf("%w: %#x is beyond the heap of rank %d", ErrNotBlock, uint64(ga), h.rank)
	}
	w, err := a.Words(ga-16, 2)
	if err != nil {
		return err
	}
	p, t := w[0], w[1]
	b := t &^ 7
	if t&7 != tagUsed || !h.block(blk, b) {
		return fmt.Errorf("%w: %#x (header %#x)", ErrNotBlock, uint64(ga), t)
	}
	w, err = a.Words(blk+core.GA(b)-8, 2)
	if err != nil {
		return err
	}
	foot, f := w[0], w[1]
	if foot != t {
		return fmt.Errorf("%w: %#x (header %#x, footer %#x)", ErrNotBlock, uint64(ga), t, foot)
	}
	switch {
	case f&7 == tagFree && h.block(blk+core.GA(b), f&^7):
		sum := b + f&^7
		a.PutWords(blk, sum+tagFree)
		a.PutWords(blk+core.GA(sum)-8, sum+tagFree)
	case p&7 == tagExtended && p&^7 <= uint64(blk-h.lo) && h.block(blk-core.GA(p&^7), p&^7):
		pb := p &^ 7
		sum := pb + b
		a.PutWords(blk-core.GA(pb), sum+tagExtended)
		a.PutWords(blk+core.GA(b)-8, sum+tagExtended)
	case p&7 == tagFree:
		a.PutWords(blk, b+tagExtended)
		a.PutWords(blk+core.GA(b)-8, b+tagExtended)
	default:
		head, err := a.Word(h.head())
		if err != nil {
			return err
		}
		entry := blk + core.GA(b) - 16
		a.PutWords(blk, b+tagFree)
		a.PutWords(entry, head, b+tagFree)
		a.PutWords(h.head(), uint64(entry))
	}
	return a.Flush()
}

// Usable reports whether this process has a heap.
func Usable(e *core.Engine) bool { return len(e.StarterMemory(core.SegStarterDL)) >= MinStarter }
