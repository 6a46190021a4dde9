package ch

import (
	"bytes"
	"fmt"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/libacp/libacp/core"
	"github.com/libacp/libacp/core/coretest"
	_ "github.com/libacp/libacp/core/memnet"
	"github.com/libacp/libacp/ml/segbuf"
)

// Receives posted in the fast block's table (as capi/chfast.c posts them)
// are filled by Go's progress with messages that went through the ring
// (one slot, or several once all landed), in order, and adopted as Go
// receives when a rendezvous comes.
func TestFastTableFilledAndAdopted(t *testing.T) {
	w := coretest.NewWorld(t, 2, "memnet", "size-smem-cl=1024")
	sizes := []int{100, 10000, 20000, 7}
	msg := func(i int) []byte { return bytes.Repeat([]byte{byte(i + 1)}, sizes[i]) }
	w.Run(func(r int, e *core.Engine) error {
		c, stop, err := channel01(e)
		if err != nil {
			return err
		}
		defer stop()
		if r == 0 {
			for i := range sizes {
				b, err := unix.Mmap(-1, 0, sizes[i], unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
				if err != nil {
					return err
				}
				copy(b, msg(i))
				q, err := c.Send(unsafe.Pointer(&b[0]), uint64(len(b)))
				if err != nil {
					return err
				}
				if _, err := q.Wait(); err != nil {
					return err
				}
			}
			return nil
		}
		adopted := map[uint64]*Request{}
		c.SetFast(1, func(q *Request) uint64 {
			id := uint64(len(adopted) + 1)
			adopted[id] = q
			return id
		}, nil)
		const stride = 32768
		buf, err := unix.Mmap(-1, 0, len(sizes)*stride, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
		if err != nil {
			return err
		}
		// Post three receives the way C does.
		c.lock()
		for i := range sizes {
			ent := c.entry(uint64(i))
			ent[0], ent[2], ent[3] = uint64(1)<<63|uint64(i), uint64(uintptr(unsafe.Pointer(&buf[i*stride]))), stride
			atomic.StoreUint64(&ent[1], ePosted)
		}
		*c.fw(fNext) = uint64(len(sizes))
		c.unlock()
		deadline := time.Now().Add(20 * time.Second)
		for {
			c.lock()
			c.progress(false)
			first, second, third := atomic.LoadUint64(&c.entry(0)[1]), atomic.LoadUint64(&c.entry(1)[1]), atomic.LoadUint64(&c.entry(2)[1])
			c.unlock()
			if first == eDone && second == eDone && third == eAdopted {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("entries are %d, %d and %d", first, second, third)
			}
		}
		for i := 0; i < 2; i++ {
			if n := c.entry(uint64(i))[2]; n != uint64(sizes[i]) || !bytes.Equal(buf[i*stride:i*stride+int(n)], msg(i)) {
				return fmt.Errorf("message %d: %d bytes", i, n)
			}
		}
		require.Equal(t, uint64(eAdopted), atomic.LoadUint64(&c.entry(3)[1]), "everything after an adopted receive is adopted")
		for i := 2; i < len(sizes); i++ {
			q := adopted[c.entry(uint64(i))[3]]
			if q == nil {
				return fmt.Errorf("receive %d has no Go request", i)
			}
			n, err := q.Wait()
			if err != nil || n != uint64(sizes[i]) || !bytes.Equal(buf[i*stride:i*stride+sizes[i]], msg(i)) {
				return fmt.Errorf("receive %d: %d bytes, %v", i, n, err)
			}
		}
		return nil
	})
	w.Close()
}

// channel01 starts the communication library on e and makes its end of a
// channel from rank 0 to rank 1; stop stops the library.
func channel01(e *core.Engine) (c *Channel, stop func(), err error) {
	s, err := segbuf.Start(e)
	if err != nil {
		return nil, nil, err
	}
	stop = func() { _ = s.Stop() }
	if c, err = New(s).Create(0, 1); err != nil {
		stop()
		return nil, nil, err
	}
	return c, stop, nil
}

// C takes receives unless a slot lands only when a thread of ours receives
// it (udp): C spins on the ring without polling the transports, and would
// wait for the progress goroutine there. Rings written by puts that land
// by themselves (memnet here, ib) and rings written in place (shm) hand
// them to C. A sender's C writes in place where it maps the ring, and puts
// where a put lands by itself.
func TestCTakesWhatLandsByItself(t *testing.T) {
	for _, tr := range []struct {
		transport string
		recvOK    bool
		send      uint32
	}{{"memnet", true, sendByPut}, {"shm", true, sendInPlace}, {"udp", false, 0}} {
		t.Run(tr.transport, func(t *testing.T) {
			w := coretest.NewWorld(t, 2, tr.transport, "size-smem-cl=1024")
			w.Run(func(r int, e *core.Engine) error {
				c, stop, err := channel01(e)
				if err != nil {
					return err
				}
				defer stop()
				buf, err := unix.Mmap(-1, 0, 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
				if err != nil {
					return err
				}
				defer func() { _ = unix.Munmap(buf) }()
				if r == 1 {
					c.SetFast(1, func(*Request) uint64 { return 1 }, nil)
					// C takes receives only on a connected pair; the sender
					// may be connected, and send, before this end is.
					connected := func() bool {
						c.lock()
						defer c.unlock()
						return c.p.Connected()
					}
					if !coretest.WaitFor(10*time.Second, connected) {
						return fmt.Errorf("the receiving end did not connect in 10 s")
					}
				}
				for i := 0; i < 3; i++ {
					var q *Request
					if r == 0 {
						q, err = c.Send(unsafe.Pointer(&buf[0]), 100)
					} else {
						q, err = c.Recv(unsafe.Pointer(&buf[0]), 100)
					}
					if err != nil {
						return err
					}
					if _, err := q.Wait(); err != nil {
						return err
					}
					c.lock()
					recvOK, send := atomic.LoadUint32(c.fw32(fRecvOK)) == 1, atomic.LoadUint32(c.fw32(fSendOK))
					c.unlock()
					if r == 1 && recvOK != tr.recvOK {
						return fmt.Errorf("after message %d: C may take receives: %v, want %v", i, recvOK, tr.recvOK)
					}
					if r == 0 && send != tr.send {
						return fmt.Errorf("after message %d: C may send: %d, want %d", i, send, tr.send)
					}
				}
				return nil
			})
			w.Close()
		})
	}
}
