package ch

import (
	"unsafe"

	"github.com/libacp/libacp/internal/memcopy"
)

// ringByMovsb: `rep movsb` is this CPU's fastest copy into lines another
// CPU read last (internal/memcopy).
var ringByMovsb = memcopy.RingByMovsb()

func copyToRing(dst []byte, src unsafe.Pointer) {
	if ringByMovsb && len(dst) >= movsbMin {
		memcopy.RepMovsb(dst, src)
		return
	}
	copy(dst, unsafe.Slice((*byte)(src), len(dst)))
}
