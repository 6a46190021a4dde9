#!/bin/sh
# ib_compare.sh [BUILD_DIR] [ROUNDS] [all|bw|lat]
#
# libacp over the ib transport side by side with perftest on the same
# Soft-RoCE device, in one virtual machine run (rxe-vm, from
# ../shared/tools beside the checkout, or $RXE_VM_TOOL):
#
#   acpbench pingpong   (ACP_TRANSPORTS=ib)  vs  ib_write_lat -s SIZE
#   acpbench putbw      (windowed puts)      vs  ib_write_bw -s SIZE
#     (from registered memory, and with -starter from starter memory)
#   acp_add8 + acp_complete on a peer's word vs  ib_atomic_lat
#     (the owner's CPU executes it, and with --acp-ib-atomics nic the adapter,
#     on starter memory and on registered memory)
#
# and, once, the memory a process spends on the transport and per peer
# contacted (the ib tests' memory report: queue pairs, mapped verbs
# queues, connection state).
#
# The runs alternate, ROUNDS times (default 3), so that a slow moment of the
# machine hits both sides. bw runs only the bandwidth pairs, lat only the
# latency ones (pingpong, atomics), for more rounds in the same time. Raw outputs go to BUILD_DIR/ib-compare/, and a
# table of per-size medians and ratios (libacp / perftest) is printed.
# Needs a built tree (cmake --build BUILD_DIR; default ./build).
set -u
here=$(cd "$(dirname "$0")" && pwd)
src=$(dirname "$here")
build=$(cd "${1:-$src/build}" && pwd) || exit 1
rounds=${2:-3}
what=${3:-all}
case $what in all|bw|lat) ;; *) echo "ib_compare: third argument: all, bw or lat, not $what"; exit 2;; esac
out=$build/ib-compare

if [ "${RXE_VM:-}" != 1 ]; then
  tool=${RXE_VM_TOOL:-$src/../shared/tools/rxe-vm}
  [ -x "$tool" ] || { echo "ib_compare: no rxe-vm at $tool (set RXE_VM_TOOL)"; exit 1; }
  mkdir -p "$out" && cd "$out" || exit 1
  # the memory report runs from the ib tests, built here
  (cd "$src" && ${GO:-go} test -c -o "$out/ib.test" ./ib/) || echo "ib_compare: no ib test binary: memory report skipped"
  cpus=$(sh "$src/scripts/rxe-cpus") || exit 1
  exec "$tool" --cpus "$cpus" --timeout 3000 -- sh "$here/ib_compare.sh" "$build" "$rounds" "$what"
fi

# ---- inside the VM ----
cd "$out" || exit 1
dev=${RXE_VM_DEV:-rxe0} ip=${RXE_VM_IP:-10.77.0.1}
gid=1 # ::ffff:10.77.0.1, RoCE v2: the GID the ib transport chooses too
acprun=$build/bin/acprun acpbench=$build/bench/acpbench

# The atomic latency program (the counterpart of ib_atomic_lat): rank 0
# adds 1 to a word of rank 1's starter memory and waits, N times; with a
# second argument "reg", to a word of memory rank 1 registered.
cat > atomic_lat.c <<'EOF'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "acp.h"
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
int main(int argc, char **argv)
{
    if (acp_init(&argc, &argv)) return 1;
    int n = argc > 1 ? atoi(argv[1]) : 1000, bad = 0;
    acp_ga_t target = acp_query_starter_ga(1), result = acp_query_starter_ga(0) + 64;
    uint64_t *res = acp_query_address(result);
    if (argc > 2 && strcmp(argv[2], "reg") == 0) {
        /* Rank 1 registers a word and leaves its GA in its starter memory. */
        static uint64_t word[8];
        acp_ga_t *slot = acp_query_address(acp_query_starter_ga(acp_rank()) + 128);
        if (acp_rank() == 1) *slot = acp_query_ga(acp_register_memory(word, sizeof word, 0), word);
        acp_sync();
        if (acp_rank() == 0) {
            acp_complete(acp_copy(acp_query_starter_ga(0) + 128, acp_query_starter_ga(1) + 128, 8, ACP_HANDLE_NULL));
            target = *slot;
        }
    }
    if (acp_rank() == 0) {
        for (int i = 0; i < n / 10; i++) acp_complete(acp_add8(result, target, 1, ACP_HANDLE_NULL));
        double t0 = now();
        for (int i = 0; i < n; i++) {
            acp_complete(acp_add8(result, target, 1, ACP_HANDLE_NULL));
            bad += *res != (uint64_t)(n / 10 + i);
        }
        double t = now() - t0;
        printf("atomic_lat: fetch-and-add 8 bytes, %d iterations, t_avg[usec] %.2f\n", n, t / n * 1e6);
    }
    acp_sync();
    acp_finalize();
    if (bad) printf("atomic_lat: %d wrong fetched values\n", bad);
    return bad != 0;
}
EOF
cc -O2 -I"$src/include" -o atomic_lat atomic_lat.c -L"$build/lib" -Wl,-rpath,"$build/lib" -lacp || exit 1

