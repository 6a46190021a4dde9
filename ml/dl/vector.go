package dl

import (
	"fmt"

	"github.com/libacp/libacp/core"
	"github.com/libacp/libacp/ml/heap"
)

// Vector is acp_vector_t. Its control block is {body GA, size, capacity}
// (bytes); the body is one heap block on the control block's rank.
type Vector struct{ GA core.GA }

// VectorIt is acp_vector_it_t: a byte index into a vector.
type VectorIt struct {
	Vector Vector
	Index  int
}

type vecCB struct{ body, size, cap uint64 }

func readVec(a *heap.Access, v Vector) (vecCB, error) {
	w, err := block(a, "vector", v.GA, 3)
	if err != nil {
		return vecCB{}, err
	}
	cb := vecCB{w[1], w[2], w[3]}
	if cb.size > cb.cap || cb.cap > heap.MaxSize || (cb.cap != 0 && cb.body == 0) {
		return vecCB{}, fmt.Errorf("%#x is not a vector (size %d, capacity %d, body %#x)", uint64(v.GA), cb.size, cb.cap, cb.body)
	}
	return cb, nil
}

func (cb vecCB) write(a *heap.Access, v Vector) error {
	return a.PutWords(v.GA, cb.body, cb.size, cb.cap)
}

// ring is the body seen as a deque's: one that starts at its front and
// never wraps (size <= capacity), so that the two share their byte moves.
func (cb vecCB) ring() dqCB { return dqCB{cb.body, 0, cb.size, cb.cap} }

// canTake checks n more bytes from the caller at ga: the range itself, and
// that the size does not outgrow any heap.
func (cb vecCB) canTake(a *heap.Access, ga core.GA, n uint64) error {
	return cb.ring().canTake(a, ga, n)
}

// regrow moves the first keep bytes of the body into a new body of
// capacity c on the vector's rank; the old body is returned for the caller
// to free once nothing reads it any more.
func (cb *vecCB) regrow(a *heap.Access, v Vector, c, keep uint64) (old core.GA, err error) {
	nb, err := malloc(a, c, rankOf(a, v.GA))
	if err != nil {
		return core.GANull, err
	}
	if err := a.Copy(core.GA(nb), core.GA(cb.body), keep); err != nil {
		free(a, nb)
		return core.GANull, err
	}
	old = core.GA(cb.body)
	cb.body, cb.cap = uint64(nb), c
	return old, nil
}

// CreateVector is acp_create_vector: the vector initially holds size bytes
// of whatever the heap held (the original's behaviour, spec 8 #3).
func (l *Library) CreateVector(size uint64, rank int) (v Vector, err error) {
	err = l.call(func(a *heap.Access) error {
		cb, err := malloc(a, 24, rank)
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
		v = Vector{cb}
		return vecCB{uint64(body), size, round8(size)}.write(a, v)
	})
	return v, err
}

// DestroyVector is acp_destroy_vector.
func (l *Library) DestroyVector(v Vector) error {
	defer l.hold(v.GA)()
	return l.call(func(a *heap.Access) error {
		cb, err := readVec(a, v)
		if err != nil {
			return err
		}
		free(a, core.GA(cb.body))
		free(a, v.GA)
		return nil
	})
}

// AssignVector is acp_assign_vector: v1 becomes a copy of v2.
func (l *Library) AssignVector(v1, v2 Vector) error {
	defer l.hold(v1.GA, v2.GA)()
	if v1 == v2 {
		return nil
	}
	return l.call(func(a *heap.Access) error {
		c1, err := readVec(a, v1)
		if err != nil {
			return err
		}
		c2, err := readVec(a, v2)
		if err != nil {
			return err
		}
		return c1.replace(a, v1, core.GA(c2.body), c2.size)
	})
}

