package boot

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakePMI is a PMI-1 "simple" server for n processes, speaking the subset
// Hydra speaks: initack (PMI_PORT), init, get_maxes, get_my_kvsname, put,
// get, barrier_in, finalize, abort.
type fakePMI struct {
	n      int
	valMax int
	keyMax int

	mu        sync.Mutex
	kvs       map[string]string
	waiting   []net.Conn // in the current barrier
	gets      []int      // get requests per rank
	finalized []bool
	aborts    []string
	lines     [][]string // every request, per rank
	refuse    string     // answer puts with rc=-1 and this message
	mute      int        // a rank whose barrier_in is never answered (-1: none)
}

func newFakePMI(n int) *fakePMI {
	return &fakePMI{n: n, valMax: 1024, keyMax: 64, kvs: map[string]string{"PMI_process_mapping": "(vector,(0,1,4))"},
		gets: make([]int, n), finalized: make([]bool, n), lines: make([][]string, n), mute: -1}
}

// serve answers one process on c until it closes. pmiid > -1: the process
// connects to PMI_PORT and must introduce itself first.
func (f *fakePMI) serve(c net.Conn, rank int, viaPort bool) {
	defer c.Close()
	r := bufio.NewReader(c)
	send := func(s string) { _, _ = c.Write([]byte(s + "\n")) }
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		kv := map[string]string{}
		for _, fld := range strings.Fields(line) {
			k, v, _ := strings.Cut(fld, "=")
			kv[k] = v
		}
		f.mu.Lock()
		if rank >= 0 {
			f.lines[rank] = append(f.lines[rank], strings.TrimSpace(line))
		}
		f.mu.Unlock()
		switch kv["cmd"] {
		case "initack":
			rank, _ = strconv.Atoi(kv["pmiid"])
			send("cmd=initack")
			send(fmt.Sprintf("cmd=set size=%d", f.n))
			send(fmt.Sprintf("cmd=set rank=%d", rank))
			send("cmd=set debug=0")
		case "init":
			send("cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0")
		case "get_maxes":
			send(fmt.Sprintf("cmd=maxes kvsname_max=256 keylen_max=%d vallen_max=%d", f.keyMax, f.valMax))
		case "get_my_kvsname":
			send("cmd=my_kvsname kvsname=kvs_test_0")
		case "put":
			f.mu.Lock()
			refuse := f.refuse
			if refuse == "" {
				if len(kv["value"]) > f.valMax-1 || len(kv["key"]) > f.keyMax-1 {
					refuse = "too_long"
				} else {
					f.kvs[kv["key"]] = kv["value"]
				}
			}
			f.mu.Unlock()
			if refuse != "" {
				send("cmd=put_result rc=-1 msg=" + refuse)
			} else {
				send("cmd=put_result rc=0 msg=success")
			}
		case "get":
			f.mu.Lock()
			v, ok := f.kvs[kv["key"]]
			f.gets[rank]++
			f.mu.Unlock()
			if ok {
				send("cmd=get_result rc=0 msg=success value=" + v)
			} else {
				send("cmd=get_result rc=-1 msg=key_" + kv["key"] + "_not_found value=unknown")
			}
		case "barrier_in":
			f.mu.Lock()
			if rank != f.mute {
				f.waiting = append(f.waiting, c)
			}
			if len(f.waiting) == f.n {
				for _, w := range f.waiting {
					_, _ = w.Write([]byte("cmd=barrier_out\n"))
				}
				f.waiting = nil
			}
			f.mu.Unlock()
		case "finalize":
			f.mu.Lock()
			f.finalized[rank] = true
			f.mu.Unlock()
			send("cmd=finalize_ack")
			return
		case "abort":
			f.mu.Lock()
			f.aborts = append(f.aborts, fmt.Sprintf("%d:%s", rank, kv["exitcode"]))
			f.mu.Unlock()
		default:
			send("cmd=unknown")
		}
	}
}

// fdOptions gives rank a socketpair to the server as PMI_FD.
func (f *fakePMI) fdOptions(t *testing.T, rank int) Options {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	require.NoError(t, err)
	file := os.NewFile(uintptr(fds[1]), "pmi-server")
	c, err := net.FileConn(file)
	require.NoError(t, err)
	file.Close()
	go f.serve(c, rank, false)
	t.Cleanup(func() { syscall.Close(fds[0]) })
	return Options{Timeout: 5 * time.Second, Env: map[string]string{
		"PMI_FD": strconv.Itoa(fds[0]), "PMI_RANK": strconv.Itoa(rank), "PMI_SIZE": strconv.Itoa(f.n)}}
}

