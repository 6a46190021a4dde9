package ch

import (
	"fmt"
	"unsafe"

	"github.com/libacp/libacp/core"
	"github.com/libacp/libacp/internal/reuse"
)

// progressSend is the sender's side: finish rendezvous sends the receiver
// has taken, write queued messages into free slots, and handle a free.
// Called with c.mu held.
func (c *Channel) progressSend() (changed bool) {
	if !c.directKnown && c.p.Connected() {
		c.directKnown = true
		c.direct = c.l.e.Direct(c.p.RemoteBuf(), ringSize)
		if c.direct == nil {
			// Where C sends by puts (storeFast): from our staging slots
			// into the receiver's ring.
			*c.fw(fPutRing) = uint64(c.p.RemoteBuf())
			*c.fw(fStageGA) = uint64(c.ring.GA)
			*c.fw(fStagePtr) = uint64(uintptr(c.ring.Ptr))
		}
	}
	released := c.p.Count()
	for len(c.rdv) > 0 && released >= c.rdv[0].seq {
		r := c.rdv[0]
		c.rdv = reuse.DropFront(c.rdv, 1)
		// The receiver released the slot after its copy completed: the
		// buffer is ours again.
		_ = c.l.e.Unregister(r.key)
		r.complete(0, nil)
		changed = true
	}
	for len(c.push) > 0 && c.err == nil {
		r := c.push[0]
		if r.op == opFree {
			if len(c.rdv) == 0 {
				// Every message is written and every buffer given back: the
				// free is done for the application; the end lingers until the
				// receiver has taken or dropped every slot.
				c.push = nil
				c.lingering = true
				r.complete(0, nil)
				changed = true
			}
			break
		}
		if !c.p.Connected() {
			break
		}
		finished, ch := c.pushSend(r)
		changed = changed || ch
		if !finished {
			break
		}
		c.push = reuse.DropFront(c.push, 1)
	}
	if c.lingering && c.err == nil {
		if c.lingerSend() {
			changed = true
		}
	}
	return changed
}

// lingerSend ends a freed sender's end: tell the receiver no slot follows
// (after every slot we wrote), and release once it released every slot:
// then it never writes to us again.
func (c *Channel) lingerSend() bool {
	if !c.p.Connected() {
		return false
	}
	changed := false
	if !c.p.Disconnected() {
		// The notice goes after every slot, those C put too.
		for i := uint64(0); i < slotCount; i++ {
			c.p.Note(core.Handle(*c.stageAt(i)))
		}
		if err := c.p.Disconnect(); err != nil {
			c.fail(fmt.Errorf("%s: cannot disconnect: %v", c.name(), err))
			return true
		}
		changed = true
	}
	if c.p.Count() == c.tail && c.p.DisconnectLanded() {
		c.release()
		changed = true
	}
	return changed
}

// slotFree reports whether the next slot may be written: the receiver has
// released it, and the put that last wrote it from our staging slot is
// complete (that one alone, as in C: see core Engine.OpDone).
func (c *Channel) slotFree() bool {
	if c.tail-c.p.Count() >= slotCount {
		return false
	}
	st := c.stageAt(c.tail)
	if h := core.Handle(*st); h != core.HandleNull {
		if !c.l.e.OpDone(h) {
			return false
		}
		*st = uint64(core.HandleNull)
	}
	return true
}

// writeSlot stages the next slot and puts it into the receiver's ring, or
// writes it there in place when the ring is mapped here.
func (c *Channel) writeSlot(h header, payload unsafe.Pointer) error {
	i := c.tail % slotCount
	if c.direct != nil {
		writeOrdered(slotAt(c.direct, i), c.tail+1, h, payload)
		c.tail++
		return nil
	}
	s := slotAt(c.ring.Ptr, i)
	n := writeStaged(s, c.tail+1, h, payload)
	off := core.GA(i * slotSize)
	hd, err := c.l.e.Copy(c.p.RemoteBuf()+off, c.ring.GA+off, n, core.HandleNull)
	if err != nil {
		return err
	}
	*c.stageAt(i) = uint64(hd)
	c.p.Note(hd)
	c.tail++
	return nil
}

// throughRing decides whether send r, the first of the queue, goes
// through the ring: eager messages do; on one node (the ring mapped here)
// so do messages up to streamMax that are alone, with no other send
// queued or announced. Messages that queue up go by rendezvous: the
// receiver copies one while we announce the next, and a single copy each
// moves a window of them faster than two.
func (c *Channel) throughRing(r *Request) bool {
	if r.size <= eagerMax {
		return true
	}
	return c.direct != nil && r.size <= streamMax && len(c.push) == 1 && len(c.rdv) == 0
}

// pushSend writes as much of send r as the ring allows. finished: all its
// slots are written (an eager send is then complete; a rendezvous send
// waits for the receiver).
func (c *Channel) pushSend(r *Request) (finished, changed bool) {
	if !r.started {
		r.started = true
		if !c.throughRing(r) {
			key, err := c.l.e.Register(r.buf, r.size, 0)
			if err == nil {
				r.key = key
			} else {
				// Through the ring, then: slower, never stuck.
				c.l.e.Logf(2, "communication library: %s: %d-byte message goes through the ring: %v", c.name(), r.size, err)
			}
		}
	}
	if r.key != 0 {
		if !c.slotFree() {
			return false, false
		}
		h := header{kind: slotRendezvous, total: r.size, aux: uint64(r.key)}
		var payload unsafe.Pointer
		var key core.CarriedKey
		if c.direct == nil && c.l.e.PackKey(r.key, c.receiver, &key) {
			// The receiver's read uses the key beside the GA: it fetches
			// none from us, and we revoke none from it when we unregister
			// the buffer, which we do only once it released this slot
			// (core.KeyCarrier).
			h.n, payload = uint64(key.N), unsafe.Pointer(&key.B[0])
		}
		if c.direct != nil {
			// We write the slot in place and will see the receiver open
			// it for a shared copy; whatever the area held must not pass
			// for that (cleared before the slot's number is stored).
			h.help = true
			sharedAt(c.direct, c.tail).clear()
		}
		if err := c.writeSlot(h, payload); err != nil {
			c.fail(fmt.Errorf("%s: cannot write to rank %d: %v", c.name(), c.receiver, err))
			return false, true
		}
		r.seq = c.tail
		c.rdv = append(c.rdv, r)
		return true, true
	}
	for {
		if !c.slotFree() {
			return false, changed
		}
		n := min(uint64(slotPayload), r.size-r.off)
		h := header{kind: slotFirst, n: n, total: r.size, aux: r.off}
		if r.off > 0 {
			h.kind = slotNext
		}
		if err := c.writeSlot(h, unsafe.Add(r.buf, r.off)); err != nil {
			c.fail(fmt.Errorf("%s: cannot write to rank %d: %v", c.name(), c.receiver, err))
			return false, true
		}
		changed = true
		r.off += n
		if r.off >= r.size {
			if r.size > eagerMax {
				c.l.streamed.Add(1)
			}
			// The data is in our staging slots: buf may be reused.
			r.complete(0, nil)
			return true, true
		}
	}
}
