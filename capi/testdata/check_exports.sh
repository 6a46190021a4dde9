#!/bin/sh
# check_exports.sh LIBRARY HEADER
#
# The library's ABI is exactly what acp.h declares: every dynamic symbol it
# defines must be a function declared in the header, apart from the few the
# original library exported without declaring them (spec: acp_send_ch,
# acp_recv_ch, acp_clear_local_set, acp_clear_local_multiset, acp_free_ws,
# iacp_abort_cl), and it must have the SONAME libacp.so.3.
lib=$1 header=$2
extra="acp_send_ch acp_recv_ch acp_clear_local_set acp_clear_local_multiset acp_free_ws iacp_abort_cl"
fail=0
for sym in $(nm -D --defined-only "$lib" | awk '$2 ~ /^[TtWw]$/ {print $3}' | sed 's/@.*//'); do
	case " $extra " in *" $sym "*) continue ;; esac
	if ! grep -Eq "[ *]$sym\(" "$header"; then
		echo "FAIL: $lib exports $sym, which $header does not declare"
		fail=1
	fi
done
others=$(nm -D --defined-only "$lib" | awk '$2 !~ /^[TtWwA]$/ {print $3}')
if [ -n "$others" ]; then
	echo "FAIL: $lib exports data symbols: $others"
	fail=1
fi
if ! readelf -d "$lib" | grep -q 'SONAME.*libacp\.so\.3'; then
	echo "FAIL: $lib has no SONAME libacp.so.3"
	fail=1
fi
[ "$fail" -eq 0 ] && echo "check_exports: ok ($(nm -D --defined-only "$lib" | awk '$2 ~ /^[TtWw]$/' | wc -l) functions)"
exit $fail
