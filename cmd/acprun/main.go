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
)

// version is set at build time (-ldflags "-X main.version=...").
var version = "devel"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	c, err := parseArgs(args)
	if err != nil {
		fmt.Fprintf(stderr, "acprun: %v\n", err)
		return exitUsage
	}
	switch {
	case c.help:
		printUsage(stdout)
		return 0
	case c.version:
		fmt.Fprintf(stdout, "acprun (libacp) %s, for ACP 3.0 programs\n", version)
		return 0
	}
	return launch(c)
}
