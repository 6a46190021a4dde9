package boot

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// pmi is a client of the PMI-1 "simple" wire protocol, which MPICH's Hydra
// mpiexec (and other simple-PMI servers) serve on an inherited socket
// (PMI_FD) or on a TCP port (PMI_PORT, with PMI_ID): one request per line,
// "cmd=NAME key=value ...", and one answer line each.
//
// AllGather puts every record into the launcher's key-value space,
// barriers, and gets them back. The server answers one get at a time, so
// records are packed: when many fit into one value, the first rank of
// each group of ranks gets its group's records and puts them as one value
// after a first barrier, and everyone gets the groups' values after a
// second one. Each rank then asks for N/G values instead of N (G = 22 for
// the engine's 34-byte records and Hydra's 1024-character values).
//
// Under MPICH an MPI program's MPI_Init has already used PMI_FD. Hydra
// answers a second client on the same socket correctly (requests and
// answers alternate, and every rank makes the same collective calls), but
// ends the connection on the first "finalize", and kills the job when a
// process that used PMI exits without one. So exactly one finalize is
// sent per process: ours when no MPI is active at acp_finalize, otherwise
// MPI_Finalize's. A new connection to PMI_PORT with the same PMI_ID takes
// over the answers meant for the other connection, so PMI_PORT is refused
// in a program that contains MPI.
type pmi struct {
	rank, size     int
	conn           pmiConn
	kvs            string
	keyMax, valMax int
	inherited      bool // conn is PMI_FD, which an MPI library may share
	mpi            func() (linked, active bool)
	timeout        time.Duration
	localIP        string
	logf           func(string, ...any)

	coll    sync.Mutex // one collective (request/answer sequence) at a time
	wmu     sync.Mutex // Abort may write while a collective waits
	rounds  int        // guarded by coll
	broken  error      // guarded by coll
	closed  bool       // guarded by coll
	aborted atomic.Bool
}

// pmiConn carries request and answer lines.
type pmiConn interface {
	writeLine(line string) error // without the newline
	readLine() (string, error)   // without the newline
	close() error
}

// maxPMILine bounds an answer, so that garbage cannot make us allocate
// without limit.
const maxPMILine = 1 << 20

func appliesPMI(o Options) (bool, string) {
	if fd, ok := o.Env["PMI_FD"]; ok {
		return true, fmt.Sprintf("PMI_FD=%s is set (a PMI-1 launcher such as MPICH's mpiexec)", fd)
	}
	if port, ok := o.Env["PMI_PORT"]; ok {
		return true, fmt.Sprintf("PMI_PORT=%s is set (a PMI-1 launcher such as MPICH's mpiexec -pmi-port)", port)
	}
	return false, "no PMI_FD or PMI_PORT"
}

func openPMI(o Options) (Bootstrap, error) {
	p := &pmi{timeout: o.timeout(), mpi: o.MPI, logf: o.logf}
	if p.mpi == nil {
		p.mpi = func() (bool, bool) { return false, false }
	}
	deadline := time.Now().Add(p.timeout)
	var err error
	if fdText, ok := o.Env["PMI_FD"]; ok {
		err = p.openFD(o, fdText)
	} else {
		err = p.openPort(o, deadline)
	}
	if err != nil {
		return nil, err
	}
	if err := p.start(o, deadline); err != nil {
		_ = p.conn.close()
		return nil, err
	}
	return p, nil
}

// checkPMI checks the launcher's variables: PMI_FD with PMI_RANK and
// PMI_SIZE, or PMI_PORT with PMI_ID.
func checkPMI(o Options) error {
	if fdText, ok := o.Env["PMI_FD"]; ok {
		_, _, err := inheritedPMI(o, fdText)
		return err
	}
	_, _, err := pmiPort(o)
	return err
}

