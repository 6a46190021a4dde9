package core

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// SettingKind says how a setting's value is parsed.
type SettingKind uint8

// Kinds of settings.
const (
	KindUint     SettingKind = iota // strtoul-style: decimal, 0x hex, leading-0 octal
	KindString                      // any text
	KindDuration                    // seconds (may be fractional) or a Go duration such as 250ms
)

// Setting is one tunable of the library. Each is accepted as a command-line
// option "--acp-<Name> <value>" (unless EnvOnly) and as an environment
// variable ACP_<NAME> (dashes become underscores); the command line wins.
type Setting struct {
	Name     string
	Kind     SettingKind
	Default  string
	Min, Max uint64 // for KindUint, inclusive
	Help     string
	EnvOnly  bool     // secrets and launcher plumbing stay off the command line
	Choices  []string // for KindString: the accepted values (nil: any text)
}

// Env is the environment variable for the setting.
func (s Setting) Env() string {
	return "ACP_" + strings.ToUpper(strings.ReplaceAll(s.Name, "-", "_"))
}

// Option is the command-line form of the setting.
func (s Setting) Option() string { return "--acp-" + s.Name }

// BaseSettings are the settings of the core and the launch interface: the
// original ACP's options (same names, defaults and ranges) and ours.
var BaseSettings = []Setting{
	{Name: "size-smem", Kind: KindUint, Default: "10240", Max: ^uint64(0), Help: "bytes of basic-layer starter memory per process (acp_query_starter_ga)"},
	{Name: "size-smem-cl", Kind: KindUint, Default: "10240", Max: ^uint64(0), Help: "bytes of communication-library starter memory per process (channels, segmented buffers)"},
	{Name: "size-smem-dl", Kind: KindUint, Default: "10240", Max: ^uint64(0), Help: "bytes of data-library starter memory per process (the acp_malloc heap)"},
	{Name: "size-cl-rings", Kind: KindUint, Default: "1048576", Max: 1 << 40, Help: "bytes added to the communication-library starter memory, when same-host peers map starter memory (shm), for channel rings and control blocks, which those peers then write with plain stores (about 16 channel ends; further ones use private memory, reached with process_vm_writev)"},
	{Name: "malloc-hook-small", Kind: KindUint, Default: "0", Max: 1, Help: "accepted for compatibility; libacp has no malloc hooks"},
	{Name: "malloc-hook-large", Kind: KindUint, Default: "0", Max: 1, Help: "accepted for compatibility; libacp has no malloc hooks"},
	{Name: "malloc-hook-huge", Kind: KindUint, Default: "0", Max: 1, Help: "accepted for compatibility; libacp has no malloc hooks"},
	{Name: "malloc-hook-low", Kind: KindUint, Default: "128", Max: ^uint64(0), Help: "accepted for compatibility; libacp has no malloc hooks"},
	{Name: "malloc-hook-high", Kind: KindUint, Default: "131072", Max: ^uint64(0), Help: "accepted for compatibility; libacp has no malloc hooks"},
	{Name: "ethernet-speed", Kind: KindUint, Default: "1000", Min: 1, Max: 10_000_000, Help: "link speed in Mbit/s (accepted for compatibility; the UDP transport adapts its rate itself)"},
	{Name: "taskid", Kind: KindUint, Default: "0", Max: ^uint64(0), Help: "task identifier given by the original launcher (informational)"},
	{Name: "portfile", Kind: KindString, Default: "", Help: "multi-MPI port file of the original macprun (not supported; must be empty)"},
	{Name: "offsetrank", Kind: KindUint, Default: "1", Max: 10_000_000, Help: "multi-MPI rank offset of the original macprun (informational)"},
	{Name: "myrank", Kind: KindUint, Default: "0", Max: 10_000_000, Help: "this process's rank, set by the launcher"},
	{Name: "nprocs", Kind: KindUint, Default: "1", Min: 1, Max: MaxProcs, Help: "number of processes, set by the launcher"},
	{Name: "port-local", Kind: KindUint, Default: "44256", Min: 1024, Max: 65535, Help: "own TCP port for the original launcher's tree start-up"},
	{Name: "host-remote", Kind: KindString, Default: "127.0.0.1", Help: "parent's host for the original launcher's tree start-up"},
	{Name: "port-remote", Kind: KindUint, Default: "44257", Min: 1024, Max: 65535, Help: "parent's TCP port for the original launcher's tree start-up"},

	{Name: "verbose", Kind: KindUint, Default: "0", Max: 3, Help: "1: print why a call failed and the transports chosen; 2: start-up details; 3: protocol trace"},
	{Name: "queue-depth", Kind: KindUint, Default: "4096", Min: 1, Max: 1 << 20, Help: "operations in flight per process before acp_copy and the atomics wait (back-pressure)"},
	{Name: "peer-timeout", Kind: KindDuration, Default: "30", Help: "seconds without an answer from a peer before the job is stopped with an error naming it"},
	{Name: "hang-report", Kind: KindDuration, Default: "0", Help: "when a wait has lasted this long, print the library's state (operations in flight, channels, segmented buffers) and its goroutines' stacks to standard error, once per wait (0: never; acprun --timeout S sets S/2)"},
	{Name: "state-report-at", Kind: KindDuration, Default: "0", Help: "when the process has run this long since acp_init, print the library's state (as the hang report does) to standard error, once: a job that is slow rather than stuck says where it stood before its time limit (0: never; acprun --timeout S sets 9/10 of S)"},
	{Name: "progress-spin", Kind: KindDuration, Default: "50us", Help: "how long waits and the progress goroutine poll before they sleep (0 = sleep at once)"},
	{Name: "host-group", Kind: KindString, Default: "", Help: "processes of one host share memory (shm, the hierarchical barrier) only with those of the same group, and reach the others over a network transport, as if on other hosts: to run the paths between hosts on one machine (default: one group per host)"},
	{Name: "transports", Kind: KindString, Default: "", Help: "comma-separated transports to use between processes (default: every available one, best first)"},
	{Name: "bootstrap-addr", Kind: KindString, Default: "", Help: "host:port of the start-up rendezvous (set by acprun)"},
	{Name: "job-key", Kind: KindString, Default: "", EnvOnly: true, Help: "secret of the job's rendezvous (set by acprun; environment only)"},
	{Name: "bind", Kind: KindString, Default: "auto", Choices: []string{"auto", "core", "thread", "none"}, Help: "acprun: pin rank i to the i-th CPU acprun may use: core (the whole process), thread (only the thread that calls acp_init; the library's own threads stay free), none, or auto (when the ranks are no more than those CPUs: core when shm or ib is among the transports, as Open MPI does, thread over udp alone)"},
	{Name: "bind-thread-cpu", Kind: KindString, Default: "", EnvOnly: true, Help: "set by acprun --acp-bind thread: the CPU acp_init pins its calling thread to (environment only)"},
	{Name: "launcher-defaults", Kind: KindString, Default: "", EnvOnly: true, Help: "defaults a launcher gives its jobs, as name=value,... (acprun: 1024-byte starter memories); the user's settings and a program's own starter sizes come first"},
}

