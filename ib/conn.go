package ib

// #include "fast.h"
import "C"

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"sync/atomic"
	"time"
)

// connState is where a connection is in its life.
type connState uint8

const (
	connIdle       connState = iota // no handshake yet (maybe a QP created by an incoming one)
	connConnecting                  // our handshake is under way
	connReady                       // the QP is in RTS: work can be posted
	connFailed                      // the QP broke; its work failed
)

// conn is the reliable connection with one peer over one path, created on
// first contact in either direction. Guarded by endpoint.mu.
type conn struct {
	peer, path int
	p          *path
	state      connState
	qp         *vqp
	qpn, psn   uint32
	inline     uint32 // bytes a work request may carry inline
	rtr, rts   bool
	remote     qpInfo
	since      time.Time // handshake start

	sq                *atomic.Int32 // send queue entries posted or held, not completed: fc's count once fc exists, shared with the C side
	sqHeld            bool          // drain holds a send queue entry it has not posted yet
	sqBlocked         bool          // in endpoint.sqBlocked
	posted, completed uint64        // counts over the connection's life
	queue             []*req        // work waiting for the connection, a slot or QP room
	waitingSlot       bool
	err               error
	fc                *C.acpib_fastconn // the C fast path's record, once ready (colour 0)
}

// req is queued work: (the rest of) an operation, or a message.
type req struct {
	op  *op
	msg []byte
	// sentAt, when set, receives the time the message is posted: a peer
	// is late to answer from then on, not while our own queue held it.
	sentAt *int64
}

// connTo returns the connection to peer over path, creating its record
// (not yet its queue pair). Locked.
func (e *endpoint) connTo(peer, path int) *conn {
	i := peer*len(e.paths) + path
	c := e.conns[i]
	if c == nil {
		c = &conn{peer: peer, path: path, p: e.paths[path], sq: new(atomic.Int32)}
		e.conns[i] = c
	}
	return c
}

// ensureQP creates the connection's queue pair (state INIT). Locked.
func (e *endpoint) ensureQP(c *conn) error {
	if c.qp != nil {
		return nil
	}
	if e.closed.Load() {
		return fmt.Errorf("transport closed")
	}
	d := c.p.dev
	qp, qpn, inline, err := createQP(d.v, c.p.port, qpDepth, askInline)
	if err != nil {
		return fmt.Errorf("%s: %v", c.p.name, err)
	}
	c.qp, c.qpn, c.inline = qp, qpn, inline
	c.psn = rand.Uint32() & 0xffffff
	e.byQPN[uint64(d.index)<<32|uint64(qpn)] = c
	e.nconn++
	return nil
}

// localInfo describes our side of c. Locked.
func (e *endpoint) localInfo(c *conn) qpInfo {
	p := c.p
	info := qpInfo{lid: uint16(p.lid), mtu: uint8(p.mtu), linkLayer: uint8(p.linkLayer), qpn: c.qpn, psn: c.psn, gid: p.gid}
	for seg := range info.starters {
		if lr := e.regs[seg]; lr != nil {
			info.starters[seg] = starterKey{base: uint64(lr.base), size: lr.size, offBase: lr.r.OffBase}
			if len(lr.rkeys) > 0 {
				info.starters[seg].rkey = lr.rkeys[p.dev.index]
			}
		}
	}
	return info
}

// toRTR lets c receive from the remote queue pair. Locked; idempotent.
func (e *endpoint) toRTR(c *conn, r *qpInfo) error {
	if c.rtr {
		return nil
	}
	if int(r.linkLayer) != c.p.linkLayer {
		return fmt.Errorf("%s is %s here but %s at rank %d: every process must use the same kind of network for colour %d",
			c.p.name, linkName(c.p.linkLayer), linkName(int(r.linkLayer)), e.host.PeerRank(c.peer), c.path)
	}
	mtu := min(c.p.mtu, int(r.mtu))
	if err := qpToRTR(c.qp, c.p.port, r, mtu, c.p.roce(), c.p.gidIndex, c.p.dev.maxDestRd); err != nil {
		return err
	}
	c.remote, c.rtr = *r, true
	return nil
}

