package ch_test

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/libacp/libacp/core"
	"github.com/libacp/libacp/ml/ch"
	_ "github.com/libacp/libacp/shm" // a sender that maps the receiver's ring
)

// Over shared memory a waiting sender copies pieces of its large messages
// into the receiver's buffer while the receiver copies the rest: every
// byte arrives once, none outside the receive buffer, for messages around
// the smallest shared size and across many pieces, with receives as long
// as the message and shorter.
func TestSharedRendezvousCopy(t *testing.T) {
	type msg struct{ size, recv int }
	msgs := []msg{
		{128<<10 - 1, 128<<10 - 1}, // one receiver's copy
		{128 << 10, 128 << 10},     // two pieces
		{128<<10 + 1, 128<<10 + 1},
		{1 << 20, 1 << 20},
		{4<<20 + 3, 4<<20 + 3},
		{1 << 20, 300<<10 + 5}, // truncated: the sender copies only what fits
		{4 << 20, 200 << 10},
	}
	w := newWorldOn(t, "shm", 2)
	defer w.close()
	var helped uint64
	w.Run(func(r int, e *core.Engine) error {
		c, err := w.ch[r].Create(0, 1)
		if err != nil {
			return err
		}
		for i, m := range msgs {
			if r == 0 {
				b := cmem(t, m.size)
				fill(b, uint64(i))
				if err := send(c, b); err != nil {
					return fmt.Errorf("message %d (%d bytes): %v", i, m.size, err)
				}
				continue
			}
			b := guarded(t, m.recv)
			// Post late: the sender waits for the receive by then, and so
			// is there to share the copy.
			time.Sleep(5 * time.Millisecond)
			q, err := c.Recv(ptr(b), uint64(m.recv))
			if err == nil {
				err = checkReceived(q, b, m.size, m.recv, uint64(i))
			}
			if err != nil {
				return fmt.Errorf("message %d (%d bytes): %v", i, m.size, err)
			}
		}
		if r == 0 {
			helped = w.ch[0].Helped()
		}
		return freeBoth(c)
	})
	t.Logf("pieces the sender copied: %d", helped)
	assert.NotZero(t, helped, "the sender never copied a piece itself")
}

// Over shared memory a sender streams a message up to the stream size
// that is alone through the receiver's ring, slot after slot as the
// receiver frees them: messages larger than the ring, receives posted late
// (the sender stalls on a full ring) and early, and shorter than the
// message. Larger messages go by rendezvous, and so do messages that queue
// up behind others (all sent at once).
func TestStreamedThroughRing(t *testing.T) {
	type msg struct{ size, recv int }
	msgs := []msg{
		{16<<10 + 1, 16<<10 + 1}, // just above the eager size
		{32256, 32256},           // the whole ring, eight slots
		{32257, 32257},           // one byte into a ninth
		{32 << 10, 32 << 10},     // the largest streamed message
		{30000, 10000},           // truncated: the rest is skipped
		{25000, 1},
		{32<<10 + 1, 32<<10 + 1}, // a rendezvous
		{20000, 20000},
	}
	streamed := uint64(0)
	for _, m := range msgs {
		if m.size > 16<<10 && m.size <= 32<<10 {
			streamed++
		}
	}
	w := newWorldOn(t, "shm", 2)
	defer w.close()
	var got uint64
	w.Run(func(r int, e *core.Engine) error {
		c, err := w.ch[r].Create(0, 1)
		if err != nil {
			return err
		}
		for round := range 2 {
			late := round == 0
			if r == 0 {
				// One at a time first, every send at once then.
				var qs []*ch.Request
				for i, m := range msgs {
					b := cmem(t, m.size)
					fill(b, uint64(100*round+i))
					q, err := c.Send(ptr(b), uint64(m.size))
					if err != nil {
						return fmt.Errorf("round %d, message %d (%d bytes): %v", round, i, m.size, err)
					}
					if late {
						if _, err := q.Wait(); err != nil {
							return fmt.Errorf("round %d, message %d: %v", round, i, err)
						}
						continue
					}
					qs = append(qs, q)
				}
				for i, q := range qs {
					if _, err := q.Wait(); err != nil {
						return fmt.Errorf("round %d, message %d: %v", round, i, err)
					}
				}
				continue
			}
			if !late {
				time.Sleep(5 * time.Millisecond) // every send is queued by then
			}
			bufs := make([][]byte, len(msgs))
			qs := make([]*ch.Request, len(msgs))
			for i, m := range msgs {
				bufs[i] = guarded(t, m.recv)
				if late {
					time.Sleep(2 * time.Millisecond) // the sender fills the ring meanwhile
				}
				if qs[i], err = c.Recv(ptr(bufs[i]), uint64(m.recv)); err != nil {
					return fmt.Errorf("round %d, message %d: %v", round, i, err)
				}
				if late {
					if err := checkReceived(qs[i], bufs[i], m.size, m.recv, uint64(100*round+i)); err != nil {
						return fmt.Errorf("round %d, message %d: %v", round, i, err)
					}
				}
			}
			if !late {
				for i, m := range msgs {
					if err := checkReceived(qs[i], bufs[i], m.size, m.recv, uint64(100*round+i)); err != nil {
						return fmt.Errorf("round %d, message %d: %v", round, i, err)
					}
				}
			}
		}
		if r == 0 {
			got = w.ch[0].Streamed()
		}
		return freeBoth(c)
	})
	// Sent one at a time, every one. Sent at once: the first, the second
	// if the first fitted in the ring's free slots (it is then alone),
	// none while others queue behind, and the last if the rendezvous
	// before it finished by the time it is written.
	assert.GreaterOrEqual(t, got, streamed+1, "messages streamed through the ring")
	assert.LessOrEqual(t, got, streamed+3, "messages streamed while others queued")
}

// guard bytes follow each receive buffer, set to guardByte.
const (
	guard     = 4096
	guardByte = 0xa5
)

// guarded is a receive buffer of n bytes followed by the guard.
func guarded(t *testing.T, n int) []byte {
	b := cmem(t, n+guard)
	for k := range b {
		b[k] = guardByte
	}
	return b
}

// checkReceived waits for a receive of recv bytes of a size-byte message
// and checks its bytes and the guard beyond it.
func checkReceived(q *ch.Request, b []byte, size, recv int, seed uint64) error {
	n, err := q.Wait()
	if err != nil {
		return err
	}
	want := min(size, recv)
	if n != uint64(want) {
		return fmt.Errorf("received %d bytes, want %d", n, want)
	}
	if !bytes.Equal(b[:want], pattern(size, seed)[:want]) {
		return fmt.Errorf("%d bytes into %d: content differs", size, recv)
	}
	if bytes.Count(b[want:], []byte{guardByte}) != len(b)-want {
		return fmt.Errorf("%d bytes into %d: bytes written beyond the receive", size, recv)
	}
	return nil
}
