// Command acp_info describes libacp on this machine: its version and build,
// the transports that work here and why the others do not, how a process
// started in this environment would find its peers, the CPUs it may use,
// every setting with its default and meaning, and the memory one process
// needs for its tables in a job of a given size.
//
//	acp_info [--procs N[,N...]] [--contacted K] [section...]
//
// Run it under a launcher (mpirun -np 1 acp_info bootstrap) to see what a
// rank of that launcher would see.
package main

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
)

// version is set at build time (-ldflags "-X main.version=...").
var version = "devel"

// sections in the order they are printed.
var sections = []string{"version", "build", "transports", "bootstrap", "cpus", "settings", "memory"}

const usage = `usage: acp_info [options] [section...]

Describes libacp on this machine. Sections (default: all, in this order):
  version     the library's version and the ACP API it implements
  build       Go version, platform, cgo, and whether PMIx can be loaded
  transports  the transports built in, which of them work on this machine,
              and why the others do not
  bootstrap   how a process started in this environment would find the
              others (acprun, tree, pmi, pmix, env or singleton), why
              each method above it does not apply, and why acp_init
              would fail at once, if it would
  cpus        the CPUs this process may run on, GOMAXPROCS, and a warning
              when a launcher bound it to fewer CPUs than the host has
  settings    every setting: its --acp-NAME option, ACP_NAME variable,
              default, the value in force here, and its meaning
  memory      the memory one process needs for its tables (registration
              table, command ring, start-up records, routes, starter
              memories, and each transport's address book, peer table,
              per-peer state and buffers) for the given numbers of processes

Options:
  --procs N[,N...]  job sizes for the memory section (default 2,1000,1000000)
  --contacted K     peers each process exchanges data with, for the
                    per-peer state (default: every other process)
  -h, --help        show this help
  -V, --version     print the version

Settings from the environment (ACP_*) are taken into account, so
"ACP_TRANSPORTS=udp acp_info memory" shows the tables of a UDP-only job.
Run under a launcher to see what its processes see, e.g.
"mpirun -np 1 acp_info bootstrap cpus".
`

type options struct {
	procs     []int
	contacted int // -1: every other process
	sections  []string
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	o, help, err := parseArgs(args)
	switch {
	case err != nil:
		fmt.Fprintf(stderr, "acp_info: %v\n(acp_info --help lists the options)\n", err)
		return 2
	case help == "help":
		fmt.Fprint(stdout, usage)
		return 0
	case help == "version":
		fmt.Fprintf(stdout, "acp_info (libacp) %s, for ACP 3.0\n", version)
		return 0
	}
	r, err := newReport(stdout)
	if err != nil {
		fmt.Fprintf(stderr, "acp_info: %v\n", err)
		return 1
	}
	for _, s := range o.sections {
		switch s {
		case "version":
			r.version()
		case "build":
			r.build()
		case "transports":
			r.transports()
		case "bootstrap":
			r.bootstrap()
		case "cpus":
			r.cpus()
		case "settings":
			r.settings()
		case "memory":
			if err := r.memory(o.procs, o.contacted); err != nil {
				fmt.Fprintf(stderr, "acp_info: %v\n", err)
				return 1
			}
		}
	}
	return 0
}

func parseArgs(args []string) (options, string, error) {
	o := options{procs: []int{2, 1000, 1_000_000}, contacted: -1}
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, value, hasValue := strings.Cut(a, "=")
		next := func() (string, error) {
			if hasValue {
				return value, nil
			}
			if i+1 >= len(args) {
				return "", fmt.Errorf("option %s needs a value", name)
			}
			i++
			return args[i], nil
		}
		switch name {
		case "-h", "--help", "-help":
			return o, "help", nil
		case "-V", "--version", "-version":
			return o, "version", nil
		case "--procs", "-procs":
			v, err := next()
			if err != nil {
				return o, "", err
			}
			o.procs = nil
			for _, f := range strings.Split(v, ",") {
				n, err := strconv.Atoi(strings.TrimSpace(f))
				if err != nil || n < 1 || n > 10_000_000 {
					return o, "", fmt.Errorf("--procs %q: each value must be a number of processes from 1 to 10000000", v)
				}
				o.procs = append(o.procs, n)
			}
		case "--contacted", "-contacted":
			v, err := next()
			if err != nil {
				return o, "", err
			}
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return o, "", fmt.Errorf("--contacted %q: must be a number of peers, 0 or more", v)
			}
			o.contacted = n
		default:
			if strings.HasPrefix(a, "-") {
				return o, "", fmt.Errorf("unknown option %q", a)
			}
			if !slices.Contains(sections, a) {
				return o, "", fmt.Errorf("unknown section %q (sections: %s)", a, strings.Join(sections, ", "))
			}
			if !slices.Contains(o.sections, a) {
				o.sections = append(o.sections, a)
			}
		}
	}
	if len(o.sections) == 0 {
		o.sections = sections
	} else {
		// Always in the documented order.
		slices.SortFunc(o.sections, func(a, b string) int { return slices.Index(sections, a) - slices.Index(sections, b) })
	}
	return o, "", nil
}
