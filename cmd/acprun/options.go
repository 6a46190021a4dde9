package main

import (
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/libacp/libacp/core"
)

// config is what the command line asks for.
type config struct {
	np      int
	env     map[string]string // ACP_* variables for the ranks, from options
	timeout time.Duration     // 0: no time limit
	groups  int               // --host-groups: ranks in that many host groups (0: none)
	debug   bool
	help    bool
	version bool
	argv    []string // the program and its arguments, as the user wrote them

	machineFile, hostList []string // hosts asked for (all must be this machine)
	hostListSet           bool
}

// argKind says whether an option takes a value.
type argKind uint8

const (
	needsValue  argKind = iota // "-opt V", "--acp-opt=V" or "--acp-opt V"
	noValue                    // a flag
	optionalBit                // a flag, or "--acp-opt 0|1" / "--acp-opt=0|1"
)

// option is one of the original acprun's options, under all its spellings.
type option struct {
	names []string
	arg   argKind
	apply func(c *config, s *core.Settings, name, value string) error
}

// originalOptions are the options of the original acprun (spec §4.1) plus
// --timeout. Every other "--acp-NAME" is a library setting.
var originalOptions = []option{
	{names: []string{"-n", "-np", "--acp-n", "--acp-np", "--acp-nprocs"}, apply: setNP},
	{names: []string{"-smemsize", "-startermemsize", "--acp-smemsize", "--acp-startermemsize"}, apply: positive("size-smem")},
	{names: []string{"-smemsize-cl", "-startermemsize-cl", "--acp-smemsize-cl", "--acp-startermemsize-cl"}, apply: positive("size-smem-cl")},
	{names: []string{"-smemsize-dl", "-startermemsize-dl", "--acp-smemsize-dl", "--acp-startermemsize-dl"}, apply: positive("size-smem-dl")},
	{names: []string{"-machinefile", "-nodefile", "--acp-machinefile", "--acp-nodefile"}, apply: setMachineFile},
	{names: []string{"-host", "-node", "--acp-host", "--acp-node"}, apply: setHostList},
	{names: []string{"-net", "-ndev", "-envnet", "--acp-net", "--acp-ndev", "--acp-envnet"}, apply: setNetwork},
	{names: []string{"-rsh", "-ssh", "-remoteshell", "--acp-rsh", "--acp-ssh", "--acp-remoteshell"}, apply: ignored},
	{names: []string{"-multirun", "--acp-multirun"}, arg: noValue, apply: unsupported},
	{names: []string{"-portfile", "--acp-portfile", "-offsetrank", "--acp-offsetrank"}, apply: unsupported},
	{names: []string{"-mhooksmall"}, arg: noValue, apply: setting("malloc-hook-small")},
	{names: []string{"-mhooklarge"}, arg: noValue, apply: setting("malloc-hook-large")},
	{names: []string{"-mhookhuge"}, arg: noValue, apply: setting("malloc-hook-huge")},
	{names: []string{"--acp-malloc-hook-small"}, arg: optionalBit, apply: setting("malloc-hook-small")},
	{names: []string{"--acp-malloc-hook-large"}, arg: optionalBit, apply: setting("malloc-hook-large")},
	{names: []string{"--acp-malloc-hook-huge"}, arg: optionalBit, apply: setting("malloc-hook-huge")},
	{names: []string{"-mhooklow", "--acp-malloc-hook-low"}, apply: setting("malloc-hook-low")},
	{names: []string{"-mhookhigh", "--acp-malloc-hook-high"}, apply: setting("malloc-hook-high")},
	{names: []string{"-ethspeed", "--acp-ethernet-speed"}, apply: setting("ethernet-speed")},
	{names: []string{"-h", "-help", "--acp-help", "--help"}, arg: noValue, apply: func(c *config, _ *core.Settings, _, _ string) error { c.help = true; return nil }},
	{names: []string{"-v", "-version", "--acp-version", "--version"}, arg: noValue, apply: func(c *config, _ *core.Settings, _, _ string) error { c.version = true; return nil }},
	{names: []string{"-debug", "--acp-debug"}, arg: noValue, apply: func(c *config, _ *core.Settings, _, _ string) error { c.debug = true; return nil }},
	{names: []string{"--timeout"}, apply: setTimeout},
	{names: []string{"--host-groups"}, apply: setHostGroups},
}

