package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// acprunPath is acprun built for these tests; the test binary itself plays
// the ranks (see rank_test.go), chosen by ACPRUN_TEST_ROLE.
var acprunPath string

func TestMain(m *testing.M) {
	if role := os.Getenv(roleVar); role != "" {
		os.Exit(playRank(role))
	}
	dir, err := os.MkdirTemp("", "acprun-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	acprunPath = filepath.Join(dir, "acprun")
	build := exec.Command("go", "build", "-o", acprunPath, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building acprun:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// result is one acprun run.
type result struct {
	status  int
	stdout  string
	stderr  string
	elapsed time.Duration
}

// acprun runs acprun with args; env entries are added to the test's own
// environment. A run longer than limit fails the test.
func acprun(t *testing.T, limit time.Duration, env []string, stdin string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, acprunPath, args...)
	// Ranks played by this (possibly race-enabled) binary should not sit
	// out the race detector's one-second pause at exit.
	cmd.Env = append(append(os.Environ(), "GORACE=atexit_sleep_ms=0"), env...)
	cmd.WaitDelay = time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Stdin = strings.NewReader(stdin)
	start := time.Now()
	err := cmd.Run()
	r := result{status: cmd.ProcessState.ExitCode(), stdout: stdout.String(), stderr: stderr.String(), elapsed: time.Since(start)}
	require.NoError(t, ctx.Err(), "acprun %v did not finish within %v\nstdout:\n%s\nstderr:\n%s", args, limit, r.stdout, r.stderr)
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatalf("acprun %v: %v", args, err)
	}
	return r
}

func TestRunsEveryRank(t *testing.T) {
	r := acprun(t, 10*time.Second, nil, "", "-np", "4", "sh", "-c", `echo "rank $ACP_MYRANK of $ACP_NPROCS: $*"`, "sh", "a b", "c")
	require.Equal(t, 0, r.status, r.stderr)
	for rank := range 4 {
		assert.Contains(t, r.stdout, fmt.Sprintf("rank %d of 4: a b c\n", rank))
	}
	assert.Empty(t, r.stderr)
}

func TestExitStatusOfFirstFailure(t *testing.T) {
	r := acprun(t, 10*time.Second, nil, "", "-np", "3", "sh", "-c", `if [ "$ACP_MYRANK" = 1 ]; then exit 3; fi; exec sleep 30`)
	assert.Equal(t, 3, r.status)
	assert.Equal(t, "acprun: rank 1 exited with status 3; stopping the other ranks\n", r.stderr)
	assert.Less(t, r.elapsed, 5*time.Second, "the sleeping ranks must be stopped at once")
}

func TestRankKilledBySignal(t *testing.T) {
	r := acprun(t, 10*time.Second, nil, "", "-np", "2", "sh", "-c", `if [ "$ACP_MYRANK" = 0 ]; then kill -SEGV $$; fi; exec sleep 30`)
	assert.Equal(t, 128+11, r.status)
	assert.Contains(t, r.stderr, "rank 0 was killed by signal 11 (segmentation fault)")
}

func TestStubbornRankIsKilled(t *testing.T) {
	// Rank 0 and the sleep it runs ignore SIGTERM: SIGKILL follows. Rank 1
	// fails only once rank 0 ignores it: failing at once, it once stopped
	// a rank 0 whose shell had not yet set its trap (32 ms, in a loaded CI
	// run).
	ready := filepath.Join(t.TempDir(), "rank0-ignores-term")
	r := acprun(t, 15*time.Second, nil, "", "-np", "2", "sh", "-c",
		`trap "" TERM; if [ "$ACP_MYRANK" = 1 ]; then while [ ! -e "$1" ]; do sleep 0.01; done; exit 5; fi; touch "$1"; sleep 30`, "sh", ready)
	assert.Equal(t, 5, r.status)
	assert.GreaterOrEqual(t, r.elapsed, killGrace)
	assert.Less(t, r.elapsed, killGrace+4*time.Second)
}

func TestTimeout(t *testing.T) {
	r := acprun(t, 10*time.Second, nil, "", "--timeout", "0.5", "-np", "2", "sh", "-c", "exec sleep 30")
	assert.Equal(t, 124, r.status)
	assert.Contains(t, r.stderr, "time limit of 500ms reached (--timeout); stopping the job")
	assert.Less(t, r.elapsed, 4*time.Second)
}

func TestCannotExecute(t *testing.T) {
	r := acprun(t, 10*time.Second, nil, "", "-np", "2", "/no/such/program")
	assert.Equal(t, 127, r.status)
	assert.Equal(t, "acprun: cannot execute /no/such/program: no such file or directory\n", r.stderr)

	notExec := filepath.Join(t.TempDir(), "data")
	require.NoError(t, os.WriteFile(notExec, []byte("x"), 0o644))
	r = acprun(t, 10*time.Second, nil, "", notExec)
	assert.Equal(t, 127, r.status)
	assert.Contains(t, r.stderr, "permission denied")
}

// acprun waits for its ranks with one thread: -np 60 ran 67 threads when
// each rank had a thread blocked waiting for it, and every thread counts
// against the process limits the ranks need.
func TestThreadsDoNotGrowWithRanks(t *testing.T) {
	const np = 60
	cmd := exec.Command(acprunPath, "-np", strconv.Itoa(np), "/bin/sleep", "3")
	require.NoError(t, cmd.Start())
	defer func() { _ = cmd.Wait() }()
	children := func() int {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", cmd.Process.Pid, cmd.Process.Pid))
		n := len(strings.Fields(string(b)))
		// Children forked by other threads of acprun are listed there.
		tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", cmd.Process.Pid))
		for _, task := range tasks {
			if task.Name() != strconv.Itoa(cmd.Process.Pid) {
				b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", cmd.Process.Pid, task.Name()))
				n += len(strings.Fields(string(b)))
			}
		}
		return n
	}
	require.Eventually(t, func() bool { return children() == np }, 2*time.Second, 10*time.Millisecond, "acprun did not start %d ranks", np)
	time.Sleep(200 * time.Millisecond) // the waits have begun
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", cmd.Process.Pid))
	require.NoError(t, err)
	assert.Less(t, len(tasks), 20, "acprun runs %d threads for %d ranks", len(tasks), np)
}

// A job that the process limits cut short while it starts (here a control
// group allowing 25 tasks, -np 40) is stopped with a message that names
// the rank and the limits, not "cannot execute" the program (which was
// there). Needs root and a pids control group (v1 or v2) to make one in.
func TestForkRefusedNamesTheLimits(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make a control group")
	}
	var cg string
	for _, root := range []string{"/sys/fs/cgroup/pids", "/sys/fs/cgroup", "/sys/fs/cgroup/unified"} {
		dir := filepath.Join(root, fmt.Sprintf("acprun-test-%d", os.Getpid()))
		if os.Mkdir(dir, 0o755) != nil {
			continue
		}
		if os.WriteFile(filepath.Join(dir, "pids.max"), []byte("25"), 0o644) == nil {
			cg = dir
			break
		}
		_ = os.Remove(dir)
	}
	if cg == "" {
		t.Skip("no pids control group to make one in (/sys/fs/cgroup/pids, /sys/fs/cgroup)")
	}
	defer func() {
		// The job's processes are gone once acprun returned; the group
		// may take a moment to notice.
		for i := 0; i < 50 && os.Remove(cg) != nil; i++ {
			time.Sleep(20 * time.Millisecond)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", `echo $$ >"$1/cgroup.procs" && exec "$2" -np 40 /bin/sleep 5`, "sh", cg, acprunPath)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "stderr: %s", stderr.String())
	assert.Equal(t, 127, exit.ExitCode())
	assert.Regexp(t, `^acprun: cannot start rank [0-9]+ of 40: the system refused another process .*the control group /\S*acprun-test-[0-9]+ allows 25 tasks \(pids\.max; [0-9]+ in use\).*: lower -np or raise the limit\n$`, stderr.String())
}

// The kernel says "no such file or directory" of a script whose #! line
// names a missing interpreter, and of a program built for a system whose
// dynamic loader this one lacks: acprun names what is missing.
func TestMissingInterpreterIsNamed(t *testing.T) {
	script := filepath.Join(t.TempDir(), "script")
	require.NoError(t, os.WriteFile(script, []byte("#!/no/such/interpreter -e\necho hi\n"), 0o755))
	r := acprun(t, 10*time.Second, nil, "", "-np", "2", script)
	assert.Equal(t, 127, r.status)
	assert.Equal(t, "acprun: cannot execute "+script+": its interpreter /no/such/interpreter, named on its #! line, was not found\n", r.stderr)

	b, err := os.ReadFile("/bin/true")
	require.NoError(t, err)
	loader := []byte("/lib64/ld-linux-x86-64.so.2")
	i := bytes.Index(b, loader)
	if i < 0 {
		t.Skip("/bin/true names no /lib64/ld-linux-x86-64.so.2 to replace")
	}
	copy(b[i:], "/lib64/ld-nowhere-x86-64.so")
	foreign := filepath.Join(t.TempDir(), "foreign")
	require.NoError(t, os.WriteFile(foreign, b, 0o755))
	r = acprun(t, 10*time.Second, nil, "", foreign)
	assert.Equal(t, 127, r.status)
	assert.Equal(t, "acprun: cannot execute "+foreign+": its dynamic loader /lib64/ld-nowhere-x86-64.so was not found (was it built for another system?)\n", r.stderr)
}

// A program found through a relative entry of $PATH runs, as in the shell.
func TestProgramInRelativePathEntry(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "acprun-test-prog"), []byte("#!/bin/sh\necho \"rank $ACP_MYRANK ran\"\n"), 0o755))
	cwd, err := os.Getwd()
	require.NoError(t, err)
	rel, err := filepath.Rel(cwd, dir)
	require.NoError(t, err)
	r := acprun(t, 10*time.Second, []string{"PATH=" + rel + ":" + os.Getenv("PATH")}, "", "-np", "2", "acprun-test-prog")
	require.Equal(t, 0, r.status, r.stderr)
	assert.Contains(t, r.stdout, "rank 1 ran\n")
}

