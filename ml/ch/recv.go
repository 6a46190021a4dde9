package ch

import (
	"fmt"
	"time"
	"unsafe"

	"github.com/libacp/libacp/core"
	"github.com/libacp/libacp/internal/reuse"
)

// progressRecv is the receiver's side: take landed slots into posted
// receives in order, copy rendezvous messages from the sender, release
// slots to the sender, and finish a free. Called with c.mu held.
func (c *Channel) progressRecv(background bool) (changed bool) {
	if c.err != nil {
		return false
	}
	// Read the sender's disconnect notice before looking at the ring: the
	// notice comes after every slot the sender wrote, so if it is here and
	// the next slot is not, no slot will ever come.
	senderDone := c.p.PeerDisconnected()
	if c.cPending() && c.fillC() {
		changed = true
	}
	empty := false
	posted := len(c.recv) // only completions shrink it from here on
	for c.err == nil {
		if c.get != nil {
			ok, ch := c.progressGet()
			changed = changed || ch
			if !ok {
				if c.err == nil && c.prefetch() {
					changed = true
				}
				break
			}
			continue
		}
		s := slotAt(c.ring.Ptr, c.head)
		h, ok := landedSlot(s, c.head+1)
		if !ok {
			empty = true
			break
		}
		if h.ordered {
			c.inPlace = true
		}
		took, err := c.take(s, h)
		if err != nil {
			c.fail(fmt.Errorf("%s: %v", c.name(), err))
			return true
		}
		if !took {
			break
		}
		c.lastTake = nanotime()
		changed = true
	}
	if c.err != nil {
		return true
	}
	if c.free != nil && len(c.recv) == 0 {
		// Every receive before the free completed: the free is done for
		// the application; the end lingers, dropping what still arrives,
		// until the sender says no slot follows.
		c.free.complete(0, nil)
		c.free = nil
		c.lingering = true
		changed = true
	}
	if senderDone && empty && c.get == nil {
		if c.finishRecv() {
			changed = true
		}
	}
	if c.released {
		return changed
	}
	// A waiting thread that just got its message and took every slot
	// that landed goes back to the application with the count: its next
	// pass (the next post or wait on this end) publishes it. Published
	// now, it would go out before the application sees the message (over
	// udp a datagram, a system call, at every fourth message of a
	// pingpong), while the ring has room the sender is not short of.
	caughtUp := !background && empty && len(c.recv) < posted
	if c.publish(background, caughtUp) {
		changed = true
	}
	return changed
}

