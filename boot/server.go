package boot

import (
	"crypto/hmac"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"time"
)

// Server is the launcher's side of the rendezvous: it admits exactly the n
// ranks of one job (each proves knowledge of the job key), answers their
// collectives, and reports ranks that abort or vanish.
type Server struct {
	n     int
	key   []byte
	ln    net.Listener
	hooks Hooks

	mu      sync.Mutex
	slots   []slot
	round   *round
	broken  error // first collective failure; every later collective gets it
	closing bool
	conns   map[net.Conn]struct{} // every open connection, admitted or not
	wg      sync.WaitGroup
}

// Hooks tell the launcher what happens on the rendezvous. They are called
// from the server's goroutines and must not block for long. Nil hooks are
// skipped.
type Hooks struct {
	// Abort: a rank asked to stop the job.
	Abort func(rank, code int, msg string)
	// Lost: a rank's connection dropped without a clean Close, so the
	// rank most likely died.
	Lost func(rank int, err error)
	// Logf receives refused connections (failed collectives are reported
	// to the ranks, which print them).
	Logf func(format string, args ...any)
}

type slotState uint8

const (
	slotAbsent  slotState = iota // not connected yet
	slotJoined                   // authenticated, in the job
	slotClosed                   // said goodbye
	slotAborted                  // asked to stop the job
	slotLost                     // connection dropped without goodbye
	slotExited                   // the process ended before it connected
)

func (s slotState) String() string {
	return [...]string{"never connected", "connected", "closed its bootstrap", "aborted", "disconnected", "exited before it connected"}[s]
}

type slot struct {
	state slotState
	conn  net.Conn
}

// round is one collective in progress.
type round struct {
	op      byte
	first   int // rank that opened the round, for error messages
	recLen  int
	recs    [][]byte
	arrived []bool
	count   int
	timeout time.Duration
	timer   *time.Timer
}

const (
	handshakeTimeout = 10 * time.Second // a connection must authenticate within this
	serverWriteLimit = 30 * time.Second // a rank must read its answers within this
)

// NewServer listens on a random loopback port for the n ranks of a job
// that knows key (hex, see NewKey). Call Start to serve.
func NewServer(n int, key string) (*Server, error) {
	return listenServer("127.0.0.1:0", n, key)
}

// listenServer is NewServer on a given address.
func listenServer(addr string, n int, key string) (*Server, error) {
	if n < 1 {
		return nil, fmt.Errorf("rendezvous for %d processes: need at least 1", n)
	}
	k, err := decodeKey(key)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("rendezvous cannot listen on %s: %w", addr, err)
	}
	return &Server{n: n, key: k, ln: ln, slots: make([]slot, n), conns: map[net.Conn]struct{}{}}, nil
}

// Addr is host:port for ACP_BOOTSTRAP_ADDR.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Start accepts and serves connections in the background until Close.
func (s *Server) Start(h Hooks) {
	s.hooks = h
	s.wg.Add(1)
	go s.acceptLoop()
}

// Close stops the server and drops every connection; ranks that are still
// connected then see their bootstrap fail. Hooks are not called for
// connections dropped by Close.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closing = true
	if s.round != nil && s.round.timer != nil {
		s.round.timer.Stop()
	}
	conns := make([]net.Conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	err := s.ln.Close()
	for _, c := range conns {
		_ = c.Close()
	}
	s.wg.Wait()
	return err
}

