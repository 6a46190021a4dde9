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
	var copyStart atomic.Int64 // when the sender started to copy its piece
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
			time.Sleep(hold)
			copyStart.Store(time.Now().UnixNano())
			c.copyPiece(p)
			return nil
		}
		q, err := c.Recv(unsafe.Pointer(&b[0]), size) // opens, copies every piece it claims
		if err != nil {
			return err
		}
		<-claimed
		c.lock()
		c.progress(false)
		if q.Done() {
			c.unlock()
			return errors.New("the receive completed although the sender's piece had not landed")
		}
		c.fail(errors.New("the test breaks the channel"))
		c.unlock()
		failedAt := time.Now().UnixNano()
		if start := copyStart.Load(); start == 0 || failedAt < start {
			return fmt.Errorf("the receiver gave its buffer up before the sender's claimed piece was copied")
		}
		return nil
	})
}
