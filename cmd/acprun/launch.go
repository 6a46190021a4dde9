package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/libacp/libacp/boot"
)

const (
	// killGrace is how long ranks may take to end after SIGTERM (or a
	// forwarded signal) before they get SIGKILL.
	killGrace = 2 * time.Second
	// lostGrace is how long a rank whose rendezvous connection dropped
	// may take to exit, so that its own exit status is what we report.
	lostGrace = time.Second
)

// Exit statuses of acprun itself.
const (
	exitUsage   = 2
	exitTimeout = 124
	exitNoExec  = 127
	exitFailure = 1
)

type eventKind uint8

const (
	rankExited eventKind = iota
	rankAborted
	rankLost
	lostGraceOver
	timeLimit
	killNow
)

type event struct {
	kind   eventKind
	rank   int
	status int            // exit status, 128+signal, or the abort code
	signal syscall.Signal // the signal that killed the rank, if any
	msg    string
}

// launcher runs one job: it starts the ranks, watches them and the
// rendezvous, and decides acprun's exit status. Everything but the hooks
// and the wait goroutines runs in the goroutine of run.
type launcher struct {
	cfg    *config
	srv    *boot.Server
	sigs   chan os.Signal
	cmds   []*exec.Cmd
	exited []bool
	codes  []int  // exit statuses of the exited ranks
	lost   []bool // the rank's rendezvous connection dropped without goodbye
	alive  int
	events chan event // buffered for every event a job can post (4 per rank + 2), so posters never block

	// pendingLost is a rank whose connection dropped and whose exit we
	// await (for up to lostGrace), -1 if none. The others' failures in the
	// meantime are consequences: the rendezvous tells them about the loss.
	pendingLost int

	decided bool // the job's outcome is known; later failures change nothing
	status  int
	killing bool // SIGKILL is scheduled
	// stoppedBy is the signal that stopped the job, 0 if none: acprun
	// ends by it too.
	stoppedBy syscall.Signal
}

// stoppingSignals end the job: acprun passes them on to the ranks, waits
// for them, and ends by the same signal.
var stoppingSignals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP}

// passedSignals are passed on to the ranks and the job goes on, as mpirun
// does, for programs that take them as a request (say, to checkpoint).
var passedSignals = []os.Signal{syscall.SIGUSR1, syscall.SIGUSR2}

func (l *launcher) logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "acprun: "+format+"\n", args...)
}

func (l *launcher) debugf(format string, args ...any) {
	if l.cfg.debug {
		l.logf(format, args...)
	}
}

// launch runs the job and returns how acprun ends.
func launch(c *config) outcome {
	l := &launcher{cfg: c, exited: make([]bool, c.np), codes: make([]int, c.np), lost: make([]bool, c.np),
		events: make(chan event, 4*c.np+2), pendingLost: -1}
	path, err := findProgram(c.argv[0])
	if err != nil {
		l.logf("cannot execute %s: %v", c.argv[0], unwrapExec(err))
		return outcome{status: exitNoExec}
	}

	cpus, threadBind, err := bindCPUs(c)
	if err != nil {
		l.logf("%v", err)
		return outcome{status: exitUsage}
	}

	key := boot.NewKey()
	srv, err := boot.NewServer(c.np, key)
	if err != nil {
		l.logf("%v", err)
		return outcome{status: exitFailure}
	}
	// The hooks only post events: the main loop owns all state.
	srv.Start(boot.Hooks{
		Abort: func(rank, code int, msg string) {
			l.events <- event{kind: rankAborted, rank: rank, status: code, msg: msg}
		},
		Lost: func(rank int, _ error) { l.events <- event{kind: rankLost, rank: rank} },
		Logf: l.logf,
	})
	defer srv.Close()
	l.srv = srv

	l.sigs = make(chan os.Signal, 4)
	signal.Notify(l.sigs, append(slices.Clip(stoppingSignals), passedSignals...)...)
	defer signal.Stop(l.sigs)

	if c.timeout > 0 {
		t := time.AfterFunc(c.timeout, func() { l.events <- event{kind: timeLimit} })
		defer t.Stop()
	}
	env := jobEnv(os.Environ(), c, srv.Addr(), key)
	l.debugf("%d rank(s) of %s; rendezvous at %s; settings: %s", c.np, path, srv.Addr(), describeSettings(env))
	l.startRanks(path, env, cpus, threadBind)
	for l.alive > 0 {
		select {
		case ev := <-l.events:
			l.handle(ev)
		case sig := <-l.sigs:
			l.signalled(sig.(syscall.Signal))
		}
	}
	return outcome{status: l.status, signal: l.stoppedBy}
}

