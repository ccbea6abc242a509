#!/bin/sh
# ptdp-plot on synthetic run files written to the documented format (make_runfile.py): every PNG
# is made, and the numbers each figure draws (its --dump-data) equal the file's (check_plot.py:
# the timeline's boxes are the file's events, and so on); a figure whose data is absent is
# skipped with a note; a run still going (a writer appending in SWMR mode while ptdp-plot and
# ptdp-compare read), a run killed with kill -9 after switching to SWMR (read as it is) and one
# killed before (a clear message naming `h5clear -s`, then readable after it); bad input.
. "$top_srcdir/validation/tests/common.sh"
python_or_skip h5py numpy matplotlib
PY="$PYTHON3"
PLOT="$top_builddir/ptdp-plot"
COMPARE="$top_builddir/ptdp-compare"
TOOLS="$top_srcdir/validation/tests/tools"
FIX="$TOOLS/make_runfile.py"
PNGS="loss.png throughput.png pipeline.png memory.png timers.png communication.png"

# pngs_ok DIR NAMES...: each NAMES is a PNG of at least 1200 x 700 pixels; prints their sizes
pngs_ok() {
  dir=$1; shift
  $PY - "$dir" "$@" <<'PYEOF'
import struct, sys
d, bad = sys.argv[1], 0
for n in sys.argv[2:]:
    try:
        head = open("%s/%s" % (d, n), "rb").read(24)
        w, h = struct.unpack(">II", head[16:24])
        good = head[:8] == b"\x89PNG\r\n\x1a\n" and w >= 1200 and h >= 700
    except OSError:
        good, w, h = False, 0, 0
    bad += not good
    print("%s %dx%d%s" % (n, w, h, "" if good else " BAD"), end="; ")
print()
sys.exit(1 if bad else 0)
PYEOF
}

# ---- a t=2 p=2 v=2 run on 4 ranks, interleaved 1F1B, sequence parallel, selective recomputation
$PY "$FIX" "$TMPD/run.h5" --tp 2 --pp 2 --dp 1 --vp 2 --sp --recompute selective --samples 3 > "$TMPD/fix.log" 2>&1
ok $? "fixture: t2 p2 d1 v2 sp interleaved run file"
"$PLOT" "$TMPD/run.h5" -o "$TMPD/plots" --all-samples --dump-data "$TMPD/dump.json" > "$TMPD/plot.log" 2>&1
rc=$?
ok $rc "ptdp-plot exit $rc: $(grep -c wrote "$TMPD/plot.log") PNGs written $(grep -v wrote "$TMPD/plot.log" | head -3)"
out=$(pngs_ok "$TMPD/plots" $PNGS pipeline-2.png pipeline-6.png pipeline-12.png); ok $? "every PNG made: $out"
$PY "$TOOLS/check_plot.py" "$TMPD/run.h5" "$TMPD/dump.json" --all-samples > "$TMPD/check.log" 2>&1
ok $? "the figures' numbers equal the file's: $(grep -c '^ok' "$TMPD/check.log") checks ($(grep FAIL "$TMPD/check.log" | head -3 | tr '\n' ' '))"
cp "$TMPD/run.h5" "$TMPD/copy.h5"
(cd "$TMPD" && "$PLOT" copy.h5 > plot_default.log 2>&1)
out=$(pngs_ok "$TMPD/copy-plots" $PNGS); ok $? "default DIR is RUNFILE minus .h5 plus -plots: $out"

