#!/bin/sh
# exit-signal-handler: SIGTERM sent to every rank in the middle of a run (as Slurm's time limit
# and scancel deliver it), and SIGUSR1 (Slurm's --signal=USR1@T) with exit-signal = SIGUSR1: the
# ranks finish the iteration, agree, save a checkpoint and exit with status 0; the run resumed
# from it continues bit-identically to an uninterrupted run.
. "$top_srcdir/validation/tests/common.sh"
DECK="$TMPD/sig.in"
write_deck "$DECK" train-iters=100000 lr-decay-iters=1000 lr=1e-3 log-interval=1
# ranks: the ptdp-train processes of this test (not mpirun, whose command line holds the deck too)
ranks() { for p in $(pgrep -f "$DECK"); do [ "$(cat /proc/$p/comm 2>/dev/null)" = ptdp-train ] && echo $p; done; }
signal_run() { # signal_run NAME NP SIGNAL FLAGS...
  name=$1 np=$2 sig=$3
  shift 3
  $MPIRUN -n "$np" "$TRAIN" "$DECK" --save "$TMPD/$name" --exit-signal-handler "$@" < /dev/null > "$TMPD/$name.log" 2>&1 &
  pid=$!
  n=0 # wait for iteration 3 (at most 60 s)
  while ! grep -q "iteration  *3/" "$TMPD/$name.log" 2>/dev/null && [ $n -lt 600 ]; do sleep 0.1; n=$((n + 1)); done
  r=$(ranks)
  [ -n "$r" ] && kill -s "$sig" $r
  ok $? "sent $sig to the $np ranks ($(echo $r | wc -w) processes)"
  [ -n "$r" ] || { kill $pid; wait $pid; return 1; } # no rank found: stop the run rather than train 100000 iterations
  wait $pid
  rc=$?
  it=$(cat "$TMPD/$name/latest_checkpointed_iteration.txt" 2>/dev/null)
  [ $rc -eq 0 ] && [ -n "$it" ] && grep -q "exiting program after receiving SIG$sig at iteration $it" "$TMPD/$name.log"
  ok $? "$name: exit status $rc, checkpoint of iteration $it saved, '$(grep -m1 exiting "$TMPD/$name.log")'"
  [ -n "$it" ] || return 1
  stop=$((it + 3))
  train_log "$name-straight" "$np" --train-iters $stop --debug-dump "$TMPD/$name-straight.h5" "$@"
  ok $? "$name: uninterrupted run of $stop iterations"
  train_log "$name-resumed" "$np" --train-iters $stop --load "$TMPD/$name" --debug-dump "$TMPD/$name-resumed.h5" "$@"
  ok $? "$name: resumed from iteration $it to $stop"
  $PYTHON3 "$top_srcdir/validation/tests/io/compare_resume.py" "$TMPD/$name-straight.h5" "$TMPD/$name-resumed.h5" \
    $((it + 1)) $stop --exact
  ok $? "$name: iterations $((it + 1))..$stop and the final parameters bit-identical to the uninterrupted run"
}
signal_run term 4 TERM --tensor-model-parallel-size 2 --pipeline-model-parallel-size 2
signal_run usr1 2 USR1 --exit-signal SIGUSR1 --use-distributed-optimizer
finish
