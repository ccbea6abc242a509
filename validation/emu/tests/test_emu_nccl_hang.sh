#!/bin/sh
# A peer that never joins (test_emu_nccl_transport.c, mode hang): rank 0's wait must end once
# the wait timeout (2 s here; the key distributed-timeout-minutes in a run) has passed, with a
# message naming the group and the operation, and a non-zero exit: an NCCL all-reduce waited
# for through the backend (synchronize) and by polling its request (test), and the operations
# the NCCL transport delegates to MPI (an all-reduce of doubles, a receive).  `timeout` turns a
# hang into a failure; the whole run must take well under it.
# And a failure NCCL reports (the emulation's injected network error on rank 1, see emu_nccl_comm.cc):
# rank 1's watchdog finds it through ncclCommGetAsyncError at once, whatever the timeout.
. "$top_srcdir/validation/tests/common.sh"
T="$top_builddir/validation/emu/tests/test_emu_nccl_transport"
expect() { # how: the message rank 0's failed wait must print
  case $1 in
    sync | test) echo "NCCL: the all-reduce of 4096 floats on the tp group (world ranks 0 1) has not completed after 2" ;;
    mpi) echo "the MPI all-reduce of 1 doubles on the tp group (world ranks 0 1) has not completed after 2" ;;
    recv) echo "the MPI receive of 4096 floats from rank 1 (tag 7) on the tp group (world ranks 0 1) has not completed after 2" ;;
  esac
}
for how in sync test mpi recv; do
  t0=$(date +%s)
  timeout 120 $MPIRUN -n 2 "$T" hang 2 $how > "$TMPD/$how" 2>&1
  rc=$?
  t1=$(date +%s)
  grep "ptdp: error\|test_emu_nccl_transport" "$TMPD/$how"
  [ $rc -ne 0 ] && [ $rc -ne 124 ]
  ok $? "$how: non-zero exit, no hang (exit $rc, $((t1 - t0)) s)"
  grep -qF "$(expect $how)" "$TMPD/$how"
  ok $? "$how: the timeout's message names the group and the operation"
  grep -q "wait ended after [2-9]\.[0-9] s with an error" "$TMPD/$how"
  ok $? "$how: the wait ended with an error between 2 and 10 s"
done
t0=$(date +%s)
PTDP_EMU_NCCL_FAULT=error:1:1 timeout 120 $MPIRUN -n 2 "$T" order > "$TMPD/async" 2>&1
rc=$?
t1=$(date +%s)
grep "ptdp: error" "$TMPD/async"
[ $rc -ne 0 ] && [ $rc -ne 124 ] && [ $((t1 - t0)) -lt 60 ]
ok $? "injected network error: non-zero exit, no hang (exit $rc, $((t1 - t0)) s)"
grep -q "error \[rank 1\]: NCCL reported an error on the tp group (world ranks 0 1) during all-reduce of 4096 floats: remote process exited or there was a network error" "$TMPD/async"
ok $? "injected network error: rank 1's message names the group, the collective and NCCL's error"
finish