# ---- a requeued run (two rows of some iterations: the last one counts), formulas per tensor
$PY "$FIX" "$TMPD/rq.h5" --requeue --formula-per-tensor --intervals 8 --samples 8 --final-loss 5.125 > /dev/null 2>&1
"$PLOT" "$TMPD/rq.h5" --all-samples --dump-data "$TMPD/rq.json" > "$TMPD/rq.log" 2>&1
ok $? "requeued run: ptdp-plot ($(grep -c wrote "$TMPD/rq.log") PNGs)"
$PY "$TOOLS/check_plot.py" "$TMPD/rq.h5" "$TMPD/rq.json" --all-samples > "$TMPD/rqcheck.log" 2>&1
ok $? "requeued run: the figures use the last row of each iteration ($(grep -c '^ok' "$TMPD/rqcheck.log") checks; $(grep FAIL "$TMPD/rqcheck.log" | head -3 | tr '\n' ' '))"
$PY -c "import json,sys; it=json.load(open(sys.argv[1]))['figures']['loss.png']['iteration']; sys.exit(it != list(range(2, 17, 2)))" "$TMPD/rq.json"
ok $? "requeued run: loss.png has each iteration once, in order (the file has $($PY -c "import h5py,sys; print(h5py.File(sys.argv[1],'r')['metrics/iteration'].shape[0])" "$TMPD/rq.h5") rows for 8)"
loss=$("$COMPARE" --csv "$TMPD/rq.h5" | $PY -c "import csv,sys; print([r['train_loss'] for r in csv.DictReader(sys.stdin)][0])")
[ "$loss" = 5.125 ]; ok $? "requeued run: ptdp-compare's final loss is the requeue's ($loss)"

# ---- absent data: p = 1 (no /pipeline), no evaluation, no peak FLOP/s: skipped with a note
$PY "$FIX" "$TMPD/p1.h5" --tp 1 --pp 1 --dp 2 --vp 1 --no-pipeline --eval-interval 0 --peak-flops 0 --layers 2 > /dev/null 2>&1
"$PLOT" "$TMPD/p1.h5" > "$TMPD/p1.log" 2>&1
rc=$?
[ $rc -eq 0 ] && grep -q "pipeline.png skipped: no sampled pipeline" "$TMPD/p1.log" && [ ! -e "$TMPD/p1-plots/pipeline.png" ]
ok $? "p = 1: pipeline.png skipped with a note, exit $rc: $(grep skipped "$TMPD/p1.log")"
out=$(pngs_ok "$TMPD/p1-plots" loss.png throughput.png memory.png timers.png communication.png); ok $? "p = 1: the other PNGs: $out"

# ---- a run still going: the writer appends intervals in SWMR mode while the tools read
mkfifo "$TMPD/feed"
$PY "$FIX" "$TMPD/live.h5" --live --intervals 4 --samples 2 < "$TMPD/feed" > "$TMPD/live.out" 2>&1 &
wpid=$!
exec 3> "$TMPD/feed"
wait_for() { n=0; while ! grep -q "$1" "$TMPD/live.out" && [ $n -lt 300 ]; do sleep 0.1; n=$((n+1)); done; grep -q "$1" "$TMPD/live.out"; }
last_iter() { "$COMPARE" --csv "$TMPD/live.h5" | $PY -c "import csv,sys; print([r['iteration'] for r in csv.DictReader(sys.stdin)][0])"; }
wait_for ready; ok $? "live writer switched to SWMR and flushed its first interval"
it=$(last_iter); [ "$it" = 2 ]; ok $? "ptdp-compare on the running run sees the first interval (iteration $it)"
"$PLOT" "$TMPD/live.h5" -o "$TMPD/live1" > "$TMPD/live1.log" 2>&1
ok $? "ptdp-plot on the running run: $(grep -c wrote "$TMPD/live1.log") PNGs"
echo more >&3; wait_for "appended 2"
echo more >&3; wait_for "appended 3"
it=$(last_iter); [ "$it" = 6 ]; ok $? "after two more flushes the same command sees iteration $it"
"$PLOT" "$TMPD/live.h5" -o "$TMPD/live2" --dump-data "$TMPD/live2.json" > "$TMPD/live2.log" 2>&1
$PY -c "import json,sys; d=json.load(open(sys.argv[1]))['figures']['loss.png']; sys.exit(d['iteration'] != [2, 4, 6])" "$TMPD/live2.json"
ok $? "ptdp-plot on the running run draws the three intervals flushed so far"
exec 3>&-
wait $wpid; ok $? "live writer closed the file"

