package main

import (
	"fmt"
	"os"
	"os/exec"
	"path"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

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

// reaper waits for the ranks with one thread, blocked in wait4 for any
// child. exec.Cmd.Wait blocks a thread per rank (waitid on the rank's
// pidfd): acprun -np 60 ran 67 threads, and each counts against the
// user's and the control group's process limits, which the ranks need.
// acprun has no children but the ranks.
type reaper struct {
	mu       sync.Mutex
	alive    sync.Cond                        // signalled when unreaped grows
	unreaped int                              // children watched and not yet reaped
	waiting  map[int]func(syscall.WaitStatus) // by pid
	early    map[int]syscall.WaitStatus       // reaped before watch named them
}

var ranksReaper = sync.OnceValue(func() *reaper {
	r := &reaper{waiting: map[int]func(syscall.WaitStatus){}, early: map[int]syscall.WaitStatus{}}
	r.alive.L = &r.mu
	go r.loop()
	return r
})

// watch calls exited with pid's status once the started child pid ended
// (from the reaper's goroutine).
func (r *reaper) watch(pid int, exited func(syscall.WaitStatus)) {
	r.mu.Lock()
	ws, done := r.early[pid]
	if done {
		delete(r.early, pid)
	} else {
		r.waiting[pid] = exited
		r.unreaped++
		r.alive.Signal()
	}
	r.mu.Unlock()
	if done {
		exited(ws)
	}
}

// loop reaps one child per child watched (wait4 with no child to wait for
// would return at once), never blocking watch: a job's ranks may all be
// running at once.
func (r *reaper) loop() {
	for {
		r.mu.Lock()
		for r.unreaped == 0 {
			r.alive.Wait()
		}
		r.mu.Unlock()
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, 0, nil)
		for err == syscall.EINTR {
			pid, err = syscall.Wait4(-1, &ws, 0, nil)
		}
		if err != nil {
			// ECHILD: no child left (cannot happen while one is watched:
			// only this goroutine reaps). Do not spin.
			time.Sleep(10 * time.Millisecond)
			continue
		}
		r.mu.Lock()
		exited, ok := r.waiting[pid]
		if ok {
			delete(r.waiting, pid)
			r.unreaped--
		} else {
			r.early[pid] = ws
		}
		r.mu.Unlock()
		if ok {
			exited(ws)
		}
	}
}

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

// forkRefused says why the kernel may have refused to create rank's
// process with EAGAIN, and what to change: the limits on this user's
// processes and on this job's control group, which count every thread of
// every rank (a rank runs several), and kernel.threads-max.
func forkRefused(rank, np int) string {
	var limits []string
	if _, what := processLimit(); what != "" {
		limits = append(limits, what)
	}
	if dir, max, cur, ok := pidsLimit(); ok {
		limits = append(limits, fmt.Sprintf("the control group %s allows %d tasks (pids.max; %d in use)", dir, max, cur))
	}
	if b, err := os.ReadFile("/proc/sys/kernel/threads-max"); err == nil {
		limits = append(limits, "kernel.threads-max is "+strings.TrimSpace(string(b)))
	}
	return fmt.Sprintf("cannot start rank %d of %d: the system refused another process (resource temporarily unavailable); "+
		"every thread of every rank counts against the limits (%s): lower -np or raise the limit",
		rank, np, strings.Join(limits, "; "))
}

// pidsLimit returns the innermost control group above this process (its
// own included) whose pids.max bounds its tasks, with that bound and the
// tasks counted there now; ok is false when none does or none is readable.
func pidsLimit() (dir string, limit, current int, ok bool) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", 0, 0, false
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		// "ID:CONTROLLERS:PATH": controllers "pids" (v1) or "" (v2).
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		var roots []string
		switch {
		case f[1] == "":
			roots = []string{"/sys/fs/cgroup", "/sys/fs/cgroup/unified"}
		case slices.Contains(strings.Split(f[1], ","), "pids"):
			roots = []string{"/sys/fs/cgroup/pids", "/sys/fs/cgroup/" + f[1]}
		default:
			continue
		}
		for _, root := range roots {
			for p := path.Clean(f[2]); ; p = path.Dir(p) {
				if n, err := readInt(path.Join(root, p, "pids.max")); err == nil {
					cur, _ := readInt(path.Join(root, p, "pids.current"))
					return p, n, cur, true
				}
				if p == "/" {
					break
				}
			}
		}
	}
	return "", 0, 0, false
}

// readInt reads a file holding one decimal number ("max" is not one).
func readInt(file string) (int, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}
