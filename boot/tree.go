package boot

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// tree is the start-up of the original acprun, kept so that it can launch
// this library unchanged: every process gets its own port and its parent's
// host and port. Rank 0's only child is rank 1; rank r ≥ 1 has children 2r
// and 2r+1; so the parent of r ≥ 2 is r/2 and that of rank 1 is rank 0.
// Collectives gather up the tree to rank 0 and broadcast the result down.
// The bytes on the wire are ours; only the topology is the original's.
type tree struct {
	rank, size int
	timeout    time.Duration
	rounds     int         // collectives started (guarded by coll)
	parent     *treeLink   // nil on rank 0
	children   []*treeLink // by rank
	localIP    string

	coll   sync.Mutex // one collective at a time
	broken error      // guarded by coll
	closed bool       // guarded by coll
}

type treeLink struct {
	rank int
	conn net.Conn
}

// treeRetry is how often a busy port or a parent not yet listening is
// retried (the original waits a second; start-up should be quicker).
const treeRetry = 100 * time.Millisecond

func treeParent(r int) int {
	switch r {
	case 0:
		return -1
	case 1:
		return 0
	}
	return r / 2
}

func treeChildren(r, n int) []int {
	if r == 0 {
		if n > 1 {
			return []int{1}
		}
		return nil
	}
	var c []int
	for _, k := range []int{2 * r, 2*r + 1} {
		if k < n {
			c = append(c, k)
		}
	}
	return c
}

// treeSubtreeSize counts r and the ranks below it, level by level (the
// ranks 1..n-1 form a binary heap), without listing them.
func treeSubtreeSize(r, n int) int {
	if r == 0 {
		return n
	}
	size := 0
	for lo, hi := r, r; lo < n; lo, hi = 2*lo, 2*hi+1 {
		size += min(hi, n-1) - lo + 1
	}
	return size
}

func openTree(o Options) (Bootstrap, error) {
	if err := o.checkRank(); err != nil {
		return nil, err
	}
	t := &tree{rank: o.Rank, size: o.NProcs, timeout: o.timeout()}
	deadline := time.Now().Add(t.timeout)
	want := treeChildren(t.rank, t.size)

	// Listen before connecting up: a child's connect then succeeds from the
	// backlog even while we are still waiting for our own parent.
	var ln *net.TCPListener
	if len(want) > 0 {
		var err error
		if ln, err = t.listen(o.PortLocal, deadline); err != nil {
			return nil, err
		}
		defer ln.Close()
	}
	if p := treeParent(t.rank); p >= 0 {
		c, err := t.join(p, o.HostRemote, o.PortRemote, deadline)
		if err != nil {
			return nil, err
		}
		t.parent = &treeLink{rank: p, conn: c}
		t.localIP = localIPOf(c)
	}
	if len(want) > 0 {
		if err := t.admitChildren(ln, o.PortLocal, want, deadline); err != nil {
			t.abandon(err)
			return nil, err
		}
		if t.localIP == "" {
			t.localIP = localIPOf(t.children[0].conn)
		}
	}
	return t, nil
}

// listen binds the local port on all interfaces, waiting while a previous
// job still holds it. Go sets SO_REUSEADDR on listeners, so only a live
// socket makes the port busy.
func (t *tree) listen(port int, deadline time.Time) (*net.TCPListener, error) {
	if port <= 0 || port > 65535 {
		return nil, fmt.Errorf("rank %d has children but --acp-port-local (ACP_PORT_LOCAL) = %d is not a port", t.rank, port)
	}
	for {
		ln, err := net.Listen("tcp", ":"+strconv.Itoa(port))
		if err == nil {
			return ln.(*net.TCPListener), nil
		}
		if !errors.Is(err, syscall.EADDRINUSE) || time.Now().After(deadline) {
			return nil, fmt.Errorf("rank %d cannot listen on port %d (--acp-port-local, ACP_PORT_LOCAL): %v", t.rank, port, err)
		}
		time.Sleep(treeRetry)
	}
}