func TestCommandLineErrors(t *testing.T) {
	r := acprun(t, 10*time.Second, nil, "", "-np", "2", "--acp-nosuch", "1", "true")
	assert.Equal(t, 2, r.status)
	assert.Contains(t, r.stderr, "acprun: unknown option --acp-nosuch")

	r = acprun(t, 10*time.Second, nil, "", "-v")
	assert.Equal(t, 0, r.status)
	assert.Contains(t, r.stdout, "acprun (libacp)")

	r = acprun(t, 10*time.Second, nil, "", "-h")
	assert.Equal(t, 0, r.status)
	assert.Contains(t, r.stdout, "Usage: acprun -np N")
}

func TestStdinGoesToRankZero(t *testing.T) {
	r := acprun(t, 10*time.Second, nil, "hello\n", "-np", "3", "sh", "-c", `read line; echo "rank $ACP_MYRANK read '$line'"`)
	assert.Contains(t, r.stdout, "rank 0 read 'hello'\n")
	assert.Contains(t, r.stdout, "rank 1 read ''\n")
	assert.Contains(t, r.stdout, "rank 2 read ''\n")
}

func TestDebugOutput(t *testing.T) {
	r := acprun(t, 10*time.Second, nil, "", "-debug", "-np", "2", "true")
	require.Equal(t, 0, r.status)
	assert.Contains(t, r.stderr, "acprun: 2 rank(s) of")
	assert.Contains(t, r.stderr, "acprun: rank 1: pid ")
	assert.NotContains(t, r.stderr, "ACP_JOB_KEY")
}

