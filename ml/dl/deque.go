package dl

import (
	"fmt"

	"github.com/libacp/libacp/core"
	"github.com/libacp/libacp/ml/heap"
)

// Deque is acp_deque_t: a byte ring. Its control block is {body GA,
// offset, size, capacity}; logical byte i is at body + (offset+i) mod
// capacity. Whenever the body is replaced the content is linearised.
type Deque struct{ GA core.GA }

// DequeIt is acp_deque_it_t: a logical byte index.
type DequeIt struct {
	Deque Deque
	Index int
}

type dqCB struct{ body, off, size, cap uint64 }

func readDeque(a *heap.Access, d Deque) (dqCB, error) {
	w, err := block(a, "deque", d.GA, 4)
	if err != nil {
		return dqCB{}, err
	}
	cb := dqCB{w[1], w[2], w[3], w[4]}
	if cb.size > cb.cap || cb.cap > heap.MaxSize || (cb.cap != 0 && (cb.body == 0 || cb.off >= cb.cap)) {
		return dqCB{}, fmt.Errorf("%#x is not a deque (offset %d, size %d, capacity %d, body %#x)", uint64(d.GA), cb.off, cb.size, cb.cap, cb.body)
	}
	return cb, nil
}

func (cb dqCB) write(a *heap.Access, d Deque) error {
	return a.PutWords(d.GA, cb.body, cb.off, cb.size, cb.cap)
}

// piece is a physical byte range.
type piece struct {
	ga core.GA
	n  uint64
}

// pieces gives the at most two physical ranges of logical bytes
// [lo, lo+n), n <= capacity.
func (cb dqCB) pieces(lo, n uint64) []piece {
	if n == 0 {
		return nil
	}
	p := (cb.off + lo) % cb.cap
	first := min(n, cb.cap-p)
	out := []piece{{core.GA(cb.body + p), first}}
	if n > first {
		out = append(out, piece{core.GA(cb.body), n - first})
	}
	return out
}

// read reads logical bytes [lo, lo+n); n is at most a stream's chunk.
func (cb dqCB) read(a *heap.Access, lo, n uint64) ([]byte, error) {
	out := make([]byte, 0, n)
	for _, p := range cb.pieces(lo, n) {
		b, err := a.Read(p.ga, p.n)
		if err != nil {
			return nil, err
		}
		out = append(out, b...)
	}
	return out, nil
}

func (cb dqCB) writeBytes(a *heap.Access, lo uint64, data []byte) {
	for _, p := range cb.pieces(lo, uint64(len(data))) {
		a.Write(p.ga, data[:p.n])
		data = data[p.n:]
	}
}

// copyOut copies logical bytes [lo, lo+n) to dst.
func (cb dqCB) copyOut(a *heap.Access, lo, n uint64, dst core.GA) {
	for _, p := range cb.pieces(lo, n) {
		a.Copy(dst, p.ga, p.n)
		dst += core.GA(p.n)
	}
}

// copyIn copies n bytes at src to logical bytes [lo, lo+n).
func (cb dqCB) copyIn(a *heap.Access, lo uint64, src core.GA, n uint64) {
	for _, p := range cb.pieces(lo, n) {
		a.Copy(p.ga, src, p.n)
		src += core.GA(p.n)
	}
}

// blobs are logical bytes [lo, lo+n) where they lie.
func (cb dqCB) blobs(lo, n uint64) []blob {
	var out []blob
	for _, p := range cb.pieces(lo, n) {
		out = append(out, blob{ga: p.ga, n: p.n})
	}
	return out
}

// shift moves logical bytes [from, from+n) to [to, to+n) a read area at a
// time, in memmove's order, so that the two ranges may overlap.
func (cb dqCB) shift(a *heap.Access, from, to, n uint64) error {
	return heap.Chunks(n, to > from, func(off, k uint64) error {
		b, err := cb.read(a, from+off, k)
		if err != nil {
			return err
		}
		cb.writeBytes(a, to+off, b)
		return a.Err()
	})
}