// handlePending handles the events and signals that came, without waiting
// for more.
func (l *launcher) handlePending() {
	for {
		select {
		case ev := <-l.events:
			l.handle(ev)
		case sig := <-l.sigs:
			l.signalled(sig.(syscall.Signal))
		default:
			return
		}
	}
}

// bindText says how a rank was placed, for --debug.
func bindText(cpu int, thread bool) string {
	switch {
	case cpu < 0:
		return "not pinned"
	case thread:
		return fmt.Sprintf("its thread that calls acp_init pinned to CPU %d", cpu)
	}
	return fmt.Sprintf("pinned to CPU %d", cpu)
}

// startRanks starts the ranks in order; if one cannot be started, the
// started ones are killed and acprun exits with 127. Between two ranks it
// handles what happened meanwhile, and starts no more once the job's
// outcome is known: a signal or a failure stops a job of thousands of
// ranks while it starts, not seconds later. cpus: the CPU of each rank
// (nil: none is pinned); thread: the rank pins only its thread that calls
// acp_init to it, where acprun would pin the whole process.
func (l *launcher) startRanks(path string, env []string, cpus []int, thread bool) {
	for r := range l.cfg.np {
		if l.handlePending(); l.decided {
			l.debugf("%d of %d rank(s) started; starting no more", r, l.cfg.np)
			return
		}
		renv := rankEnv(env, r)
		if l.cfg.groups > 0 {
			// Replaces a group of the environment: the first of two wins.
			renv = slices.DeleteFunc(renv, func(kv string) bool { return strings.HasPrefix(kv, "ACP_HOST_GROUP=") })
			renv = append(renv, "ACP_HOST_GROUP=acprun"+strconv.Itoa(r*l.cfg.groups/l.cfg.np))
		}
		cpu := -1
		if cpus != nil {
			cpu = cpus[r]
		}
		pin := cpu // what acprun pins: the process, unless the rank pins its thread
		if thread && cpu >= 0 {
			renv = append(renv, "ACP_BIND_THREAD_CPU="+strconv.Itoa(cpu))
			pin = -1
		}
		cmd := &exec.Cmd{Path: path, Args: l.cfg.argv, Env: renv, Stdout: os.Stdout, Stderr: os.Stderr}
		if r == 0 {
			cmd.Stdin = os.Stdin // the others read /dev/null
		}
		if err := startRank(cmd, pin); errors.Is(err, syscall.EAGAIN) {
			l.logf("%s", forkRefused(r, l.cfg.np))
			l.decide(exitNoExec)
			l.stop(syscall.SIGKILL)
			return
		} else if err != nil {
			l.logf("cannot execute %s: %v", l.cfg.argv[0], execFailure(path, err))
			l.decide(exitNoExec)
			l.stop(syscall.SIGKILL)
			return
		}
		l.debugf("rank %d: pid %d, %s", r, cmd.Process.Pid, bindText(cpu, thread))
		l.cmds = append(l.cmds, cmd)
		l.alive++
		ranksReaper().watch(cmd.Process.Pid, func(ws syscall.WaitStatus) {
			ev := event{kind: rankExited, rank: r, status: ws.ExitStatus()}
			if ws.Signaled() {
				ev.signal, ev.status = ws.Signal(), 128+int(ws.Signal())
			}
			// The pidfd of a reaped process (signals to it fail from now).
			_ = cmd.Process.Release()
			l.events <- ev
		})
	}
}