// replace makes the vector hold the n bytes at src (another body).
func (cb vecCB) replace(a *heap.Access, v Vector, src core.GA, n uint64) error {
	var old core.GA
	if n > cb.cap {
		var err error
		if old, err = cb.regrow(a, v, round8(n), 0); err != nil {
			return err
		}
	}
	a.Copy(core.GA(cb.body), src, n)
	cb.size = n
	cb.write(a, v)
	free(a, old)
	return a.Err()
}

// AssignRangeVector is acp_assign_range_vector.
func (l *Library) AssignRangeVector(v Vector, start, end VectorIt) error {
	defer l.hold(v.GA, start.Vector.GA)()
	if start.Vector != end.Vector {
		return ErrDifferent
	}
	return l.call(func(a *heap.Access) error {
		src, err := readVec(a, start.Vector)
		if err != nil {
			return err
		}
		lo, hi := clamp(start.Index, src.size), clamp(end.Index, src.size)
		n := uint64(0)
		if hi > lo {
			n = hi - lo
		}
		if v == start.Vector {
			if lo > 0 {
				if err := src.ring().shift(a, lo, 0, n); err != nil {
					return err
				}
			}
			src.size = n
			return src.write(a, v)
		}
		cb, err := readVec(a, v)
		if err != nil {
			return err
		}
		return cb.replace(a, v, core.GA(src.body)+core.GA(lo), n)
	})
}

// AtVector is acp_at_vector: the GA of byte index, ACP_GA_NULL outside
// 0..size-1.
func (l *Library) AtVector(v Vector, index int) (ga core.GA, err error) {
	defer l.hold(v.GA)()
	err = l.call(func(a *heap.Access) error {
		cb, err := readVec(a, v)
		if err != nil {
			return err
		}
		if index < 0 || uint64(index) >= cb.size {
			return fmt.Errorf("index %d is outside the vector's %d bytes", index, cb.size)
		}
		ga = core.GA(cb.body) + core.GA(index)
		return nil
	})
	return ga, err
}

// BeginVector is acp_begin_vector (no communication).
func BeginVector(v Vector) VectorIt { return VectorIt{v, 0} }

// EndVector is acp_end_vector: {vector, size}.
func (l *Library) EndVector(v Vector) (VectorIt, error) {
	defer l.hold(v.GA)()
	var cb vecCB
	err := l.call(func(a *heap.Access) (err error) { cb, err = readVec(a, v); return })
	return VectorIt{v, int(cb.size)}, err
}

// CapacityVector is acp_capacity_vector.
func (l *Library) CapacityVector(v Vector) (uint64, error) {
	defer l.hold(v.GA)()
	var cb vecCB
	err := l.call(func(a *heap.Access) (err error) { cb, err = readVec(a, v); return })
	return cb.cap, err
}

// SizeVector is acp_size_vector.
func (l *Library) SizeVector(v Vector) (uint64, error) {
	defer l.hold(v.GA)()
	var cb vecCB
	err := l.call(func(a *heap.Access) (err error) { cb, err = readVec(a, v); return })
	return cb.size, err
}

// ClearVector is acp_clear_vector: size 0, capacity kept.
func (l *Library) ClearVector(v Vector) error {
	defer l.hold(v.GA)()
	return l.call(func(a *heap.Access) error {
		if _, err := readVec(a, v); err != nil {
			return err
		}
		return a.PutWords(v.GA+8, 0)
	})
}

// ReserveVector is acp_reserve_vector: capacity becomes at least
// round8(size) bytes; it never shrinks.
func (l *Library) ReserveVector(v Vector, size uint64) error {
	defer l.hold(v.GA)()
	if _, err := blockSize(size); err != nil {
		return err
	}
	return l.call(func(a *heap.Access) error {
		cb, err := readVec(a, v)
		if err != nil || round8(size) <= cb.cap {
			return err
		}
		old, err := cb.regrow(a, v, round8(size), cb.size)
		if err != nil {
			return err
		}
		cb.write(a, v)
		free(a, old)
		return a.Err()
	})
}