// insertHere inserts data at logical pos within the capacity: the bytes
// from pos on move n further, then data fills the gap. The caller's bytes
// are checked first, so that a bad GA changes nothing; data may lie in
// the body itself (a range of the same container), and what of it moved
// is read where it went.
func (cb dqCB) insertHere(a *heap.Access, pos uint64, data ...blob) error {
	n := uint64(0)
	for _, b := range data {
		if err := b.readable(a); err != nil {
			return err
		}
		n += b.n
	}
	if err := cb.shift(a, pos, pos+n, cb.size-pos); err != nil {
		return err
	}
	at := pos
	for _, b := range data {
		if b.ga == core.GANull {
			cb.writeBytes(a, at, b.held)
			at += b.n
			continue
		}
		for done := uint64(0); done < b.n; {
			src, k := cb.movedTo(b.ga+core.GA(done), b.n-done, pos, n)
			cb.copyIn(a, at, src, k)
			at, done = at+k, done+k
		}
	}
	return a.Err()
}

// movedTo tells where the byte at g is after insertHere moved the logical
// bytes [pos, size) n further (around the ring), and for how many bytes
// from g on (at most left) the same move holds. Everything else stayed.
func (cb dqCB) movedTo(g core.GA, left, pos, n uint64) (core.GA, uint64) {
	body, end := core.GA(cb.body), core.GA(cb.body+cb.cap)
	switch {
	case g < body:
		return g, min(left, uint64(body-g))
	case g >= end:
		return g, left
	}
	p := uint64(g - body)
	k := min(left, cb.cap-p)
	l := (p + cb.cap - cb.off) % cb.cap // logical index of g
	switch {
	case l < pos:
		return g, min(k, pos-l)
	case l >= cb.size:
		return g, min(k, cb.cap-l)
	}
	q := (p + n) % cb.cap
	return body + core.GA(q), min(k, cb.size-l, cb.cap-q)
}

// CreateDeque is acp_create_deque: an empty deque with room for size bytes
// (spec 8 #5: size is a capacity).
func (l *Library) CreateDeque(size uint64, rank int) (d Deque, err error) {
	err = l.call(func(a *heap.Access) error {
		cb, err := malloc(a, 32, rank)
		if err != nil {
			return err
		}
		var body core.GA
		if size > 0 {
			if body, err = malloc(a, size, rank); err != nil {
				free(a, cb)
				return err
			}
		}
		d = Deque{cb}
		return dqCB{uint64(body), 0, 0, round8(size)}.write(a, d)
	})
	return d, err
}

// DestroyDeque is acp_destroy_deque.
func (l *Library) DestroyDeque(d Deque) error {
	defer l.hold(d.GA)()
	return l.call(func(a *heap.Access) error {
		cb, err := readDeque(a, d)
		if err != nil {
			return err
		}
		free(a, core.GA(cb.body))
		free(a, d.GA)
		return nil
	})
}

// fill makes d hold n bytes given by put (which copies into a linear
// destination), replacing its body by one of exactly n bytes when the
// capacity is too small.
func (cb dqCB) fill(a *heap.Access, d Deque, n uint64, put func(dst core.GA)) error {
	var old, fresh core.GA
	if n > cb.cap {
		nb, err := malloc(a, n, rankOf(a, d.GA))
		if err != nil {
			return err
		}
		old, fresh, cb.body, cb.cap = core.GA(cb.body), nb, uint64(nb), n
	}
	put(core.GA(cb.body))
	if err := landed(a, fresh); err != nil {
		return err
	}
	cb.off, cb.size = 0, n
	cb.write(a, d)
	if err := a.Flush(); err != nil {
		return err
	}
	free(a, old)
	return a.Err()
}

// AssignDeque is acp_assign_deque: d1 becomes a linear copy of d2.
func (l *Library) AssignDeque(d1, d2 Deque) error {
	defer l.hold(d1.GA, d2.GA)()
	if d1 == d2 {
		return nil
	}
	return l.call(func(a *heap.Access) error {
		c1, err := readDeque(a, d1)
		if err != nil {
			return err
		}
		c2, err := readDeque(a, d2)
		if err != nil {
			return err
		}
		return c1.fill(a, d1, c2.size, func(dst core.GA) { c2.copyOut(a, 0, c2.size, dst) })
	})
}

