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
var perJob = []string{"ACP_MYRANK", "ACP_NPROCS", "ACP_BOOTSTRAP_ADDR", "ACP_JOB_KEY"}

// jobEnv is the environment shared by every rank: acprun's own, with the
// options' settings on top, the launcher's starter sizes unless the user
// chose them, and the rendezvous. Library options travel here and never
// on the ranks' command lines, so that argv stays as the user wrote it.
func jobEnv(inherited []string, c *config, addr, key string) []string {
	set := maps.Clone(c.env)
	for _, v := range []string{"ACP_SIZE_SMEM", "ACP_SIZE_SMEM_CL", "ACP_SIZE_SMEM_DL"} {
		if _, ok := set[v]; !ok && !hasVar(inherited, v) {
			set[v] = starterDefault
		}
	}
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

func hasVar(env []string, name string) bool {
	return slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, name+"=") })
}
