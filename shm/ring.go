package shm

import (
	"encoding/binary"
	"sync/atomic"
	"unsafe"

	"github.com/libacp/libacp/internal/raceedge"
)

// ring is a single-producer single-consumer queue of variable-length
// records in memory shared by two processes: the producer is one peer
// (its threads serialise on the producer's lock), the consumer the process
// whose memory holds the ring. head and tail count bytes forever (they
// never wrap); each lives on its own cache line.
//
//	  0  head (consumer)
//	 64  tail (producer)
//	128  data: records of [length u32 | type u8 | 3 unused] + payload,
//	     padded to 8 bytes; a record of type 0 fills the end of the data
//	     area when the next record does not fit there.
type ring struct {
	head *uint64
	tail *uint64
	data []byte
}

const (
	ringHeader  = 128
	recHeader   = 8
	recWrap     = 0
	minRingSize = 4096
)

func newRing(mem []byte) *ring {
	return &ring{
		head: (*uint64)(unsafe.Pointer(&mem[0])),
		tail: (*uint64)(unsafe.Pointer(&mem[64])),
		data: mem[ringHeader:],
	}
}

func pad8(n int) int { return (n + 7) &^ 7 }

// maxPayload is the largest record the ring always accepts once empty.
func (r *ring) maxPayload() int { return len(r.data)/2 - recHeader }

// put appends one record made of the given parts. It reports false when
// the ring has no room now (the caller keeps the record and retries).
func (r *ring) put(typ uint8, parts ...[]byte) bool {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	need := recHeader + pad8(n)
	c := uint64(len(r.data))
	tail := atomic.LoadUint64(r.tail)
	head := atomic.LoadUint64(r.head)
	pos := tail % c
	total := uint64(need)
	wrap := uint64(0)
	if pos+uint64(need) > c {
		wrap = c - pos
		total += wrap
	}
	if c-(tail-head) < total {
		return false
	}
	if wrap > 0 {
		binary.LittleEndian.PutUint32(r.data[pos:], uint32(wrap-recHeader))
		r.data[pos+4] = recWrap
		pos = 0
	}
	binary.LittleEndian.PutUint32(r.data[pos:], uint32(n))
	r.data[pos+4] = typ
	off := int(pos) + recHeader
	for _, p := range parts {
		off += copy(r.data[off:], p)
	}
	// Publishing the tail makes the record visible (a sequentially
	// consistent store orders the copies before it).
	raceedge.Release()
	atomic.StoreUint64(r.tail, tail+total)
	return true
}

// drain hands every waiting record to f (the payload is only valid during
// the call) and frees their space. It returns the number of records.
func (r *ring) drain(f func(typ uint8, payload []byte)) int {
	c := uint64(len(r.data))
	head := atomic.LoadUint64(r.head)
	tail := atomic.LoadUint64(r.tail)
	raceedge.Acquire()
	count := 0
	for head < tail {
		pos := head % c
		n := uint64(binary.LittleEndian.Uint32(r.data[pos:]))
		typ := r.data[pos+4]
		if typ != recWrap {
			f(typ, r.data[pos+recHeader:pos+recHeader+n])
			count++
		}
		head += recHeader + uint64(pad8(int(n)))
	}
	atomic.StoreUint64(r.head, head)
	return count
}

// empty reports whether the consumer took everything (producer side).
func (r *ring) empty() bool { return atomic.LoadUint64(r.head) == atomic.LoadUint64(r.tail) }
