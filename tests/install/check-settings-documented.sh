#!/bin/sh
# check-settings-documented.sh ACPRUN PAGE - every library setting that
# `acprun -h` lists (the core's and every linked transport's) must be
# described in PAGE (man/acp_info.1), so the manual never lags the code.
set -eu
acprun=$1
page=$2
settings=$("$acprun" -h | sed -n '/^Library settings:/,$s/^ *\(--acp-[a-z0-9-]*\).*/\1/p')
[ -n "$settings" ] || {
	echo "FAIL: $acprun -h lists no library settings"
	exit 1
}
missing=
count=0
for opt in $settings; do
	count=$((count + 1))
	# In man(7) source every dash is written \-; the name must end there
	# (--acp-size-smem is not documented by --acp-size-smem-cl).
	escaped=$(printf '%s' "$opt" | sed 's/-/\\\\-/g')
	grep -Eq -- "$escaped([^a-z0-9\\\\]|\\\\[^-]|\$)" "$page" || missing="$missing $opt"
done
if [ -n "$missing" ]; then
	echo "FAIL: settings not described in $page:$missing"
	echo "add each under SETTINGS there, with its default and meaning"
	exit 1
fi
echo "all $count settings of acprun -h are described in $page"
