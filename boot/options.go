package boot

import (
	"os"
	"time"
)

// Settings is the part of the library's settings that the start-up reads;
// *core.Settings satisfies it. (boot does not import core, so that the
// launcher and diagnostics can use it without the engine.)
type Settings interface {
	Int(name string) int
	String(name string) string
	Duration(name string) time.Duration
	// Source is "default" when nobody set the value.
	Source(name string) string
}

// LauncherVars are the environment variables of other launchers that the
// PMI-1, PMIx and launcher-environment rungs read. Nothing else of the
// environment is looked at.
var LauncherVars = []string{
	// PMI-1 (MPICH's Hydra mpiexec, and other simple-PMI servers)
	"PMI_FD", "PMI_PORT", "PMI_ID", "PMI_RANK", "PMI_SIZE", "MPI_LOCALNRANKS",
	// PMIx (Open MPI's mpirun, PRRTE, Slurm with --mpi=pmix)
	"PMIX_NAMESPACE",
	// Open MPI's mpirun
	"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_MCA_ess_base_jobid",
	// Slurm's srun
	"SLURM_PROCID", "SLURM_NTASKS", "SLURM_JOB_ID", "SLURM_STEP_ID",
}

// LauncherEnv picks LauncherVars out of the environment (os.LookupEnv
// when lookup is nil).
func LauncherEnv(lookup func(string) (string, bool)) map[string]string {
	if lookup == nil {
		lookup = os.LookupEnv
	}
	env := map[string]string{}
	for _, name := range LauncherVars {
		if v, ok := lookup(name); ok {
			env[name] = v
		}
	}
	return env
}

// OptionsFrom fills Options from the library's settings (command line and
// ACP_* variables) and the launcher's variables in the environment.
func OptionsFrom(s Settings, lookup func(string) (string, bool)) Options {
	return Options{
		Rank:   s.Int("myrank"),
		NProcs: s.Int("nprocs"),
		// Defaults alone (0 of 1) mean nobody said which rank this is.
		RankSet:     s.Source("myrank") != "default" || s.Source("nprocs") != "default",
		RankFromEnv: s.Source("myrank") == "environment" || s.Source("nprocs") == "environment",
		Addr:        s.String("bootstrap-addr"),
		Key:         s.String("job-key"),
		PortLocal:   s.Int("port-local"),
		PortRemote:  s.Int("port-remote"),
		HostRemote:  s.String("host-remote"),
		Timeout:     s.Duration("peer-timeout"),
		Env:         LauncherEnv(lookup),
	}
}
