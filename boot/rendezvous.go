package boot

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// answerGrace is how much longer than the collective timeout a client waits
// for the server, which reports the timeout itself with the missing ranks.
const answerGrace = 5 * time.Second

// closeLimit bounds Close and Abort, which run while a process is ending.
const closeLimit = 2 * time.Second

// leaveLimit bounds how long a process that runs the rendezvous server
// waits in Close for the others to close theirs. They left the last
// barrier together, but a loaded machine may take a while to schedule them.
const leaveLimit = 10 * time.Second

// rendezvous is a rank's connection to a Server, open for the life of the
// job: acprun's (method "acprun"), or the one rank 0 runs when the ranks
// meet at ACP_BOOTSTRAP_ADDR on their own (method "env", env.go). The
// server learns from it when a rank aborts or dies.
type rendezvous struct {
	rank, size int
	addr       string
	timeout    time.Duration
	rounds     int // collectives started (guarded by coll)
	conn       net.Conn
	method     string
	who        string  // the server, in messages: "the acprun rendezvous"
	owner      string  // who runs the server: "acprun", "rank 0"
	server     *Server // the server this process runs (rank 0 of "env"), or nil
	watch      *hangupWatch

	coll    sync.Mutex // one collective at a time; Close waits for it
	wmu     sync.Mutex // Abort may write while a collective waits
	broken  error      // guarded by coll
	closed  bool       // guarded by coll
	aborted atomic.Bool
}

// checkAcprun checks what acprun sets for every rank.
func checkAcprun(o Options) error {
	if !o.RankSet {
		return fmt.Errorf("ACP_BOOTSTRAP_ADDR=%s is set but ACP_MYRANK and ACP_NPROCS are not: acprun sets all three; start the job with acprun -np N", o.Addr)
	}
	if err := o.checkRank(); err != nil {
		return err
	}
	if o.Key == "" {
		return fmt.Errorf("ACP_BOOTSTRAP_ADDR=%s is set but ACP_JOB_KEY is not: acprun passes the key in the environment; start the job with acprun -np N", o.Addr)
	}
	_, err := decodeKey(o.Key)
	return err
}

func openRendezvous(o Options) (Bootstrap, error) {
	if err := checkAcprun(o); err != nil {
		return nil, err
	}
	key, _ := decodeKey(o.Key)
	r := &rendezvous{rank: o.Rank, size: o.NProcs, addr: o.Addr, timeout: o.timeout(),
		method: "acprun", who: "the acprun rendezvous", owner: "acprun"}
	d := net.Dialer{Timeout: r.timeout}
	c, err := d.Dial("tcp", o.Addr)
	if err != nil {
		return nil, fmt.Errorf("cannot reach the acprun rendezvous at %s (ACP_BOOTSTRAP_ADDR): %v (has that acprun ended? ACP_BOOTSTRAP_ADDR, ACP_JOB_KEY, ACP_MYRANK and ACP_NPROCS left from one of its ranks make a process join its job: remove them from the environment to run a job of one)", o.Addr, err)
	}
	if err := r.join(c, key); err != nil {
		return nil, err
	}
	r.watchServer(o)
	return r, nil
}

// watchServer tells o.Gone when the server closes the connection while
// this process is in the job: whoever ran it ended. A rank that is not
// acprun's child (started through a shell or a wrapper) outlived a killed
// acprun, unreached by the kernel's parent-death signal, and computed on
// until it next needed the bootstrap.
func (r *rendezvous) watchServer(o Options) {
	if o.Gone == nil {
		return
	}
	w, err := watchHangup(r.conn, func() {
		o.Gone(fmt.Errorf("%s ended while this process was still in the job (%s at %s closed the connection): the job cannot finish", r.owner, r.who, r.addr))
	})
	if err != nil {
		o.logf("bootstrap %s: %v; a collective will find out instead if %s ends", r.method, err, r.owner)
		return
	}
	r.watch = w
}

// join authenticates on a fresh connection and keeps it; the connection
// is closed on failure.
func (r *rendezvous) join(c net.Conn, key []byte) error {
	if err := r.authenticate(c, key); err != nil {
		_ = c.Close()
		return err
	}
	r.conn = c
	return nil
}

// authenticate answers the server's nonce with HMAC(key, nonce|rank|size).
func (r *rendezvous) authenticate(c net.Conn, key []byte) error {
	_ = c.SetDeadline(time.Now().Add(r.timeout))
	kind, body, err := readFrame(c)
	if err != nil {
		return fmt.Errorf("no greeting from %s at %s (ACP_BOOTSTRAP_ADDR): %v", r.who, r.addr, err)
	}
	if kind != msgHello || !strings.HasPrefix(string(body), helloMagic) || len(body) != len(helloMagic)+nonceBytes {
		return fmt.Errorf("%s (ACP_BOOTSTRAP_ADDR) is not a libacp rendezvous of this version (%s expected)", r.addr, r.who)
	}
	nonce := body[len(helloMagic):]
	msg := binary.BigEndian.AppendUint32(nil, uint32(r.rank))
	msg = binary.BigEndian.AppendUint32(msg, uint32(r.size))
	msg = append(msg, authMAC(key, nonce, r.rank, r.size)...)
	if err := writeFrame(c, msgAuth, msg); err != nil {
		return fmt.Errorf("%s at %s: %v", r.who, r.addr, err)
	}
	kind, body, err = readFrame(c)
	switch {
	case err != nil:
		return fmt.Errorf("%s at %s did not answer rank %d: %v", r.who, r.addr, r.rank, err)
	case kind == msgReject:
		return fmt.Errorf("%s at %s refused rank %d: %s", r.who, r.addr, r.rank, body)
	case kind != msgWelcome:
		return fmt.Errorf("%s at %s sent message %q instead of a welcome", r.who, r.addr, kind)
	}
	return c.SetDeadline(time.Time{})
}