// job is an acprun run in the background whose ranks' output lines the
// test reads one by one.
type job struct {
	t      *testing.T
	cmd    *exec.Cmd
	lines  chan string
	stderr bytes.Buffer
}

// startJob starts acprun -np np sh -c script and waits until every rank
// printed "ready".
func startJob(t *testing.T, np int, script string) *job {
	t.Helper()
	j := &job{t: t, cmd: exec.Command(acprunPath, "-np", strconv.Itoa(np), "sh", "-c", script), lines: make(chan string, 16)}
	out, err := j.cmd.StdoutPipe()
	require.NoError(t, err)
	j.cmd.Stderr = &j.stderr
	require.NoError(t, j.cmd.Start())
	done := make(chan struct{})
	t.Cleanup(func() {
		_ = j.cmd.Process.Kill()
		<-done
	})
	go func() {
		defer close(done)
		s := bufio.NewScanner(out)
		for s.Scan() {
			j.lines <- s.Text()
		}
		close(j.lines)
	}()
	for range np {
		require.Equal(t, "ready", j.next())
	}
	return j
}

func (j *job) next() string {
	j.t.Helper()
	select {
	case l := <-j.lines:
		return l
	case <-time.After(5 * time.Second):
		j.t.Fatal("no output from the ranks")
	}
	return ""
}

// wait waits for acprun, at most limit.
func (j *job) wait(limit time.Duration) *os.ProcessState {
	j.t.Helper()
	t := time.AfterFunc(limit, func() { _ = j.cmd.Process.Kill() })
	defer t.Stop()
	_ = j.cmd.Wait()
	return j.cmd.ProcessState
}