// take consumes the landed slot s at c.head. took is false when the slot
// waits for a receive to be posted.
func (c *Channel) take(s []byte, h header) (took bool, err error) {
	switch h.kind {
	case slotFirst, slotNext:
		if h.kind == slotFirst {
			if c.msgOn {
				return false, fmt.Errorf("slot %d starts a message while %d of %d bytes of the previous one are missing", c.head+1, c.msgTotal-c.msgOff, c.msgTotal)
			}
			if len(c.recv) > 0 {
				c.msg = c.recv[0]
			} else if c.lingering {
				c.msg = nil // nobody will receive it: drop it
			} else {
				return false, nil
			}
			c.msgOn, c.msgTotal, c.msgOff = true, h.total, 0
		} else if !c.msgOn || h.aux != c.msgOff || h.total != c.msgTotal {
			return false, fmt.Errorf("slot %d continues a message at offset %d of %d bytes, expected offset %d of %d", c.head+1, h.aux, h.total, c.msgOff, c.msgTotal)
		}
		if h.n > c.msgTotal-c.msgOff || (h.n == 0 && c.msgTotal > 0) {
			return false, fmt.Errorf("slot %d carries %d bytes at offset %d of a %d-byte message", c.head+1, h.n, c.msgOff, c.msgTotal)
		}
		if r := c.msg; r != nil && c.msgOff < r.size {
			m := min(h.n, r.size-c.msgOff)
			copy(unsafe.Slice((*byte)(unsafe.Add(r.buf, c.msgOff)), m), s[headerSize:headerSize+m])
		}
		c.msgOff += h.n
		c.head++
		if c.msgOff == c.msgTotal {
			c.msgOn = false
			if r := c.msg; r != nil {
				c.popRecv()
				r.complete(min(c.msgTotal, r.size), nil)
			} else {
				c.drop()
			}
			c.msg = nil
		}
		return true, nil

	case slotRendezvous:
		if c.msgOn {
			return false, fmt.Errorf("slot %d announces a message while %d of %d bytes of the previous one are missing", c.head+1, c.msgTotal-c.msgOff, c.msgTotal)
		}
		if len(c.recv) == 0 {
			if !c.lingering {
				return false, nil
			}
			// Dropped: releasing the slot tells the sender we are done with
			// its buffer.
			c.drop()
			c.head++
			c.force = true
			return true, nil
		}
		r := c.recv[0]
		n := min(h.total, r.size)
		if n == 0 {
			c.popRecv()
			c.head++
			c.force = true
			r.complete(0, nil)
			return true, nil
		}
		c.get = &getState{r: r, n: n, src: core.GA(h.aux)}
		c.get.carried = carriedKey(s, h)
		if key, err := c.l.e.Register(r.buf, n, 0); err == nil {
			c.get.key = key
			if sharedCopyOf(h, n) {
				// The sender, which waits for it, copies pieces too.
				c.get.shared = sharedCopy{unsafe.Pointer(&s[0])}
				c.get.shared.open(c.head+1, key, n)
				return true, nil
			}
			c.get.h, err = c.l.e.CopyCarried(key, c.get.src, n, &c.get.carried)
			if err != nil {
				return false, fmt.Errorf("cannot copy a %d-byte message from rank %d: %v", n, c.sender, err)
			}
		} else {
			// Through this slot's payload area, a piece at a time.
			c.l.e.Logf(2, "communication library: %s: %d-byte message copied through the ring: %v", c.name(), n, err)
			c.get.bounce = true
			if err := c.bounceNext(); err != nil {
				return false, err
			}
		}
		return true, nil
	}
	return false, fmt.Errorf("slot %d has unknown kind %d", c.head+1, h.kind)
}

// bounceNext copies the next piece of a rendezvous message into the
// payload area of its slot.
func (c *Channel) bounceNext() error {
	g := c.get
	g.chunk = min(uint64(slotPayload), g.n-g.off)
	dst := c.ring.GA + core.GA((c.head%slotCount)*slotSize+headerSize)
	h, err := c.l.e.CopyCarried(dst, g.src+core.GA(g.off), g.chunk, &g.carried)
	if err != nil {
		return fmt.Errorf("cannot copy a %d-byte message from rank %d: %v", g.n, c.sender, err)
	}
	g.h = h
	return nil
}

// progressShared copies pieces of a shared rendezvous copy until none is
// left to claim, and reports whether every piece landed, ours and the
// sender's.
func (c *Channel) progressShared() (ok, changed bool) {
	g, a := c.get, c.get.shared
	for {
		if g.h != core.HandleNull {
			if c.l.e.Inquire(g.h) {
				return false, changed
			}
			g.h = core.HandleNull
			a.settle(g.chunk)
			changed = true
		}
		if g.claimed {
			break
		}
		off, n, ok := a.claim()
		if !ok {
			g.claimed = true
			break
		}
		h, err := c.l.e.Copy(g.key+core.GA(off), g.src+core.GA(off), n, core.HandleNull)
		if err != nil {
			a.settle(n) // given up: close waits for no copy of it
			c.fail(fmt.Errorf("%s: cannot copy bytes %d..%d of a %d-byte message from rank %d: %v", c.name(), off, off+n, g.n, c.sender, err))
			return false, true
		}
		g.h, g.chunk = h, n
		changed = true
	}
	// The sender settles its pieces once they landed.
	done := a.done()
	if done > g.n {
		c.fail(fmt.Errorf("%s: %d bytes of a %d-byte message reported copied (the sender's count is wrong)", c.name(), done, g.n))
		return false, true
	}
	return done == g.n, changed
}