wait_port() { i=0; while [ $i -lt 100 ]; do ss -ltn | grep -q ":$1 " && return 0; sleep 0.1; i=$((i+1)); done; return 1; }
perf() { # perftest tool and options: server, then client
  timeout 300 "$@" -d "$dev" -x "$gid" > "perf-server.txt" 2>&1 &
  wait_port 18515
  timeout 300 "$@" -d "$dev" -x "$gid" "$ip"
  wait
}

sizes="2 8 64 512 4096 65536 262144 1048576 4194304"
export ACP_TRANSPORTS=ib
# Results of an earlier run (more rounds, or the other half) stay out of
# this one's medians.
rm -f acpbench.*.txt acpbw.*.txt acpbwst.*.txt write_lat.*.txt write_bw.*.txt atomic_lat.*.txt atomic_nic.*.txt atomic_nicreg.*.txt ib_atomic_lat.*.txt
lat=1 bw=1
[ "$what" = bw ] && lat=0
[ "$what" = lat ] && bw=0
for r in $(seq "$rounds"); do
  if [ $lat = 1 ]; then
    echo "== round $r: acpbench pingpong"
    timeout 600 "$acprun" -np 2 --timeout 590 "$acpbench" pingpong > "acpbench.$r.txt" 2>&1 || echo "acpbench failed (round $r)"
  fi
  if [ $bw = 1 ]; then
    echo "== round $r: acpbench putbw"
    timeout 600 "$acprun" -np 2 --timeout 590 "$acpbench" putbw > "acpbw.$r.txt" 2>&1 || echo "acpbench putbw failed (round $r)"
    echo "== round $r: acpbench putbw -starter"
    timeout 600 "$acprun" -np 2 --timeout 590 "$acpbench" putbw -starter -min 4096 > "acpbwst.$r.txt" 2>&1 || echo "acpbench putbw -starter failed (round $r)"
  fi
  for s in $sizes; do
    # acpbench's repetitions: 1000, at most 40 MiB / size
    n=$((41943040 / s)); [ $n -gt 1000 ] && n=1000; [ $n -lt 10 ] && n=10
    if [ $lat = 1 ]; then
      echo "== round $r: ib_write_lat, $s bytes"
      perf ib_write_lat -s "$s" -n "$n" > "write_lat.$r.$s.txt" 2>&1 || echo "ib_write_lat -s $s failed (round $r)"
    fi
    if [ $bw = 1 ]; then
      echo "== round $r: ib_write_bw, $s bytes"
      perf ib_write_bw -s "$s" -n $((n < 200 ? 200 : n)) > "write_bw.$r.$s.txt" 2>&1 || echo "ib_write_bw -s $s failed (round $r)"
    fi
  done
  if [ $lat = 1 ]; then
    echo "== round $r: atomics"
    timeout 300 "$acprun" -np 2 --timeout 290 ./atomic_lat 2000 > "atomic_lat.$r.txt" 2>&1 || echo "atomic_lat failed (round $r)"
    ACP_IB_ATOMICS=nic timeout 300 "$acprun" -np 2 --timeout 290 ./atomic_lat 2000 > "atomic_nic.$r.txt" 2>&1 || echo "atomic_lat --acp-ib-atomics nic failed (round $r)"
    ACP_IB_ATOMICS=nic timeout 300 "$acprun" -np 2 --timeout 290 ./atomic_lat 2000 reg > "atomic_nicreg.$r.txt" 2>&1 || echo "atomic_lat reg --acp-ib-atomics nic failed (round $r)"
    perf ib_atomic_lat -n 2000 > "ib_atomic_lat.$r.txt" 2>&1 || echo "ib_atomic_lat failed (round $r)"
  fi
