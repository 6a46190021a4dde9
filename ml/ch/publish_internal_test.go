package ch

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/libacp/libacp/core"
	"github.com/libacp/libacp/core/coretest"
)

// A receiver that takes messages one at a time as they come (a pingpong)
// does not publish its count in the pass that hands a message to the
// application: that pass holds the count back, and the next pass of the
// application's thread publishes it. A held-back count still reaches a
// sender that needs the room when the receiver's application goes away
// (the background goroutine publishes it once the receiver is idle).
func TestCountHeldBackUntilNextPass(t *testing.T) {
	const first = slotCount / 2 // receives taken one at a time
	onChannel(t, func(r int, e *core.Engine, c *Channel, p unsafe.Pointer) error {
		if r == 0 {
			for i := 0; i < first; i++ {
				if err := sendWait(c, p, 1); err != nil {
					return err
				}
				if err := e.Sync(); err != nil { // landed before the receive is posted
					return err
				}
			}
			if err := e.Sync(); err != nil { // the receiver checked its passes
				return err
			}
			// More than the room we know of: the held-back count must come.
			return sendWait(c, p, slotCount)
		}
		for i := 0; i < first; i++ {
			if err := e.Sync(); err != nil {
				return err
			}
			// Recv's own pass, with the check under the same lock, so
			// that no background pass comes between.
			c.lock()
			q, err := c.post(opRecv, p, 100)
			if err != nil {
				c.unlock()
				return err
			}
			c.recv = append(c.recv, q)
			before := c.published // the background may have published at idle
			c.progress(false)
			done, head, published := q.Done(), c.head, c.published
			c.unlockKick()
			if !done || head != uint64(i+1) {
				return fmt.Errorf("receive %d: done %v, %d slots taken, want the landed message taken", i, done, head)
			}
			if published != before {
				return fmt.Errorf("receive %d: the pass that completed it published %d slots (%d before); want the count held back", i, published, before)
			}
		}
		if err := e.Sync(); err != nil {
			return err
		}
		// The sender now waits for room; this end makes no call until it
		// has it.
		published := func() uint64 {
			c.lock()
			defer c.unlock()
			return c.published
		}
		if !coretest.WaitFor(20*time.Second, func() bool { return published() == first }) { // every slot taken
			return fmt.Errorf("%d slots taken, %d published after 20 s without a call", first, published())
		}
		for i := 0; i < slotCount; i++ {
			q, err := c.Recv(p, 100)
			if err != nil {
				return err
			}
			if _, err := q.Wait(); err != nil {
				return err
			}
		}
		return nil
	})
}

// A pass that takes every landed slot and completes receives holds the
// count back; the next pass of the application's thread (a receive posted
// before its message came) publishes it.
func TestHeldBackCountPublishedByNextPost(t *testing.T) {
	const taken = slotCount / 2
	onChannel(t, func(r int, e *core.Engine, c *Channel, p unsafe.Pointer) error {
		if r == 0 {
			if err := sendWait(c, p, taken); err != nil {
				return err
			}
			if err := e.Sync(); err != nil { // landed
				return err
			}
			if err := e.Sync(); err != nil { // the receiver looked
				return err
			}
			return sendWait(c, p, 1)
		}
		if err := e.Sync(); err != nil {
			return err
		}
		// Recv's passes, under one lock, so that no background pass
		// comes between.
		post := func() (*Request, error) {
			q, err := c.post(opRecv, p, 100)
			if err == nil {
				c.recv = append(c.recv, q)
			}
			return q, err
		}
		c.lock()
		for i := 0; i < taken; i++ {
			if _, err := post(); err != nil {
				c.unlock()
				return err
			}
		}
		c.progress(false) // takes every landed message
		head, held := c.head, c.published
		q, err := post()
		if err != nil {
			c.unlock()
			return err
		}
		c.progress(false) // nothing to take: publishes
		published := c.published
		c.unlockKick()
		if head != taken || held != 0 {
			return fmt.Errorf("the pass that took %d slots (want %d) published %d", head, taken, held)
		}
		if published != taken {
			return fmt.Errorf("a receive posted with %d slots taken and none landed published %d", taken, published)
		}
		if err := e.Sync(); err != nil {
			return err
		}
		_, err = q.Wait()
		return err
	})
}