// inheritedPMI returns the inherited socket PMI_FD names (an MPICH rank's
// child inherits the variables, not always the socket) and the rank and
// size the environment gives.
func inheritedPMI(o Options, fdText string) (int, envRank, error) {
	fd, err := strconv.Atoi(fdText)
	if err != nil || fd < 0 {
		return -1, envRank{}, fmt.Errorf("PMI_FD=%q is not a file descriptor", fdText)
	}
	r, ok, err := pmiRankFromEnv(o)
	if err != nil {
		return -1, r, err
	}
	if !ok {
		return -1, r, fmt.Errorf("PMI_FD=%s is set but PMI_RANK and PMI_SIZE are not: the PMI-1 launcher must set all three", fdText)
	}
	if err := isSocket(fd); err != nil {
		return -1, r, fmt.Errorf("PMI_FD=%s: %v", fdText, err)
	}
	return fd, r, nil
}

// openFD uses the inherited socket; rank and size come from the
// environment.
func (p *pmi) openFD(o Options, fdText string) error {
	fd, r, err := inheritedPMI(o, fdText)
	if err != nil {
		return err
	}
	c, err := newFDConn(fd)
	if err != nil {
		return fmt.Errorf("PMI_FD=%s: %v", fdText, err)
	}
	p.conn, p.inherited, p.rank, p.size = c, true, r.rank, r.size
	return nil
}

func pmiRankFromEnv(o Options) (envRank, bool, error) {
	rv, okR := o.Env["PMI_RANK"]
	sv, okS := o.Env["PMI_SIZE"]
	if !okR || !okS {
		return envRank{}, false, nil
	}
	rank, err1 := strconv.Atoi(rv)
	size, err2 := strconv.Atoi(sv)
	switch {
	case err1 != nil || rank < 0:
		return envRank{}, false, fmt.Errorf("PMI_RANK=%q is not a rank", rv)
	case err2 != nil || size < 1:
		return envRank{}, false, fmt.Errorf("PMI_SIZE=%q is not a number of processes", sv)
	case rank >= size:
		return envRank{}, false, fmt.Errorf("PMI_RANK=%d is out of range 0..%d for PMI_SIZE=%d", rank, size-1, size)
	}
	return envRank{rank: rank, size: size}, true, nil
}

// openPort connects to PMI_PORT and introduces itself with PMI_ID; the
// server answers with the rank and size.
func (p *pmi) openPort(o Options, deadline time.Time) error {
	addr, id, err := pmiPort(o)
	if err != nil {
		return err
	}
	c, err := net.DialTimeout("tcp", addr, time.Until(deadline))
	if err != nil {
		return fmt.Errorf("cannot reach the PMI-1 server at PMI_PORT=%s: %v", addr, err)
	}
	p.conn = &tcpPMIConn{c: c, r: bufio.NewReader(c)}
	err = p.withDeadline(deadline, "introduction with PMI_ID", func() error {
		if err := p.conn.writeLine("cmd=initack pmiid=" + id); err != nil {
			return err
		}
		if _, err := p.answer("initack"); err != nil {
			return err
		}
		// Then "cmd=set size=N", "cmd=set rank=R" and "cmd=set debug=D",
		// which MPICH's own client reads, in this order, before anything else.
		rank, size := -1, -1
		seen := map[string]bool{}
		for !seen["size"] || !seen["rank"] || !seen["debug"] {
			kv, err := p.answer("set")
			if err != nil {
				return err
			}
			for k, v := range kv {
				seen[k] = true
				switch k {
				case "rank":
					rank, _ = strconv.Atoi(v)
				case "size":
					size, _ = strconv.Atoi(v)
				}
			}
		}
		if size < 1 || rank < 0 || rank >= size {
			return fmt.Errorf("the server gave rank %d of %d", rank, size)
		}
		p.rank, p.size = rank, size
		return nil
	})
	if err != nil {
		_ = p.conn.close()
		return fmt.Errorf("PMI_PORT=%s, PMI_ID=%s: %v", addr, id, err)
	}
	return nil
}

