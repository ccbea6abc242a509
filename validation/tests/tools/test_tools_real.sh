#!/bin/sh
# ptdp-plot and ptdp-compare on run files ptdp-train wrote: a t=2 p=2 v=2 run on 4 ranks (every
# PNG; the numbers drawn equal the file's, check_plot.py), three runs in one table (the final
# loss equals the log's last line, the other columns the file's, read here with plain h5py),
# ptdp-compare polling a run while it goes, the same run killed with kill -9 (every PNG, the
# numbers) and its requeue appending to the file (the last row of each iteration is used).
. "$top_srcdir/validation/tests/common.sh"
python_or_skip h5py numpy matplotlib
PY="$PYTHON3"
PLOT="$top_builddir/ptdp-plot"
COMPARE="$top_builddir/ptdp-compare"
CHECK="$top_srcdir/validation/tests/tools/check_plot.py"
PNGS="loss.png throughput.png pipeline.png memory.png timers.png communication.png"
cd "$TMPD" || exit 99
LAUNCH_TIMEOUT=300 # 4-rank runs on a machine other tests load too
DECK="$TMPD/deck.in"
write_deck "$DECK" num-layers=4 global-batch-size=8 lr=1e-3 log-interval=2
train() { # train NAME NP FLAGS...: a run writing NAME.h5, its log NAME.log
  name=$1 np=$2; shift 2
  train_log "$name" "$np" --run-file "$TMPD/$name.h5" "$@"
}
pngs() { for f in $PNGS; do [ -s "$1/$f" ] || { echo "missing $1/$f"; return 1; }; done; }
csv_field() { # csv_field FIELD FILE.h5...: that column of ptdp-compare --csv, one line per row
  f=$1; shift
  "$COMPARE" --csv "$@" | $PY -c "import csv, sys; [print(r[sys.argv[1]]) for r in csv.DictReader(sys.stdin)]" "$f"
}

# ---- three finished runs
train a 4 --tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 --num-layers-per-virtual-pipeline-stage 1 \
  --sequence-parallel --recompute-granularity selective --train-iters 8
ok $? "run a: t2 p2 v2 sp selective on 4 ranks"
train b 2 --pipeline-model-parallel-size 2 --recompute-granularity full --train-iters 6
ok $? "run b: p2 1f1b full recomputation on 2 ranks"
train c 2 --peak-tflops 0.001 --train-iters 6
ok $? "run c: d2 on 2 ranks with a peak of 1 GFLOP/s"
"$PLOT" a.h5 --all-samples --dump-data a.json > plot_a.log 2>&1
ok $? "ptdp-plot on run a: $(grep -c wrote plot_a.log) PNGs"
pngs a-plots; ok $? "run a: every PNG"
$PY "$CHECK" a.h5 a.json --all-samples > check_a.log 2>&1
ok $? "run a: the figures' numbers equal the file's ($(grep -c '^ok' check_a.log) checks; $(grep FAIL check_a.log | head -3 | tr '\n' ' '))"
"$COMPARE" a.h5 b.h5 c.h5
"$COMPARE" --csv a.h5 b.h5 c.h5 > abc.csv; ok $? "ptdp-compare --csv on the three"
$PY - abc.csv > check_abc.log 2>&1 <<'PYEOF'
import csv, math, re, sys
import h5py, numpy as np
rows = list(csv.DictReader(open(sys.argv[1])))
bad = 0
def check(cond, what):
    global bad
    print(("ok: " if cond else "FAIL: ") + what)
    bad += not cond
def num(s):
    return None if s == "" else float(s)
def same(a, b, rel=1e-12):
    return (a is None and b is None) or (a is not None and b is not None and math.isclose(a, b, rel_tol=rel))
check([r["run"] for r in rows] == ["a.h5", "b.h5", "c.h5"], "three rows in order: %s" % [r["run"] for r in rows])
want = {"a.h5": ("t2 p2 d1 v2 sp", "interleaved", "selective", 8, None),
        "b.h5": ("t1 p2 d1 v1", "1f1b", "full", 6, None), "c.h5": ("t1 p1 d2 v1", None, "none", 6, 1e9)}
