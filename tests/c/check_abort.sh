#!/bin/sh
# check_abort.sh ACPRUN PROGRAM [null]
#
# Runs PROGRAM (t_abort) on 2 ranks, where rank 1 calls acp_abort. Passes
# when the launcher exits with status 255 within 30 s, stderr carries the
# message (or, for acp_abort(NULL), an acp_abort line), and no rank outlived
# the abort.
acprun=$1 prog=$2 mode=${3:-}
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT

start=$(date +%s)
"$acprun" -np 2 --timeout 90 "$prog" $mode >"$out" 2>"$err"
status=$?
elapsed=$(( $(date +%s) - start ))

cat "$out"
cat "$err" >&2
fail=0
if [ "$status" -ne 255 ]; then
  echo "FAIL: acprun exited with status $status, want 255"; fail=1
fi
if [ "$mode" = null ]; then
  grep -q 'acp_abort' "$err" || { echo "FAIL: no acp_abort line on stderr"; fail=1; }
else
  grep -q 'test message' "$err" || { echo "FAIL: \"test message\" not on stderr"; fail=1; }
fi
if grep -q 'not terminated' "$out" "$err"; then
  echo "FAIL: a rank kept running after acp_abort"; fail=1
fi
if [ "$elapsed" -ge 30 ]; then
  echo "FAIL: the job took ${elapsed} s to end after acp_abort"; fail=1
fi
[ "$fail" -eq 0 ] && echo "check_abort: ok (status 255 after ${elapsed} s)"
exit $fail