// pmiPort returns PMI_PORT and PMI_ID, or why they cannot be used.
func pmiPort(o Options) (addr, id string, err error) {
	addr, id = o.Env["PMI_PORT"], o.Env["PMI_ID"]
	if _, ok := o.Env["PMI_ID"]; !ok {
		return addr, id, fmt.Errorf("PMI_PORT=%s is set but PMI_ID is not: the PMI-1 launcher must set both", addr)
	}
	if o.MPI == nil {
		return addr, id, nil
	}
	if linked, _ := o.MPI(); linked {
		return addr, id, fmt.Errorf("this program contains MPI, which connects to PMI_PORT=%s (mpiexec -pmi-port) itself; a second connection with PMI_ID=%s would take the launcher's answers meant for MPI, or MPI's for us. Start the job without -pmi-port (libacp then shares MPI's inherited PMI_FD), or remove PMI_PORT from libacp's view and set ACP_BOOTSTRAP_ADDR=host:port", addr, id)
	}
	return addr, id, nil
}

// start runs init, learns the limits and the key-value space, and whether
// all ranks are on this host.
func (p *pmi) start(o Options, deadline time.Time) error {
	return p.withDeadline(deadline, "start-up", func() error {
		kv, err := p.request("cmd=init pmi_version=1 pmi_subversion=1", "response_to_init")
		if err != nil {
			return fmt.Errorf("PMI-1 init: %v", err)
		}
		if v := kv["pmi_version"]; v != "" && v != "1" {
			return fmt.Errorf("PMI-1 init: the server behind PMI_FD/PMI_PORT speaks PMI version %s (Slurm's srun --mpi=pmi2?); libacp speaks PMI-1 and PMIx: start with srun --mpi=pmix, or with srun --mpi=none and ACP_BOOTSTRAP_ADDR=host:port", v)
		}
		if kv, err = p.request("cmd=get_maxes", "maxes"); err != nil {
			return fmt.Errorf("PMI-1 get_maxes: %v", err)
		}
		p.keyMax, _ = strconv.Atoi(kv["keylen_max"])
		p.valMax, _ = strconv.Atoi(kv["vallen_max"])
		if p.keyMax < 32 || p.valMax < 16 {
			return fmt.Errorf("PMI-1 get_maxes: keys of %q and values of %q characters are too short", kv["keylen_max"], kv["vallen_max"])
		}
		if kv, err = p.request("cmd=get_my_kvsname", "my_kvsname"); err != nil {
			return fmt.Errorf("PMI-1 get_my_kvsname: %v", err)
		}
		if p.kvs = kv["kvsname"]; p.kvs == "" {
			return errors.New("PMI-1 get_my_kvsname: no kvsname in the answer")
		}
		p.localIP = ipForJob(p.oneHost(o))
		p.logf("bootstrap pmi: rank %d of %d, key-value space %s, keys ≤ %d and values ≤ %d characters, %s",
			p.rank, p.size, p.kvs, p.keyMax, p.valMax, map[bool]string{true: "inherited PMI_FD", false: "PMI_PORT"}[p.inherited])
		return nil
	})
}

// oneHost tells whether every rank runs on this host: Hydra says so in
// MPI_LOCALNRANKS, any MPICH-style server in PMI_process_mapping.
func (p *pmi) oneHost(o Options) bool {
	if v, ok := o.Env["MPI_LOCALNRANKS"]; ok {
		n, err := strconv.Atoi(v)
		return err == nil && n == p.size
	}
	kv, err := p.request("cmd=get kvsname="+p.kvs+" key=PMI_process_mapping", "get_result")
	if err != nil {
		return p.size == 1
	}
	nodes, ok := parseProcessMapping(kv["value"])
	return ok && nodes == 1
}