// join connects to the parent, retrying while it is not listening yet, and
// introduces this process.
func (t *tree) join(parent int, host string, port int, deadline time.Time) (net.Conn, error) {
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	var c net.Conn
	for {
		var err error
		c, err = net.DialTimeout("tcp", addr, time.Until(deadline))
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.ECONNREFUSED) || time.Now().After(deadline) {
			return nil, fmt.Errorf("rank %d cannot reach its parent rank %d at %s (--acp-host-remote, --acp-port-remote) within %v: %v", t.rank, parent, addr, t.timeout, err)
		}
		time.Sleep(treeRetry)
	}
	_ = c.SetDeadline(deadline)
	hello := binary.BigEndian.AppendUint32(nil, uint32(t.rank))
	hello = binary.BigEndian.AppendUint32(hello, uint32(t.size))
	err := writeFrame(c, msgJoin, hello)
	var kind byte
	var body []byte
	if err == nil {
		kind, body, err = readFrame(c)
	}
	switch {
	case err != nil:
		err = fmt.Errorf("rank %d: no answer from its parent rank %d at %s: %v", t.rank, parent, addr, err)
	case kind == msgReject:
		err = fmt.Errorf("rank %d: parent rank %d at %s refused it: %s", t.rank, parent, addr, body)
	case kind != msgJoined:
		err = fmt.Errorf("rank %d: %s (--acp-host-remote, --acp-port-remote) is not a libacp tree start-up", t.rank, addr)
	}
	if err != nil {
		_ = c.Close()
		return nil, err
	}
	_ = c.SetDeadline(time.Time{})
	return c, nil
}

// admitChildren accepts the expected children. A connection that does not
// introduce itself is ignored (not one of ours); one that claims the wrong
// rank or job size fails the start-up, as in the original.
func (t *tree) admitChildren(ln *net.TCPListener, port int, want []int, deadline time.Time) error {
	_ = ln.SetDeadline(deadline)
	for len(t.children) < len(want) {
		c, err := ln.Accept()
		if err != nil {
			var late []int
			for _, w := range want {
				if !slices.ContainsFunc(t.children, func(l *treeLink) bool { return l.rank == w }) {
					late = append(late, w)
				}
			}
			return fmt.Errorf("rank %d: child %s did not connect to port %d within %v: %v", t.rank, listRanks(late, nil), port, t.timeout, err)
		}
		_ = c.SetDeadline(deadline)
		kind, body, err := readFrame(c)
		if err != nil || kind != msgJoin {
			_ = c.Close()
			continue
		}
		r := reader{b: body}
		rank, size := int(r.u32()), int(r.u32())
		reason := ""
		switch {
		case r.err != nil:
			reason = fmt.Sprintf("malformed introduction: %v", r.err)
		case size != t.size:
			reason = fmt.Sprintf("rank %d has --acp-nprocs %d, but its parent rank %d has %d", rank, size, t.rank, t.size)
		case !slices.Contains(want, rank):
			reason = fmt.Sprintf("rank %d is not a child of rank %d (expected %s)", rank, t.rank, listRanks(want, nil))
		case slices.ContainsFunc(t.children, func(l *treeLink) bool { return l.rank == rank }):
			reason = fmt.Sprintf("rank %d connected twice to rank %d", rank, t.rank)
		}
		if reason != "" {
			_ = writeFrame(c, msgReject, []byte(reason))
			_ = c.Close()
			return fmt.Errorf("rank %d: %s", t.rank, reason)
		}
		if err := writeFrame(c, msgJoined, nil); err != nil {
			_ = c.Close()
			return fmt.Errorf("rank %d: child rank %d: %v", t.rank, rank, err)
		}
		_ = c.SetDeadline(time.Time{})
		t.children = append(t.children, &treeLink{rank: rank, conn: c})
	}
	slices.SortFunc(t.children, func(a, b *treeLink) int { return a.rank - b.rank })
	return nil
}

func (t *tree) Rank() int       { return t.rank }
func (t *tree) Size() int       { return t.size }
func (t *tree) Method() string  { return "tree" }
func (t *tree) LocalIP() string { return t.localIP }

