package core

import "unsafe"

// KeyCarrier is implemented by transports over which a peer needs a key to
// reach registered memory (a verbs rkey) and learns it from the owner: a
// request and an answer the owner's CPU serves, and, when the owner
// unregisters, a revocation that the owner waits for the peer to confirm.
// For memory that is handed to one peer for one bounded access, which the
// owner keeps registered until the peer has said it is done (a channel's
// rendezvous buffer: the sender unregisters it only once the receiver
// released the announcing slot, after its read completed), the owner may
// pack the key beside the GA it hands out, and the peer's read use it
// directly: nothing is fetched, nothing is revoked, and the key never
// enters the peer's cache.
type KeyCarrier interface {
	// PackKey writes what a peer needs to reach our region r directly into
	// b and returns its length (at most CarriedKeySize), or 0 when it has
	// none (the peer then reads the ordinary way).
	PackKey(r *Region, b []byte) int

	// GetCarried is Get with a key PackKey packed at the owner, read
	// during the call. A key that does not name src's segment is ignored
	// (an ordinary Get). The owner must keep the region registered until
	// the completion ran.
	GetCarried(peer int, src GA, dst unsafe.Pointer, n uint64, key []byte, c Completion)
}

// CarriedKeySize bounds a packed key.
const CarriedKeySize = 40

// CarriedKey is a key packed for a peer (Engine.PackKey); the zero value
// carries none.
type CarriedKey struct {
	N uint8
	B [CarriedKeySize]byte
}

// Bytes is the packed key, empty when there is none.
func (k *CarriedKey) Bytes() []byte {
	if k == nil || int(k.N) > CarriedKeySize {
		return nil
	}
	return k.B[:k.N]
}

// SetBytes stores a packed key received from its owner and reports
// whether it fits (a longer one leaves k carrying none).
func (k *CarriedKey) SetBytes(b []byte) bool {
	k.N = 0
	if len(b) > CarriedKeySize {
		return false
	}
	k.N = uint8(copy(k.B[:], b))
	return true
}

// PackKey packs the key of our registration key (as returned by Register)
// for rank, when the transport that reaches rank has keys to carry
// (KeyCarrier). It reports whether k now carries one.
func (e *Engine) PackKey(key GA, rank int, k *CarriedKey) bool {
	k.N = 0
	r, err := e.region(key)
	if err != nil || rank < 0 || rank >= e.nprocs || rank == e.Rank() {
		return false
	}
	kc, ok := e.transportTo(e.peerOf(rank)).(KeyCarrier)
	if !ok {
		return false
	}
	n := kc.PackKey(r, k.B[:])
	if n <= 0 || n > CarriedKeySize {
		return false
	}
	k.N = uint8(n)
	return true
}

// CopyCarried is Copy for a source whose owner packed its key (PackKey):
// when the copy is a read from that owner into memory of ours, the
// transport uses the key instead of fetching one; otherwise (no key, the
// source mapped here, another kind of copy) it is an ordinary Copy. The
// key is read during the call.
func (e *Engine) CopyCarried(dst, src GA, n uint64, k *CarriedKey) (Handle, error) {
	return e.copyFor(nil, dst, src, n, HandleNull, k)
}