// Settings holds the values in force for one process.
type Settings struct {
	known  map[string]Setting
	values map[string]string
	source map[string]string // "default", "environment", "command line"
}

// NewSettings prepares a value set over the given setting descriptions,
// filled with defaults.
func NewSettings(defs ...[]Setting) *Settings {
	s := &Settings{known: map[string]Setting{}, values: map[string]string{}, source: map[string]string{}}
	for _, list := range defs {
		for _, d := range list {
			s.known[d.Name] = d
			s.values[d.Name] = d.Default
			s.source[d.Name] = "default"
		}
	}
	return s
}

// Known lists the setting descriptions, sorted by name.
func (s *Settings) Known() []Setting {
	out := make([]Setting, 0, len(s.known))
	for _, d := range s.known {
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Source says where a setting's value came from.
func (s *Settings) Source(name string) string { return s.source[name] }

// Set validates and stores a value.
func (s *Settings) Set(name, value, source string) error {
	d, ok := s.known[name]
	if !ok {
		return fmt.Errorf("unknown setting %q", name)
	}
	if err := d.validate(value); err != nil {
		return fmt.Errorf("%s (%s) = %q: %v", d.Option(), d.Env(), value, err)
	}
	s.values[name] = value
	s.source[name] = source
	return nil
}

// LoadEnv reads ACP_* variables for every known setting.
func (s *Settings) LoadEnv(getenv func(string) (string, bool)) error {
	if getenv == nil {
		getenv = os.LookupEnv
	}
	for _, d := range s.Known() {
		if v, ok := getenv(d.Env()); ok {
			if err := s.Set(d.Name, v, "environment"); err != nil {
				return err
			}
		}
	}
	return nil
}

// ParseArgs applies the "--acp-<name> <value>" pairs found anywhere in args
// and returns the remaining arguments in order. Any other argument starting
// with "--acp-" is an error, as is a missing value or one starting with '-'.
func (s *Settings) ParseArgs(args []string) ([]string, error) {
	kept := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "--acp-") {
			kept = append(kept, a)
			continue
		}
		name := strings.TrimPrefix(a, "--acp-")
		d, ok := s.known[name]
		if !ok || d.EnvOnly {
			return nil, fmt.Errorf("invalid option %q (options take the form \"--acp-NAME VALUE\"; valid names: %s)", a, strings.Join(s.optionNames(), " "))
		}
		if i+1 >= len(args) {
			return nil, fmt.Errorf("option %s needs a value", a)
		}
		v := args[i+1]
		if strings.HasPrefix(v, "-") {
			return nil, fmt.Errorf("option %s: value %q must not start with '-'", a, v)
		}
		if err := s.Set(name, v, "command line"); err != nil {
			return nil, err
		}
		i++
	}
	return kept, nil
}