func (t *tree) AllGather(rec []byte) ([]byte, error) { return t.collective(opAllGather, rec) }

func (t *tree) Barrier() error {
	_, err := t.collective(opBarrier, nil)
	return err
}

func (t *tree) collective(op byte, rec []byte) ([]byte, error) {
	t.coll.Lock()
	defer t.coll.Unlock()
	if t.closed {
		return nil, errClosed
	}
	if t.broken != nil {
		return nil, t.broken
	}
	// Only the start-up exchange is bounded (see rendezvous.exchange); a
	// zero deadline means none. A rank that dies closes its connections.
	var deadline time.Time
	if t.rounds == 0 {
		deadline = time.Now().Add(t.timeout)
	}
	t.rounds++
	all, err := t.exchange(op, rec, deadline)
	if err != nil {
		t.broken = err
	}
	return all, err
}

// A gather message carries a subtree's records: op (1), record length (4),
// count (4), then count × (rank (4), record). A result carries op (1) and
// every record in rank order.
func (t *tree) exchange(op byte, rec []byte, deadline time.Time) ([]byte, error) {
	entries, err := t.gatherChildren(op, len(rec), deadline)
	if err != nil {
		return nil, err
	}
	entries = append(binary.BigEndian.AppendUint32(entries, uint32(t.rank)), rec...)
	count := treeSubtreeSize(t.rank, t.size)
	var result []byte
	if t.parent == nil {
		if result, err = t.assemble(op, len(rec), entries); err != nil {
			t.spread(err, nil)
			return nil, err
		}
	} else {
		msg := []byte{op}
		msg = binary.BigEndian.AppendUint32(msg, uint32(len(rec)))
		msg = binary.BigEndian.AppendUint32(msg, uint32(count))
		if result, err = t.fromParent(op, len(rec), append(msg, entries...), deadline); err != nil {
			return nil, err
		}
	}
	for _, c := range t.children {
		_ = c.conn.SetWriteDeadline(deadline)
		_ = writeFrame(c.conn, msgResult, result)
	}
	return result[1:], nil
}

// gatherChildren collects the entries of every child's subtree.
func (t *tree) gatherChildren(op byte, recLen int, deadline time.Time) ([]byte, error) {
	type answer struct {
		from *treeLink
		kind byte
		body []byte
		err  error
	}
	answers := make(chan answer, len(t.children))
	for _, c := range t.children {
		go func() {
			_ = c.conn.SetReadDeadline(deadline)
			kind, body, err := readFrame(c.conn)
			answers <- answer{from: c, kind: kind, body: body, err: err}
		}()
	}
	var entries []byte
	for range t.children {
		a := <-answers
		below := treeSubtreeSize(a.from.rank, t.size) - 1
		var err error
		var ne net.Error
		switch {
		case errors.As(a.err, &ne) && ne.Timeout():
			err = fmt.Errorf("%s timed out after %v on rank %d waiting for rank %d or one of the %d rank(s) below it", opName(op), t.timeout, t.rank, a.from.rank, below)
		case a.err != nil:
			err = fmt.Errorf("%s: rank %d lost its connection to rank %d: %v (did rank %d exit?)", opName(op), t.rank, a.from.rank, a.err, a.from.rank)
		case a.kind == msgError:
			err = errors.New(string(a.body))
		case a.kind != msgGather:
			err = fmt.Errorf("%s: rank %d got message %q from rank %d", opName(op), t.rank, a.kind, a.from.rank)
		}
		if err == nil {
			r := reader{b: a.body}
			cop, clen, ccount := r.u8(), int(r.u32()), int(r.u32())
			body := r.rest()
			switch {
			case r.err != nil:
				err = fmt.Errorf("%s: rank %d got a truncated gather from rank %d", opName(op), t.rank, a.from.rank)
			case cop != op:
				err = fmt.Errorf("rank %d called %s while rank %d called %s: every process must make the same calls in the same order", a.from.rank, opName(cop), t.rank, opName(op))
			case clen != recLen:
				err = fmt.Errorf("%s: rank %d contributed %d bytes, rank %d %d bytes: records must have the same length on every process", opName(op), a.from.rank, clen, t.rank, recLen)
			case ccount != below+1 || len(body) != ccount*(4+clen):
				err = fmt.Errorf("%s: rank %d got %d records from rank %d, expected %d", opName(op), t.rank, ccount, a.from.rank, below+1)
			default:
				entries = append(entries, body...)
			}
		}
		if err != nil {
			t.spread(err, senderOf(a.kind, a.from))
			return nil, err
		}
	}
	return entries, nil
}

