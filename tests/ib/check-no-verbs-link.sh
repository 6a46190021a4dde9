#!/bin/sh
# check-no-verbs-link.sh LIBRARY
#
# libacp loads libibverbs with dlopen when the ib transport opens, so that
# it loads and works on machines without the RDMA packages: the library
# must neither need libibverbs (DT_NEEDED) nor leave an ibv_* symbol to be
# resolved at load time.
lib=$1
fail=0
if readelf -d "$lib" | grep -q 'NEEDED.*libibverbs'; then
  echo "FAIL: $lib has libibverbs as a load-time dependency"; fail=1
fi
undef=$(nm -D --undefined-only "$lib" | grep -E ' _?ibv_' || true)
if [ -n "$undef" ]; then
  echo "FAIL: $lib needs these verbs symbols at load time:"; echo "$undef"; fail=1
fi
[ "$fail" -eq 0 ] && echo "check-no-verbs-link: ok ($lib loads without libibverbs)"
exit $fail
