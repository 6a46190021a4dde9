# Sourced by two_hosts.sh and pid_namespaces.sh, whose 4 ranks run as two
# pairs that may share memory only within a pair.
#
# check_mix TEST DIR WHERE: prints each rank's output from DIR/out.R and
# DIR/err.R, each line prefixed with "[<WHERE R> rank R]" (WHERE is a
# function naming rank R's pair), and fails unless every rank reported
# shared memory to its partner and UDP to the other pair.
check_mix() {
	test=$1 dir=$2 where=$3 bad=0
	for r in 0 1 2 3; do
		w=$($where "$r")
		sed "s/^/[$w rank $r] /" "$dir/out.$r"
		sed "s/^/[$w rank $r] /" "$dir/err.$r" >&2
		if ! grep -q 'transports: shm to 1 process(es), udp to 2 process(es)' "$dir/err.$r"; then
			echo "$test: FAIL: rank $r did not use shared memory within $w and UDP across"
			bad=1
		fi
	done
	return $bad
}