// PushBackVector is acp_push_back_vector: appends n bytes read at ga.
func (l *Library) PushBackVector(v Vector, ga core.GA, n uint64) error {
	defer l.hold(v.GA)()
	return l.call(func(a *heap.Access) error {
		cb, err := readVec(a, v)
		if err == nil {
			err = cb.canTake(a, ga, n)
		}
		if err != nil || n == 0 {
			return err
		}
		var old, fresh core.GA
		if cb.size+n > cb.cap {
			if old, err = cb.regrow(a, v, round8(cb.size+n), cb.size); err != nil {
				return err
			}
			fresh = core.GA(cb.body)
		}
		// The old body is freed only after this copy: ga may point into it.
		a.Copy(core.GA(cb.body+cb.size), ga, n)
		if err := landed(a, fresh); err != nil {
			return err
		}
		cb.size += n
		cb.write(a, v)
		free(a, old)
		return a.Err()
	})
}

// PopBackVector is acp_pop_back_vector.
func (l *Library) PopBackVector(v Vector, n uint64) error {
	defer l.hold(v.GA)()
	return l.call(func(a *heap.Access) error {
		cb, err := readVec(a, v)
		if err != nil {
			return err
		}
		return a.PutWords(v.GA+8, cb.size-min(n, cb.size))
	})
}

// insertBytes inserts data at byte position pos (clamped to the size);
// size+n does not overflow.
func (cb vecCB) insertBytes(a *heap.Access, v Vector, pos uint64, data blob) error {
	n := data.n
	pos = min(pos, cb.size)
	if cb.size+n > cb.cap {
		old, err := cb.regrow(a, v, round8(cb.size+n), pos)
		if err != nil {
			return err
		}
		// The old body stays until the new one is filled: data may lie in it.
		a.Copy(core.GA(cb.body+pos+n), old+core.GA(pos), cb.size-pos)
		data.store(a, core.GA(cb.body+pos))
		if err := landed(a, core.GA(cb.body)); err != nil {
			return err
		}
		cb.size += n
		cb.write(a, v)
		free(a, old)
		return a.Err()
	}
	if err := cb.ring().insertHere(a, pos, data); err != nil {
		return err
	}
	return a.PutWords(v.GA+8, cb.size+n)
}

// InsertVector is acp_insert_vector: inserts n bytes read at ga before
// byte it.Index and returns it unchanged.
func (l *Library) InsertVector(it VectorIt, ga core.GA, n uint64) (VectorIt, error) {
	defer l.hold(it.Vector.GA)()
	return it, l.call(func(a *heap.Access) error {
		cb, err := readVec(a, it.Vector)
		if err == nil {
			err = cb.canTake(a, ga, n)
		}
		if err != nil || n == 0 {
			return err
		}
		return cb.insertBytes(a, it.Vector, clamp(it.Index, cb.size), blob{ga: ga, n: n})
	})
}

// InsertRangeVector is acp_insert_range_vector: inserts the bytes
// [start, end) of start's vector (its body: Q-DL-2) before it.
func (l *Library) InsertRangeVector(it, start, end VectorIt) (VectorIt, error) {
	defer l.hold(it.Vector.GA, start.Vector.GA)()
	if start.Vector != end.Vector {
		return it, ErrDifferent
	}
	if start.Index >= end.Index {
		return it, nil
	}
	return it, l.call(func(a *heap.Access) error {
		src, err := readVec(a, start.Vector)
		if err != nil {
			return err
		}
		lo, hi := clamp(start.Index, src.size), clamp(end.Index, src.size)
		if hi <= lo {
			return nil
		}
		cb, err := readVec(a, it.Vector)
		if err != nil {
			return err
		}
		if _, err := blockSize(cb.size, hi-lo); err != nil {
			return err
		}
		return cb.insertBytes(a, it.Vector, clamp(it.Index, cb.size), blob{ga: core.GA(src.body + lo), n: hi - lo})
	})
}

