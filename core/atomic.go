package core

import (
	"fmt"
	"sync/atomic"
	"unsafe"
)

// AtomicOp is a fetch-and-op of ACP. The numbering is the original UDP
// device's (odd = 4 bytes, even = 8 bytes), kept because it is compact on
// the wire and easy to read in traces.
type AtomicOp uint8

// Atomic operations.
const (
	OpCas4 AtomicOp = iota + 1
	OpCas8
	OpSwap4
	OpSwap8
	OpAdd4
	OpAdd8
	OpXor4
	OpXor8
	OpOr4
	OpOr8
	OpAnd4
	OpAnd8
)

var opNames = [...]string{"", "cas4", "cas8", "swap4", "swap8", "add4", "add8", "xor4", "xor8", "or4", "or8", "and4", "and8"}

func (op AtomicOp) String() string {
	if op.Valid() {
		return opNames[op]
	}
	return fmt.Sprintf("atomic op %d", uint8(op))
}

// Valid reports whether op is one of the twelve operations.
func (op AtomicOp) Valid() bool { return op >= OpCas4 && op <= OpAnd8 }

// Width is the operand size in bytes (4 or 8).
func (op AtomicOp) Width() uint64 {
	if op%2 == 1 {
		return 4
	}
	return 8
}

// ApplyAtomic performs op on the word at p and returns its old value. For
// cas, a is the expected value and b the new one; otherwise a is the operand.
// It uses CPU atomic instructions, so it is atomic with respect to every
// other ApplyAtomic on the same word, whichever thread or process runs it.
func ApplyAtomic(op AtomicOp, p unsafe.Pointer, a, b uint64) uint64 {
	if op.Width() == 4 {
		w := (*uint32)(p)
		x, y := uint32(a), uint32(b)
		switch op {
		case OpCas4:
			for {
				old := atomic.LoadUint32(w)
				if old != x {
					return uint64(old)
				}
				if atomic.CompareAndSwapUint32(w, x, y) {
					return uint64(old)
				}
			}
		case OpSwap4:
			return uint64(atomic.SwapUint32(w, x))
		case OpAdd4:
			return uint64(atomic.AddUint32(w, x) - x)
		case OpXor4:
			for {
				old := atomic.LoadUint32(w)
				if atomic.CompareAndSwapUint32(w, old, old^x) {
					return uint64(old)
				}
			}
		case OpOr4:
			return uint64(atomic.OrUint32(w, x))
		case OpAnd4:
			return uint64(atomic.AndUint32(w, x))
		}
		return 0
	}
	w := (*uint64)(p)
	switch op {
	case OpCas8:
		for {
			old := atomic.LoadUint64(w)
			if old != a {
				return old
			}
			if atomic.CompareAndSwapUint64(w, a, b) {
				return old
			}
		}
	case OpSwap8:
		return atomic.SwapUint64(w, a)
	case OpAdd8:
		return atomic.AddUint64(w, a) - a
	case OpXor8:
		for {
			old := atomic.LoadUint64(w)
			if atomic.CompareAndSwapUint64(w, old, old^a) {
				return old
			}
		}
	case OpOr8:
		return atomic.OrUint64(w, a)
	case OpAnd8:
		return atomic.AndUint64(w, a)
	}
	return 0
}

// storeWord writes the low width bytes of v at p (the fetched value of an
// atomic landing in its result location).
func storeWord(p unsafe.Pointer, width, v uint64) {
	if width == 4 {
		*(*uint32)(p) = uint32(v)
	} else {
		*(*uint64)(p) = v
	}
}