// AssignRangeDeque is acp_assign_range_deque.
func (l *Library) AssignRangeDeque(d Deque, start, end DequeIt) error {
	defer l.hold(d.GA, start.Deque.GA)()
	if start.Deque != end.Deque {
		return ErrDifferent
	}
	return l.call(func(a *heap.Access) error {
		src, err := readDeque(a, start.Deque)
		if err != nil {
			return err
		}
		lo, hi := clamp(start.Index, src.size), clamp(end.Index, src.size)
		n := uint64(0)
		if hi > lo {
			n = hi - lo
		}
		if d == start.Deque {
			// The range becomes the whole ring: move the window.
			if n == 0 {
				src.off = 0
			} else {
				src.off = (src.off + lo) % src.cap
			}
			src.size = n
			return src.write(a, d)
		}
		cb, err := readDeque(a, d)
		if err != nil {
			return err
		}
		return cb.fill(a, d, n, func(dst core.GA) { src.copyOut(a, lo, n, dst) })
	})
}

// AtDeque is acp_at_deque: the GA of logical byte index.
func (l *Library) AtDeque(d Deque, index int) (ga core.GA, err error) {
	defer l.hold(d.GA)()
	err = l.call(func(a *heap.Access) error {
		cb, err := readDeque(a, d)
		if err != nil {
			return err
		}
		if index < 0 || uint64(index) >= cb.size {
			return fmt.Errorf("index %d is outside the deque's %d bytes", index, cb.size)
		}
		ga = cb.pieces(uint64(index), 1)[0].ga
		return nil
	})
	return ga, err
}

// BeginDeque is acp_begin_deque: logical index 0 (the original returned
// the ring offset, Q-DL-3).
func BeginDeque(d Deque) DequeIt { return DequeIt{d, 0} }

// EndDeque is acp_end_deque: {deque, size}.
func (l *Library) EndDeque(d Deque) (DequeIt, error) {
	defer l.hold(d.GA)()
	var cb dqCB
	err := l.call(func(a *heap.Access) (err error) { cb, err = readDeque(a, d); return })
	return DequeIt{d, int(cb.size)}, err
}

// CapacityDeque is acp_capacity_deque.
func (l *Library) CapacityDeque(d Deque) (uint64, error) {
	defer l.hold(d.GA)()
	var cb dqCB
	err := l.call(func(a *heap.Access) (err error) { cb, err = readDeque(a, d); return })
	return cb.cap, err
}

// SizeDeque is acp_size_deque.
func (l *Library) SizeDeque(d Deque) (uint64, error) {
	defer l.hold(d.GA)()
	var cb dqCB
	err := l.call(func(a *heap.Access) (err error) { cb, err = readDeque(a, d); return })
	return cb.size, err
}

// ClearDeque is acp_clear_deque.
func (l *Library) ClearDeque(d Deque) error {
	defer l.hold(d.GA)()
	return l.call(func(a *heap.Access) error {
		if _, err := readDeque(a, d); err != nil {
			return err
		}
		return a.PutWords(d.GA+8, 0, 0)
	})
}

// ReserveDeque is acp_reserve_deque: a body of exactly size bytes when the
// capacity is smaller.
func (l *Library) ReserveDeque(d Deque, size uint64) error {
	defer l.hold(d.GA)()
	return l.call(func(a *heap.Access) error {
		cb, err := readDeque(a, d)
		if err != nil || size <= cb.cap {
			return err
		}
		return cb.relinearize(a, d, size, func(nb core.GA) { cb.copyOut(a, 0, cb.size, nb) }, cb.size)
	})
}

// relinearize replaces the body by one of capacity c filled by put, with
// size n afterwards.
func (cb dqCB) relinearize(a *heap.Access, d Deque, c uint64, put func(nb core.GA), n uint64) error {
	nb, err := malloc(a, c, rankOf(a, d.GA))
	if err != nil {
		return err
	}
	put(nb)
	if err := landed(a, nb); err != nil {
		return err
	}
	old := core.GA(cb.body)
	dqCB{uint64(nb), 0, n, c}.write(a, d)
	if err := a.Flush(); err != nil {
		return err
	}
	free(a, old)
	return a.Err()
}

// PushBackDeque is acp_push_back_deque. A full deque grows to exactly the
// size needed.
func (l *Library) PushBackDeque(d Deque, ga core.GA, n uint64) error {
	defer l.hold(d.GA)()
	return l.call(func(a *heap.Access) error {
		cb, err := readDeque(a, d)
		if err == nil {
			err = cb.canTake(a, ga, n)
		}
		if err != nil || n == 0 {
			return err
		}
		if cb.size+n > cb.cap {
			return cb.relinearize(a, d, cb.size+n, func(nb core.GA) {
				cb.copyOut(a, 0, cb.size, nb)
				a.Copy(nb+core.GA(cb.size), ga, n)
			}, cb.size+n)
		}
		cb.copyIn(a, cb.size, ga, n)
		if err := landed(a); err != nil {
			return err
		}
		return a.PutWords(d.GA+16, cb.size+n)
	})
}