// listen serves PMI_PORT connections.
func (f *fakePMI) listen(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go f.serve(c, -1, true)
		}
	}()
	return ln.Addr().String()
}

func portOptions(addr string, rank int) Options {
	return Options{Timeout: 5 * time.Second, Env: map[string]string{"PMI_PORT": addr, "PMI_ID": strconv.Itoa(rank)}}
}

func TestPMICollectivesOverFD(t *testing.T) {
	for _, n := range []int{1, 2, 5} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			f := newFakePMI(n)
			opts := make([]Options, n)
			for r := range n {
				opts[r] = f.fdOptions(t, r)
			}
			requireNoErrors(t, eachRank(n, func(rank int) error {
				b, err := Open(opts[rank])
				if err != nil {
					return err
				}
				if b.Method() != "pmi" || b.Rank() != rank || b.Size() != n {
					return fmt.Errorf("%s: rank %d of %d", b.Method(), b.Rank(), b.Size())
				}
				if err := exerciseCollectives(b); err != nil {
					return err
				}
				return b.Close()
			}))
			assert.Equal(t, slicesOf(n, true), f.finalized, "every process sends one finalize")
		})
	}
}

func slicesOf(n int, v bool) []bool {
	out := make([]bool, n)
	for i := range out {
		out[i] = v
	}
	return out
}

func TestPMICollectivesOverPort(t *testing.T) {
	const n = 3
	f := newFakePMI(n)
	addr := f.listen(t)
	requireNoErrors(t, eachRank(n, func(rank int) error {
		b, err := Open(portOptions(addr, rank))
		if err != nil {
			return err
		}
		if b.Rank() != rank || b.Size() != n {
			return fmt.Errorf("rank %d of %d", b.Rank(), b.Size())
		}
		if err := exerciseCollectives(b); err != nil {
			return err
		}
		return b.Close()
	}))
	assert.Equal(t, slicesOf(n, true), f.finalized)
}

// Many ranks and short values: records are split into pieces and packed
// into groups, and each rank asks for far fewer values than there are ranks.
func TestPMIAllGatherPacksRecords(t *testing.T) {
	cases := []struct {
		name          string
		n, valMax     int
		recLen        int
		maxGetsPerRec float64 // gets per rank and round / n, at most
	}{
		{name: "groups of 22", n: 60, valMax: 1024, recLen: 34, maxGetsPerRec: 0.1},
		{name: "groups of 2", n: 9, valMax: 64, recLen: 20, maxGetsPerRec: 1},
		{name: "records in pieces", n: 4, valMax: 32, recLen: 100, maxGetsPerRec: 5},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFakePMI(c.n)
			f.valMax = c.valMax
			opts := make([]Options, c.n)
			for r := range c.n {
				opts[r] = f.fdOptions(t, r)
			}
			record := func(rank, round int) []byte {
				b := make([]byte, c.recLen)
				for i := range b {
					b[i] = byte(rank*7 + i*13 + round)
				}
				return b
			}
			requireNoErrors(t, eachRank(c.n, func(rank int) error {
				b, err := Open(opts[rank])
				if err != nil {
					return err
				}
				defer b.Close()
				for round := range 2 {
					all, err := b.AllGather(record(rank, round))
					if err != nil {
						return err
					}
					for p := range c.n {
						if got := all[p*c.recLen : (p+1)*c.recLen]; string(got) != string(record(p, round)) {
							return fmt.Errorf("round %d: record of rank %d differs", round, p)
						}
					}
				}
				return nil
			}))
			total := 0
			for _, g := range f.gets {
				total += g - 1 // one get of PMI_process_mapping at start-up
			}
			perRankRound := float64(total) / float64(c.n) / 2
			assert.LessOrEqual(t, perRankRound/float64(c.n), c.maxGetsPerRec, "%.1f gets per rank and round for %d ranks", perRankRound, c.n)
		})
	}
}

func TestPMISharedWithMPI(t *testing.T) {
	f := newFakePMI(2)
	opts := []Options{f.fdOptions(t, 0), f.fdOptions(t, 1)}
	// Rank 0's MPI is still active at acp_finalize: it sends the finalize.
	opts[0].MPI = func() (bool, bool) { return true, true }
	opts[1].MPI = func() (bool, bool) { return true, false }
	requireNoErrors(t, eachRank(2, func(rank int) error {
		b, err := Open(opts[rank])
		if err != nil {
			return err
		}
		if err := exerciseCollectives(b); err != nil {
			return err
		}
		return b.Close()
	}))
	assert.Equal(t, []bool{false, true}, f.finalized)
}