done

echo "== memory per peer contacted"
if [ -x ./ib.test ]; then
  ACP_IB_MEMORY_REPORT=1 timeout 300 ./ib.test -test.v -test.run TestMemoryReport > memory.txt 2>&1 || echo "memory report failed"
else
  echo "no ib test binary: memory report skipped" > memory.txt
fi

# ---- summary ----
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "-"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
col() { # file-glob size column: the value of a size row in each round
  # (perftest prints inf when it could not read its cycle clock: no value)
  for f in $1; do awk -v s="$2" -v c="$3" '$1 == s && NF >= c && $c !~ /inf|nan/ { print $c; exit }' "$f" 2>/dev/null; done
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "-" || b == "-" || b == 0) print "-"; else printf "%.2f", a / b }'; }
# The median over the rounds of the ratio within each round: the two
# figures of a round were taken minutes apart, so on a host whose load
# drifts this is steadier than the ratio of the medians.
round_ratio() { # acpbench-file-prefix perftest-file-prefix size acpbench-column perftest-column
  for r in $(seq "$rounds"); do
    a=$(col "$1.$r.txt" "$3" "$4")
    b=$(col "$2.$r.$3.txt" "$3" "$5")
    [ -n "$a" ] && [ -n "$b" ] && awk -v a="$a" -v b="$b" 'BEGIN { if (b > 0) print a / b }'
  done | median | awk '{ if ($1 == "-") print "-"; else printf "%.2f", $1 }'
}
echo
echo "Medians of $rounds rounds on $dev ($(nproc) vCPUs), $(date -u +%Y-%m-%d)"
echo
echo "Ratios: of the medians, then (in brackets) the median of each round's own ratio."
echo
echo "putbw: windows in registered memory; putbw -starter: in starter memory,"
echo "from 4 KiB (both posted and completed from C)."
echo
echo "| bytes | acpbench pingpong t[usec] | ib_write_lat t_avg | ratio | ib_write_lat t_typical | acpbench putbw MB/s | ib_write_bw MB/s | ratio | putbw -starter MB/s | ratio |"
echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
for s in $sizes; do
  al=$(col "acpbench.*.txt" "$s" 3 | median)
  ab=$(col "acpbw.*.txt" "$s" 3 | median)
  wl=$(col "write_lat.*.txt" "$s" 6 | median)
  wt=$(col "write_lat.*.txt" "$s" 5 | median)
  wb=$(col "write_bw.*.txt" "$s" 4 | median)
  rl=$(round_ratio acpbench write_lat "$s" 3 6)
  rb=$(round_ratio acpbw write_bw "$s" 3 4)
  as=$(col "acpbwst.*.txt" "$s" 3 | median)
  rs=$(round_ratio acpbwst write_bw "$s" 3 4)
  echo "| $s | $al | $wl | $(ratio "$al" "$wl") ($rl) | $wt | $ab | $wb | $(ratio "$ab" "$wb") ($rb) | $as | $(ratio "$as" "$wb") ($rs) |"
done
aa=$(for f in atomic_lat.*.txt; do sed -n 's/.*t_avg\[usec\] //p' "$f" 2>/dev/null; done | median)
ia=$(for f in ib_atomic_lat.*.txt; do awk '$1 == 8 && NF >= 6 { print $6; exit }' "$f" 2>/dev/null; done | median)
echo
echo "| atomic (8 bytes) | libacp add8+complete t_avg[usec] | ib_atomic_lat t_avg | ratio |"
echo "|---|---:|---:|---:|"
an=$(for f in atomic_nic.*.txt; do sed -n 's/.*t_avg\[usec\] //p' "$f" 2>/dev/null; done | median)
echo "| fetch-and-add (owner's CPU, the default) | $aa | $ia | $(ratio "$aa" "$ia") |"
echo "| fetch-and-add, --acp-ib-atomics nic | $an | $ia | $(ratio "$an" "$ia") |"
ar=$(for f in atomic_nicreg.*.txt; do sed -n 's/.*t_avg\[usec\] //p' "$f" 2>/dev/null; done | median)
echo "| fetch-and-add on registered memory, --acp-ib-atomics nic | $ar | $ia | $(ratio "$ar" "$ia") |"
echo
echo "Memory (rank 0 of 1+N processes, N peers contacted):"
grep 'peers contacted' memory.txt | sed 's/^ *rxe_test.go:[0-9]*: //'
