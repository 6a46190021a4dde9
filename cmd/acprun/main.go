// Command acprun starts an ACP program as N processes on this machine.
//
//	acprun -np N [options] program [args...]
//
// It accepts the options of the original ACP acprun, passes library
// settings to the ranks in ACP_* environment variables (never on their
// command lines), connects the ranks through a rendezvous on the loopback
// interface, and returns the first failing rank's exit status.
package main

import (
	"fmt"
	"io"
	"os"
	"syscall"
)

// version is set at build time (-ldflags "-X main.version=...").
var version = "devel"

func main() {
	end := run(os.Args[1:], os.Stdout, os.Stderr)
	if end.signal != 0 {
		dieBy(end.signal)
	}
	os.Exit(end.status)
}

// outcome is how acprun ends: killed by signal when it is set (a signal
// that stopped the job), otherwise, or if that signal is ignored, with
// status.
type outcome struct {
	status int
	signal syscall.Signal
}

func run(args []string, stdout, stderr io.Writer) outcome {
	c, err := parseArgs(args)
	if err != nil {
		fmt.Fprintf(stderr, "acprun: %v\n", err)
		return outcome{status: exitUsage}
	}
	switch {
	case c.help:
		printUsage(stdout)
		return outcome{}
	case c.version:
		fmt.Fprintf(stdout, "acprun (libacp) %s, for ACP 3.0 programs\n", version)
		return outcome{}
	}
	return launch(c)
}