// parseProcessMapping counts the hosts in a PMI_process_mapping value,
// "(vector,(first host,hosts,ranks per host),...)".
func parseProcessMapping(v string) (int, bool) {
	v = strings.TrimSpace(v)
	if !strings.HasPrefix(v, "(vector,") || !strings.HasSuffix(v, ")") {
		return 0, false
	}
	body := strings.TrimSuffix(strings.TrimPrefix(v, "(vector,"), ")")
	hosts := 0
	for _, blk := range strings.Split(body, "),") {
		f := strings.Split(strings.Trim(blk, "()"), ",")
		if len(f) != 3 {
			return 0, false
		}
		first, err1 := strconv.Atoi(strings.TrimSpace(f[0]))
		count, err2 := strconv.Atoi(strings.TrimSpace(f[1]))
		if err1 != nil || err2 != nil || first < 0 || count < 1 {
			return 0, false
		}
		hosts = max(hosts, first+count)
	}
	return hosts, hosts > 0
}

func (p *pmi) Rank() int       { return p.rank }
func (p *pmi) Size() int       { return p.size }
func (p *pmi) Method() string  { return "pmi" }
func (p *pmi) LocalIP() string { return p.localIP }

func (p *pmi) Barrier() error {
	_, err := p.collective("Barrier", func() ([]byte, error) { return nil, p.barrier() })
	return err
}

func (p *pmi) AllGather(rec []byte) ([]byte, error) {
	return p.collective("AllGather", func() ([]byte, error) { return p.allGather(rec) })
}

// collective runs one collective; the first (start-up) one is bounded by
// the timeout, later ones wait as long as the slowest process computes.
func (p *pmi) collective(name string, f func() ([]byte, error)) ([]byte, error) {
	p.coll.Lock()
	defer p.coll.Unlock()
	switch {
	case p.closed:
		return nil, errClosed
	case p.aborted.Load():
		return nil, errors.New("bootstrap was aborted")
	case p.broken != nil:
		return nil, p.broken
	}
	p.rounds++
	var out []byte
	run := func() error {
		var err error
		out, err = f()
		return err
	}
	var err error
	if p.rounds == 1 {
		err = p.withDeadline(time.Now().Add(p.timeout), name, run)
	} else {
		err = run()
	}
	if err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) {
			err = fmt.Errorf("%v (the launcher closed the PMI connection: did MPI_Finalize run before acp_finalize? call acp_finalize first)", err)
		}
		err = fmt.Errorf("%s over PMI-1: %v", name, err)
		p.broken = err
	}
	return out, err
}

// withDeadline runs f, giving up at the deadline. The inherited socket is
// blocking (it is shared with MPI, whose PMI client expects that), so a
// request cannot be interrupted: on a timeout f is left to finish or block
// in the background, and the bootstrap is unusable.
func (p *pmi) withDeadline(deadline time.Time, what string, f func() error) error {
	return within(time.Until(deadline), what, f)
}

func (p *pmi) barrier() error {
	_, err := p.request("cmd=barrier_in", "barrier_out")
	return err
}

// valueBytes is how many record bytes one value carries (base64 without
// padding: 4 characters for 3 bytes; one character is kept for the
// terminating NUL that C servers count).
func (p *pmi) valueBytes() int { return (p.valMax - 1) / 4 * 3 }

func (p *pmi) allGather(rec []byte) ([]byte, error) {
	n, size := len(rec), p.size
	if n == 0 {
		return nil, p.barrier()
	}
	round := p.rounds
	per := p.valueBytes()
	group := per / n // records per packed value
	if group < 2 || size <= group {
		if err := p.putValue(fmt.Sprintf("acp%d.%d", round, p.rank), rec); err != nil {
			return nil, err
		}
		if err := p.barrier(); err != nil {
			return nil, err
		}
		all := make([]byte, 0, n*size)
		for r := range size {
			v, err := p.getValue(fmt.Sprintf("acp%d.%d", round, r), n)
			if err != nil {
				return nil, err
			}
			all = append(all, v...)
		}
		return all, nil
	}

	// Two stages: records to the first rank of each group, groups to all.
	if err := p.putValue(fmt.Sprintf("acp%d.%d", round, p.rank), rec); err != nil {
		return nil, err
	}
	if err := p.barrier(); err != nil {
		return nil, err
	}
	if p.rank%group == 0 {
		packed := append(make([]byte, 0, group*n), rec...)
		for r := p.rank + 1; r < min(p.rank+group, size); r++ {
			v, err := p.getValue(fmt.Sprintf("acp%d.%d", round, r), n)
			if err != nil {
				return nil, err
			}
			packed = append(packed, v...)
		}
		if err := p.putValue(fmt.Sprintf("acp%d.g%d", round, p.rank/group), packed); err != nil {
			return nil, err
		}
	}
	if err := p.barrier(); err != nil {
		return nil, err
	}
	all := make([]byte, 0, n*size)
	for g := 0; g*group < size; g++ {
		members := min(group, size-g*group)
		v, err := p.getValue(fmt.Sprintf("acp%d.g%d", round, g), members*n)
		if err != nil {
			return nil, err
		}
		all = append(all, v...)
	}
	return all, nil
}

