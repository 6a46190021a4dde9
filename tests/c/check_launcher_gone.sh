#!/bin/sh
# check_launcher_gone.sh ACPRUN PROGRAM
#
# Runs PROGRAM (t_launcher_gone) on 2 ranks, each through a shell, so that
# the ranks are acprun's grandchildren, and kills acprun with SIGKILL once
# both are ready. Passes when both ranks end within 10 s and stderr says
# that acprun ended under them.
acprun=$1 prog=$2
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT

"$acprun" -np 2 --timeout 90 sh -c '"$0"; :' "$prog" >"$out" 2>"$err" &
launcher=$!
i=0
while [ "$(grep -c ': ready' "$out")" -lt 2 ] && [ $i -lt 600 ]; do
  sleep 0.1; i=$((i + 1))
done
pids=$(sed -n 's/.*: ready (pid \([0-9]*\))$/\1/p' "$out")
kill -KILL "$launcher"
wait "$launcher" 2>/dev/null

# The ranks' process ids, until none is left or 10 s passed.
alive() {
  for p in $pids; do kill -0 "$p" 2>/dev/null && echo "$p"; done
}
i=0
while [ -n "$(alive)" ] && [ $i -lt 100 ]; do
  sleep 0.1; i=$((i + 1))
done
left=$(alive | tr "\n" " ")

cat "$out"
cat "$err" >&2
fail=0
[ "$(echo $pids | wc -w)" -eq 2 ] || { echo "FAIL: the ranks did not both get ready"; fail=1; }
if [ -n "$left" ]; then
  echo "FAIL: rank processes $left still run 10 s after acprun was killed"; fail=1
  kill -KILL $left 2>/dev/null
fi
grep -q 'acprun ended while this process was still in the job' "$err" ||
  { echo "FAIL: stderr does not say that acprun ended"; fail=1; }
[ "$fail" -eq 0 ] && echo "check_launcher_gone: ok (the ranks ended after ${i}00 ms)"
exit $fail
