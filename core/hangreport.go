package core

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"runtime"
	"slices"
	"sync"
	"time"
)

// A hang report: when a wait has lasted --acp-hang-report, the waiting
// thread prints, once for that wait, what the library knows of its state
// (every reporter's lines) and the stacks of the library's goroutines. A
// job that hangs under a time limit then says where each rank stood
// before it is killed; acprun --timeout S sets S/2 unless the user chose.

// HangWatch follows one wait for the report; the zero value starts it.
// While either report is on, a wait that slept is listed among the waits
// in progress (both reports print them) until EndWait.
type HangWatch struct {
	start    time.Time
	reported bool
	id       uint64 // its entry among the waits in progress, 0: none
}

// StateReporter is what a transport may implement to add its lines to the
// hang report: its connections and the work each holds. It must not block
// on a lock a hung thread may hold (TryLock, or say it is held).
type StateReporter interface {
	ReportState(w io.Writer)
}

// ReportLocked runs report with mu held, or writes that another thread
// holds mu: a hang report must never wait for a lock a hung thread holds.
func ReportLocked(w io.Writer, mu *sync.Mutex, report func()) {
	if !mu.TryLock() {
		fmt.Fprintln(w, "  the endpoint's lock is held by another thread")
		return
	}
	defer mu.Unlock()
	report()
}

// reporters are the state reporters added with AddStateReporter.
type reporters struct {
	mu   sync.Mutex
	list []stateReporter
	next int
	// waits in progress that slept, by HangWatch id (guarded by mu); an
	// entry is a copy, so that a wait's HangWatch stays on its stack
	waits    map[uint64]waitInProgress
	nextWait uint64
}

// reportPrinting lets one report at a time print in a process: two
// waiting threads, or the state reports of engines sharing a standard
// error (tests), would interleave their lines.
var reportPrinting sync.Mutex

type waitInProgress struct {
	what  string
	since time.Time
}

type stateReporter struct {
	name   string
	report func(w io.Writer)
	id     int
}

// AddStateReporter adds a part of the hang report: report writes lines
// describing what its layer waits for (channels, segmented buffers).
// remove takes it out again (the layer stopped).
func (e *Engine) AddStateReporter(name string, report func(w io.Writer)) (remove func()) {
	e.reports.mu.Lock()
	defer e.reports.mu.Unlock()
	e.reports.next++
	id := e.reports.next
	e.reports.list = append(e.reports.list, stateReporter{name, report, id})
	return func() {
		e.reports.mu.Lock()
		defer e.reports.mu.Unlock()
		e.reports.list = slices.DeleteFunc(e.reports.list, func(r stateReporter) bool { return r.id == id })
	}
}

// WatchHang is called by a wait between its sleeps: it starts the watch on
// its first call and prints the report once the wait has lasted the
// hang-report setting (nothing when that is 0).
func (e *Engine) WatchHang(h *HangWatch, what string) {
	if (e.hangAfter <= 0 && e.stateReport == nil) || h.reported {
		return
	}
	now := time.Now()
	if h.start.IsZero() {
		h.start = now
		rs := &e.reports
		rs.mu.Lock()
		if rs.waits == nil {
			rs.waits = map[uint64]waitInProgress{}
		}
		rs.nextWait++
		h.id = rs.nextWait
		rs.waits[h.id] = waitInProgress{what, now}
		rs.mu.Unlock()
		return
	}
	if waited := now.Sub(h.start); e.hangAfter > 0 && waited >= e.hangAfter {
		h.reported = true
		e.reportHang(what, waited)
	}
}

// EndWait takes the wait h followed out of the waits in progress.
func (e *Engine) EndWait(h *HangWatch) {
	if h.id == 0 {
		return
	}
	e.reports.mu.Lock()
	delete(e.reports.waits, h.id)
	e.reports.mu.Unlock()
	h.id = 0
}

// reportHang writes the report to the engine's standard error.
func (e *Engine) reportHang(what string, waited time.Duration) {
	e.reportState("hang report", fmt.Sprintf("%s has waited %v (--acp-hang-report / ACP_HANG_REPORT %v); the library's state follows",
		what, waited.Round(time.Millisecond), e.hangAfter))
}

// A state report: the hang report's lines, printed once when the process
// has run --acp-state-report-at since acp_init, whether or not a wait
// lasted long. A job that is slow rather than stuck (every wait short,
// the whole too long) otherwise reaches its launcher's time limit without
// a word; acprun --timeout S sets 9/10 of S.

// startStateReport arms the state report (nothing when d is 0). The
// report runs on a timer's goroutine, never in a signal handler.
func (e *Engine) startStateReport(d time.Duration) {
	if d <= 0 {
		return
	}
	e.stateReport = time.AfterFunc(d, func() {
		e.reportMu.Lock()
		defer e.reportMu.Unlock()
		if e.reportStopped {
			return
		}
		e.reportState("state report", fmt.Sprintf("this process has run %v since acp_init (--acp-state-report-at / ACP_STATE_REPORT_AT); the library's state follows", d))
	})
}

// stopStateReport disarms it: the library is ending. A report under way
// finishes first (the lock), since the transports it reads close next.
func (e *Engine) stopStateReport() {
	if e.stateReport == nil {
		return
	}
	e.stateReport.Stop()
	e.reportMu.Lock()
	e.reportStopped = true
	e.reportMu.Unlock()
}

// reportState writes a report headed by head, every line prefixed with
// the rank and kind, to the engine's standard error.
func (e *Engine) reportState(kind, head string) {
	var b bytes.Buffer
	fmt.Fprintln(&b, head)
	issued, done := e.q.issued.Load(), e.q.done.Load()
	fmt.Fprintf(&b, "operations: %d issued, %d complete, %d in flight; %d completed with an error\n",
		issued, done, issued-done, e.errs.Load())
	e.reports.mu.Lock()
	waits := slices.Collect(maps.Values(e.reports.waits))
	e.reports.mu.Unlock()
	slices.SortFunc(waits, func(a, b waitInProgress) int { return a.since.Compare(b.since) })
	fmt.Fprintf(&b, "waits in progress (that slept): %d\n", len(waits))
	now := time.Now()
	for _, w := range waits {
		fmt.Fprintf(&b, "  %s, for %v\n", w.what, now.Sub(w.since).Round(time.Millisecond))
	}
	for _, tr := range e.trs {
		if r, ok := tr.(StateReporter); ok {
			fmt.Fprintf(&b, "transport %s:\n", tr.Name())
			r.ReportState(&b)
		}
	}
	e.reports.mu.Lock()
	list := append([]stateReporter(nil), e.reports.list...)
	e.reports.mu.Unlock()
	for _, r := range list {
		fmt.Fprintf(&b, "%s:\n", r.name)
		r.report(&b)
	}
	stacks := make([]byte, 1<<20)
	stacks = stacks[:runtime.Stack(stacks, true)]
	fmt.Fprintf(&b, "the library's goroutines:\n%s", stacks)
	reportPrinting.Lock()
	defer reportPrinting.Unlock()
	for line := range bytes.Lines(b.Bytes()) {
		fmt.Fprintf(e.cfg.Stderr, "acp[%d]: %s: %s", e.Rank(), kind, line)
	}
}
