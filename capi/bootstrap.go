package main

/*
#cgo LDFLAGS: -ldl
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>

// acp_mpi_state tells whether an MPI library is linked into this process
// (*linked) and whether it is initialised and not finalised (the result),
// asking it through MPI_Initialized and MPI_Finalized, which may be called
// at any time.
static int acp_mpi_state(int *linked)
{
	int (*initialized)(int *) = (int (*)(int *))dlsym(RTLD_DEFAULT, "MPI_Initialized");
	int (*finalized)(int *) = (int (*)(int *))dlsym(RTLD_DEFAULT, "MPI_Finalized");
	int yes = 0, done = 0;
	*linked = initialized != NULL && finalized != NULL;
	if (!*linked)
		return 0;
	if (initialized(&yes) != 0 || !yes)
		return 0;
	if (finalized(&done) != 0)
		return 0;
	return !done;
}
*/
import "C"

import (
	"fmt"
	"os"

	"github.com/libacp/libacp/boot"
	"github.com/libacp/libacp/core"
)

// openBootstrap finds the other processes of the job from the settings that
// the launcher (or the user) gave on the command line or in the environment,
// and the variables other launchers (mpirun, mpiexec, srun) set.
func openBootstrap(s *core.Settings) (core.Exchanger, error) {
	o := boot.OptionsFrom(s, os.LookupEnv)
	o.MPI = func() (linked, active bool) {
		var l C.int
		a := C.acp_mpi_state(&l)
		return l != 0, a != 0
	}
	o.Gone = launcherGone
	verbose := s.Int("verbose")
	if verbose >= 2 {
		o.Logf = func(format string, args ...any) {
			fmt.Fprintf(os.Stderr, "acp: %s\n", fmt.Sprintf(format, args...))
		}
	}
	b, err := boot.Open(o)
	if err != nil {
		return nil, err
	}
	if verbose >= 2 {
		fmt.Fprintf(os.Stderr, "acp[%d]: start-up: rank %d of %d found by %q", b.Rank(), b.Rank(), b.Size(), b.Method())
		if ip := b.LocalIP(); ip != "" {
			fmt.Fprintf(os.Stderr, ", local address %s", ip)
		}
		fmt.Fprintln(os.Stderr)
	}
	return b, nil
}

// launcherGone ends the process when the job's launcher ended under it
// (acprun was killed, say): the job can never finish. During acp_init the
// start-up exchange fails by itself; after acp_finalize nobody calls.
func launcherGone(err error) {
	if e := lib.engine.Load(); e != nil {
		e.Fatal(err)
	}
}