// toRTS lets c send, and posts what waited. Locked; idempotent.
func (e *endpoint) toRTS(c *conn) error {
	if c.rts {
		return nil
	}
	if err := qpToRTS(c.qp, c.psn, c.p.dev.maxRd, qpTimeout, qpRetry); err != nil {
		return err
	}
	c.rts = true
	if c.state != connFailed {
		c.state = connReady
		e.fastConnUp(c)
		e.drain(c)
		e.wakeIdle() // work that waited for the connection is in flight now
	}
	return nil
}

func linkName(l int) string {
	if l == linkLayerEthernet {
		return "Ethernet (RoCE)"
	}
	return "InfiniBand"
}

// startConnect begins our side of the handshake. Locked.
func (e *endpoint) startConnect(c *conn) {
	if c.state != connIdle || e.closed.Load() {
		return
	}
	c.state = connConnecting
	c.since = time.Now()
	if c.peer == e.me {
		// Our own atomics on our own memory (--acp-ib-atomics nic): a
		// queue pair connected to itself, through the adapter.
		err := e.ensureQP(c)
		if err == nil {
			info := e.localInfo(c)
			err = e.toRTR(c, &info)
		}
		if err == nil {
			err = e.toRTS(c)
		}
		if err != nil {
			e.connFailed(c, fmt.Errorf("loopback connection: %v", err))
		}
		return
	}
	e.hs.Add(1)
	go e.dial(c)
}

// dial runs the initiator's handshake: request (our QP), answer (theirs),
// RTR and RTS here, then "ready" so that the acceptor starts sending only
// when we can receive. Retried until --acp-peer-timeout.
func (e *endpoint) dial(c *conn) {
	defer e.hs.Done()
	e.mu.Lock()
	err := e.ensureQP(c)
	var h hello
	if err == nil {
		h = hello{jobKey: e.jobKey, from: uint32(e.me), to: uint32(c.peer), path: uint16(c.path), info: e.localInfo(c)}
	}
	e.mu.Unlock()
	if err != nil {
		e.handshakeFailed(c, err)
		return
	}
	addr := e.peerAddr(c.peer)
	deadline := c.since.Add(e.timeout)
	wait := 5 * time.Millisecond
	for {
		if e.closed.Load() {
			return
		}
		err = e.exchange(c, addr, &h, deadline)
		if err == nil {
			return
		}
		if _, fatal := err.(handshakeError); fatal || time.Now().Add(wait).After(deadline) {
			break
		}
		time.Sleep(wait)
		wait = min(2*wait, 500*time.Millisecond)
	}
	e.handshakeFailed(c, fmt.Errorf("rank %d is unreachable: cannot connect to its ib connection service at %s: %v; is it still running? (set --acp-ib-addr / ACP_IB_ADDR if that address is wrong, raise --acp-peer-timeout for slow start-up)",
		e.host.PeerRank(c.peer), addr, err))
}

// handshakeError is a refusal that retrying cannot cure.
type handshakeError struct{ error }

func (e *endpoint) exchange(c *conn, addr string, h *hello, deadline time.Time) error {
	nc, err := net.DialTimeout("tcp", addr, time.Until(deadline))
	if err != nil {
		return err
	}
	if !e.track(nc) {
		return handshakeError{fmt.Errorf("transport closed")}
	}
	defer e.untrack(nc)
	_ = nc.SetDeadline(deadline)
	if _, err := nc.Write(h.encode()); err != nil {
		return err
	}
	b := make([]byte, helloLen)
	if _, err := io.ReadFull(nc, b); err != nil {
		return fmt.Errorf("no answer: %v", err)
	}
	r, err := decodeHello(b)
	if err != nil {
		return handshakeError{err}
	}
	if r.jobKey != e.jobKey || int(r.from) != c.peer || int(r.to) != e.me || int(r.path) != c.path {
		return handshakeError{fmt.Errorf("the answer comes from another job or process (job key, rank or colour differ)")}
	}
	e.mu.Lock()
	err = e.toRTR(c, &r.info)
	if err == nil {
		err = e.toRTS(c)
	}
	if err != nil {
		e.connFailed(c, err)
		e.unlockAndRun()
		return handshakeError{err}
	}
	e.unlockAndRun()
	_, _ = nc.Write([]byte{1})
	return nil
}

