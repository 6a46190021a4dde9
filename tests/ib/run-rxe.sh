#!/bin/sh
# run-rxe.sh SOURCE_DIR BUILD_DIR ACPRUN PEER_GONE_PROGRAM
#
# The ib transport's tests on a real verbs device: a throwaway VM with
# Soft-RoCE (rxe-vm, from ../shared/tools beside the checkout, or $RXE_VM_TOOL).
# Inside it, in order:
#   1. the Go tests of ib/ that need a device (conformance suite, lazy
#      connections, stale keys, bounds, one counter hammered through every
#      path, NIC atomics, huge registrations, a vanished peer), and those of
#      capi/ (the conformance suite through the C fast path, which posts
#      and completes copies to and from peers' starter memory and
#      registrations itself, and its barriers, a vanished peer
#      of a put the C path posted, and the suite on two "hosts" with
#      shm within and ib between, --acp-host-group);
#   2. the basic-layer C tests at 2 and 4 ranks with ACP_TRANSPORTS=ib
#      (ACP_IB_RXE_ALL=1: every C test at 2 and 4 ranks, middle layer too);
#      t_unreachable is left out: its frozen rank still takes RDMA writes,
#      which need no CPU, so its copy completes over ib -- correctly; so is
#      t_readonly: the NIC writes the pages pinned at registration whatever
#      their protection since (docs/decisions.md, errors); t_readonly_reg
#      (memory read-only when registered) runs;
#   2b. with --acp-ib-atomics nic: t_atomic, t_random and t_readonly_reg
#      (atomics on memory registered for reads only) over ib, the first two over
#      shm,ib (copies through shared memory, every 8-byte atomic on the
#      adapter), and the middle layer's users of atomics (segmented
#      buffers' mailboxes, channels, the heap's locks) over ib;
#   2b'. the C tests on two "hosts" (acprun --host-groups 2) over shm,ib,
#      basic layer and middle layer (channels, the heap, containers), and
#      t_atomic and t_random there with --acp-ib-atomics nic;
#   2c. a channel pingpong of 4-16 KiB messages over ib (a slot read
#      while the adapter's driver writes it once passed with an old header);
#   3. a frozen peer (tests/c/check_unreachable.sh): the job ends with an error
#      naming it;
#   4. a registration beyond the locked-memory limit (without CAP_IPC_LOCK,
#      which root has and which lifts the limit): the message names it.
# Exit 77 (CTest: skipped) when no VM can be started here.
set -u
src=$1 build=$2 acprun=$3 peer_gone=$4
GO=${GO:-go}
rxe_vm=${RXE_VM_TOOL:-$src/../shared/tools/rxe-vm}
work=$build/ib-rxe

if [ ! -x "$rxe_vm" ]; then
  echo "ib_rxe: SKIPPED: no rxe-vm at $rxe_vm (set RXE_VM_TOOL); the ib transport is tested on a Soft-RoCE VM"
  exit 77
fi
mkdir -p "$work" || exit 1

# The Go test binaries are built here, run in the VM.
echo "== building the ib and capi test binaries"
(cd "$src" && "$GO" test -c -o "$work/ib.test" ./ib/ && "$GO" test -c -o "$work/capi.test" ./capi/) || exit 1

# A CTest directory of its own for the C tests, so that the VM's ctest run
# keeps its logs apart from the one that started it.
echo "subdirs(\"$build/tests/c\")" > "$work/CTestTestfile.cmake"
# C programs (label c) at 2 and 4 ranks, not the runs that choose another
# transport or launcher, nor the 4 GiB copy (the VM has 2 GiB).
exclude='^(udp|large|ib|dl|cl|mpi|mpich|openmpi|netns|env|hosts)$'
[ "${ACP_IB_RXE_ALL:-}" = 1 ] && exclude='^(udp|large|ib|mpi|mpich|openmpi|netns|env|hosts)$'

cat > "$work/guest.sh" <<EOF
cd "$work" || exit 1
: > guest-started
fail=0
# The conformance suite's random case at 150 batches (400 elsewhere) and
# its contended atomics at 600 per rank (2000): an ib batch is tens of
# emulated round trips, an atomic one or more (the four runs of the suite
# spent 20 s each on the 2000). So t_atomic's contention: 2,000 adds and
# 200 compare-and-swap increments per rank (10,000 and 1,000), because
# Soft-RoCE's atomics are messages the owner's CPU serves, and 4 ranks'
# busy waits share the host's cores (3 issuers took 9 ms per served
# atomic, 100 s per run at 4 ranks, and t_atomic runs 5 times here).
# t_bind's traffic, there to start the library's threads, at 300 rounds
# (2,000): each round's atomic and two barriers took 16-40 ms here, 81 s
# in all (BENCHMARKS.md, 2026-11-29, second section).
export ACP_RANDOM_OPS_BATCHES=150 ACP_CONTENTION_OPS=600 ACPT_CONTENTION_ADDS=2000 ACPT_BIND_ROUNDS=300
echo "[\${SECONDS}s] == ib Go tests on \$RXE_VM_DEV"
timeout 900 ./ib.test -test.v -test.timeout 880s > go-tests.log 2>&1 || fail=1
grep -E '^(--- |    --- |PASS|FAIL|ok )' go-tests.log
[ \$fail -eq 0 ] || { echo "-- go-tests.log (tail):"; tail -n 60 go-tests.log; }
echo "[\${SECONDS}s] == capi Go tests over ib (the C fast path)"
timeout 600 ./capi.test -test.v -test.run 'IB\$' -test.timeout 580s > capi-tests.log 2>&1 || {
  fail=1; echo "-- capi-tests.log (tail):"; tail -n 60 capi-tests.log; }
