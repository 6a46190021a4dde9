package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"text/tabwriter"

	"github.com/libacp/libacp/boot"
	"github.com/libacp/libacp/core"
)

// report prints the sections for the settings in force in this
// environment.
type report struct {
	w io.Writer
	s *core.Settings
}

func newReport(w io.Writer) (*report, error) {
	defs := [][]core.Setting{core.BaseSettings}
	for _, t := range core.Transports() {
		defs = append(defs, t.Settings)
	}
	s := core.NewSettings(defs...)
	if err := s.LoadEnv(nil); err != nil {
		return nil, err
	}
	return &report{w: w, s: s}, nil
}

func (r *report) printf(format string, args ...any) { fmt.Fprintf(r.w, format, args...) }

func (r *report) heading(title string) { r.printf("\n%s\n", title) }

func (r *report) version() {
	r.printf("libacp %s: the ACP 3.0 API in C (acp.h, libacp.so.3), built with Go\n", version)
}

func (r *report) build() {
	r.heading("Build")
	cgo := "unknown"
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "CGO_ENABLED" {
				cgo = map[string]string{"1": "yes", "0": "no"}[s.Value]
			}
		}
	}
	r.printf("  Go:    %s %s/%s, cgo %s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH, cgo)
	if v, err := boot.PMIxStatus(""); err == nil {
		r.printf("  PMIx:  loadable (%s), used under PMIx launchers such as Open MPI's mpirun\n", v)
	} else {
		r.printf("  PMIx:  not loadable: %v\n", err)
	}
	r.printf("  PMI-1: built in (pure Go), used under MPICH's mpiexec and other PMI-1 launchers\n")
}

func (r *report) transports() {
	r.heading("Transports (in the order acp_init prefers them; ACP_TRANSPORTS chooses)")
	tw := tabwriter.NewWriter(r.w, 0, 0, 2, ' ', 0)
	linked := map[string]bool{}
	for _, t := range core.Transports() {
		linked[t.Name] = true
		if err := probe(t, r.s); err != nil {
			fmt.Fprintf(tw, "  %s\tnot available here: %v\n", t.Name, err)
		} else {
			fmt.Fprintf(tw, "  %s\tavailable (opened and closed an endpoint)\n", t.Name)
		}
	}
	for _, name := range plannedTransports {
		if !linked[name] {
			fmt.Fprintf(tw, "  %s\tnot built into this library\n", name)
		}
	}
	tw.Flush()
}

func (r *report) bootstrap() {
	r.heading("Bootstrap (how a process started here finds the others)")
	c, err := boot.Choose(boot.OptionsFrom(r.s, os.LookupEnv))
	if c.Method != "" {
		r.printf("  %s: %s\n", c.Method, c.Reason)
	}
	if err != nil {
		r.printf("  acp_init would fail: %v\n", err)
	}
	if len(c.Skipped) > 0 {
		r.printf("  not taken, in the order tried:\n")
		for _, s := range c.Skipped {
			r.printf("    %s\n", s)
		}
	}
}

func (r *report) cpus() {
	r.heading("CPUs")
	allowed, online := runtime.NumCPU(), onlineCPUs()
	r.printf("  this process may run on %d of the host's %s CPUs; GOMAXPROCS %d\n", allowed, onlineText(online), runtime.GOMAXPROCS(0))
	if online > 0 && allowed < online {
		r.printf("  bound to fewer CPUs than the host has (a launcher's binding, e.g. mpirun binds each rank to one core):\n")
		r.printf("  libacp's progress goroutine shares them with the application, which then drives progress\n")
		r.printf("  itself while it waits; for progress while it computes, bind each rank to 2 or more CPUs\n")
		r.printf("  (mpirun --bind-to none, or --map-by slot:PE=2)\n")
	}
	if allowed == 1 {
		r.printf("  one CPU: waits yield the CPU rather than spin (ACP_PROGRESS_SPIN bounds the spinning)\n")
	}
}

func onlineText(n int) string {
	if n <= 0 {
		return "?"
	}
	return fmt.Sprint(n)
}

