#!/bin/sh
# check_hang_report.sh ACPRUN PROGRAM
#
# Runs PROGRAM (t_hang_report) on 2 ranks with a time limit of 6 seconds.
# Passes when the launcher exits with status 124 and rank 0's stderr holds
# one hang report of its acp_sync, with the goroutines' stacks, printed
# before the limit (at half of it, the launcher's default), and rank 1,
# which never waited, printed none.
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
# The report comes before the launcher's own message about the limit.
report=$(grep -n 'hang report: acp_sync' "$err" | head -n 1 | cut -d: -f1)
limit=$(grep -n 'time limit of' "$err" | head -n 1 | cut -d: -f1)
[ -n "$report" ] && [ -n "$limit" ] && [ "$report" -lt "$limit" ] || { echo "FAIL: the report did not come before the time limit"; fail=1; }
[ "$fail" -eq 0 ] && echo "check_hang_report: ok"
exit $fail
