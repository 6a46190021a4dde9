#!/bin/sh
# pid_namespaces.sh PROGRAM [ARGS...]
#
# Runs PROGRAM as 4 ranks on this host, ranks 0 and 1 in one PID namespace
# and ranks 2 and 3 in another, as containers that share the host's name,
# kernel and network but not its process ids (host networking) run them.
# Process ids do not name the same process across the two namespaces, so
# libacp must use shared memory only within each and UDP across; a rank
# that mapped the memory a process id names in its own namespace would
# write into the wrong process, or into itself. Ranks are started the way
# the original ACP launcher starts them (--acp-myrank ... and the TCP tree).
# Passes when every rank exits 0 and each reports that mix.
# Exits 77 (skipped) when PID namespaces cannot be made (not root, no unshare).
set -u
. "$(dirname "$0")/mix.sh"
prog=$1
shift
if [ "$(id -u)" -ne 0 ] || ! command -v unshare >/dev/null 2>&1 ||
	! unshare --pid --fork --mount-proc true 2>/dev/null; then
	echo "pid_namespaces: skipped: needs root and unshare with PID namespaces"
	exit 77
fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
n=4
port=$(( 20000 + ($$ % 20000) ))
parent_of() { if [ "$1" -le 1 ]; then echo 0; else echo $(( $1 / 2 )); fi; }

# One namespace per pair: its shell starts both ranks and returns the first
# failure.
pair() {
	first=$1
	shift
	unshare --pid --fork --mount-proc sh -c '
		first=$1 n=$2 port=$3; shift 3
		pids=""
		for r in $first $((first + 1)); do
			if [ "$r" -le 1 ]; then p=0; else p=$((r / 2)); fi
			ACP_VERBOSE=1 ACP_SIZE_SMEM=${ACP_SIZE_SMEM:-4194304} timeout 120 "$@" \
				--acp-myrank $r --acp-nprocs $n --acp-port-local $((port + r)) \
				--acp-host-remote 127.0.0.1 --acp-port-remote $((port + p)) \
				>"$DIR/out.$r" 2>"$DIR/err.$r" &
			pids="$pids $!"
		done
		rc=0
		for pid in $pids; do wait "$pid" || rc=1; done
		exit $rc' pair "$first" "$n" "$port" "$prog" "$@"
}
export DIR="$dir"
pair 0 "$@" &
a=$!
pair 2 "$@" &
b=$!
fail=0
wait "$a" || { echo "pid_namespaces: a rank of namespace A failed"; fail=1; }
wait "$b" || { echo "pid_namespaces: a rank of namespace B failed"; fail=1; }
namespace_of() { if [ "$1" -lt 2 ]; then echo "PID namespace A"; else echo "PID namespace B"; fi; }
check_mix pid_namespaces "$dir" namespace_of || fail=1
[ "$fail" -eq 0 ] && echo "pid_namespaces: ok: $(basename "$prog") in 2 PID namespaces x 2 ranks"
exit "$fail"
