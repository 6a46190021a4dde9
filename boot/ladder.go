package boot

import "fmt"

// rung is one way of finding the other processes. applies looks only at
// the options, so that choosing is cheap and predictable.
type rung struct {
	method  string
	applies func(Options) bool
	open    func(Options) (Bootstrap, error)
}

// ladder is tried top to bottom; the first rung that applies decides, and
// its error is final (falling through to a singleton would hide a broken
// launch). PMI-1, PMIx and the launcher-environment rungs belong between
// the acprun rendezvous and the original tree.
var ladder = []rung{
	{"acprun", func(o Options) bool { return o.Addr != "" }, openRendezvous},
	{"tree", func(o Options) bool { return o.RankSet && o.NProcs > 1 }, openTree},
	{"singleton", func(o Options) bool { return o.NProcs <= 1 && o.Rank == 0 }, openSingleton},
}

// Open finds the other processes of this job.
func Open(o Options) (Bootstrap, error) {
	for _, r := range ladder {
		if r.applies(o) {
			return r.open(o)
		}
	}
	if o.NProcs <= 1 {
		return nil, fmt.Errorf("--acp-myrank (ACP_MYRANK) = %d but --acp-nprocs (ACP_NPROCS) = %d: a rank must be below the number of processes", o.Rank, max(o.NProcs, 1))
	}
	return nil, fmt.Errorf("this process is one of %d (ACP_NPROCS) but does not know its rank (ACP_MYRANK) nor how to reach the others (no ACP_BOOTSTRAP_ADDR): started %d processes without a launcher? use acprun -np %d", o.NProcs, o.NProcs, o.NProcs)
}