// closeShared ends a shared copy that the receiver gives up (the channel
// fails): the sender may claim no further piece, and the pieces it
// claimed land before the receive buffer's registration goes (its segment
// number may be reused at once, and a late piece would land there). The
// wait is bounded by closeWait: a sender that died claims nothing more.
func (c *Channel) closeShared() {
	g, a := c.get, c.get.shared
	claimed := a.close()
	if g.h != core.HandleNull {
		c.l.e.Complete(g.h)
		g.h = core.HandleNull
		a.settle(g.chunk)
	}
	deadline := time.Now().Add(closeWait)
	for i := 0; a.done() < claimed; i++ {
		if time.Now().After(deadline) {
			c.l.e.Logf(1, "communication library: %s: the sender did not finish its part of a %d-byte message within %v", c.name(), g.n, closeWait)
			return
		}
		core.SpinWait(i)
	}
}

// closeWait bounds how long a failing receiver waits for the pieces the
// sender claimed (each takes well under a millisecond).
const closeWait = time.Second

// progressGet finishes a rendezvous copy when it completed. ok: the
// message is done and the ring may be read on.
func (c *Channel) progressGet() (ok, changed bool) {
	g := c.get
	if g.shared.slot != nil {
		done, ch := c.progressShared()
		if !done {
			return false, ch
		}
	} else if c.l.e.Inquire(g.h) {
		return false, false
	}
	if g.bounce {
		s := slotAt(c.ring.Ptr, c.head)
		copy(unsafe.Slice((*byte)(unsafe.Add(g.r.buf, g.off)), g.chunk), s[headerSize:headerSize+g.chunk])
		g.off += g.chunk
		if g.off < g.n {
			if err := c.bounceNext(); err != nil {
				c.fail(fmt.Errorf("%s: %v", c.name(), err))
			}
			return false, true
		}
	} else {
		_ = c.l.e.Unregister(g.key)
	}
	c.get, c.next = c.next, nil // the next message's copy, if it started
	c.popRecv()
	c.head++
	// The sender waits for this release to reuse its buffer, and to write
	// the next announcement into the freed slot: telling it now, before
	// the next message's copy, keeps the ring full while we copy. Unless
	// the release is a put and two more messages are announced: then it
	// waits until half the ring is released (publish), and the sender,
	// whose next two messages are ready for us, loses nothing.
	c.force = !c.queuedBehind()
	c.rdvHeld = c.rdvHeld || !c.force
	c.publish(false, false)
	g.r.complete(g.n, nil)
	return true, true
}

// queuedBehind reports whether releasing costs a put (the sender's count
// record is not mapped here) and the slots of the next two messages have
// landed. Over Soft-RoCE a put is a post that runs the transfer in the
// poster's system call: 0.26 ms of a 64 KiB rendezvous message's 3 ms
// (median, chbw in the guest) went to releasing its slot alone.
func (c *Channel) queuedBehind() bool {
	if c.p.PeerCountRecord() != nil {
		return false
	}
	_, next := landedSlot(slotAt(c.ring.Ptr, c.head), c.head+1)
	_, after := landedSlot(slotAt(c.ring.Ptr, c.head+1), c.head+2)
	return next && after
}

// prefetch starts the copy of the next rendezvous message while the one
// before it is still being copied (c.get, a plain get into a registered
// buffer), so that the transport never idles between two large messages:
// taking them one at a time, the receiver asked for the next only once
// the one before had landed, a round trip per message (over udp a window
// of 256 KiB messages then ran at about 0.75 of the puts' bandwidth).
// The slot stays unreleased until its turn; one message at most goes
// ahead. Messages that need more than a plain get (nothing to copy, a
// copy shared with the sender, one through the slot) are taken in turn.
func (c *Channel) prefetch() bool {
	g := c.get
	if c.next != nil || g.key == 0 || g.bounce || g.shared.slot != nil || len(c.recv) < 2 {
		return false
	}
	s := slotAt(c.ring.Ptr, c.head+1)
	h, ok := landedSlot(s, c.head+2)
	if !ok || h.kind != slotRendezvous {
		return false
	}
	if h.ordered {
		c.inPlace = true
	}
	r := c.recv[1]
	n := min(h.total, r.size)
	if n == 0 || sharedCopyOf(h, n) {
		return false
	}
	key, err := c.l.e.Register(r.buf, n, 0)
	if err != nil {
		return false
	}
	next := &getState{r: r, n: n, src: core.GA(h.aux), key: key, carried: carriedKey(s, h)}
	hd, err := c.l.e.CopyCarried(key, next.src, n, &next.carried)
	if err != nil {
		_ = c.l.e.Unregister(key) // taken in turn, which reports it
		return false
	}
	next.h = hd
	c.next = next
	c.l.ahead.Add(1)
	return true
}

