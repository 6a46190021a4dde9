#!/bin/sh
# check_hang_report.sh ACPRUN PROGRAM
#
# Runs PROGRAM (t_hang_report) on 2 ranks with a time limit of 6 seconds.
# Passes when the launcher exits with status 124 and rank 0's stderr holds
# one hang report of its acp_sync, with the goroutines' stacks, printed
# before the limit (at half of it, the launcher's default), and rank 1,
# which never waited, printed none; and when both ranks printed one state
# report (at 9/10 of the limit, the launcher's other default) before the
# limit, rank 0's listing its acp_sync among the waits in progress and rank
# 1's none: rank 1's is what a rank that computes too long says.
acprun=$1 prog=$2
err=$(mktemp)
trap 'rm -f "$err"' EXIT

"$acprun" -np 2 --timeout 6 "$prog" 2>"$err"
status=$?
cat "$err" >&2

fail=0
[ "$status" -eq 124 ] || { echo "FAIL: acprun exited with status $status, want 124"; fail=1; }
n=$(grep -Ec '^acp\[0\]: hang report: acp_sync has waited 3(\.[0-9]+)?s \(--acp-hang-report / ACP_HANG_REPORT 3s\)' "$err")
[ "$n" -eq 1 ] || { echo "FAIL: $n hang reports of rank 0's acp_sync, want 1"; fail=1; }
grep -q '^acp\[0\]: hang report: the library.s goroutines:' "$err" || { echo "FAIL: no goroutine stacks in the report"; fail=1; }
grep -q '^acp\[0\]: hang report: goroutine [0-9]* \[' "$err" || { echo "FAIL: no goroutine in the report"; fail=1; }
! grep -q '^acp\[1\]: hang report' "$err" || { echo "FAIL: rank 1 reported a hang it was not in"; fail=1; }
for r in 0 1; do
  n=$(grep -Ec "^acp\[$r\]: state report: this process has run 5\.4s since acp_init \(--acp-state-report-at / ACP_STATE_REPORT_AT\)" "$err")
  [ "$n" -eq 1 ] || { echo "FAIL: $n state reports of rank $r, want 1"; fail=1; }
  grep -q "^acp\[$r\]: state report: goroutine [0-9]* \[" "$err" || { echo "FAIL: no goroutine in rank $r's state report"; fail=1; }
done
grep -Eq '^acp\[0\]: state report:   acp_sync, for [0-9.]+m?s$' "$err" || { echo "FAIL: rank 0's state report does not list its acp_sync among the waits in progress"; fail=1; }
grep -q '^acp\[1\]: state report: waits in progress (that slept): 0$' "$err" || { echo "FAIL: rank 1's state report lists waits, but it computed"; fail=1; }
# The reports come before the launcher's own message about the limit.
limit=$(grep -n 'time limit of' "$err" | head -n 1 | cut -d: -f1)
for what in 'hang report: acp_sync' 'acp\[1\]: state report: this process'; do
  report=$(grep -n "$what" "$err" | head -n 1 | cut -d: -f1)
  [ -n "$report" ] && [ -n "$limit" ] && [ "$report" -lt "$limit" ] || { echo "FAIL: '$what' did not come before the time limit"; fail=1; }
done
[ "$fail" -eq 0 ] && echo "check_hang_report: ok"
exit $fail