# ---- kill -9 after SWMR mode was on: plain open refused, the tools read what was flushed
$PY "$FIX" "$TMPD/killed.h5" --crash-after 3 > /dev/null 2>&1
rc=$?; [ $rc -ne 0 ]; ok $? "fixture writer killed by SIGKILL after 3 intervals (exit $rc)"
$PY -c "import h5py,sys; h5py.File(sys.argv[1], 'r')" "$TMPD/killed.h5" > /dev/null 2>&1
[ $? -ne 0 ]; ok $? "a plain h5py open of the killed run's file is refused (marked open for write)"
"$PLOT" "$TMPD/killed.h5" -o "$TMPD/kplots" --dump-data "$TMPD/killed.json" > "$TMPD/killed.log" 2>&1
ok $? "ptdp-plot on the killed run's file: exit 0"
out=$(pngs_ok "$TMPD/kplots" $PNGS); ok $? "killed run: every PNG made: $out"
$PY "$TOOLS/check_plot.py" "$TMPD/killed.h5" "$TMPD/killed.json" > "$TMPD/kcheck.log" 2>&1
ok $? "killed run: the figures' numbers equal the file's ($(grep -c '^ok' "$TMPD/kcheck.log") checks; $(grep FAIL "$TMPD/kcheck.log" | head -2 | tr '\n' ' '))"
it=$("$COMPARE" --csv "$TMPD/killed.h5" | $PY -c "import csv,sys; print([r['iteration'] for r in csv.DictReader(sys.stdin)][0])")
[ "$it" = 6 ]; ok $? "ptdp-compare on the killed run: the last flushed interval (iteration $it)"

# ---- kill -9 before SWMR mode: a clear message naming h5clear -s; readable after it
$PY "$FIX" "$TMPD/plain.h5" --crash-plain > /dev/null 2>&1
for tool in "$PLOT" "$COMPARE"; do
  "$tool" "$TMPD/plain.h5" > "$TMPD/plain.log" 2>&1; rc=$?
  [ $rc -ne 0 ] && grep -q "h5clear -s" "$TMPD/plain.log" && ! grep -q Traceback "$TMPD/plain.log"
  ok $? "$(basename "$tool") on a file left open for write: exit $rc, $(head -1 "$TMPD/plain.log" | cut -c1-200)"
done
if command -v h5clear > /dev/null; then
  h5clear -s "$TMPD/plain.h5" && "$PLOT" "$TMPD/plain.h5" -o "$TMPD/pp" > "$TMPD/plain.log" 2>&1
  ok $? "after h5clear -s, ptdp-plot reads it: $(grep -c wrote "$TMPD/plain.log") PNGs"
else
  echo "note: h5clear (Debian hdf5-tools) absent; the clearing step is not tested"
fi

# ---- bad input: one clear message, non-zero exit, no traceback
echo "not hdf5" > "$TMPD/text.h5"
$PY -c "import h5py,sys; h5py.File(sys.argv[1], 'w').attrs['x'] = 1" "$TMPD/other.h5"
$PY "$FIX" "$TMPD/v2.h5" --format-version 2 > /dev/null 2>&1
for case in "missing.h5:no such file" "text.h5:not an HDF5 file" "other.h5:not a ptdp run file" \
            "v2.h5:format_version 2 is not one" ".:is a directory"; do
  f=${case%%:*} pat=${case#*:}
  for tool in "$PLOT" "$COMPARE"; do
    "$tool" "$TMPD/$f" > "$TMPD/bad.log" 2>&1; rc=$?
    [ $rc -ne 0 ] && grep -q "$pat" "$TMPD/bad.log" && ! grep -q Traceback "$TMPD/bad.log"
    ok $? "$(basename "$tool") $f: exit $rc, $(head -1 "$TMPD/bad.log" | cut -c1-140)"
  done
done
"$PLOT" > "$TMPD/bad.log" 2>&1; rc=$?; [ $rc -ne 0 ] && grep -q usage "$TMPD/bad.log"; ok $? "ptdp-plot without a file: usage, exit $rc"
finish