// fromParent sends our subtree up and waits for the job's result.
func (t *tree) fromParent(op byte, recLen int, msg []byte, deadline time.Time) ([]byte, error) {
	p := t.parent
	_ = p.conn.SetWriteDeadline(deadline)
	err := writeFrame(p.conn, msgGather, msg)
	var kind byte
	var body []byte
	if err == nil {
		_ = p.conn.SetReadDeadline(deadline)
		kind, body, err = readFrame(p.conn)
	}
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		err = fmt.Errorf("%s timed out after %v on rank %d waiting for the result from its parent rank %d", opName(op), t.timeout, t.rank, p.rank)
	case err != nil:
		err = fmt.Errorf("%s: rank %d lost its connection to its parent rank %d: %v (did rank %d exit?)", opName(op), t.rank, p.rank, err, p.rank)
	case kind == msgError:
		err = errors.New(string(body))
	case kind != msgResult || len(body) != 1+t.size*recLen:
		err = fmt.Errorf("%s: rank %d got a malformed result from its parent rank %d", opName(op), t.rank, p.rank)
	case body[0] != op:
		err = fmt.Errorf("rank %d called %s while rank %d called %s: every process must make the same calls in the same order", t.rank, opName(op), p.rank, opName(body[0]))
	}
	if err != nil {
		t.spread(err, senderOf(kind, p))
		return nil, err
	}
	return body, nil
}

// assemble puts every rank's record in order on rank 0.
func (t *tree) assemble(op byte, recLen int, entries []byte) ([]byte, error) {
	result := make([]byte, 1+t.size*recLen)
	result[0] = op
	seen := make([]bool, t.size)
	r := reader{b: entries}
	for range t.size {
		rank := int(r.u32())
		rec := r.take(recLen)
		if r.err != nil || rank >= t.size || seen[rank] {
			return nil, fmt.Errorf("%s: rank 0 got a malformed or duplicate record (rank %d)", opName(op), rank)
		}
		seen[rank] = true
		copy(result[1+rank*recLen:], rec)
	}
	return result, nil
}

// senderOf is the neighbour that already knows about a failure: the one
// that reported it.
func senderOf(kind byte, l *treeLink) *treeLink {
	if kind == msgError {
		return l
	}
	return nil
}

// spread passes a collective's failure to every neighbour but the one it
// came from, so that all processes fail promptly with the same reason.
func (t *tree) spread(err error, from *treeLink) {
	links := t.children
	if t.parent != nil {
		links = append([]*treeLink{t.parent}, links...)
	}
	for _, l := range links {
		if l != from {
			_ = l.conn.SetWriteDeadline(time.Now().Add(closeLimit))
			_ = writeFrame(l.conn, msgError, []byte(err.Error()))
		}
	}
}

// abandon gives up the start-up: the neighbours connected so far learn
// why, so that they fail naming the cause rather than a lost connection.
func (t *tree) abandon(err error) {
	t.spread(err, nil)
	t.closeLinks()
}

// Abort has no launcher to tell: the original acprun does not listen. It
// drops the connections so that the neighbours' collectives fail at once.
func (t *tree) Abort(int, string) { t.closeLinks() }

func (t *tree) Close() error {
	t.coll.Lock()
	defer t.coll.Unlock()
	if !t.closed {
		t.closed = true
		t.closeLinks()
	}
	return nil
}

func (t *tree) closeLinks() {
	if t.parent != nil {
		_ = t.parent.conn.Close()
	}
	for _, c := range t.children {
		_ = c.conn.Close()
	}
}