// launcherOwned are settings acprun sets for every rank itself.
var launcherOwned = map[string]string{
	"myrank":         "acprun numbers the ranks itself",
	"bootstrap-addr": "acprun starts the rendezvous itself",
	"job-key":        "acprun makes a secret key per job and passes it in the environment only",
}

// librarySettings are the settings acp_init accepts: the core's and those
// of every transport linked in.
func librarySettings() *core.Settings {
	defs := [][]core.Setting{core.BaseSettings}
	for _, t := range core.Transports() {
		defs = append(defs, t.Settings)
	}
	return core.NewSettings(defs...)
}

// parseArgs reads the options up to the program. The first argument that
// is not an option (or the one after "--") starts the program.
func parseArgs(args []string) (*config, error) {
	c := &config{np: 1, env: map[string]string{}}
	s := librarySettings()
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			c.argv = args[i+1:]
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			c.argv = args[i:]
			break
		}
		name, value, hasValue := a, "", false
		if strings.HasPrefix(a, "--") {
			name, value, hasValue = strings.Cut(a, "=")
		}
		next := func() (string, error) {
			if i+1 >= len(args) {
				return "", fmt.Errorf("option %s needs a value", name)
			}
			i++
			return args[i], nil
		}
		opt, known := lookupOption(name)
		switch {
		case known && opt.arg == noValue:
			if hasValue {
				return nil, fmt.Errorf("option %s takes no value (got %q)", name, a)
			}
			value = "1"
		case known && opt.arg == optionalBit:
			if !hasValue {
				value = "1"
				if i+1 < len(args) && (args[i+1] == "0" || args[i+1] == "1") {
					value, _ = next()
				}
			}
		case !hasValue && (known || strings.HasPrefix(name, "--acp-")):
			var err error
			if value, err = next(); err != nil {
				return nil, err
			}
			if !known && strings.HasPrefix(value, "-") {
				return nil, fmt.Errorf("option %s: value %q must not start with '-'", name, value)
			}
		}
		var err error
		switch {
		case known:
			err = opt.apply(c, s, name, value)
		case strings.HasPrefix(name, "--acp-"):
			err = setLibrarySetting(c, s, name, value)
		default:
			err = fmt.Errorf("unknown option %s (see acprun -h; use -- before a program whose name starts with '-')", a)
		}
		if err != nil {
			return nil, err
		}
		if c.help || c.version {
			return c, nil
		}
	}
	if len(c.argv) == 0 {
		return nil, fmt.Errorf("no program to run (usage: acprun -np N [options] program [args...])")
	}
	if err := checkProcessLimit(c.np); err != nil {
		return nil, err
	}
	hosts, from := c.machineFile, "-machinefile"
	if c.hostListSet {
		hosts, from = c.hostList, "-host"
	}
	for _, h := range hosts {
		if !isLocalHost(h) {
			return nil, fmt.Errorf("host %q (%s) is not this machine: acprun runs every rank locally, remote hosts are not supported yet (use mpirun or srun to start ranks on other machines)", h, from)
		}
	}
	return c, nil
}

func lookupOption(name string) (option, bool) {
	for _, o := range originalOptions {
		if slices.Contains(o.names, name) {
			return o, true
		}
	}
	return option{}, false
}

// setLibrarySetting handles "--acp-NAME VALUE" for any setting acp_init
// accepts, validated exactly as acp_init would.
func setLibrarySetting(c *config, s *core.Settings, opt, value string) error {
	name := strings.TrimPrefix(opt, "--acp-")
	if why, ok := launcherOwned[name]; ok {
		return fmt.Errorf("option %s cannot be given to acprun: %s", opt, why)
	}
	var def core.Setting
	for _, d := range s.Known() {
		if d.Name == name {
			def = d
		}
	}
	if def.Name == "" {
		var names []string
		for _, d := range s.Known() {
			if _, owned := launcherOwned[d.Name]; !owned && !d.EnvOnly && !slices.Contains(handledAbove, d.Name) {
				names = append(names, d.Option())
			}
		}
		return fmt.Errorf("unknown option %s (library settings: %s; see acprun -h)", opt, strings.Join(names, " "))
	}
	if def.EnvOnly {
		return fmt.Errorf("option %s cannot be given on a command line: set the environment variable %s instead", opt, def.Env())
	}
	if err := s.Set(name, value, "command line"); err != nil {
		return err
	}
	c.env[def.Env()] = value
	return nil
}

