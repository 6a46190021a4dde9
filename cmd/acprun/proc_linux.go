package main

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// startRank starts a rank so that the kernel kills it if acprun dies
// without cleaning up (SIGKILL, say). The kernel sends that signal when the
// thread that forked the child ends, and the Go runtime may retire
// threads, so every rank is forked from one goroutine locked to a thread
// that lives as long as acprun.
// cpu, when not -1, is the CPU the rank is pinned to.
func startRank(cmd *exec.Cmd, cpu int) error {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	req := startRequest{cmd: cmd, cpu: cpu, done: make(chan error)}
	forkThread().reqs <- req
	return <-req.done
}

type startRequest struct {
	cmd  *exec.Cmd
	cpu  int
	done chan error
}

type forker struct{ reqs chan startRequest }

var forkThread = sync.OnceValue(func() *forker {
	f := &forker{reqs: make(chan startRequest)}
	go func() {
		runtime.LockOSThread() // never unlocked: the thread must not end
		for r := range f.reqs {
			r.done <- startPinned(r.cmd.Start, r.cpu)
		}
	}()
	return f
})

// descendants lists the processes below the given ones (children,
// grandchildren...), so that stopping a rank that is a shell script also
// stops what it runs.
func descendants(roots []int) []int {
	dir, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	for _, e := range dir {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// "pid (comm) state ppid ...": comm may contain spaces and parentheses.
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) < 2 {
			continue
		}
		if pp, err := strconv.Atoi(f[1]); err == nil {
			children[pp] = append(children[pp], p)
		}
	}
	var out []int
	for _, r := range roots {
		out = append(out, children[r]...)
	}
	for i := 0; i < len(out); i++ {
		out = append(out, children[out[i]]...)
	}
	return out
}

// dieBy ends acprun by sig, as a command that does not catch the signal
// ends, so that whoever waits for it sees it killed by sig: a shell stops
// a script on Ctrl-C only when the command it waited for was killed by
// SIGINT, and went on with the next command after acprun's exit status
// 130. acprun no longer catches sig once launch returned, so the default
// action applies; it returns only if sig was ignored when acprun started.
func dieBy(sig syscall.Signal) {
	_ = syscall.Tgkill(os.Getpid(), syscall.Gettid(), sig)
}

// pidMaxFile holds the largest process id plus one: no more processes (and
// threads) than that can exist on this machine at once.
const pidMaxFile = "/proc/sys/kernel/pid_max"

// processLimit is how many processes this user may run here, and the
// limit that says so ("" when nothing is known to bound it).
func processLimit() (int, string) {
	limit, what := 0, ""
	if b, err := os.ReadFile(pidMaxFile); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			limit, what = n, fmt.Sprintf("kernel.pid_max is %d", n)
		}
	}
	var rl unix.Rlimit
	// root is not held to RLIMIT_NPROC.
	if os.Geteuid() != 0 && unix.Getrlimit(unix.RLIMIT_NPROC, &rl) == nil && rl.Cur < uint64(max(limit, 1)) {
		limit, what = int(rl.Cur), fmt.Sprintf("ulimit -u is %d", rl.Cur)
	}
	return limit, what
}

// checkProcessLimit refuses a job that cannot start here: every rank is
// a process on this machine. A typo such as -np 40000 would otherwise start
// processes until the machine had none left.
func checkProcessLimit(np int) error {
	if limit, what := processLimit(); limit > 0 && np >= limit {
		return fmt.Errorf("option -np %d: this machine cannot run so many processes (%s); acprun starts every rank here", np, what)
	}
	return nil
}
