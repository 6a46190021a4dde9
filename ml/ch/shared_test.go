package ch_test

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/libacp/libacp/core"
	_ "github.com/libacp/libacp/shm" // a sender that maps the receiver's ring
)

// Over shared memory a waiting sender copies pieces of its large messages
// into the receiver's buffer while the receiver copies the rest: every
// byte arrives once, none outside the receive buffer, for messages around
// the smallest shared size and across many pieces, with receives as long
// as the message and shorter.
func TestSharedRendezvousCopy(t *testing.T) {
	const guard = 4096
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
			b := cmem(t, m.recv+guard)
			for k := range b {
				b[k] = 0xa5
			}
			// Post late: the sender waits for the receive by then, and so
			// is there to share the copy.
			time.Sleep(5 * time.Millisecond)
			n, err := recv(c, b[:m.recv])
			if err != nil {
				return fmt.Errorf("message %d (%d bytes): %v", i, m.size, err)
			}
			want := min(m.size, m.recv)
			if n != uint64(want) {
				return fmt.Errorf("message %d: received %d bytes, want %d", i, n, want)
			}
			if !bytes.Equal(b[:want], pattern(m.size, uint64(i))[:want]) {
				return fmt.Errorf("message %d (%d bytes into %d): content differs", i, m.size, m.recv)
			}
			if bytes.Count(b[want:], []byte{0xa5}) != len(b)-want {
				return fmt.Errorf("message %d (%d bytes into %d): bytes written beyond the receive", i, m.size, m.recv)
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