// putValue stores data under key, split into pieces key.0, key.1, ... when
// it is longer than one value.
func (p *pmi) putValue(key string, data []byte) error {
	per := p.valueBytes()
	for i := 0; i*per < len(data); i++ {
		piece := data[i*per : min((i+1)*per, len(data))]
		k := fmt.Sprintf("%s.%d", key, i)
		if len(k) >= p.keyMax {
			return fmt.Errorf("key %q is longer than the server's %d characters", k, p.keyMax-1)
		}
		line := "cmd=put kvsname=" + p.kvs + " key=" + k + " value=" + base64.RawURLEncoding.EncodeToString(piece)
		if _, err := p.request(line, "put_result"); err != nil {
			return fmt.Errorf("put %s: %w", k, err)
		}
	}
	return nil
}

// getValue reads the n bytes stored by putValue under key.
func (p *pmi) getValue(key string, n int) ([]byte, error) {
	per := p.valueBytes()
	out := make([]byte, 0, n)
	for i := 0; i*per < n; i++ {
		k := fmt.Sprintf("%s.%d", key, i)
		kv, err := p.request("cmd=get kvsname="+p.kvs+" key="+k, "get_result")
		if err != nil {
			return nil, fmt.Errorf("get %s: %w", k, err)
		}
		v, err := base64.RawURLEncoding.DecodeString(kv["value"])
		if err != nil {
			return nil, fmt.Errorf("get %s: the value is not ours (%v)", k, err)
		}
		out = append(out, v...)
	}
	if len(out) != n {
		return nil, fmt.Errorf("get %s: %d bytes, expected %d: records must have the same length on every process", key, len(out), n)
	}
	return out, nil
}

// request sends one line and reads the answer, which must be cmd=want
// and, when it carries rc, rc=0.
func (p *pmi) request(line, want string) (map[string]string, error) {
	p.wmu.Lock()
	err := p.conn.writeLine(line)
	p.wmu.Unlock()
	if err != nil {
		return nil, err
	}
	return p.answer(want)
}

func (p *pmi) answer(want string) (map[string]string, error) {
	line, err := p.conn.readLine()
	if err != nil {
		return nil, err
	}
	kv := map[string]string{}
	for _, f := range strings.Fields(line) {
		k, v, _ := strings.Cut(f, "=")
		kv[k] = v
	}
	if kv["cmd"] != want {
		return nil, fmt.Errorf("the server answered %q where cmd=%s was expected", truncate(line, 200), want)
	}
	if rc, ok := kv["rc"]; ok && rc != "0" {
		msg := kv["msg"]
		if msg == "" {
			msg = "no reason given"
		}
		return nil, fmt.Errorf("the server refused it (rc=%s: %s)", rc, msg)
	}
	return kv, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// Abort asks the launcher to stop the job (Hydra kills every process).
func (p *pmi) Abort(code int, msg string) {
	if p.aborted.Swap(true) {
		return
	}
	done := make(chan struct{})
	go func() {
		p.wmu.Lock()
		_ = p.conn.writeLine(fmt.Sprintf("cmd=abort exitcode=%d", code))
		p.wmu.Unlock()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(closeLimit):
	}
}

// Close sends the one finalize of this process unless an MPI library is
// active and will send it (see the type's comment).
func (p *pmi) mpiActive() bool {
	_, active := p.mpi()
	return active
}

func (p *pmi) Close() error {
	p.coll.Lock()
	defer p.coll.Unlock()
	if p.closed {
		return nil
	}
	p.closed = true
	var err error
	switch {
	case p.aborted.Load() || p.broken != nil:
	case p.inherited && p.mpiActive():
		p.logf("bootstrap pmi: MPI is active in this process and finalizes the PMI connection itself")
	default:
		err = p.withDeadline(time.Now().Add(closeLimit), "PMI-1 finalize", func() error {
			_, err := p.request("cmd=finalize", "finalize_ack")
			return err
		})
	}
	if cerr := p.conn.close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("closing the PMI-1 connection: %v", err)
	}
	return nil
}

