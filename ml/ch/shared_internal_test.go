package ch

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/libacp/libacp/core"
	"github.com/libacp/libacp/core/coretest"
	_ "github.com/libacp/libacp/shm"
)

// A receiver whose channel fails in the middle of a shared copy does not
// unregister its buffer (whose segment a new registration may take at
// once) before the piece the sender claimed landed.
func TestFailingReceiverWaitsForClaimedPiece(t *testing.T) {
	const size = 16 << 20
	const hold = 50 * time.Millisecond
	w := coretest.NewWorld(t, 2, "shm", "size-smem-cl=1024")
	claimed := make(chan struct{})
	checked := make(chan struct{}) // the receiver saw its receive unfinished
	var copyStart atomic.Int64     // when the sender started to copy its piece
	w.Run(func(r int, e *core.Engine) error {
		c, stop, err := channel01(e)
		if err != nil {
			return err
		}
		defer stop()
		b, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
		if err != nil {
			return err
		}
		defer func() { _ = unix.Munmap(b) }()
		if r == 0 {
			if _, err := c.Send(unsafe.Pointer(&b[0]), size); err != nil {
				return err
			}
			var p piece
			for deadline := time.Now().Add(10 * time.Second); ; {
				c.lock()
				c.progress(false)
				q, ok := c.claimPiece()
				c.unlock()
				if ok {
					p = q
					break
				}
				if time.Now().After(deadline) {
					close(claimed)
					return errors.New("the receiver never opened the message for a shared copy")
				}
			}
			close(claimed)
			// The piece stays claimed and uncopied until the receiver has
			// looked, however late it gets a CPU, and for hold after.
			select {
			case <-checked:
			case <-time.After(10 * time.Second):
				return errors.New("the receiver did not look at its receive")
			}
			time.Sleep(hold)
			copyStart.Store(time.Now().UnixNano())
			c.copyPiece(p)
			return nil
		}
		// The receive takes the announcement and opens the message for a
		// shared copy (what its first pass does before claiming pieces),
		// and the lock is kept until the sender claimed a piece: over shm
		// the receiver's own pieces are copied at once, so a pass of ours
		// or of the background goroutine would otherwise take them all
		// before a sender that gets no CPU claims one.
		var q *Request
		for deadline := time.Now().Add(10 * time.Second); ; {
			c.lock()
			s := slotAt(c.ring.Ptr, c.head)
			if h, ok := landedSlot(s, c.head+1); ok {
				if q, err = c.post(opRecv, unsafe.Pointer(&b[0]), size); err == nil {
					c.recv = append(c.recv, q)
					_, err = c.take(s, h)
				}
				break
			}
			c.unlock()
			if time.Now().After(deadline) {
				return errors.New("the sender's announcement did not land")
			}
			time.Sleep(time.Millisecond)
		}
		if err != nil || c.get == nil || c.get.shared.slot == nil {
			c.unlock()
			<-claimed
			return fmt.Errorf("the receive did not open the message for a shared copy (%v)", err)
		}
		<-claimed
		c.progress(false)
		if q.Done() {
			c.unlock()
			close(checked)
			return errors.New("the receive completed although the sender's piece had not landed")
		}
		close(checked)
		c.fail(errors.New("the test breaks the channel"))
		c.unlock()
		failedAt := time.Now().UnixNano()
		if start := copyStart.Load(); start == 0 || failedAt < start {
			return fmt.Errorf("the receiver gave its buffer up before the sender's claimed piece was copied")
		}
		return nil
	})
}