func (l *launcher) handle(ev event) {
	switch ev.kind {
	case rankExited:
		l.exited[ev.rank], l.codes[ev.rank] = true, ev.status
		l.alive--
		l.srv.Exited(ev.rank) // the others must not wait for it to connect
		l.debugf("rank %d exited with status %d", ev.rank, ev.status)
		if l.pendingLost == ev.rank {
			l.pendingLost = -1
		}
		switch {
		case ev.signal != 0:
			l.fail(ev.rank, ev.status, "rank %d was killed by signal %d (%v)", ev.rank, int(ev.signal), ev.signal)
		case ev.status != 0:
			l.fail(ev.rank, ev.status, "rank %d exited with status %d", ev.rank, ev.status)
		case l.lost[ev.rank]:
			l.failUnfinalized(ev.rank)
		}
	case rankAborted:
		status := ev.status & 0xff
		if status == 0 {
			status = exitFailure
		}
		l.fail(ev.rank, status, "rank %d aborted the job (status %d): %s", ev.rank, status, ev.msg)
	case rankLost:
		// The socket closes as the process ends, so this may come before
		// or after the rank's exit.
		l.lost[ev.rank] = true
		switch {
		case l.exited[ev.rank] && l.codes[ev.rank] == 0:
			l.failUnfinalized(ev.rank)
		case !l.exited[ev.rank] && l.pendingLost < 0:
			l.pendingLost = ev.rank
			time.AfterFunc(lostGrace, func() { l.events <- event{kind: lostGraceOver, rank: ev.rank} })
		}
	case lostGraceOver:
		if !l.exited[ev.rank] {
			l.pendingLost = -1
			l.fail(ev.rank, exitFailure, "rank %d dropped its connection to acprun without acp_finalize", ev.rank)
		}
	case timeLimit:
		if !l.decided {
			l.logf("time limit of %v reached (--timeout); stopping the job", l.cfg.timeout)
			l.decide(exitTimeout)
			l.stop(syscall.SIGTERM)
		}
	case killNow:
		l.stop(syscall.SIGKILL)
	}
}

func (l *launcher) failUnfinalized(rank int) {
	l.fail(rank, exitFailure, "rank %d exited with status 0 but without acp_finalize (its connection to acprun dropped)", rank)
}

// fail reports the first failure of the job in one line and stops the
// other ranks; later failures are consequences and stay quiet.
func (l *launcher) fail(rank, status int, format string, args ...any) {
	if l.decided || (l.pendingLost >= 0 && l.pendingLost != rank) {
		return
	}
	msg := fmt.Sprintf(format, args...)
	if l.alive > 0 {
		msg += "; stopping the other ranks"
	}
	l.logf("%s", msg)
	l.decide(status)
	l.stop(syscall.SIGTERM)
}

func (l *launcher) decide(status int) {
	if !l.decided {
		l.decided, l.status = true, status
	}
}

// signalled passes a signal on to the ranks. SIGINT, SIGTERM or SIGHUP
// stop the job: acprun ends by the same signal once the ranks are gone,
// and a second one kills them at once. SIGUSR1 and SIGUSR2 only reach them.
func (l *launcher) signalled(sig syscall.Signal) {
	switch {
	case slices.Contains(passedSignals, os.Signal(sig)):
		l.debugf("got %v; passing it on to the ranks", sig)
		l.send(sig)
	case l.decided:
		l.stop(syscall.SIGKILL)
	default:
		l.debugf("got %v; forwarding it to the ranks", sig)
		l.decide(128 + int(sig))
		l.stoppedBy = sig
		l.stop(sig)
	}
}

// stop sends sig to every running rank and what it started; unless sig is
// SIGKILL, SIGKILL follows after killGrace.
func (l *launcher) stop(sig syscall.Signal) {
	l.send(sig)
	if sig != syscall.SIGKILL && !l.killing {
		l.killing = true
		time.AfterFunc(killGrace, func() { l.events <- event{kind: killNow} })
	}
}

// send sends sig to every running rank and the processes below it.
func (l *launcher) send(sig syscall.Signal) {
	var running []*os.Process
	var pids []int
	for r, cmd := range l.cmds {
		if !l.exited[r] {
			running = append(running, cmd.Process)
			pids = append(pids, cmd.Process.Pid)
		}
	}
	below := descendants(pids)
	l.debugf("sending %v to rank pids %v and their descendants %v", sig, pids, below)
	for _, p := range running {
		// Process.Signal, not kill(2), for the ranks: it knows when a
		// process was reaped, so it never signals a recycled pid.
		_ = p.Signal(sig)
	}
	for _, p := range below {
		_ = syscall.Kill(p, sig)
	}
}

// describeSettings lists the ACP_* variables the ranks get, without the key.
func describeSettings(env []string) string {
	var out []string
	for _, kv := range env {
		if strings.HasPrefix(kv, "ACP_") && !strings.HasPrefix(kv, "ACP_JOB_KEY=") {
			out = append(out, kv)
		}
	}
	return strings.Join(out, " ")
}