func (s *Settings) optionNames() []string {
	var names []string
	for _, d := range s.Known() {
		if !d.EnvOnly {
			names = append(names, d.Option())
		}
	}
	return names
}

// ApplyLauncherDefaults sets, from the launcher-defaults setting, every
// setting still at its built-in default. Called after everything with a
// higher priority (options, environment, the program's own variables).
func (s *Settings) ApplyLauncherDefaults() error {
	spec := strings.TrimSpace(s.values["launcher-defaults"])
	if spec == "" {
		return nil
	}
	for _, kv := range strings.Split(spec, ",") {
		name, val, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok {
			return fmt.Errorf("ACP_LAUNCHER_DEFAULTS: %q is not name=value", kv)
		}
		if _, known := s.known[name]; !known || s.source[name] != "default" {
			continue
		}
		if err := s.Set(name, val, "launcher default"); err != nil {
			return fmt.Errorf("ACP_LAUNCHER_DEFAULTS: %v", err)
		}
	}
	return nil
}

// String returns a setting's raw value.
func (s *Settings) String(name string) string { return s.values[s.must(name).Name] }

// Uint returns a validated unsigned setting.
func (s *Settings) Uint(name string) uint64 {
	v, _ := parseUint(s.values[s.must(name).Name])
	return v
}

// Int returns an unsigned setting as an int (values are range-checked).
func (s *Settings) Int(name string) int { return int(s.Uint(name)) }

// Duration returns a duration setting.
func (s *Settings) Duration(name string) time.Duration {
	v, _ := parseDuration(s.values[s.must(name).Name])
	return v
}

func (s *Settings) must(name string) Setting {
	d, ok := s.known[name]
	if !ok {
		panic("setting " + name + " is not declared")
	}
	return d
}

func (d Setting) validate(v string) error {
	switch d.Kind {
	case KindUint:
		// Both errors name the valid range: that is what the user needs.
		n, err := parseUint(v)
		if errors.Is(err, strconv.ErrRange) {
			return fmt.Errorf("out of range %d..%d", d.Min, d.Max)
		}
		if err != nil {
			return fmt.Errorf("%v (decimal, 0x hex or 0 octal, %d..%d)", err, d.Min, d.Max)
		}
		if n < d.Min || n > d.Max {
			return fmt.Errorf("out of range %d..%d", d.Min, d.Max)
		}
	case KindDuration:
		if _, err := parseDuration(v); err != nil {
			return err
		}
	case KindString:
		if d.Choices != nil && !slices.Contains(d.Choices, v) {
			return fmt.Errorf("not one of %s", strings.Join(d.Choices, ", "))
		}
	}
	return nil
}

// parseUint accepts what C's strtoul(v, NULL, 0) accepts for a whole string.
func parseUint(v string) (uint64, error) {
	t := strings.TrimSpace(v)
	if t == "" {
		return 0, fmt.Errorf("not a number")
	}
	if strings.HasPrefix(t, "+") {
		t = t[1:]
	}
	base := 10
	switch {
	case strings.HasPrefix(t, "0x") || strings.HasPrefix(t, "0X"):
		base, t = 16, t[2:]
	case len(t) > 1 && t[0] == '0':
		base, t = 8, t[1:]
	}
	n, err := strconv.ParseUint(t, base, 64)
	if errors.Is(err, strconv.ErrRange) {
		return 0, strconv.ErrRange // more than 64 bits
	}
	if err != nil {
		return 0, fmt.Errorf("not an unsigned number")
	}
	return n, nil
}

func parseDuration(v string) (time.Duration, error) {
	t := strings.TrimSpace(v)
	if f, err := strconv.ParseFloat(t, 64); err == nil {
		if f < 0 {
			return 0, fmt.Errorf("negative duration")
		}
		return time.Duration(f * float64(time.Second)), nil
	}
	d, err := time.ParseDuration(t)
	if err != nil {
		return 0, fmt.Errorf("not a duration (seconds, or a value such as 250ms)")
	}
	if d < 0 {
		return 0, fmt.Errorf("negative duration")
	}
	return d, nil
}
