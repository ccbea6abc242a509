#!/bin/sh
# The run file: h5py reads it while the run goes (a reader polling during a t2 p2 v2 run on 4
# ranks sees the intervals arrive), and at the end finds every documented dataset in its shape,
# the events of every (micro-batch, chunk) once per rank per sampled iteration, the memory
# ptdp-train printed, and the measured communication equal to the analytical volume
# (check_runfile.py).  A run killed with kill -9 leaves a file h5py opens with every interval
# flushed before the kill; its requeue (load) appends a second /jobs row; a second run in the
# same directory does not overwrite the first one's file; an explicit run-file that is another
# run's is refused; a requeue of a launch killed before its first checkpoint starts SAVE/run.h5
# afresh, keeping the dead launch's file as SAVE/run-1.h5.
. "$top_srcdir/validation/tests/common.sh"
cd "$TMPD" || exit 99
DECK="$TMPD/deck.in"
write_deck "$DECK" num-layers=4 global-batch-size=8 lr=1e-3 log-interval=1 timeline-interval=10
CHECK="$PYTHON3 $top_srcdir/validation/tests/io/check_runfile.py"
LAYOUT="--tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 --num-layers-per-virtual-pipeline-stage 1"
# rows FILE: intervals flushed so far (-1 if the file cannot be opened)
rows() { $PYTHON3 -c "import sys, h5py
try: print(h5py.File(sys.argv[1], 'r', swmr=True)['metrics/iteration'].shape[0])
except Exception: print(-1)" "$1"; }

# ---- a reader polling while the run goes
$MPIRUN -n 4 "$TRAIN" "$DECK" $LAYOUT --train-iters 40 < /dev/null > "$TMPD/live.log" 2>&1 &
pid=$!
$PYTHON3 - "$TMPD/ptdp-run.h5" $pid > "$TMPD/poll.txt" <<'PYEOF'
import os, sys, time, h5py
path, pid, seen = sys.argv[1], int(sys.argv[2]), set()
t0 = time.time()
while time.time() - t0 < 120:
    alive = os.path.exists("/proc/%d" % pid)
    try:
        with h5py.File(path, "r", swmr=True) as f:
            d = f["metrics/lm_loss"]
            n = d.shape[0]
            if n and all(x == x for x in d[:n]): seen.add(n)
    except (OSError, KeyError):
        pass
    if not alive: break
    time.sleep(0.02)
print(" ".join(str(n) for n in sorted(seen)))
PYEOF
wait $pid
ok $? "t2 p2 v2 on 4 ranks, 40 iterations, with a reader polling"
seen=$(cat "$TMPD/poll.txt")
echo "interval counts the reader saw while the run went: $seen"
echo "$seen" | awk '{ for (i = 1; i <= NF; i++) if ($i > 0 && $i < 40) n++; exit !(n >= 2) }'
ok $? "the reader saw the file grow while the run went (at least 2 partial states)"
grep -q "^\[run file\] ptdp-run.h5; plot it with: ptdp-plot ptdp-run.h5" "$TMPD/live.log"; ok $? "the run names its file and the plot command"
$CHECK "$TMPD/ptdp-run.h5" "$TMPD/live.log" --world 4 --intervals 40 --samples 4 --jobs 1
ok $? "the finished file: every dataset, the events, the memory and the communication"

# ---- never another run's file
train_log second 1 --train-iters 2
[ $? -eq 0 ] && [ -f "$TMPD/ptdp-run-1.h5" ] && grep -q "writing ptdp-run-1.h5" "$TMPD/second.log"
ok $? "a second run here writes ptdp-run-1.h5, not over the first run's file"
train_log explicit 1 --train-iters 2 --run-file "$TMPD/ptdp-run.h5"
[ $? -ne 0 ] && grep -q "it is another run's file" "$TMPD/explicit.log"
ok $? "an explicit run-file that is another run's is refused: $(grep -m1 error "$TMPD/explicit.log" | cut -c1-120)"

# ---- kill -9, then the requeue appends
$MPIRUN -n 2 "$TRAIN" "$DECK" --train-iters 100000 --save "$TMPD/ck" --save-interval 5 < /dev/null > "$TMPD/killed.log" 2>&1 &
pid=$!
n=0
while [ "$(rows "$TMPD/ck/run.h5")" -lt 8 ] && [ $n -lt 600 ]; do sleep 0.1; n=$((n + 1)); done
before=$(rows "$TMPD/ck/run.h5")
for p in $(pgrep -f "$DECK"); do [ "$(cat /proc/$p/comm 2>/dev/null)" = ptdp-train ] && kill -9 $p; done
wait $pid
after=$(rows "$TMPD/ck/run.h5")
[ "$before" -ge 8 ] && [ "$after" -ge "$before" ]
ok $? "after kill -9 h5py opens the run file (swmr=True) and finds all $after intervals (>= $before seen before the kill)"
$PYTHON3 -c "import sys, h5py, numpy as np
f = h5py.File(sys.argv[1], 'r', swmr=True)
sys.exit(0 if np.isfinite(f['metrics/lm_loss'][()]).all() and (np.diff(f['metrics/iteration'][()]) == 1).all() else 1)" "$TMPD/ck/run.h5"
ok $? "every interval flushed before the kill holds finite numbers, iterations in order"
it=$(cat "$TMPD/ck/latest_checkpointed_iteration.txt")
train_log requeue 2 --train-iters $((it + 3)) --save "$TMPD/ck" --load "$TMPD/ck"
ok $? "the requeue resumes from iteration $it"
grep -q "appending to $TMPD/ck/run.h5" "$TMPD/requeue.log"; ok $? "the requeue appends to the killed run's file"
$PYTHON3 -c "import sys, h5py
f = h5py.File(sys.argv[1], 'r', swmr=True)
j, it = f['jobs'][()], f['metrics/iteration'][()]
print('jobs:', [(int(r['first_iteration']), int(r['last_iteration'])) for r in j], 'last iterations:', it[-4:])
sys.exit(0 if len(j) == 2 and j[1]['first_iteration'] == int(sys.argv[2]) and it[-1] == int(sys.argv[2]) + 3 else 1)" \
  "$TMPD/ck/run.h5" "$it"
ok $? "two /jobs rows (the killed launch and the requeue), the requeue's intervals appended"

# ---- a launch killed before its first checkpoint, then its requeue: the run starts over in
# SAVE/run.h5 and the dead launch's file is kept as SAVE/run-1.h5 (a kill before the first save
# leaves SAVE holding run.h5 and no tracker: made here by removing the checkpoints of a short run)
train_log early1 1 --train-iters 2 --save "$TMPD/early" &&
  rm -rf "$TMPD/early"/iter_* "$TMPD/early/latest_checkpointed_iteration.txt"
ok $? "a first launch saving into early/, its checkpoints then removed"
train_log early2 1 --train-iters 3 --save "$TMPD/early" --load "$TMPD/early"
[ $? -eq 0 ] && grep -q "^\[run file\] $TMPD/early/run.h5 held a launch this run does not continue.*kept as $TMPD/early/run-1.h5" "$TMPD/early2.log" &&
  grep -q "writing $TMPD/early/run.h5" "$TMPD/early2.log"
ok $? "its requeue (no checkpoint to resume) keeps the earlier file as run-1.h5 and writes run.h5 afresh"
train_log early3 1 --train-iters 5 --save "$TMPD/early" --load "$TMPD/early"
grep -q "appending to $TMPD/early/run.h5" "$TMPD/early3.log"; ok $? "the next requeue (from iteration 3) appends to run.h5"
$PYTHON3 -c "import sys, h5py
jobs = lambda p: [(int(r['first_iteration']), int(r['last_iteration'])) for r in h5py.File(p, 'r')['jobs'][()]]
a, b = jobs(sys.argv[1] + '/run-1.h5'), jobs(sys.argv[1] + '/run.h5')
print('run-1.h5 jobs', a, 'run.h5 jobs', b)
sys.exit(0 if a == [(0, 2)] and b == [(0, 3), (3, 5)] else 1)" "$TMPD/early"
ok $? "run-1.h5 holds the dead launch (iterations 0-2), run.h5 this run's two launches (0-3, 3-5)"
finish