// setting returns an option that stores a library setting.
func setting(name string) func(*config, *core.Settings, string, string) error {
	return func(c *config, s *core.Settings, opt, value string) error {
		if err := s.Set(name, value, "command line"); err != nil {
			return fmt.Errorf("option %s: %v", opt, err)
		}
		c.env[core.Setting{Name: name}.Env()] = value
		return nil
	}
}

// positive is setting for sizes, which the original acprun wants above 0.
func positive(name string) func(*config, *core.Settings, string, string) error {
	return func(c *config, s *core.Settings, opt, value string) error {
		if err := setting(name)(c, s, opt, value); err != nil {
			return err
		}
		if s.Uint(name) == 0 {
			return fmt.Errorf("option %s %s: the size must be greater than 0", opt, value)
		}
		return nil
	}
}

func setNP(c *config, s *core.Settings, opt, value string) error {
	if err := s.Set("nprocs", value, "command line"); err != nil {
		return fmt.Errorf("option %s (number of processes): %q must be a number from 1 to %d", opt, value, core.MaxProcs)
	}
	c.np = s.Int("nprocs")
	return nil
}

func setNetwork(c *config, s *core.Settings, opt, value string) error {
	v := strings.ToLower(value)
	switch {
	case v == "udp" || v == "shm":
		c.env["ACP_TRANSPORTS"] = v
	case v == "ib" || v == "infiniband" || v == "inifiniband":
		c.env["ACP_TRANSPORTS"] = "ib"
	case strings.HasPrefix(v, "tofu"):
		return fmt.Errorf("option %s %s: Tofu is not supported", opt, value)
	default:
		return fmt.Errorf("option %s %s: unknown network device (accepted: udp, ib, shm; or set --acp-transports)", opt, value)
	}
	return nil
}

func setMachineFile(c *config, _ *core.Settings, opt, file string) error {
	b, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("option %s: %v", opt, err)
	}
	c.machineFile = nil
	for line := range strings.Lines(string(b)) {
		line, _, _ = strings.Cut(line, "#")
		if f := strings.Fields(line); len(f) > 0 {
			c.machineFile = append(c.machineFile, f[0])
		}
	}
	if len(c.machineFile) == 0 {
		return fmt.Errorf("option %s %s: the file names no host", opt, file)
	}
	return nil
}

func setHostList(c *config, _ *core.Settings, opt, value string) error {
	c.hostList, c.hostListSet = nil, true
	for h := range strings.SplitSeq(value, ",") {
		if h = strings.TrimSpace(h); h != "" {
			c.hostList = append(c.hostList, h)
		}
	}
	if len(c.hostList) == 0 {
		return fmt.Errorf("option %s %q names no host", opt, value)
	}
	return nil
}

// ignored options only mattered for starting ranks on other machines.
func ignored(*config, *core.Settings, string, string) error { return nil }

func unsupported(_ *config, _ *core.Settings, opt, _ string) error {
	return fmt.Errorf("option %s is not supported (the multi-MPI mode of the original macprun)", opt)
}

// longestTimeout is the longest time limit a time.Duration holds (292 years).
const longestTimeout = time.Duration(math.MaxInt64)

// setHostGroups splits the ranks into K host groups in blocks (rank r in
// group r*K/np: --acp-host-group), as if they ran on K hosts.
func setHostGroups(c *config, _ *core.Settings, opt, value string) error {
	k, err := strconv.Atoi(value)
	if err != nil || k < 1 || k > core.MaxProcs {
		return fmt.Errorf("option %s %q: give the number of host groups (1 to %d)", opt, value, core.MaxProcs)
	}
	c.groups = k
	return nil
}

func setTimeout(c *config, _ *core.Settings, opt, value string) error {
	d, err := time.ParseDuration(value)
	if f, ferr := strconv.ParseFloat(value, 64); ferr == nil {
		if f > longestTimeout.Seconds() {
			return fmt.Errorf("option %s %q: more than the longest time limit, %d seconds", opt, value, int64(longestTimeout.Seconds()))
		}
		d, err = time.Duration(f*float64(time.Second)), nil
	}
	if err != nil || d <= 0 {
		return fmt.Errorf("option %s %q: give the time limit in seconds (greater than 0)", opt, value)
	}
	c.timeout = d
	return nil
}
