package boot

import (
	"fmt"
	"strings"
)

// rung is one way of finding the other processes. applies decides from the
// options (and, for PMIx, from whether libpmix loads), cheaply and
// predictably; its reason says why the rung applies or why not, for
// acp_info and ACP_VERBOSE=2.
type rung struct {
	method  string
	applies func(Options) (ok bool, reason string)
	// check finds, without connecting anywhere, what would make open fail
	// at once (a rank out of range, a malformed or stale variable), so
	// that acp_info tells it too; nil: nothing to check.
	check func(Options) error
	open  func(Options) (Bootstrap, error)
}

// ladder is tried top to bottom; the first rung that applies decides, and
// its error is final (falling through to a singleton would hide a broken
// launch). Explicit settings come first, then the services of real
// launchers, then what a launcher leaves in the environment.
var ladder = []rung{
	{"acprun", appliesAcprun, checkAcprun, openRendezvous},
	{"env", appliesExplicitAddr, checkEnv, openEnv},
	{"tree", appliesTree, Options.checkRank, openTree},
	{"pmi", appliesPMI, checkPMI, openPMI},
	{"pmix", appliesPMIx, nil, openPMIx},
	{"env", appliesLauncherEnv, checkEnv, openEnv},
	{"singleton", appliesSingleton, nil, openSingleton},
}

// Choice is the rung Open takes in an environment, and why.
type Choice struct {
	Method string
	Reason string
	// Skipped says for each rung above the chosen one why it did not apply.
	Skipped []string
}

// Choose tells which method Open would use with these options, without
// opening anything but (for PMIx) the library. The error says why Open
// would fail at once, also when the Choice names a method.
func Choose(o Options) (Choice, error) {
	c, _, err := choose(o)
	return c, err
}

func choose(o Options) (Choice, rung, error) {
	var c Choice
	for _, r := range ladder {
		ok, why := r.applies(o)
		if ok {
			c.Method, c.Reason = r.method, why
			if r.check != nil {
				if err := r.check(o); err != nil {
					return c, rung{}, err
				}
			}
			return c, r, nil
		}
		c.Skipped = append(c.Skipped, r.method+": "+why)
	}
	if o.NProcs <= 1 {
		return c, rung{}, fmt.Errorf("--acp-myrank (ACP_MYRANK) = %d but --acp-nprocs (ACP_NPROCS) = %d: a rank must be below the number of processes", o.Rank, max(o.NProcs, 1))
	}
	return c, rung{}, fmt.Errorf("this process is one of %d (ACP_NPROCS) but does not know its rank (ACP_MYRANK) nor how to reach the others (no ACP_BOOTSTRAP_ADDR): started %d processes without a launcher? use acprun -np %d", o.NProcs, o.NProcs, o.NProcs)
}

// Open finds the other processes of this job.
func Open(o Options) (Bootstrap, error) {
	c, r, err := choose(o)
	if err != nil {
		return nil, err
	}
	o.logf("bootstrap %s: %s", c.Method, c.Reason)
	return r.open(o)
}

func appliesAcprun(o Options) (bool, string) {
	if o.Addr != "" && o.Key != "" {
		return true, fmt.Sprintf("ACP_BOOTSTRAP_ADDR=%s and ACP_JOB_KEY are set (started by acprun)", o.Addr)
	}
	return false, "no ACP_BOOTSTRAP_ADDR with ACP_JOB_KEY (not started by acprun)"
}

func appliesExplicitAddr(o Options) (bool, string) {
	if o.Addr != "" && o.Key == "" && o.RankSet {
		return true, fmt.Sprintf("ACP_MYRANK=%d, ACP_NPROCS=%d and ACP_BOOTSTRAP_ADDR=%s are set: rank 0 listens there, the others connect", o.Rank, o.NProcs, o.Addr)
	}
	return false, "no ACP_MYRANK/ACP_NPROCS together with ACP_BOOTSTRAP_ADDR"
}

func appliesTree(o Options) (bool, string) {
	if o.RankSet && o.NProcs > 1 {
		return true, fmt.Sprintf("%s are set (the original acprun's start-up tree)", o.rankText())
	}
	return false, "no --acp-myrank/--acp-nprocs for more than one process"
}

func appliesSingleton(o Options) (bool, string) {
	if o.NProcs <= 1 && o.Rank == 0 {
		return true, "no launcher found: a job of one process"
	}
	return false, "more than one process"
}

// describeEnv lists name=value of the given launcher variables that are set.
func describeEnv(o Options, names ...string) string {
	var parts []string
	for _, n := range names {
		if v, ok := o.Env[n]; ok {
			parts = append(parts, n+"="+v)
		}
	}
	return strings.Join(parts, ", ")
}