func TestSIGINTIsForwarded(t *testing.T) {
	j := startJob(t, 3, `trap 'echo "rank $ACP_MYRANK got INT"; exit 0' INT; echo ready; while :; do sleep 0.05; done`)
	require.NoError(t, j.cmd.Process.Signal(syscall.SIGINT))
	var got []string
	for range 3 {
		got = append(got, j.next())
	}
	assert.ElementsMatch(t, []string{"rank 0 got INT", "rank 1 got INT", "rank 2 got INT"}, got)
	ws := j.wait(10 * time.Second).Sys().(syscall.WaitStatus)
	assert.True(t, ws.Signaled() && ws.Signal() == syscall.SIGINT, "acprun must end by SIGINT, not %v (%s)", ws, j.stderr.String())
}

// A shell goes on with a script after a command that exited with status
// 130 on Ctrl-C (it takes the command to have handled SIGINT), and stops it
// only after a command killed by SIGINT: acprun ends by the signal that
// stopped the job.
func TestEndsByTheSignalThatStoppedTheJob(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP} {
		t.Run(sig.String(), func(t *testing.T) {
			j := startJob(t, 2, `echo ready; exec sleep 30`)
			start := time.Now()
			require.NoError(t, j.cmd.Process.Signal(sig))
			ws := j.wait(10 * time.Second).Sys().(syscall.WaitStatus)
			assert.True(t, ws.Signaled(), "acprun exited with status %d instead of ending by %v (%s)", ws.ExitStatus(), sig, j.stderr.String())
			assert.Equal(t, sig, ws.Signal())
			assert.Less(t, time.Since(start), killGrace, "the ranks end by the signal at once")
		})
	}
}

// A signal that comes while acprun starts a large job stops it there:
// the ranks not started yet never start.
func TestSignalWhileStartingStopsStarting(t *testing.T) {
	const np = 400
	cmd := exec.Command(acprunPath, "-np", strconv.Itoa(np), "sh", "-c", `echo started; exec sleep 30`)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	s := bufio.NewScanner(out)
	require.True(t, s.Scan(), "the first rank starts")
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	started := 1
	for s.Scan() {
		started++
	}
	_ = cmd.Wait()
	ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
	assert.Equal(t, syscall.SIGTERM, ws.Signal())
	assert.Less(t, started, np/2, "ranks went on starting after SIGTERM")
}

func TestUSR1AndUSR2ArePassedOn(t *testing.T) {
	j := startJob(t, 2, `trap 'echo "rank $ACP_MYRANK got USR1"' USR1; trap 'echo "rank $ACP_MYRANK got USR2"; exit 0' USR2; echo ready; while :; do sleep 0.05; done`)
	require.NoError(t, j.cmd.Process.Signal(syscall.SIGUSR1))
	assert.ElementsMatch(t, []string{"rank 0 got USR1", "rank 1 got USR1"}, []string{j.next(), j.next()}, "the job goes on")
	require.NoError(t, j.cmd.Process.Signal(syscall.SIGUSR2))
	assert.ElementsMatch(t, []string{"rank 0 got USR2", "rank 1 got USR2"}, []string{j.next(), j.next()})
	st := j.wait(10 * time.Second)
	assert.Equal(t, 0, st.ExitCode(), "%v: %s", st, j.stderr.String())
}

