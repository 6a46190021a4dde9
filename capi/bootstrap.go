package main

import (
	"github.com/libacp/libacp/boot"
	"github.com/libacp/libacp/core"
)

// openBootstrap finds the other processes of the job from the settings that
// the launcher (or the user) gave on the command line or in the environment.
func openBootstrap(s *core.Settings) (core.Exchanger, error) {
	return boot.Open(boot.Options{
		Rank:   s.Int("myrank"),
		NProcs: s.Int("nprocs"),
		// Defaults alone (0 of 1) mean nobody said which rank this is.
		RankSet:    s.Source("myrank") != "default" || s.Source("nprocs") != "default",
		Addr:       s.String("bootstrap-addr"),
		Key:        s.String("job-key"),
		PortLocal:  s.Int("port-local"),
		PortRemote: s.Int("port-remote"),
		HostRemote: s.String("host-remote"),
		Timeout:    s.Duration("peer-timeout"),
	})
}
