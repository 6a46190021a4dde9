#!/bin/sh
# check-abort.sh ACPRUN PROGRAM [none] - runs f_abort on 2 ranks, where
# rank 1 calls acp_abort. Passes when acprun exits with status 255 within
# 30 s, stderr carries "acp_abort: fortran abort message" exactly (the
# Fortran string without its trailing blanks; for "none", the line for no
# message), and no rank outlived the abort.
acprun=$1 prog=$2 mode=${3:-}
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT

start=$(date +%s)
"$acprun" -np 2 --timeout 90 "$prog" $mode >"$out" 2>"$err"
status=$?
elapsed=$(($(date +%s) - start))

cat "$out"
cat "$err" >&2
fail=0
if [ "$status" -ne 255 ]; then
	echo "FAIL: acprun exited with status $status, want 255"
	fail=1
fi
if [ "$mode" = none ]; then
	want='acp_abort: (no message)'
else
	want='acp_abort: fortran abort message'
fi
grep -q "$want\$" "$err" || {
	echo "FAIL: no line ending in \"$want\" on stderr"
	fail=1
}
grep -q 'calling acp_abort' "$out" || {
	echo "FAIL: Fortran output written before acp_abort was lost"
	fail=1
}
if grep -q 'not terminated' "$out" "$err"; then
	echo "FAIL: a rank kept running after acp_abort"
	fail=1
fi
if [ "$elapsed" -ge 30 ]; then
	echo "FAIL: the job took $elapsed s to end after acp_abort"
	fail=1
fi
[ "$fail" -eq 0 ] && echo "check-abort: ok (status 255 after $elapsed s)"
exit $fail