// PushFrontDeque is acp_push_front_deque: the n bytes keep their order.
func (l *Library) PushFrontDeque(d Deque, ga core.GA, n uint64) error {
	defer l.hold(d.GA)()
	return l.call(func(a *heap.Access) error {
		cb, err := readDeque(a, d)
		if err == nil {
			err = cb.canTake(a, ga, n)
		}
		if err != nil || n == 0 {
			return err
		}
		if cb.size+n > cb.cap {
			return cb.relinearize(a, d, cb.size+n, func(nb core.GA) {
				a.Copy(nb, ga, n)
				cb.copyOut(a, 0, cb.size, nb+core.GA(n))
			}, cb.size+n)
		}
		cb.off = (cb.off + cb.cap - n) % cb.cap
		cb.copyIn(a, 0, ga, n)
		if err := landed(a); err != nil {
			return err
		}
		cb.size += n
		return cb.write(a, d)
	})
}

// PopBackDeque is acp_pop_back_deque.
func (l *Library) PopBackDeque(d Deque, n uint64) error {
	defer l.hold(d.GA)()
	return l.call(func(a *heap.Access) error {
		cb, err := readDeque(a, d)
		if err != nil {
			return err
		}
		return a.PutWords(d.GA+16, cb.size-min(n, cb.size))
	})
}

// PopFrontDeque is acp_pop_front_deque.
func (l *Library) PopFrontDeque(d Deque, n uint64) error {
	defer l.hold(d.GA)()
	return l.call(func(a *heap.Access) error {
		cb, err := readDeque(a, d)
		if err != nil || cb.cap == 0 {
			return err
		}
		k := min(n, cb.size)
		cb.off = (cb.off + k) % cb.cap
		cb.size -= k
		return cb.write(a, d)
	})
}

// canTake checks n more bytes from the caller at ga: the range itself, and
// that the size does not outgrow any heap.
func (cb dqCB) canTake(a *heap.Access, ga core.GA, n uint64) error {
	if _, err := callerBytes(a, "the bytes", Element{ga, n}); err != nil {
		return err
	}
	_, err := blockSize(cb.size, n)
	return err
}

// insertBytes inserts data (n bytes in all; size+n does not overflow) at
// logical position pos.
func (cb dqCB) insertBytes(a *heap.Access, d Deque, pos, n uint64, data ...blob) error {
	if cb.size+n > cb.cap {
		// The old body stays until the new one is filled: data may lie in it.
		return cb.relinearize(a, d, cb.size+n, func(nb core.GA) {
			cb.copyOut(a, 0, pos, nb)
			at := nb + core.GA(pos)
			for _, b := range data {
				b.store(a, at)
				at += core.GA(b.n)
			}
			cb.copyOut(a, pos, cb.size-pos, at)
		}, cb.size+n)
	}
	if err := cb.insertHere(a, pos, data...); err != nil {
		return err
	}
	return a.PutWords(d.GA+16, cb.size+n)
}

// InsertDeque is acp_insert_deque: inserts n bytes read at ga before
// logical byte it.Index and returns it unchanged.
func (l *Library) InsertDeque(it DequeIt, ga core.GA, n uint64) (DequeIt, error) {
	defer l.hold(it.Deque.GA)()
	return it, l.call(func(a *heap.Access) error {
		cb, err := readDeque(a, it.Deque)
		if err == nil {
			err = cb.canTake(a, ga, n)
		}
		if err != nil || n == 0 {
			return err
		}
		return cb.insertBytes(a, it.Deque, clamp(it.Index, cb.size), n, blob{ga: ga, n: n})
	})
}