// waitLeft waits up to limit until no rank is connected any more.
func (s *Server) waitLeft(limit time.Duration) {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		s.mu.Lock()
		joined := slices.ContainsFunc(s.slots, func(sl slot) bool { return sl.state == slotJoined })
		s.mu.Unlock()
		if !joined {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (s *Server) logf(format string, args ...any) {
	if s.hooks.Logf != nil {
		s.hooks.Logf(format, args...)
	}
}

// acceptRetry is how long the server pauses after a failed accept.
const acceptRetry = 50 * time.Millisecond

func (s *Server) acceptLoop() {
	defer s.wg.Done()
	told := false
	for {
		c, err := s.ln.Accept()
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil {
			// Out of file descriptors (a job of thousands of ranks under
			// a low ulimit -n), say: the ranks still to come wait in the
			// listen queue until one frees.
			if !told {
				s.logf("rendezvous: cannot accept a connection: %v (retrying; the ranks still to come wait)", err)
				told = true
			}
			time.Sleep(acceptRetry)
			continue
		}
		s.mu.Lock()
		if s.closing {
			s.mu.Unlock()
			_ = c.Close()
			return
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go s.serve(c)
	}
}

func (s *Server) serve(c net.Conn) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		_ = c.Close()
	}()
	rank, err := s.admit(c)
	if err != nil {
		return
	}
	for {
		kind, body, err := readFrame(c)
		if err != nil {
			s.dropped(rank, err)
			return
		}
		switch kind {
		case msgGather:
			s.gather(rank, body)
		case msgAbort:
			s.aborted(rank, body)
		case msgBye:
			s.bye(rank)
			return
		default:
			s.dropped(rank, fmt.Errorf("unexpected message %q", kind))
			return
		}
	}
}

// admit runs the challenge: nonce out, (rank, size, HMAC) back. A refused
// client is told why before the connection closes; the log line comes
// first, so that acprun's explanation precedes the rank's error.
func (s *Server) admit(c net.Conn) (int, error) {
	rank, err := s.challenge(c)
	if err != nil {
		s.logf("rendezvous: refused connection from %s: %v", c.RemoteAddr(), err)
		if reason := (refusal{}); errors.As(err, &reason) {
			_ = writeFrame(c, msgReject, []byte(reason.msg))
		}
	}
	return rank, err
}

// refusal is a reason to tell the client.
type refusal struct{ msg string }

func (r refusal) Error() string { return r.msg }

func (s *Server) challenge(c net.Conn) (int, error) {
	_ = c.SetDeadline(time.Now().Add(handshakeTimeout))
	nonce := make([]byte, nonceBytes)
	_, _ = rand.Read(nonce)
	if err := writeFrame(c, msgHello, append([]byte(helloMagic), nonce...)); err != nil {
		return -1, err
	}
	kind, body, err := readFrame(c)
	if err != nil {
		return -1, fmt.Errorf("no authentication: %v", err)
	}
	if kind != msgAuth {
		return -1, fmt.Errorf("expected authentication, got message %q", kind)
	}
	r := reader{b: body}
	rank, size, mac := int(r.u32()), int(r.u32()), r.rest()
	if r.err != nil {
		return -1, r.err
	}
	refuse := func(format string, args ...any) (int, error) {
		return -1, refusal{fmt.Sprintf(format, args...)}
	}
	if !hmac.Equal(mac, authMAC(s.key, nonce, rank, size)) {
		return refuse("authentication failed for rank %d: wrong job key (the process belongs to another job: another acprun's ACP_JOB_KEY, or another launcher job)", rank)
	}
	if size != s.n {
		return refuse("rank %d says the job has %d processes (ACP_NPROCS), but this job has %d", rank, size, s.n)
	}
	if rank < 0 || rank >= s.n {
		return refuse("rank %d (ACP_MYRANK) is out of range 0..%d", rank, s.n-1)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return refuse("the job is ending")
	}
	if st := s.slots[rank].state; st != slotAbsent {
		return refuse("rank %d is already taken (%s): two processes with ACP_MYRANK=%d? (a program that a rank starts inherits its ACP_* variables: to run it as a job of its own, remove ACP_BOOTSTRAP_ADDR and ACP_JOB_KEY from its environment)", rank, st, rank)
	}
	if err := writeFrame(c, msgWelcome, nil); err != nil {
		return -1, err
	}
	_ = c.SetDeadline(time.Time{})
	s.slots[rank] = slot{state: slotJoined, conn: c}
	return rank, nil
}

// gather adds rank's contribution to the current collective and answers
// everybody once all n have contributed.
func (s *Server) gather(rank int, body []byte) {
	r := reader{b: body}
	op, ms, rec := r.u8(), r.u64(), r.rest()
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.err != nil {
		s.fail(fmt.Errorf("rank %d sent a malformed collective: %v", rank, r.err))
		s.send(rank, msgError, []byte(s.broken.Error()))
		return
	}
	if s.broken != nil {
		s.send(rank, msgError, []byte(s.broken.Error()))
		return
	}
	rd := s.round
	if rd == nil {
		rd = &round{op: op, first: rank, recLen: len(rec), recs: make([][]byte, s.n), arrived: make([]bool, s.n),
			timeout: time.Duration(ms) * time.Millisecond}
		if rd.timeout > 0 { // 0: no limit (a rank that dies is reported when its connection drops)
			rd.timer = time.AfterFunc(rd.timeout, func() { s.expire(rd) })
		}
		s.round = rd
	}
	switch {
	case rd.arrived[rank]:
		s.fail(fmt.Errorf("rank %d entered %s twice", rank, opName(op)))
	case op != rd.op:
		s.fail(fmt.Errorf("rank %d called %s while rank %d called %s: every process must make the same calls in the same order", rank, opName(op), rd.first, opName(rd.op)))
	case len(rec) != rd.recLen:
		s.fail(fmt.Errorf("%s: rank %d contributed %d bytes, rank %d %d bytes: records must have the same length on every process", opName(op), rank, len(rec), rd.first, rd.recLen))
	}
	if s.broken != nil {
		s.send(rank, msgError, []byte(s.broken.Error()))
		return
	}
	rd.recs[rank], rd.arrived[rank] = rec, true
	rd.count++
	if rd.count == s.n {
		if rd.timer != nil {
			rd.timer.Stop()
		}
		s.round = nil
		all := make([]byte, 0, s.n*rd.recLen)
		for _, b := range rd.recs {
			all = append(all, b...)
		}
		for p := range s.n {
			s.send(p, msgResult, all)
		}
		return
	}
	s.failIfGone(rd)
}

// failIfGone fails rd at once, rather than at its timeout, when a rank
// that has not contributed left or never came. s.mu is held.
func (s *Server) failIfGone(rd *round) {
	if gone := s.missing(rd, func(st slotState) bool { return st > slotJoined }); len(gone) > 0 {
		s.fail(fmt.Errorf("%s cannot complete: %s", opName(rd.op), listRanks(gone, s.note)))
	}
}

// Exited tells the server that the process of rank ended. One that ended
// before it connected can never contribute: the collective waiting for it,
// and every later one, fails at once naming it.
func (s *Server) Exited(rank int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if rank < 0 || rank >= s.n || s.slots[rank].state != slotAbsent {
		return
	}
	s.slots[rank].state = slotExited
	if s.round != nil {
		s.failIfGone(s.round)
	}
}

func (s *Server) expire(rd *round) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.round != rd || s.closing {
		return
	}
	late := s.missing(rd, func(slotState) bool { return true })
	s.fail(fmt.Errorf("%s timed out after %v: %s did not arrive", opName(rd.op), rd.timeout, listRanks(late, s.note)))
}

