#!/bin/sh
# two_hosts.sh PROGRAM [ARGS...]
#
# Runs PROGRAM as 4 ranks on two "hosts" made on this machine: two network
# namespaces, each with its own host name (UTS namespace), joined by a veth
# pair. Ranks 0 and 1 run on host A, ranks 2 and 3 on host B, started the
# way the original ACP launcher starts them (--acp-myrank ... and the TCP
# tree), so libacp must use shared memory within each host and UDP across.
# Passes when every rank exits 0 and each reports that mix.
# Exits 77 (skipped) when namespaces cannot be made (not root, no iproute2).
set -u
. "$(dirname "$0")/mix.sh"
prog=$1
shift
if [ "$(id -u)" -ne 0 ] || ! command -v ip >/dev/null 2>&1 || ! command -v unshare >/dev/null 2>&1; then
	echo "two_hosts: skipped: needs root, ip (iproute2) and unshare"
	exit 77
fi
tag=acp$$
nsa=${tag}a nsb=${tag}b
ip_a=10.231.$(( $$ % 200 )).1 ip_b=10.231.$(( $$ % 200 )).2
dir=$(mktemp -d)
cleanup() {
	ip netns del "$nsa" 2>/dev/null
	ip netns del "$nsb" 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT
if ! ip netns add "$nsa" || ! ip netns add "$nsb" ||
	! ip link add "${tag}x" type veth peer name "${tag}y" ||
	! ip link set "${tag}x" netns "$nsa" || ! ip link set "${tag}y" netns "$nsb"; then
	echo "two_hosts: skipped: cannot create network namespaces and a veth pair"
	exit 77
fi
ip -n "$nsa" addr add "$ip_a/24" dev "${tag}x"
ip -n "$nsb" addr add "$ip_b/24" dev "${tag}y"
for ns in "$nsa" "$nsb"; do
	ip -n "$ns" link set lo up
done
ip -n "$nsa" link set "${tag}x" up
ip -n "$nsb" link set "${tag}y" up

n=4
port=$(( 20000 + ($$ % 20000) ))
host_of() { if [ "$1" -lt 2 ]; then echo a; else echo b; fi; }
ip_of() { if [ "$(host_of "$1")" = a ]; then echo "$ip_a"; else echo "$ip_b"; fi; }
parent_of() { if [ "$1" -le 1 ]; then echo 0; else echo $(( $1 / 2 )); fi; }

pids=""
for r in 0 1 2 3; do
	h=$(host_of $r)
	p=$(parent_of $r)
	ns=$nsa
	[ "$h" = b ] && ns=$nsb
	# A fresh UTS namespace gets the host name of its host; the program
	# sees it, libacp takes it for the host's identity.
	ACP_UDP_ADDR=$(ip_of $r) ACP_VERBOSE=1 ACP_SIZE_SMEM=${ACP_SIZE_SMEM:-4194304} \
		timeout 120 ip netns exec "$ns" unshare --uts sh -c "hostname host$h && exec \"\$0\" \"\$@\"" \
		"$prog" "$@" --acp-myrank $r --acp-nprocs $n --acp-port-local $(( port + r )) \
		--acp-host-remote "$(ip_of "$p")" --acp-port-remote $(( port + p )) \
		>"$dir/out.$r" 2>"$dir/err.$r" &
	pids="$pids $!"
done
fail=0
r=0
for pid in $pids; do
	if ! wait "$pid"; then
		echo "two_hosts: rank $r failed"
		fail=1
	fi
	r=$(( r + 1 ))
done
host_name() { echo "host$(host_of "$1")"; }
check_mix two_hosts "$dir" host_name || fail=1
[ "$fail" -eq 0 ] && echo "two_hosts: ok: $(basename "$prog") on 2 hosts x 2 ranks"
exit $fail