for r in rows:
    name = r["run"]
    layout, sched, rec, iters, peak = want[name]
    check(r["layout"] == layout and r["recompute"] == rec and r["micro_batch_size"] == "2" and
          (sched is None or r["schedule"] == sched) and r["iteration"] == str(iters),
          "%s: %s, b=%s, %s, recompute %s, iteration %s" % (name, r["layout"], r["micro_batch_size"], r["schedule"],
                                                             r["recompute"], r["iteration"]))
    losses = re.findall(r"lm loss: ([0-9.E+-]+)", open(name[:-3] + ".log").read())
    check(same(num(r["train_loss"]), float(losses[-1]), 1e-6), "%s: final train loss %s = the log's %s" % (name, r["train_loss"], losses[-1]))
    check(r["val_loss"] == "", "%s: no evaluation (mock data has no validation split): blank" % name)
    f = h5py.File(name, "r", swmr=True)
    m = {k: f["metrics"][k][()] for k in ("tokens_per_second", "tflops_per_rank", "mfu")}
    for k in m:
        want_v = float(np.mean(m[k][1:])) if np.isfinite(m[k]).all() else None
        check(same(num(r[k]), want_v), "%s: %s %s = mean over the intervals after the first" % (name, k, r[k]))
    check((peak is None) == (r["mfu"] == ""), "%s: MFU %s" % (name, "blank (no peak-tflops)" if peak is None else r["mfu"]))
    check(int(r["peak_activation_bytes"]) == int(f["memory/peak_activation_bytes"][()].max()),
          "%s: peak activation bytes %s = max over ranks" % (name, r["peak_activation_bytes"]))
    check(same(num(r["bubble"]), float(np.mean(f["pipeline/bubble_measured"][-1]))),
          "%s: bubble %s = mean over ranks of the last sample" % (name, r["bubble"]))
sys.exit(1 if bad else 0)
PYEOF
ok $? "ptdp-compare's columns: the log's final loss and the file's numbers ($(grep -c '^ok' check_abc.log) checks; $(grep FAIL check_abc.log | head -3 | tr '\n' ' '))"

# ---- a run going on (ptdp-compare polls it), killed with kill -9, then requeued
train k 2 --pipeline-model-parallel-size 2 --train-iters 100000 --save "$TMPD/ck" --save-interval 4 &
pid=$!
seen="" n=0
while [ $n -lt 600 ]; do
  it=$(csv_field iteration k.h5 2>/dev/null)
  case " $seen " in *" $it "*) ;; *) [ -n "$it" ] && seen="$seen $it" ;; esac
  # stop once two different iterations were seen and the run is past 10 (a checkpoint to requeue
  # from); a fast machine may already be past 10 at the first read, so one read is never enough
  [ -n "$it" ] && [ "$it" -ge 10 ] && [ "$(echo $seen | wc -w)" -ge 2 ] && break
  sleep 0.1; n=$((n + 1))
done
for p in $(pgrep -f "$DECK"); do [ "$(cat /proc/$p/comm 2>/dev/null)" = ptdp-train ] && kill -9 $p; done
wait $pid
echo "iterations ptdp-compare saw while the run went:$seen"
[ "$(echo $seen | wc -w)" -ge 2 ]; ok $? "ptdp-compare read the run while it went, and saw it grow:$seen"
$PY -c "import h5py, sys; h5py.File(sys.argv[1], 'r')" k.h5 > /dev/null 2>&1
echo "a plain h5py open of the killed run's file: exit $? (non-zero: marked open for writing)"
"$PLOT" k.h5 --dump-data k.json > plot_k.log 2>&1; ok $? "ptdp-plot on the killed run's file"
pngs k-plots; ok $? "killed run: every PNG"
$PY "$CHECK" k.h5 k.json > check_k.log 2>&1
ok $? "killed run: the figures' numbers equal the file's ($(grep -c '^ok' check_k.log) checks; $(grep FAIL check_k.log | head -3 | tr '\n' ' '))"
last=$(csv_field iteration k.h5)
ck=$(cat "$TMPD/ck/latest_checkpointed_iteration.txt")
train k 2 --pipeline-model-parallel-size 2 --train-iters $((last + 4)) --save "$TMPD/ck" --load "$TMPD/ck"
ok $? "requeue from iteration $ck (the killed launch logged up to $last) to $((last + 4))"
"$PLOT" k.h5 --dump-data k2.json > plot_k2.log 2>&1 && pngs k-plots; ok $? "ptdp-plot on the requeued run's file"
$PY "$CHECK" k.h5 k2.json > check_k2.log 2>&1
ok $? "requeued run: the figures use the last row of each iteration ($(grep -c '^ok' check_k2.log) checks; $(grep FAIL check_k2.log | head -3 | tr '\n' ' '))"
$PY -c "import json, sys; it = json.load(open(sys.argv[1]))['figures']['loss.png']['iteration']; print(it); sys.exit(it != sorted(set(it)))" k2.json
ok $? "loss.png: each iteration once, in order, though the file holds some twice"
it=$(csv_field iteration k.h5) loss=$(csv_field train_loss k.h5)
logloss=$(grep -o "lm loss: [0-9.E+-]*" k.log | tail -1 | cut -d' ' -f3)
$PY -c "import sys; sys.exit(abs(float(sys.argv[1]) / float(sys.argv[2]) - 1) > 1e-6)" "$loss" "$logloss"
ok $? "ptdp-compare after the requeue: iteration $it, final loss $loss = the requeue's last log line ($logloss)"
finish