// EraseVector is acp_erase_vector: removes n bytes at it.Index (to the end
// when fewer remain) and returns it unchanged.
func (l *Library) EraseVector(it VectorIt, n uint64) (VectorIt, error) {
	defer l.hold(it.Vector.GA)()
	return it, l.call(func(a *heap.Access) error {
		cb, err := readVec(a, it.Vector)
		if err != nil {
			return err
		}
		if it.Index < 0 || uint64(it.Index) >= cb.size {
			return fmt.Errorf("index %d is outside the vector's %d bytes", it.Index, cb.size)
		}
		pos := uint64(it.Index)
		if n >= cb.size-pos {
			cb.size = pos
			return cb.write(a, it.Vector)
		}
		if err := cb.ring().shift(a, pos+n, pos, cb.size-pos-n); err != nil {
			return err
		}
		cb.size -= n
		return cb.write(a, it.Vector)
	})
}

// EraseRangeVector is acp_erase_range_vector.
func (l *Library) EraseRangeVector(start, end VectorIt) (VectorIt, error) {
	if start.Vector != end.Vector {
		return end, ErrDifferent
	}
	if start.Index >= end.Index {
		return end, nil
	}
	return l.EraseVector(start, uint64(end.Index-start.Index))
}

// SwapVector is acp_swap_vector. Vectors on one rank exchange their bodies;
// otherwise each gets a new body on its own rank (the original's way).
func (l *Library) SwapVector(v1, v2 Vector) error {
	defer l.hold(v1.GA, v2.GA)()
	if v1 == v2 {
		return nil
	}
	return l.call(func(a *heap.Access) error {
		c1, err := readVec(a, v1)
		if err != nil {
			return err
		}
		c2, err := readVec(a, v2)
		if err != nil {
			return err
		}
		if rankOf(a, v1.GA) == rankOf(a, v2.GA) {
			c2.write(a, v1)
			return c1.write(a, v2)
		}
		var nb1, nb2 core.GA
		if c2.cap > 0 {
			if nb1, err = malloc(a, c2.cap, rankOf(a, v1.GA)); err != nil {
				return err
			}
		}
		if c1.cap > 0 {
			if nb2, err = malloc(a, c1.cap, rankOf(a, v2.GA)); err != nil {
				free(a, nb1)
				return err
			}
		}
		a.Copy(nb1, core.GA(c2.body), c2.size)
		a.Copy(nb2, core.GA(c1.body), c1.size)
		vecCB{uint64(nb1), c2.size, c2.cap}.write(a, v1)
		vecCB{uint64(nb2), c1.size, c1.cap}.write(a, v2)
		if err := a.Flush(); err != nil {
			return err
		}
		free(a, core.GA(c1.body))
		free(a, core.GA(c2.body))
		return a.Err()
	})
}

// AdvanceVectorIt is acp_advance_vector_it (no communication, no checks).
func AdvanceVectorIt(it VectorIt, n int) VectorIt { it.Index += n; return it }

// DereferenceVectorIt is acp_dereference_vector_it: body + index.
func (l *Library) DereferenceVectorIt(it VectorIt) (ga core.GA, err error) {
	defer l.hold(it.Vector.GA)()
	if it.Index < 0 {
		return core.GANull, fmt.Errorf("index %d is negative", it.Index)
	}
	err = l.call(func(a *heap.Access) error {
		cb, err := readVec(a, it.Vector)
		if err != nil {
			return err
		}
		if cb.body == 0 {
			return fmt.Errorf("the vector has no body")
		}
		ga = core.GA(cb.body) + core.GA(it.Index)
		return nil
	})
	return ga, err
}

// DistanceVectorIt is acp_distance_vector_it (no communication).
func DistanceVectorIt(first, last VectorIt) int { return last.Index - first.Index }
