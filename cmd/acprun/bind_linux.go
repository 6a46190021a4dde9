package main

import (
	"fmt"
	"os"
	"slices"

	"golang.org/x/sys/unix"

	"github.com/libacp/libacp/core"
)

// Binding. Two ranks that share a CPU while another CPU runs something
// else wait for each other a whole time slice at every exchange, and the
// kernel does not separate processes that are always runnable (busy
// waits): its load balance sees both CPUs equally busy. So, like Open
// MPI's mpirun, acprun pins rank i to the i-th CPU it may use itself when
// the ranks are no more than those CPUs (--acp-bind auto, the default);
// with more ranks than CPUs nobody is pinned, so that the kernel may move
// them where there is room. Over udp alone (and with --acp-bind thread)
// only each rank's application thread is pinned (acp_init pins the thread
// that calls it, core.PinCallingThread), so that a progress goroutine can
// run on another CPU than its rank's busy wait.

// targetFree reports whether a transport moves a put's data without the
// target's CPU: shared memory (the issuer stores) and ib (the adapter
// writes). Pinned ranks lose nothing over them; over ib in the Soft-RoCE
// VM pinning doubled putbw and did not slow the pingpong.
func targetFree(transport string) bool { return transport == "shm" || transport == "ib" }

// bindCPUs returns the CPU of each rank, or nil: nobody is pinned; thread
// says that only the thread calling acp_init is to be pinned, by the rank
// itself (ACP_BIND_THREAD_CPU), not the process by acprun.
func bindCPUs(c *config) (cpus []int, thread bool, err error) {
	// The settings as the ranks will see them: environment, then the
	// command line's --acp-* options.
	s := librarySettings()
	if err := s.LoadEnv(os.LookupEnv); err != nil {
		return nil, false, err
	}
	if err := s.LoadEnv(func(k string) (string, bool) { v, ok := c.env[k]; return v, ok }); err != nil {
		return nil, false, err
	}
	policy := s.String("bind")
	if policy == "none" {
		return nil, false, nil
	}
	thread = policy == "thread"
	if names := core.NamedTransports(s); policy == "auto" && names != nil && !slices.ContainsFunc(names, targetFree) {
		// The ranks of this host then talk through UDP, whose progress
		// goroutine receives for a target that does not call ACP:
		// pinned with its rank, it shares the rank's CPU with the rank's
		// busy wait or computation (acpbench passive: milliseconds per
		// put, a time slice). Unpinned, two ranks' waits sometimes
		// shared one CPU for a whole run (10-30 us one way instead of
		// 4.5 at small sizes, in about one run of 20). So only the
		// application threads are pinned (BENCHMARKS.md, 2026-11-23,
		// late).
		thread = true
	}
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, false, fmt.Errorf("--acp-bind %s: cannot read the CPUs acprun may use: %v", policy, err)
	}
	var all []int
	for cpu := 0; len(all) < set.Count(); cpu++ {
		if set.IsSet(cpu) {
			all = append(all, cpu)
		}
	}
	if policy == "auto" && c.np > len(all) {
		return nil, false, nil
	}
	cpus = make([]int, c.np)
	for r := range cpus {
		cpus[r] = all[r%len(all)]
	}
	return cpus, thread, nil
}

// startPinned starts cmd from the calling thread (locked to it) pinned to
// cpu (-1: not pinned): a child inherits the affinity of the thread that
// forked it, so every thread the rank ever creates stays on that CPU. The
// thread gets its own affinity back afterwards.
func startPinned(start func() error, cpu int) error {
	if cpu < 0 {
		return start()
	}
	var old, one unix.CPUSet
	if err := unix.SchedGetaffinity(0, &old); err != nil {
		return start()
	}
	one.Set(cpu)
	if err := unix.SchedSetaffinity(0, &one); err != nil {
		return start()
	}
	defer func() { _ = unix.SchedSetaffinity(0, &old) }()
	return start()
}
