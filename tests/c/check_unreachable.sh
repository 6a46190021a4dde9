#!/bin/sh
# check_unreachable.sh ACPRUN PROGRAM [SECONDS]
#
# Runs PROGRAM (t_unreachable, or tests/ib's t_ib_peer_gone with
# ACP_TRANSPORTS=ib in the environment) on 2 ranks with a 1-second peer
# timeout. Passes when the launcher exits with status 255 within SECONDS
# (default 20) and stderr says that rank 1 is unreachable.
acprun=$1 prog=$2 limit=${3:-20}
name=$(basename "$prog")
err=$(mktemp)
trap 'rm -f "$err"' EXIT

start=$(date +%s)
ACP_PEER_TIMEOUT=1 "$acprun" -np 2 --timeout 60 "$prog" 2>"$err"
status=$?
elapsed=$(( $(date +%s) - start ))
cat "$err" >&2

fail=0
[ "$status" -eq 255 ] || { echo "FAIL: acprun exited with status $status, want 255"; fail=1; }
grep -q 'rank 1 .*unreachable' "$err" || { echo "FAIL: stderr does not say that rank 1 is unreachable"; fail=1; }
[ "$elapsed" -lt "$limit" ] || { echo "FAIL: the job took ${elapsed} s to end"; fail=1; }
[ "$fail" -eq 0 ] && echo "check_unreachable $name: ok (status 255 after ${elapsed} s)"
exit $fail