// missing lists the ranks that have not contributed to rd and whose state
// matches.
func (s *Server) missing(rd *round, match func(slotState) bool) []int {
	var out []int
	for p := range s.n {
		if !rd.arrived[p] && match(s.slots[p].state) {
			out = append(out, p)
		}
	}
	return out
}

func (s *Server) note(rank int) string {
	if st := s.slots[rank].state; st != slotJoined {
		return st.String()
	}
	return ""
}

// fail ends the current collective with err for everyone who is waiting;
// later collectives fail with the same error. s.mu is held.
func (s *Server) fail(err error) {
	if s.broken == nil {
		s.broken = err // the ranks report it; the launcher has their exit statuses
	}
	if rd := s.round; rd != nil {
		if rd.timer != nil {
			rd.timer.Stop()
		}
		s.round = nil
		for p := range s.n {
			if rd.arrived[p] {
				s.send(p, msgError, []byte(s.broken.Error()))
			}
		}
	}
}

// send writes to a rank; a rank that does not read is dealt with by its
// reader goroutine. s.mu is held, which also orders writes per connection.
func (s *Server) send(rank int, kind byte, body []byte) {
	c := s.slots[rank].conn
	if c == nil {
		return
	}
	_ = c.SetWriteDeadline(time.Now().Add(serverWriteLimit))
	_ = writeFrame(c, kind, body)
}

// aborted tells the launcher before the other ranks learn of it, so that
// the launcher reports the abort rather than their consequent failures.
func (s *Server) aborted(rank int, body []byte) {
	r := reader{b: body}
	code, msg := int(int32(r.u32())), string(r.rest())
	if s.hooks.Abort != nil {
		s.hooks.Abort(rank, code, msg)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.slots[rank].state = slotAborted
	s.fail(fmt.Errorf("rank %d aborted the job: %s", rank, msg))
}

func (s *Server) bye(rank int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.slots[rank].state = slotClosed
	s.send(rank, msgByeAck, nil)
	s.slots[rank].conn = nil
	if rd := s.round; rd != nil && !rd.arrived[rank] {
		s.fail(fmt.Errorf("%s cannot complete: rank %d closed its bootstrap", opName(rd.op), rank))
	}
}

// dropped handles a connection that ended without goodbye. As for an
// abort, the launcher hears of it before the other ranks.
func (s *Server) dropped(rank int, err error) {
	s.mu.Lock()
	// Only this connection's goroutine changes the slot, so the state
	// cannot change while the hook runs.
	report := !s.closing && s.slots[rank].state == slotJoined
	s.mu.Unlock()
	if report && s.hooks.Lost != nil {
		s.hooks.Lost(rank, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if report {
		s.slots[rank].state = slotLost
		s.fail(fmt.Errorf("rank %d disconnected from the rendezvous without closing its bootstrap (did it exit or crash?)", rank))
	}
	s.slots[rank].conn = nil
}
