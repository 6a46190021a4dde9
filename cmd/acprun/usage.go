package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// handledAbove are settings that acprun's own options cover.
var handledAbove = []string{"nprocs", "portfile", "offsetrank"}

func printUsage(w io.Writer) {
	fmt.Fprint(w, usage)
	fmt.Fprintln(w, "\nLibrary settings:")
	for _, d := range librarySettings().Known() {
		if _, owned := launcherOwned[d.Name]; owned || d.EnvOnly || slices.Contains(handledAbove, d.Name) {
			continue
		}
		def := d.Default
		if strings.HasPrefix(d.Name, "size-smem") {
			def = starterDefault // acprun's, not acp_init's
		}
		fmt.Fprintf(w, "  %-24s %s (default %q)\n", d.Option(), d.Help, def)
	}
}

const usage = `Usage: acprun -np N [options] program [args...]

Starts N processes of program on this machine and connects them as one ACP
job. Options come before the program; "--" ends them.

  -np N, -n N, --acp-np=N, --acp-n=N, --acp-nprocs=N
                           number of processes (default 1)
  -smemsize S, -startermemsize S, --acp-smemsize=S, --acp-startermemsize=S
                           basic-layer starter memory per process, bytes (default 1024)
  -smemsize-cl S, -startermemsize-cl S, --acp-smemsize-cl=S, ...
                           communication-library starter memory (default 1024)
  -smemsize-dl S, -startermemsize-dl S, --acp-smemsize-dl=S, ...
                           data-library starter memory, the acp_malloc heap (default 1024)
  -net D, -ndev D, -envnet D, --acp-net=D ...
                           network: udp, ib or shm (this host only) (sets ACP_TRANSPORTS)
  -machinefile F, -nodefile F, -host H1,H2, -node ...
                           accepted when every host is this machine
  -rsh C, -ssh C, -remoteshell C
                           accepted and ignored
  -mhooksmall, -mhooklarge, -mhookhuge, -mhooklow L, -mhookhigh H
                           malloc hook settings (accepted for compatibility)
  -ethspeed E, --acp-ethernet-speed=E
                           link speed in Mbit/s (accepted for compatibility)
  --acp-NAME VALUE, --acp-NAME=VALUE
                           any library setting below; passed to the ranks as
                           the environment variable ACP_NAME
  --timeout S              stop the job after S seconds and exit with 124; a
                           wait of S/2 in a rank prints the library's state
                           (--acp-hang-report, unless set), and every rank
                           prints it at 9/10 of S (--acp-state-report-at)
  --host-groups K          split the ranks into K groups in blocks that share
                           memory only within themselves, as if on K hosts
                           (ACP_HOST_GROUP; for testing the paths between hosts)
  -debug, --acp-debug      print what acprun does
  -h, -help, --acp-help    this text
  -v, -version, --acp-version
                           print the version

Sizes accept 0x hex. Starter sizes, and any other ACP_* variable, may also
come from acprun's environment; options win.

Exit status: the first failing rank's status (128+s if it was killed by
signal s), 124 on --timeout, 127 if the program cannot be executed, 2 for a
bad command line. SIGINT, SIGTERM and SIGHUP stop the job: acprun passes
the signal on to the ranks and ends by it too; SIGUSR1 and SIGUSR2 are
passed on and the job goes on.
`
