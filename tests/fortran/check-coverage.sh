#!/bin/sh
# check-coverage.sh ACP_H ACP_F90 - every function of the basic layer in
# acp.h (from "Infrastructure" up to "Communication library") has its
# binding in module acp: a bind(C) interface under the C name, or (for
# acp_init and acp_abort) a Fortran procedure over a bind(C) interface.
set -eu
header=$1
module=$2
functions=$(sed -n '/^\/\* ---- Infrastructure/,/^\/\* ---- Communication library/p' "$header" |
	sed -n 's/^[a-z_0-9]*[ *]*\(acp_[a-z_0-9]*\)(.*/\1/p' | sort -u)
[ -n "$functions" ] || {
	echo "FAIL: no basic-layer function found in $header (did its section markers change?)"
	exit 1
}
missing=
count=0
for f in $functions; do
	count=$((count + 1))
	grep -q "bind(C, name=\"$f\")" "$module" || missing="$missing $f"
done
if [ -n "$missing" ]; then
	echo "FAIL: functions of $header without a binding in $module:$missing"
	exit 1
fi
echo "all $count basic-layer functions of acp.h are bound in $module"