func TestRankEnvironment(t *testing.T) {
	r := acprun(t, 20*time.Second, []string{roleVar + "=env", "ACP_SIZE_SMEM_DL=65536", "ACP_MYRANK=42"}, "",
		"-np", "2", "-smemsize", "2048", "--acp-verbose", "2", os.Args[0], "user-arg", "--acp-looks-like-ours")
	require.Equal(t, 0, r.status, r.stderr)
	lines := map[int][]string{}
	for l := range strings.Lines(r.stdout) {
		var rank int
		var kv string
		if _, err := fmt.Sscanf(l, "%d %s", &rank, &kv); err == nil {
			lines[rank] = append(lines[rank], kv)
		}
	}
	require.Len(t, lines, 2, r.stdout)
	var keys []string
	for rank, env := range lines {
		m := map[string]string{}
		for _, kv := range env {
			k, v, _ := strings.Cut(kv, "=")
			m[k] = v
		}
		assert.Equal(t, fmt.Sprint(rank), m["ACP_MYRANK"], "the inherited ACP_MYRANK must be replaced")
		assert.Equal(t, "2", m["ACP_NPROCS"])
		assert.Equal(t, "2048", m["ACP_SIZE_SMEM"])
		assert.Equal(t, "size-smem=1024,size-smem-cl=1024,size-smem-dl=1024", m["ACP_LAUNCHER_DEFAULTS"])
		assert.Equal(t, "65536", m["ACP_SIZE_SMEM_DL"])
		assert.Equal(t, "2", m["ACP_VERBOSE"])
		assert.Regexp(t, `^127\.0\.0\.1:\d+$`, m["ACP_BOOTSTRAP_ADDR"])
		assert.Regexp(t, `^[0-9a-f]{64}$`, m["ACP_JOB_KEY"])
		assert.Equal(t, "user-arg|--acp-looks-like-ours", m["ARGS"], "argv must stay as the user wrote it")
		assert.Equal(t, "no", m["KEY_ON_A_COMMAND_LINE"])
		keys = append(keys, m["ACP_JOB_KEY"])
	}
	assert.Equal(t, keys[0], keys[1], "one key per job")
}

// --host-groups K gives the ranks K host groups in blocks, replacing a
// group of the environment.
func TestHostGroups(t *testing.T) {
	r := acprun(t, 10*time.Second, []string{"ACP_HOST_GROUP=mine"}, "", "-np", "5", "--host-groups", "2",
		"sh", "-c", `echo "$ACP_MYRANK $ACP_HOST_GROUP"`)
	require.Equal(t, 0, r.status, r.stderr)
	want := map[string]string{"0": "acprun0", "1": "acprun0", "2": "acprun0", "3": "acprun1", "4": "acprun1"}
	lines := map[string]string{}
	for l := range strings.Lines(r.stdout) {
		rank, group, _ := strings.Cut(strings.TrimSpace(l), " ")
		lines[rank] = group
	}
	assert.Equal(t, want, lines, r.stdout)
}

func TestRendezvousUnderAcprun(t *testing.T) {
	for _, n := range []int{1, 3, 8} {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			r := acprun(t, 30*time.Second, []string{roleVar + "=allgather"}, "", "-np", strconv.Itoa(n), os.Args[0])
			require.Equal(t, 0, r.status, r.stderr)
			assert.Equal(t, strings.Repeat("ok\n", n), r.stdout)
			assert.Empty(t, r.stderr)
		})
	}
}

func TestAbortStopsTheJob(t *testing.T) {
	r := acprun(t, 20*time.Second, []string{roleVar + "=abort"}, "", "-np", "3", os.Args[0])
	assert.Equal(t, 7, r.status)
	assert.Contains(t, r.stderr, "acprun: rank 1 aborted the job (status 7): out of cheese; stopping the other ranks\n")
	assert.Less(t, r.elapsed, 10*time.Second)
}

func TestVanishedRankStopsTheJob(t *testing.T) {
	// Rank 2 exits with status 0 without closing its bootstrap.
	r := acprun(t, 20*time.Second, []string{roleVar + "=vanish"}, "", "-np", "3", os.Args[0])
	assert.Equal(t, 1, r.status, r.stderr)
	assert.Contains(t, r.stderr, "acprun: rank 2 exited with status 0 but without acp_finalize")
	assert.Less(t, r.elapsed, 10*time.Second)
}

func TestRankThatEndsBeforeItJoinsStopsTheJob(t *testing.T) {
	// Rank 1 exits with status 0 before it connects; the others wait in
	// the start-up exchange, which gives up after 20 s.
	r := acprun(t, 30*time.Second, []string{roleVar + "=early"}, "", "-np", "3", os.Args[0])
	assert.Equal(t, 1, r.status, r.stderr)
	assert.Contains(t, r.stderr, "AllGather cannot complete: rank 1 (exited before it connected)")
	assert.Less(t, r.elapsed, 10*time.Second)
}

// perRank runs `sh -c echo "$ACP_MYRANK <value>"` as every rank of an
// acprun job with args and returns each rank's value.
func perRank(t *testing.T, value string, args ...string) map[string]string {
	t.Helper()
	args = append(args, "sh", "-c", `echo "$ACP_MYRANK `+value+`"`)
	r := acprun(t, 10*time.Second, nil, "", args...)
	require.Equal(t, 0, r.status, r.stderr)
	out := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		rank, v, _ := strings.Cut(line, " ")
		out[rank] = v
	}
	return out
}