// onChannel runs f on ranks 0 and 1 of a memnet world, each with its end
// of a channel from rank 0 to rank 1 (its library started on e) and a
// 4 KiB buffer at p. Afterwards it stops the library, then unmaps the
// buffer: a receive still posted must not land in unmapped memory.
func onChannel(t *testing.T, f func(r int, e *core.Engine, c *Channel, p unsafe.Pointer) error) {
	w := coretest.NewWorld(t, 2, "memnet", "size-smem-cl=1024")
	defer w.Close()
	w.Run(func(r int, e *core.Engine) error {
		buf, err := unix.Mmap(-1, 0, 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
		if err != nil {
			return err
		}
		defer func() { _ = unix.Munmap(buf) }()
		c, stop, err := channel01(e)
		if err != nil {
			return err
		}
		defer stop()
		return f(r, e, c, unsafe.Pointer(&buf[0]))
	})
}

// sendWait sends n messages of 100 bytes from p, one at a time.
func sendWait(c *Channel, p unsafe.Pointer, n int) error {
	for i := 0; i < n; i++ {
		q, err := c.Send(p, 100)
		if err == nil {
			_, err = q.Wait()
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// A receiver whose C receives wait has taken every slot that landed: no
// idle release then (its sender has room), but once the receive is filled
// and the end goes idle, the count goes out.
func TestNoIdleReleaseWhileCReceivesWait(t *testing.T) {
	onChannel(t, func(r int, e *core.Engine, c *Channel, p unsafe.Pointer) error {
		if r == 0 {
			if err := sendWait(c, p, 3); err != nil {
				return err
			}
			if err := e.Sync(); err != nil { // the receiver took them and posted in C
				return err
			}
			return sendWait(c, p, 1)
		}
		for i := 0; i < 3; i++ {
			q, err := c.Recv(p, 100)
			if err == nil {
				_, err = q.Wait()
			}
			if err != nil {
				return err
			}
		}
		// A receive posted the way C does.
		c.lock()
		before := c.published
		ent := c.entry(*c.fw(fNext))
		ent[0], ent[2], ent[3] = uint64(1)<<63, uint64(uintptr(p)), 100
		atomic.StoreUint64(&ent[1], ePosted)
		*c.fw(fNext)++
		c.unlock()
		time.Sleep(10 * idleRelease)
		c.lock()
		c.progress(true)
		published, head := c.published, c.head
		c.unlock()
		if err := e.Sync(); err != nil { // the sender goes on either way
			return err
		}
		if published != before || head != 3 {
			return fmt.Errorf("%d slots taken, %d published (%d before) while a C receive waits; want none released at idle", head, published, before)
		}
		deadline := time.Now().Add(20 * time.Second)
		for {
			c.lock()
			c.progress(true)
			state, published, head := atomic.LoadUint64(&ent[1]), c.published, c.head
			c.unlock()
			if state == eDone && head == 4 && published == 4 {
				return nil
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("receive state %d, %d slots taken, %d published; want all 4 released once idle", state, head, published)
			}
			time.Sleep(idleRelease / 4)
		}
	})
}

// A finished rendezvous message's slot is released at once unless the
// release is a put and the next two messages have landed (queuedBehind):
// checked on slots written into the receiver's ring by hand, under the
// channel's lock, and cleared again before anyone else looks.
func TestRendezvousReleaseWaitsOnlyWithTwoBehind(t *testing.T) {
	onChannel(t, func(r int, e *core.Engine, c *Channel, p unsafe.Pointer) error {
		if r == 0 {
			return nil
		}
		c.lock()
		defer c.unlockKick()
		if c.p.PeerCountRecord() != nil {
			return fmt.Errorf("memnet maps the sender's count record: the test needs a release by put")
		}
		h := header{kind: slotRendezvous, total: 1 << 20, aux: 1}
		write := func(i uint64) { writeStaged(slotAt(c.ring.Ptr, c.head+i), c.head+i+1, h, nil) }
		defer func() {
			for i := uint64(0); i < 2; i++ {
				clear(slotAt(c.ring.Ptr, c.head+i))
			}
		}()
		if c.queuedBehind() {
			return fmt.Errorf("nothing landed, yet the release waits")
		}
		write(0)
		if c.queuedBehind() {
			return fmt.Errorf("one message landed, yet the release waits")
		}
		write(1)
		if !c.queuedBehind() {
			return fmt.Errorf("two messages landed, yet the release goes out at once")
		}
		return nil
	})
}

// A rendezvous message's release held back because two more messages had
// landed (queuedBehind) still goes out once the receiver is idle, even
// while receives that C posted wait: its sender may be waiting for that
// send before it sends anything more (a 4-rank random channel test hung
// so over ib, each end waiting for the other).
func TestHeldRendezvousReleaseGoesOutAtIdle(t *testing.T) {
	const big = 64 << 10 // a rendezvous message
	onChannel(t, func(r int, e *core.Engine, c *Channel, p unsafe.Pointer) error {
		if r == 0 {
			buf, err := unix.Mmap(-1, 0, big, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
			if err != nil {
				return err
			}
			defer func() { _ = unix.Munmap(buf) }()
			var qs []*Request
			for _, m := range []struct {
				p unsafe.Pointer
				n uint64
			}{{unsafe.Pointer(&buf[0]), big}, {p, 100}, {p, 100}} {
				q, err := c.Send(m.p, m.n)
				if err != nil {
					return err
				}
				qs = append(qs, q)
			}
			if err := e.Sync(); err != nil { // all three announced
				return err
			}
			deadline := time.Now().Add(20 * time.Second)
			for _, q := range qs {
				for !q.Done() {
					if time.Now().After(deadline) {
						return fmt.Errorf("the sends did not complete: the receiver never released their slots")
					}
					c.Progress(false)
					time.Sleep(idleRelease / 4)
				}
			}
			return sendWait(c, p, 1) // for the receive posted as C does
		}
		if err := e.Sync(); err != nil {
			return err
		}
		rbuf, err := unix.Mmap(-1, 0, big, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
		if err != nil {
			return err
		}
		defer func() { _ = unix.Munmap(rbuf) }()
		c.lock()
		var qs []*Request
		for _, m := range []struct {
			p unsafe.Pointer
			n uint64
		}{{unsafe.Pointer(&rbuf[0]), big}, {p, 100}, {unsafe.Add(p, 200), 100}} {
			q, err := c.post(opRecv, m.p, m.n)
			if err != nil {
				c.unlock()
				return err
			}
			c.recv = append(c.recv, q)
			qs = append(qs, q)
		}
		// Then a receive posted the way C does, for a fourth message.
		ent := c.entry(*c.fw(fNext))
		ent[0], ent[2], ent[3] = uint64(1)<<63, uint64(uintptr(unsafe.Add(p, 400))), 100
		atomic.StoreUint64(&ent[1], ePosted)
		*c.fw(fNext)++
		c.unlock()
		for _, q := range qs {
			if _, err := q.Wait(); err != nil {
				return err
			}
		}
		deadline := time.Now().Add(20 * time.Second)
		for {
			c.lock()
			c.progress(true)
			published, head := c.published, c.head
			c.unlock()
			if head == 3 && published == 3 {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%d slots taken, %d released while idle with a C receive waiting; want all 3 released", head, published)
			}
			time.Sleep(idleRelease / 4)
		}
		for {
			c.lock()
			c.progress(true)
			state := atomic.LoadUint64(&ent[1])
			c.unlock()
			if state == eDone {
				return nil
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("the receive posted as C does was not filled (state %d)", state)
			}
			time.Sleep(idleRelease / 4)
		}
	})
}
