package boot

import (
	"encoding/binary"
	"fmt"
	"io"
)

// Every bootstrap message is a frame: kind (1 byte), body length (4 bytes,
// big endian), body. The rendezvous and the tree use disjoint kinds.
const (
	// rendezvous
	msgHello   byte = 'H' // server → client: magic, nonce
	msgAuth    byte = 'A' // client → server: rank, size, HMAC
	msgWelcome byte = 'W' // server → client: authenticated
	msgReject  byte = 'R' // → peer: refused, with the reason
	msgGather  byte = 'G' // → collector: op, details, record(s)
	msgResult  byte = 'D' // → contributor: every record, in rank order
	msgError   byte = 'E' // → anyone: the collective failed, with the reason
	msgAbort   byte = 'X' // client → server: code, message
	msgBye     byte = 'B' // client → server: clean close
	msgByeAck  byte = 'b' // server → client
	// tree
	msgJoin   byte = 'J' // child → parent: rank, size
	msgJoined byte = 'j' // parent → child: accepted
)

// maxFrame bounds a body so that garbage on a port cannot make us allocate
// gigabytes.
const maxFrame = 1 << 30

func writeFrame(w io.Writer, kind byte, body []byte) error {
	buf := make([]byte, 5, 5+len(body))
	buf[0] = kind
	binary.BigEndian.PutUint32(buf[1:], uint32(len(body)))
	_, err := w.Write(append(buf, body...))
	return err
}

func readFrame(r io.Reader) (byte, []byte, error) {
	var hdr [5]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(hdr[1:])
	if n > maxFrame {
		return 0, nil, fmt.Errorf("frame of %d bytes is larger than the %d-byte limit (not a libacp peer?)", n, maxFrame)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return 0, nil, err
	}
	return hdr[0], body, nil
}

// reader walks a message body; the first short read sets err and later
// reads return zeros, so decoders check err once at the end.
type reader struct {
	b   []byte
	err error
}

func (r *reader) take(n int) []byte {
	if r.err != nil || n < 0 || len(r.b) < n {
		if r.err == nil {
			r.err = fmt.Errorf("truncated message")
		}
		return make([]byte, max(n, 0))
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

func (r *reader) u8() byte    { return r.take(1)[0] }
func (r *reader) u32() uint32 { return binary.BigEndian.Uint32(r.take(4)) }
func (r *reader) u64() uint64 { return binary.BigEndian.Uint64(r.take(8)) }
func (r *reader) rest() []byte {
	v := r.b
	r.b = nil
	return v
}