func TestPMIPortRefusedWithMPI(t *testing.T) {
	f := newFakePMI(2)
	o := portOptions(f.listen(t), 0)
	o.MPI = func() (bool, bool) { return true, false }
	_, err := Open(o)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "this program contains MPI, which connects to PMI_PORT")
	assert.Contains(t, err.Error(), "without -pmi-port")
}

func TestPMIBadEnvironment(t *testing.T) {
	cases := []struct {
		env map[string]string
		err string
	}{
		{map[string]string{"PMI_FD": "x", "PMI_RANK": "0", "PMI_SIZE": "2"}, `PMI_FD="x" is not a file descriptor`},
		{map[string]string{"PMI_FD": "99999", "PMI_RANK": "0", "PMI_SIZE": "2"}, "PMI_FD=99999: not an open file descriptor"},
		{map[string]string{"PMI_FD": "0"}, "PMI_FD=0 is set but PMI_RANK and PMI_SIZE are not"},
		{map[string]string{"PMI_FD": "0", "PMI_RANK": "2", "PMI_SIZE": "2"}, "PMI_RANK=2 is out of range 0..1"},
		{map[string]string{"PMI_PORT": "127.0.0.1:1"}, "PMI_PORT=127.0.0.1:1 is set but PMI_ID is not"},
		{map[string]string{"PMI_PORT": "127.0.0.1:1", "PMI_ID": "0"}, "cannot reach the PMI-1 server at PMI_PORT=127.0.0.1:1"},
	}
	for _, c := range cases {
		_, err := Open(Options{Timeout: time.Second, Env: c.env})
		require.Error(t, err, "%v", c.env)
		assert.Contains(t, err.Error(), c.err)
	}
	// A file that is not a socket.
	file, err := os.CreateTemp(t.TempDir(), "pmi")
	require.NoError(t, err)
	defer file.Close()
	_, err = Open(Options{Timeout: time.Second, Env: map[string]string{"PMI_FD": strconv.Itoa(int(file.Fd())), "PMI_RANK": "0", "PMI_SIZE": "2"}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not a socket")
}

func TestPMIVersion2IsExplained(t *testing.T) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	require.NoError(t, err)
	defer syscall.Close(fds[0])
	file := os.NewFile(uintptr(fds[1]), "pmi2-server")
	c, err := net.FileConn(file)
	require.NoError(t, err)
	file.Close()
	go func() {
		_, _ = bufio.NewReader(c).ReadString('\n')
		_, _ = c.Write([]byte("cmd=response_to_init pmi_version=2 pmi_subversion=0 rc=0\n"))
		c.Close()
	}()
	_, err = Open(Options{Timeout: 2 * time.Second, Env: map[string]string{"PMI_FD": strconv.Itoa(fds[0]), "PMI_RANK": "0", "PMI_SIZE": "2"}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "speaks PMI version 2")
	assert.Contains(t, err.Error(), "srun --mpi=pmix")
}

func TestPMIRefusalIsReported(t *testing.T) {
	f := newFakePMI(1)
	f.refuse = "kvs_full"
	b, err := Open(f.fdOptions(t, 0))
	require.NoError(t, err)
	_, err = b.AllGather([]byte("x"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "AllGather over PMI-1: put acp1.0.0: the server refused it (rc=-1: kvs_full)")
	_, err = b.AllGather([]byte("x"))
	assert.ErrorContains(t, err, "kvs_full", "a failed collective leaves the bootstrap broken")
	require.NoError(t, b.Close())
}

func TestPMIStartupTimeoutAndAbort(t *testing.T) {
	f := newFakePMI(2)
	f.mute = 1 // rank 1 "never arrives"
	o := f.fdOptions(t, 0)
	o.Timeout = 300 * time.Millisecond
	b, err := Open(o)
	require.NoError(t, err)
	_, err = b.AllGather([]byte("abc"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "AllGather did not complete within 300ms (--acp-peer-timeout)")
	b.Abort(7, "test")
	require.Eventually(t, func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return len(f.aborts) == 1 && f.aborts[0] == "0:7"
	}, 2*time.Second, 10*time.Millisecond)
	require.NoError(t, b.Close())
}

func TestPMIConnectionClosedByLauncher(t *testing.T) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	require.NoError(t, err)
	defer syscall.Close(fds[0])
	// The server answers the start-up, then closes as Hydra does after
	// MPI_Finalize's finalize.
	file := os.NewFile(uintptr(fds[1]), "pmi-server")
	c, err := net.FileConn(file)
	require.NoError(t, err)
	file.Close()
	go func() {
		r := bufio.NewReader(c)
		for _, answer := range []string{"cmd=response_to_init rc=0", "cmd=maxes keylen_max=64 vallen_max=1024", "cmd=my_kvsname kvsname=k"} {
			_, _ = r.ReadString('\n')
			_, _ = c.Write([]byte(answer + "\n"))
		}
		c.Close()
	}()
	b, err := Open(Options{Timeout: 2 * time.Second, Env: map[string]string{
		"PMI_FD": strconv.Itoa(fds[0]), "PMI_RANK": "0", "PMI_SIZE": "2", "MPI_LOCALNRANKS": "2"}})
	require.NoError(t, err)
	err = b.Barrier()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "did MPI_Finalize run before acp_finalize? call acp_finalize first")
	assert.NoError(t, b.Close())
}

func TestPMIOneHost(t *testing.T) {
	f := newFakePMI(2)
	o := f.fdOptions(t, 0)
	o.Env["PMI_SIZE"] = "1"
	b, err := Open(o)
	require.NoError(t, err)
	assert.Equal(t, "", b.LocalIP(), "one host: the transports use loopback")
	require.NoError(t, b.Close())

	for _, c := range []struct {
		v     string
		hosts int
		ok    bool
	}{
		{"(vector,(0,1,4))", 1, true},
		{"(vector,(0,2,2))", 2, true},
		{"(vector,(0,1,2),(1,3,1))", 4, true},
		{"(vector,(0,1))", 0, false},
		{"rubbish", 0, false},
	} {
		hosts, ok := parseProcessMapping(c.v)
		assert.Equal(t, c.ok, ok, c.v)
		assert.Equal(t, c.hosts, hosts, c.v)
	}
}

func TestPMILadderChoice(t *testing.T) {
	ok, why := appliesPMI(Options{Env: map[string]string{"PMI_FD": "5"}})
	assert.True(t, ok)
	assert.Contains(t, why, "PMI_FD=5")
	ok, why = appliesPMI(Options{Env: map[string]string{"PMI_PORT": "h:1"}})
	assert.True(t, ok)
	assert.Contains(t, why, "PMI_PORT=h:1")
	ok, why = appliesPMI(Options{})
	assert.False(t, ok)
	assert.Equal(t, "no PMI_FD or PMI_PORT", why)
}

// pmiChildEnv marks a test process started by mpiexec for TestPMIUnderMpiexec.
const pmiChildEnv = "ACP_BOOT_TEST_PMI_CHILD"

// TestPMIUnderMpiexec runs this test binary as 3 processes under MPICH's
// Hydra mpiexec, with the inherited PMI_FD and with -pmi-port.
func TestPMIUnderMpiexec(t *testing.T) {
	if os.Getenv(pmiChildEnv) != "" {
		t.Skip("inside the job")
	}
	mpiexec, err := exec.LookPath("mpiexec.mpich")
	if err != nil {
		t.Skip("MPICH's mpiexec.mpich is not installed (Debian: mpich)")
	}
	exe, err := os.Executable()
	require.NoError(t, err)
	for _, mode := range [][]string{nil, {"-pmi-port"}} {
		args := append(append([]string{}, mode...), "-n", "3", "-genv", pmiChildEnv, "1",
			exe, "-test.run", "^TestPMIRank$", "-test.v", "-test.count=1")
		cmd := exec.Command(mpiexec, args...)
		cmd.Env = append(os.Environ(), "MPIEXEC_TIMEOUT=60")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "mpiexec %v:\n%s", mode, out)
		assert.Equal(t, 3, strings.Count(string(out), "--- PASS: TestPMIRank"), "mpiexec %v:\n%s", mode, out)
	}
}

// TestPMIRank is one process of TestPMIUnderMpiexec's job.
func TestPMIRank(t *testing.T) {
	if os.Getenv(pmiChildEnv) == "" {
		t.Skip("runs only under TestPMIUnderMpiexec")
	}
	o := Options{NProcs: 1, Env: LauncherEnv(nil), Timeout: 30 * time.Second}
	b, err := Open(o)
	require.NoError(t, err)
	assert.Equal(t, "pmi", b.Method())
	assert.Equal(t, 3, b.Size())
	assert.Equal(t, "", b.LocalIP(), "all ranks on this host: loopback")
	require.NoError(t, exerciseCollectives(b))
	big := make([]byte, 5000) // several values per record
	for i := range big {
		big[i] = byte(i * (b.Rank() + 1))
	}
	all, err := b.AllGather(big)
	require.NoError(t, err)
	for r := range b.Size() {
		assert.Equal(t, byte(4999*(r+1)), all[r*len(big)+4999], "rank %d's record", r)
	}
	require.NoError(t, b.Close())
}