// InsertRangeDeque is acp_insert_range_deque. Like the original it returns
// end when the range is empty or spans two deques, it otherwise.
func (l *Library) InsertRangeDeque(it, start, end DequeIt) (DequeIt, error) {
	defer l.hold(it.Deque.GA, start.Deque.GA)()
	if start.Deque != end.Deque {
		return end, ErrDifferent
	}
	if start.Index >= end.Index {
		return end, nil
	}
	return it, l.call(func(a *heap.Access) error {
		src, err := readDeque(a, start.Deque)
		if err != nil {
			return err
		}
		lo, hi := clamp(start.Index, src.size), clamp(end.Index, src.size)
		if hi <= lo {
			return nil
		}
		cb, err := readDeque(a, it.Deque)
		if err != nil {
			return err
		}
		if _, err := blockSize(cb.size, hi-lo); err != nil {
			return err
		}
		return cb.insertBytes(a, it.Deque, clamp(it.Index, cb.size), hi-lo, src.blobs(lo, hi-lo)...)
	})
}

// EraseDeque is acp_erase_deque.
func (l *Library) EraseDeque(it DequeIt, n uint64) (DequeIt, error) {
	defer l.hold(it.Deque.GA)()
	return it, l.call(func(a *heap.Access) error {
		cb, err := readDeque(a, it.Deque)
		if err != nil {
			return err
		}
		if it.Index < 0 || uint64(it.Index) >= cb.size {
			return fmt.Errorf("index %d is outside the deque's %d bytes", it.Index, cb.size)
		}
		pos := uint64(it.Index)
		if n >= cb.size-pos {
			return a.PutWords(it.Deque.GA+16, pos)
		}
		if err := cb.shift(a, pos+n, pos, cb.size-pos-n); err != nil {
			return err
		}
		return a.PutWords(it.Deque.GA+16, cb.size-n)
	})
}

// EraseRangeDeque is acp_erase_range_deque.
func (l *Library) EraseRangeDeque(start, end DequeIt) (DequeIt, error) {
	if start.Deque != end.Deque {
		return end, ErrDifferent
	}
	if start.Index >= end.Index {
		return end, nil
	}
	return l.EraseDeque(start, uint64(end.Index-start.Index))
}

// SwapDeque is acp_swap_deque: each deque gets a new linear body on its own
// rank whose capacity is the size of what it receives (the original's way).
func (l *Library) SwapDeque(d1, d2 Deque) error {
	defer l.hold(d1.GA, d2.GA)()
	if d1 == d2 {
		return nil
	}
	return l.call(func(a *heap.Access) error {
		c1, err := readDeque(a, d1)
		if err != nil {
			return err
		}
		c2, err := readDeque(a, d2)
		if err != nil {
			return err
		}
		var nb1, nb2 core.GA
		if c2.size > 0 {
			if nb1, err = malloc(a, c2.size, rankOf(a, d1.GA)); err != nil {
				return err
			}
		}
		if c1.size > 0 {
			if nb2, err = malloc(a, c1.size, rankOf(a, d2.GA)); err != nil {
				free(a, nb1)
				return err
			}
		}
		c2.copyOut(a, 0, c2.size, nb1)
		c1.copyOut(a, 0, c1.size, nb2)
		dqCB{uint64(nb1), 0, c2.size, c2.size}.write(a, d1)
		dqCB{uint64(nb2), 0, c1.size, c1.size}.write(a, d2)
		if err := a.Flush(); err != nil {
			return err
		}
		free(a, core.GA(c1.body))
		free(a, core.GA(c2.body))
		return a.Err()
	})
}

// AdvanceDequeIt is acp_advance_deque_it (no communication).
func AdvanceDequeIt(it DequeIt, n int) DequeIt { it.Index += n; return it }

// DistanceDequeIt is acp_distance_deque_it (no communication).
func DistanceDequeIt(first, last DequeIt) int { return last.Index - first.Index }

// DereferenceDequeIt is acp_dereference_deque_it: logical bytes
// [index, index+min(n, size-index)) as at most two physical pieces.
func (l *Library) DereferenceDequeIt(it DequeIt, n uint64) (p Pair, err error) {
	defer l.hold(it.Deque.GA)()
	err = l.call(func(a *heap.Access) error {
		cb, err := readDeque(a, it.Deque)
		if err != nil {
			return err
		}
		if it.Index < 0 || uint64(it.Index) >= cb.size {
			return fmt.Errorf("index %d is outside the deque's %d bytes", it.Index, cb.size)
		}
		ps := cb.pieces(uint64(it.Index), min(n, cb.size-uint64(it.Index)))
		if len(ps) > 0 {
			p.First = Element{ps[0].ga, ps[0].n}
		}
		if len(ps) > 1 {
			p.Second = Element{ps[1].ga, ps[1].n}
		}
		return nil
	})
	return p, err
}