grep -E '^(--- |    --- |PASS|FAIL|ok )' capi-tests.log
echo "[\${SECONDS}s] == the locked-memory limit named (ulimit -l 4096, no CAP_IPC_LOCK)"
setpriv --bounding-set=-ipc_lock --inh-caps=-ipc_lock sh -c 'ulimit -l 4096 &&
  ACP_IB_MEMLOCK_TEST=1 timeout 120 ./ib.test -test.v -test.run TestMemlockLimitNamed' > memlock.log 2>&1 || {
  fail=1; tail -n 30 memlock.log; }
grep -E '^(--- |PASS|FAIL)' memlock.log
echo "[\${SECONDS}s] == C tests over ib, 2 and 4 ranks"
ACP_TRANSPORTS=ib timeout 1200 ctest --test-dir "$work" -L '^c\$' -L '^np[24]\$' -LE '$exclude' \\
  -E '^t_unreachable|^t_readonly_(np|singleton)|_owner_served_' --timeout 300 --output-on-failure || fail=1
echo "[\${SECONDS}s] == C atomics tests with --acp-ib-atomics nic: over ib, and with same-host copies over shm"
ACP_TRANSPORTS=ib ACP_IB_ATOMICS=nic timeout 900 ctest --test-dir "$work" \\
  -R '^t_(atomic|random)_np[24]\$|^t_readonly_reg_np2\$|^t_(segbuf|ch_random|dl_hashed|dl_malloc)_np4\$' --timeout 300 --output-on-failure || fail=1
ACP_TRANSPORTS=shm,ib ACP_IB_ATOMICS=nic timeout 600 ctest --test-dir "$work" \\
  -R '^t_(atomic|random)_np4\$' --timeout 300 --output-on-failure || fail=1
echo "[\${SECONDS}s] == C tests on two hosts (acprun --host-groups 2): shm within, ib between"
ACP_TRANSPORTS=shm,ib timeout 900 ctest --test-dir "$work" -L '^hosts\$' --timeout 300 --output-on-failure || fail=1
echo "[\${SECONDS}s] == atomics on two hosts with --acp-ib-atomics nic: every 8-byte atomic on the adapter, same-host ones too"
ACP_TRANSPORTS=shm,ib ACP_IB_ATOMICS=nic timeout 600 ctest --test-dir "$work" \\
  -R '^t_(atomic|random)_hosts2_np4\$' --timeout 300 --output-on-failure || fail=1
echo "[\${SECONDS}s] == channel messages of 4-16 KiB over ib (several ring slots each, read while they land)"
ACP_TRANSPORTS=ib timeout 300 "$acprun" -np 2 --timeout 280 "$build/bench/acpbench" chpingpong -min 4096 -max 16384 -rounds 1 > chpingpong.log 2>&1 || {
  fail=1; tail -n 20 chpingpong.log; }
grep -v '^#' chpingpong.log
echo "[\${SECONDS}s] == a frozen peer"
ACP_TRANSPORTS=ib sh "$src/tests/c/check_unreachable.sh" "$acprun" "$peer_gone" 30 || fail=1
echo "[\${SECONDS}s] == done"
exit \$fail
EOF

cpus=$(sh "$src/scripts/rxe-cpus") || exit 1
echo "== starting the Soft-RoCE VM ($rxe_vm, $cpus vCPUs)"
cd "$work" || exit 1
# A guest kernel that hangs at boot (seen once in about a dozen boots
# under software emulation: a kworker in a soft lockup, no output) gets one
# more try: the guest script marks its start, and a VM that has not started
# it within boot_limit seconds (a fresh machine's first run installs the
# guest kernel first) is stopped.
boot_limit=${ACP_RXE_BOOT_LIMIT:-600}
for try in 1 2; do
  rm -f guest-started
  "$rxe_vm" --cpus "$cpus" --timeout 1400 -- bash guest.sh &
  vm=$!
  waited=0
  while [ ! -e guest-started ] && [ $waited -lt "$boot_limit" ] && kill -0 $vm 2>/dev/null; do
    sleep 2
    waited=$((waited + 2))
  done
  if [ ! -e guest-started ] && kill -0 $vm 2>/dev/null; then
    echo "ib_rxe: the VM did not start the tests within ${boot_limit}s (its kernel hung at boot?); stopping it (try $try of 2)"
    kill -TERM $vm
    wait $vm
    status=125
    continue
  fi
  wait $vm
  status=$?
  break
done
case $status in
0) echo "ib_rxe: all passed" ;;
124) echo "ib_rxe: FAILED: the VM run exceeded its time limit" ;;
125) echo "ib_rxe: SKIPPED: the Soft-RoCE VM could not start here (see the messages above)"; exit 77 ;;
*) echo "ib_rxe: FAILED (status $status)" ;;
esac
exit $status