func (r *rendezvous) Rank() int       { return r.rank }
func (r *rendezvous) Size() int       { return r.size }
func (r *rendezvous) Method() string  { return r.method }
func (r *rendezvous) LocalIP() string { return localIPOf(r.conn) }

func (r *rendezvous) AllGather(rec []byte) ([]byte, error) {
	return r.collective(opAllGather, rec)
}

func (r *rendezvous) Barrier() error {
	_, err := r.collective(opBarrier, nil)
	return err
}

func (r *rendezvous) collective(op byte, rec []byte) ([]byte, error) {
	r.coll.Lock()
	defer r.coll.Unlock()
	switch {
	case r.closed:
		return nil, errClosed
	case r.aborted.Load():
		return nil, errors.New("bootstrap was aborted")
	case r.broken != nil:
		return nil, r.broken
	}
	all, err := r.exchange(op, rec)
	if err != nil {
		r.broken = err
	}
	return all, err
}

func (r *rendezvous) exchange(op byte, rec []byte) ([]byte, error) {
	// Only the start-up exchange is bounded: every process gets there
	// promptly. Later collectives (finalize, reset) wait as long as the
	// slowest process computes; a process that dies is reported by the
	// server when its connection drops, so nothing hangs on it.
	limit := r.timeout
	if r.rounds > 0 {
		limit = 0
	}
	body := binary.BigEndian.AppendUint64([]byte{op}, uint64(limit.Milliseconds()))
	if err := r.write(msgGather, append(body, rec...), r.timeout); err != nil {
		return nil, fmt.Errorf("%s: lost the connection to %s at %s: %v", opName(op), r.who, r.addr, err)
	}
	var deadline time.Time
	if limit > 0 {
		deadline = time.Now().Add(limit + answerGrace)
	}
	_ = r.conn.SetReadDeadline(deadline)
	r.rounds++
	kind, body, err := readFrame(r.conn)
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		return nil, fmt.Errorf("%s: no answer from %s at %s for %v (is %s still running?)", opName(op), r.who, r.addr, r.timeout+answerGrace, r.owner)
	case err != nil:
		return nil, fmt.Errorf("%s: lost the connection to %s at %s: %v (%s stopped or ended?)", opName(op), r.who, r.addr, err, r.owner)
	case kind == msgError:
		return nil, errors.New(string(body))
	case kind != msgResult:
		return nil, fmt.Errorf("%s: unexpected message %q from %s", opName(op), kind, r.who)
	case len(body) != r.size*len(rec):
		return nil, fmt.Errorf("%s: the rendezvous returned %d bytes for %d records of %d bytes", opName(op), len(body), r.size, len(rec))
	}
	return body, nil
}

func (r *rendezvous) write(kind byte, body []byte, limit time.Duration) error {
	r.wmu.Lock()
	defer r.wmu.Unlock()
	_ = r.conn.SetWriteDeadline(time.Now().Add(limit))
	return writeFrame(r.conn, kind, body)
}

// Abort tells acprun, which stops the job, then drops the connection so
// that a collective blocked in another goroutine returns.
func (r *rendezvous) Abort(code int, msg string) {
	if r.aborted.Swap(true) {
		return
	}
	r.watch.stop()
	body := binary.BigEndian.AppendUint32(nil, uint32(int32(code)))
	_ = r.write(msgAbort, append(body, msg...), closeLimit)
	_ = r.conn.Close()
}

// Close says goodbye, so that acprun does not take the disconnection for a
// crash, and waits for the acknowledgement so that the goodbye cannot be
// lost to a reset when the process exits right after. A process that runs
// the server keeps it until the others have said goodbye too.
func (r *rendezvous) Close() error {
	r.coll.Lock()
	defer r.coll.Unlock()
	if r.closed {
		return nil
	}
	r.closed = true
	r.watch.stop()
	if r.server != nil {
		defer func() {
			r.server.waitLeft(leaveLimit)
			_ = r.server.Close()
		}()
	}
	if r.aborted.Load() {
		return nil
	}
	err := r.write(msgBye, nil, closeLimit)
	_ = r.conn.SetReadDeadline(time.Now().Add(closeLimit))
	for err == nil {
		var kind byte
		// Skip an answer that arrived after a collective gave up waiting.
		if kind, _, err = readFrame(r.conn); kind == msgByeAck {
			break
		}
	}
	if cerr := r.conn.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("closing the connection to %s at %s: %v", r.who, r.addr, err)
	}
	return nil
}