func (e *endpoint) handshakeFailed(c *conn, err error) {
	e.mu.Lock()
	e.connFailed(c, err)
	if e.fatal == nil && !e.closed.Load() {
		e.fatal = err
	}
	e.unlockAndRun()
}

// serve is the connection service: it answers the handshakes of peers
// that contact us first.
func (e *endpoint) serve() {
	for {
		nc, err := e.ln.Accept()
		if err != nil {
			if e.closed.Load() {
				return
			}
			e.host.Logf(1, "ib: connection service: %v", err)
			time.Sleep(10 * time.Millisecond)
			continue
		}
		if !e.track(nc) {
			return
		}
		e.hs.Add(1)
		go func() {
			defer e.hs.Done()
			defer e.untrack(nc)
			if err := e.accept(nc); err != nil && !e.closed.Load() {
				e.host.Logf(1, "ib: handshake from %s: %v", nc.RemoteAddr(), err)
			}
		}()
	}
}

func (e *endpoint) accept(nc net.Conn) error {
	_ = nc.SetDeadline(time.Now().Add(max(e.timeout, 5*time.Second)))
	b := make([]byte, helloLen)
	if _, err := io.ReadFull(nc, b); err != nil {
		return err
	}
	h, err := decodeHello(b)
	if err != nil {
		return err
	}
	// A peer can reach us before our own start-up exchange finished.
	select {
	case <-e.connected:
	case <-e.closing:
		return nil
	case <-time.After(e.timeout):
		return fmt.Errorf("start-up exchange did not finish in time")
	}
	if h.jobKey != e.jobKey {
		return fmt.Errorf("handshake with a foreign job key ignored")
	}
	peer, path := int(h.from), int(h.path)
	if int(h.to) != e.me || peer < 0 || peer >= e.n || peer == e.me || path >= len(e.paths) || !e.book.Present(peer) {
		return fmt.Errorf("handshake for process %d from process %d on colour %d does not fit this job", h.to, peer, path)
	}
	e.mu.Lock()
	c := e.connTo(peer, path)
	err = e.ensureQP(c)
	if err == nil {
		err = e.toRTR(c, &h.info)
	}
	if err != nil {
		e.connFailed(c, err)
		e.unlockAndRun()
		return err
	}
	r := hello{jobKey: e.jobKey, from: uint32(e.me), to: uint32(peer), path: uint16(path), info: e.localInfo(c)}
	e.mu.Unlock()
	if _, err := nc.Write(r.encode()); err != nil {
		return err
	}
	// Send only once the initiator can receive.
	var ready [1]byte
	if _, err := io.ReadFull(nc, ready[:]); err != nil {
		return fmt.Errorf("rank %d did not complete the handshake: %v", e.host.PeerRank(peer), err)
	}
	e.mu.Lock()
	if err := e.toRTS(c); err != nil {
		e.connFailed(c, err)
	}
	e.unlockAndRun()
	return nil
}

// track records an open handshake connection so that Close can cut it;
// false when the transport is closing.
func (e *endpoint) track(nc net.Conn) bool {
	e.tcpMu.Lock()
	defer e.tcpMu.Unlock()
	if e.closed.Load() {
		nc.Close()
		return false
	}
	e.tcp[nc] = struct{}{}
	return true
}

func (e *endpoint) untrack(nc net.Conn) {
	e.tcpMu.Lock()
	delete(e.tcp, nc)
	e.tcpMu.Unlock()
	nc.Close()
}

// cutHandshakes closes every handshake connection in progress.
func (e *endpoint) cutHandshakes() {
	e.tcpMu.Lock()
	for nc := range e.tcp {
		nc.Close()
	}
	e.tcpMu.Unlock()
}

func (s connState) String() string {
	switch s {
	case connIdle:
		return "idle"
	case connConnecting:
		return "connecting"
	case connReady:
		return "ready"
	case connFailed:
		return "failed"
	}
	return fmt.Sprintf("state %d", uint8(s))
}
