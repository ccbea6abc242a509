#!/bin/sh
# ptdp-compare on three synthetic run files (make_runfile.py) with known numbers: three rows in
# the order given, each column equal to what the fixture wrote (its --truth JSON, computed from
# the generator's own numbers) and to the literal values asked for (tokens/s, losses, layout,
# schedule, recompute); blank where the file has nothing (no evaluation, no peak FLOP/s, no
# pipeline); the aligned text table holds the same rows; a bad file among good ones is named
# and the exit is non-zero while the good rows still print.
. "$top_srcdir/validation/tests/common.sh"
python_or_skip h5py numpy
PY="$PYTHON3"
COMPARE="$top_builddir/ptdp-compare"
FIX="$top_srcdir/validation/tests/tools/make_runfile.py"

$PY "$FIX" "$TMPD/a.h5" --truth "$TMPD/a.json" --tp 2 --pp 2 --dp 1 --vp 2 --sp --recompute selective \
  --mbs 1 --tps 1234.5 --final-loss 6.125 --final-val-loss 6.375 --peak-flops 1e12 --seed 3 && \
$PY "$FIX" "$TMPD/b.h5" --truth "$TMPD/b.json" --tp 1 --pp 4 --dp 1 --vp 1 --schedule 1f1b \
  --micro-batches 8 --mbs 2 --layers 4 --tps 2500 --final-loss 5.5 --final-val-loss 5.75 --peak-flops 0 --seed 4 && \
$PY "$FIX" "$TMPD/c.h5" --truth "$TMPD/c.json" --tp 2 --pp 1 --dp 2 --vp 1 --recompute full --no-pipeline \
  --eval-interval 0 --layers 2 --mbs 4 --tps 800 --final-loss 7.0 --seed 5
ok $? "three fixtures: t2 p2 v2 sp interleaved selective; t1 p4 1f1b b=2 no peak FLOP/s; t2 d2 full, no pipeline, no evaluation"

"$COMPARE" --csv "$TMPD/a.h5" "$TMPD/b.h5" "$TMPD/c.h5" > "$TMPD/out.csv" 2> "$TMPD/err.log"
ok $? "ptdp-compare --csv exit 0"
$PY - "$TMPD" > "$TMPD/check.log" 2>&1 <<'PYEOF'
import csv, json, math, sys
d = sys.argv[1]
rows = list(csv.DictReader(open(d + "/out.csv")))
bad = 0
def check(cond, what):
    global bad
    print(("ok: " if cond else "FAIL: ") + what)
    bad += not cond
check(len(rows) == 3, "three rows: %s" % [r["run"] for r in rows])
literal = {  # what the fixtures were asked for
    "a": {"layout": "t2 p2 d1 v2 sp", "micro_batch_size": "1", "schedule": "interleaved", "recompute": "selective",
          "tokens_per_second": 1234.5, "train_loss": 6.125, "val_loss": 6.375},
    "b": {"layout": "t1 p4 d1 v1", "micro_batch_size": "2", "schedule": "1f1b", "recompute": "none",
          "tokens_per_second": 2500.0, "train_loss": 5.5, "val_loss": 5.75, "mfu": None},
    "c": {"layout": "t2 p1 d2 v1", "micro_batch_size": "4", "recompute": "full", "tokens_per_second": 800.0,
          "train_loss": 7.0, "val_loss": None, "bubble": None}}
for row, name in zip(rows, "abc"):
    truth = json.load(open("%s/%s.json" % (d, name)))
    check(row["run"].endswith("/%s.h5" % name), "%s: run %s" % (name, row["run"]))
    for key, want in list(truth.items()) + list(literal[name].items()):
        if key == "run":
            continue
        got = row[key]
        if want is None:
            good = got == ""
        elif isinstance(want, float):
            good = got != "" and math.isclose(float(got), want, rel_tol=1e-12)
        else:
            good = got == str(want)
        check(good, "%s: %s = %r (expected %r)" % (name, key, got, want))
sys.exit(1 if bad else 0)
PYEOF
ok $? "every column equals the fixture's numbers: $(grep -c '^ok' "$TMPD/check.log") checks $(grep FAIL "$TMPD/check.log" | head -3 | tr '\n' ' ')"

"$COMPARE" "$TMPD/a.h5" "$TMPD/b.h5" "$TMPD/c.h5" > "$TMPD/out.txt" 2>&1
ok $? "ptdp-compare (text) exit 0"
cat "$TMPD/out.txt"
head -1 "$TMPD/out.txt" | grep -q "^run .*layout .*tokens/s .*TFLOP/s/rank .*MFU .*bubble .*peak act. .*train loss .*val loss$"
ok $? "text header names every column"
n=$(grep -c "^$TMPD/[abc].h5 " "$TMPD/out.txt"); [ "$n" = 3 ]; ok $? "text table: $n rows"
grep "^$TMPD/a.h5 " "$TMPD/out.txt" | grep -q "t2 p2 d1 v2 sp .*interleaved .*selective .*1234.5 .*6.1250 .*6.3750$"
ok $? "text row of a.h5 holds its layout, schedule, tokens/s and losses"
$PY - "$TMPD/out.txt" <<'PYEOF'
import sys
lines = [l.rstrip("\n") for l in open(sys.argv[1])][:4]
# aligned: every column starts at the same character in the header and each row
head = lines[0]
starts = [head.index(h) for h in ("layout", "schedule", "recompute")]
sys.exit(0 if all(l[s - 2:s] == "  " for l in lines[1:] for s in starts) else 1)
PYEOF
ok $? "text columns aligned"

echo junk > "$TMPD/junk.h5"
"$COMPARE" --csv "$TMPD/a.h5" "$TMPD/junk.h5" "$TMPD/c.h5" > "$TMPD/mixed.csv" 2> "$TMPD/mixed.err"; rc=$?
[ $rc -ne 0 ] && [ "$(wc -l < "$TMPD/mixed.csv")" = 3 ] && grep -q "junk.h5: not an HDF5 file" "$TMPD/mixed.err"
ok $? "a bad file among good ones: named on stderr, the good rows printed, exit $rc"
finish