// onlineCPUs counts /sys/devices/system/cpu/online ("0-3,6"); 0 if unknown.
func onlineCPUs() int {
	b, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		return 0
	}
	n := 0
	for _, part := range strings.Split(strings.TrimSpace(string(b)), ",") {
		var lo, hi int
		if c, _ := fmt.Sscanf(part, "%d-%d", &lo, &hi); c == 2 {
			n += hi - lo + 1
		} else if c, _ := fmt.Sscanf(part, "%d", &lo); c == 1 {
			n++
		}
	}
	return n
}

func (r *report) settings() {
	r.heading("Settings (option --acp-NAME VALUE, or variable ACP_NAME; the command line wins)")
	for _, d := range r.s.Known() {
		def := d.Default
		if def == "" {
			def = "(empty)"
		}
		option := d.Option() + " VALUE"
		if d.EnvOnly {
			option = "(environment only)"
		}
		r.printf("  %s, %s  [default %s]\n", d.Env(), option, def)
		if src := r.s.Source(d.Name); src != "default" {
			v := r.s.String(d.Name)
			if d.EnvOnly {
				v = "(set)"
			}
			r.printf("      in force here: %s (%s)\n", v, src)
		}
		r.printf("      %s\n", d.Help)
	}
}

func (r *report) memory(procs []int, contacted int) error {
	r.heading("Memory per process (estimates from the code's constants and struct sizes)")
	cols := make([][]core.MemoryItem, len(procs))
	for i, n := range procs {
		items, err := core.MemoryUse(r.s, n)
		if err != nil {
			return err
		}
		k := n - 1
		if contacted >= 0 {
			k = min(contacted, n-1)
		}
		for _, t := range transportsInUse(r.s) {
			if f := transportMemory[t]; f != nil {
				items = append(items, f(n, k)...)
			} else {
				items = append(items, core.MemoryItem{Table: t + " (no estimate)", How: "the " + t + " transport does not estimate its tables yet"})
			}
		}
		cols[i] = items
	}
	// Rows: the table's name, then one figure per job size.
	rows := [][]string{{"table"}}
	for _, n := range procs {
		rows[0] = append(rows[0], grouped(n)+" procs")
	}
	totals := make([]uint64, len(procs))
	for row, it := range cols[0] {
		line := []string{it.Table}
		for i := range procs {
			c := cols[i][row]
			totals[i] += c.Bytes
			if c.Bytes == 0 && c.How != "" && strings.HasSuffix(c.Table, "(no estimate)") {
				line = append(line, "?")
			} else {
				line = append(line, human(c.Bytes))
			}
		}
		rows = append(rows, line)
	}
	total := []string{"total"}
	for _, t := range totals {
		total = append(total, human(t))
	}
	rows = append(rows, total)
	widths := make([]int, len(rows[0]))
	for _, row := range rows {
		for i, c := range row {
			widths[i] = max(widths[i], len([]rune(c)))
		}
	}
	for _, row := range rows {
		r.printf("  %-*s", widths[0], row[0])
		for i, c := range row[1:] {
			r.printf("  %*s", widths[i+1], c)
		}
		r.printf("\n")
	}
	last := len(procs) - 1
	who := "every other process"
	if contacted >= 0 {
		who = fmt.Sprintf("%d peers (--contacted)", contacted)
	}
	r.printf("  Each process is assumed to exchange data with %s; ? marks a table without an\n", who)
	r.printf("  estimate, which the total leaves out. For %s processes:\n", grouped(procs[last]))
	for _, it := range cols[last] {
		r.printf("    %s: %s\n", it.Table, it.How)
	}
	return nil
}

// transportsInUse are the transports a job would open: ACP_TRANSPORTS, or
// every one linked.
func transportsInUse(s *core.Settings) []string {
	if names := core.NamedTransports(s); names != nil {
		return names
	}
	var out []string
	for _, t := range core.Transports() {
		out = append(out, t.Name)
	}
	return out
}

// human prints a byte count in B, KiB, MiB or GiB.
func human(b uint64) string {
	switch {
	case b < 1024:
		return fmt.Sprintf("%d B", b)
	case b < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(b)/1024)
	case b < 1<<30:
		return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
	}
	return fmt.Sprintf("%.2f GiB", float64(b)/(1<<30))
}

// grouped writes 1000000 as 1,000,000.
func grouped(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