// cpusOf lists "rank: Cpus_allowed_list" of each rank of an acprun run.
func cpusOf(t *testing.T, args ...string) map[string]string {
	t.Helper()
	return perRank(t, "$(grep Cpus_allowed_list /proc/self/status | cut -f2)", args...)
}

// threadCPUOf lists "rank: ACP_BIND_THREAD_CPU" ("-" when unset) of each
// rank of an acprun run.
func threadCPUOf(t *testing.T, args ...string) map[string]string {
	t.Helper()
	return perRank(t, "${ACP_BIND_THREAD_CPU:--}", args...)
}

func TestBindsRanksToCPUs(t *testing.T) {
	var set unix.CPUSet
	require.NoError(t, unix.SchedGetaffinity(0, &set))
	var cpus []string
	for c := 0; len(cpus) < set.Count(); c++ {
		if set.IsSet(c) {
			cpus = append(cpus, fmt.Sprint(c))
		}
	}
	all := cpusOf(t, "-np", "1", "--acp-bind", "none")["0"]
	// core: rank i on the i-th CPU, round robin.
	got := cpusOf(t, "-np", fmt.Sprint(len(cpus)+1), "--acp-bind", "core")
	for r := 0; r <= len(cpus); r++ {
		assert.Equal(t, cpus[r%len(cpus)], got[fmt.Sprint(r)], "rank %d", r)
	}
	// auto: pinned while the ranks fit, not beyond.
	assert.Equal(t, cpus[0], cpusOf(t, "-np", "1")["0"])
	assert.Equal(t, all, cpusOf(t, "-np", fmt.Sprint(len(cpus)+1))["0"])
	assert.Equal(t, all, cpusOf(t, "-np", "1", "--acp-bind", "none")["0"])
	// auto over UDP alone: the process is not pinned (its progress
	// goroutine receives for the target and needs a CPU beside the
	// rank's), only the thread that calls acp_init; over ib, whose
	// adapter writes, pinned; core always pins.
	if len(cpus) > 1 {
		assert.Equal(t, all, cpusOf(t, "-np", "1", "--acp-transports", "udp")["0"])
		assert.Equal(t, all, cpusOf(t, "-np", "1", "-net", "udp")["0"])
		assert.Equal(t, map[string]string{"0": cpus[0]}, threadCPUOf(t, "-np", "1", "--acp-transports", "udp"))
		assert.Equal(t, cpus[0], cpusOf(t, "-np", "1", "--acp-transports", "shm,udp")["0"])
		assert.Equal(t, cpus[0], cpusOf(t, "-np", "1", "--acp-transports", "ib")["0"])
		assert.Equal(t, cpus[0], cpusOf(t, "-np", "1", "--acp-transports", "udp", "--acp-bind", "core")["0"])
	}
	// core pins the process; thread pins no process and tells each rank
	// its thread's CPU instead (the library pins the thread that calls
	// acp_init: tests/c/t_bind.c).
	assert.Equal(t, map[string]string{"0": "-", "1": "-"}, threadCPUOf(t, "-np", "2"))
	assert.Equal(t, map[string]string{"0": "-"}, threadCPUOf(t, "-np", "1", "--acp-bind", "core"))
	assert.Equal(t, all, cpusOf(t, "-np", "1", "--acp-bind", "thread")["0"])
	got = threadCPUOf(t, "-np", fmt.Sprint(len(cpus)), "--acp-bind", "thread")
	for r := range cpus {
		assert.Equal(t, cpus[r], got[fmt.Sprint(r)], "rank %d", r)
	}
	assert.Equal(t, "-", threadCPUOf(t, "-np", fmt.Sprint(len(cpus)+1), "--acp-transports", "udp")["0"])
	// An enclosing job's value does not leak into this job's ranks.
	nested := acprun(t, 10*time.Second, []string{"ACP_BIND_THREAD_CPU=7"}, "", "-np", "1", "--acp-bind", "core",
		"sh", "-c", `echo "${ACP_BIND_THREAD_CPU:--}"`)
	require.Equal(t, 0, nested.status, nested.stderr)
	assert.Equal(t, "-\n", nested.stdout)
	r := acprun(t, 10*time.Second, []string{"ACP_BIND=socket"}, "", "-np", "1", "true")
	assert.Equal(t, exitUsage, r.status)
	assert.Contains(t, r.stderr, "not one of auto, core, thread, none")
}
