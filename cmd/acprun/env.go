package main

import (
	"maps"
	"slices"
	"strconv"
	"strings"
)

// starterDefault is the original acprun's size of each starter memory
// (acp_init alone would use 10240).
const starterDefault = "1024"

// perJob are the variables acprun always sets itself, whatever it inherited.
// ACP_BIND_THREAD_CPU among them: a rank of this job pins its thread only
// when this acprun says so, not because an enclosing job's rank did.
var perJob = []string{"ACP_MYRANK", "ACP_NPROCS", "ACP_BOOTSTRAP_ADDR", "ACP_JOB_KEY", "ACP_BIND_THREAD_CPU"}

// jobEnv is the environment shared by every rank: acprun's own, with the
// options' settings on top, the launcher's starter sizes as defaults, and
// the rendezvous. Library options travel here and never on the ranks'
// command lines, so that argv stays as the user wrote it. The starter sizes
// are defaults (ACP_LAUNCHER_DEFAULTS), not settings, so that a size the
// user chose, or one a program declares itself (iacp_starter_memory_size_*),
// still wins in acp_init. With --timeout S, a wait that lasts S/2 prints
// the library's hang report (--acp-hang-report), and every rank prints
// its state at 9/10 of S (--acp-state-report-at), defaults as well.
func jobEnv(inherited []string, c *config, addr, key string) []string {
	set := maps.Clone(c.env)
	defaults := "size-smem=" + starterDefault + ",size-smem-cl=" + starterDefault + ",size-smem-dl=" + starterDefault
	if c.timeout > 0 {
		// A job stopped at its time limit says first where its waits
		// stood, and where it stood shortly before the limit even when no
		// wait lasted long (a slow job rather than a stuck one).
		defaults += ",hang-report=" + strconv.FormatFloat(c.timeout.Seconds()/2, 'f', -1, 64) +
			",state-report-at=" + strconv.FormatFloat(c.timeout.Seconds()*0.9, 'f', -1, 64)
	}
	set["ACP_LAUNCHER_DEFAULTS"] = defaults
	set["ACP_NPROCS"] = strconv.Itoa(c.np)
	set["ACP_BOOTSTRAP_ADDR"] = addr
	set["ACP_JOB_KEY"] = key

	env := make([]string, 0, len(inherited)+len(set)+1)
	for _, kv := range inherited {
		name, _, _ := strings.Cut(kv, "=")
		if _, overridden := set[name]; !overridden && !slices.Contains(perJob, name) {
			env = append(env, kv)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(set)) {
		env = append(env, name+"="+set[name])
	}
	return env
}

// rankEnv adds the rank's number to the job's environment.
func rankEnv(job []string, rank int) []string {
	return append(slices.Clip(job), "ACP_MYRANK="+strconv.Itoa(rank))
}