// fdPMIConn is our duplicate of the inherited PMI_FD. The socket stays
// blocking, as the MPI library sharing it expects (making it non-blocking
// would change it for MPI too), and lines are read exactly: peek, then
// consume up to the newline, so that no byte meant for MPI is taken.
type fdPMIConn struct {
	fd  int
	buf []byte
}

// isSocket says why fd cannot be a PMI connection, nil if it can.
func isSocket(fd int) error {
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return fmt.Errorf("not an open file descriptor: %v", err)
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFSOCK {
		return errors.New("not a socket")
	}
	return nil
}

func newFDConn(fd int) (*fdPMIConn, error) {
	if err := isSocket(fd); err != nil {
		return nil, err
	}
	syscall.ForkLock.RLock()
	dup, err := syscall.Dup(fd)
	if err == nil {
		syscall.CloseOnExec(dup)
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return nil, fmt.Errorf("dup: %v", err)
	}
	return &fdPMIConn{fd: dup, buf: make([]byte, 4096)}, nil
}

func (c *fdPMIConn) writeLine(line string) error {
	b := []byte(line + "\n")
	for len(b) > 0 {
		// MSG_NOSIGNAL: a launcher that closed the socket gives EPIPE,
		// not a signal.
		n, err := syscall.SendmsgN(c.fd, b, nil, nil, syscall.MSG_NOSIGNAL)
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN:
			time.Sleep(20 * time.Microsecond)
			continue
		case err != nil:
			return err
		}
		b = b[n:]
	}
	return nil
}

func (c *fdPMIConn) readLine() (string, error) {
	var line []byte
	for {
		n, _, err := syscall.Recvfrom(c.fd, c.buf, syscall.MSG_PEEK)
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN:
			time.Sleep(20 * time.Microsecond)
			continue
		case err != nil:
			return "", err
		case n == 0:
			return "", io.EOF
		}
		take := n
		nl := bytes.IndexByte(c.buf[:n], '\n')
		if nl >= 0 {
			take = nl + 1
		}
		m, err := syscall.Read(c.fd, c.buf[:take])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return "", err
		}
		line = append(line, c.buf[:m]...)
		if m == take && nl >= 0 {
			return string(line[:len(line)-1]), nil
		}
		if len(line) > maxPMILine {
			return "", fmt.Errorf("an answer longer than %d bytes (not a PMI-1 server?)", maxPMILine)
		}
	}
}

func (c *fdPMIConn) close() error { return syscall.Close(c.fd) }

// tcpPMIConn is our own connection to PMI_PORT.
type tcpPMIConn struct {
	c net.Conn
	r *bufio.Reader
}

func (c *tcpPMIConn) writeLine(line string) error {
	_, err := io.WriteString(c.c, line+"\n")
	return err
}

func (c *tcpPMIConn) readLine() (string, error) {
	var line []byte
	for {
		part, isPrefix, err := c.r.ReadLine()
		if err != nil {
			return "", err
		}
		line = append(line, part...)
		if !isPrefix {
			return string(line), nil
		}
		if len(line) > maxPMILine {
			return "", fmt.Errorf("an answer longer than %d bytes (not a PMI-1 server?)", maxPMILine)
		}
	}
}

func (c *tcpPMIConn) close() error { return c.c.Close() }