// carriedKey is the sender's key for the read of the rendezvous message
// that slot s announces (header h): the payload the sender wrote there
// (pushSend), or none. The sender keeps it valid until we release s.
func carriedKey(s []byte, h header) (k core.CarriedKey) {
	// A sender that writes in place (help) carries none: h.n is 0.
	k.SetBytes(s[headerSize : headerSize+h.n]) // too long: none, read the ordinary way
	return k
}

// sharedCopyOf reports whether n bytes of the rendezvous message
// announced by h are copied by receiver and sender together: the sender
// wrote the announcement in place (it will help), and the copy is large
// enough to repay two copiers.
func sharedCopyOf(h header, n uint64) bool { return h.help && n >= sharedMin }

func (c *Channel) popRecv() { c.recv = reuse.DropFront(c.recv, 1) }

func (c *Channel) drop() {
	c.dropped++
	c.l.e.Logf(1, "communication library: %s: dropped a message that arrived after acp_nbfree_ch (more sends than receives)", c.name())
}

// finishRecv runs when the sender freed its end and the ring is empty:
// receives still posted can never be matched, and a freed end is released
// after telling the sender that every slot is released.
func (c *Channel) finishRecv() (changed bool) {
	if c.msgOn {
		c.fail(fmt.Errorf("%s: the sender freed the channel in the middle of a message", c.name()))
		return true
	}
	for _, r := range c.recv {
		r.complete(0, fmt.Errorf("%s: the sender freed the channel without sending a message for this receive", c.name()))
		changed = true
	}
	c.recv = nil
	if !c.lingering {
		return changed
	}
	c.force = true
	c.publish(false, false)
	if c.head == c.published && c.p.Idle() && !c.l.e.Inquire(core.Handle(*c.fw(fPubLast))) {
		// The sender learns that every slot is released once our last
		// count lands; after that neither side touches the other.
		c.release()
		changed = true
	}
	return changed
}

// publish tells the sender how many slots were released. To save messages
// it waits until half the ring is released, unless someone waits for it or
// the receiver has taken nothing for a while (noticed by background passes:
// a sender may be waiting for room). A pass that caught up with the sender
// and completed a receive (caughtUp) waits for three quarters, and leaves
// what it held back to the next pass of the application's thread: the
// background goroutine, which would send it beside the application's next
// message, waits for that too unless the receiver went idle.
func (c *Channel) publish(background, caughtUp bool) bool {
	n := c.head - c.published
	if n == 0 || !c.p.Connected() {
		return false
	}
	// Not idle while receives that C posted wait: every slot that landed
	// is taken then (fillC ran), the receiver holds fewer than half the
	// ring and the sender has room for any message through it. Released
	// anyway, every pass during a slow trip of a channel pingpong over ib
	// put the count from Go (a post of 150 µs in Soft-RoCE's guest),
	// while the message the receiver waited for was landing. Unless a
	// rendezvous message's release is among those held (rdvHeld): its
	// sender may wait for that send before it writes another slot.
	idle := background && (c.l.seg.Stopping() || nanotime()-c.lastTake > int64(idleRelease) && (!c.cPending() || c.rdvHeld))
	if !c.force && !idle {
		need := uint64(slotCount / 2)
		if caughtUp || (background && c.heldBack) {
			need = slotCount * 3 / 4
		}
		if n < need {
			c.heldBack = c.heldBack || caughtUp
			return false
		}
	}
	// After C's latest release, if it made one: the sender's record must
	// end with the largest count.
	c.p.Publish(c.head, core.Handle(*c.fw(fPubLast)), false)
	c.published = c.head
	c.force, c.heldBack, c.rdvHeld = false, false, false
	return true
}

// idleRelease is how long a receiver that took fewer than half the ring's
// slots waits before releasing them anyway.
const idleRelease = 100 * time.Microsecond

var clockStart = time.Now()

// nanotime is a monotonic clock reading.
func nanotime() int64 { return int64(time.Since(clockStart)) }
