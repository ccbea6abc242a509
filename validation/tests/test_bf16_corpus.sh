#!/bin/sh
# bf16 tracks fp32 on the real corpus: inputs/gpt-tiny.in, the default job's
# model and data (with micro-batch 4 and global batch 8, half the default job's, to keep the
# test near 3 minutes: bf16 on the CPU converts every operand), trained 100 iterations in fp32
# and in bf16 from the same seed on 2 ranks (t=2, so the bf16 tensor-parallel collectives are in
# the loop).  Bounds, with what this machine measured: the mean loss of iterations 91..100 within
# 1e-2 relative of fp32's (measured 5.3e-3: bf16 6.793, fp32 6.757); every single iteration
# within 2e-1 (measured worst 1.29e-1 at iteration 26, in the steep descent at the end of the
# 30-iteration warmup, where a curve that runs an iteration ahead or behind differs by that much
# from one iteration to the next; the worst after iteration 50 is printed for the record); and
# both runs learn (the mean of 91..100 at least 1.0 below iteration 1's).  Why they differ at all:
# bf16 rounds every stored activation and weight to 8 significant bits (2^-9 relative each); the
# weights do not drift, since their fp32 master copies take every update, but every batch sees
# other roundings, so the curves wander apart a little and the gap is in the mean, not a trend.
# SKIP (77) without the prepared data.
. "$top_srcdir/validation/tests/common.sh"
corpus_or_skip
LAUNCH_TIMEOUT=600
if grep -q __asan_init "$TRAIN" 2>/dev/null; then # a sanitized build: about 10 s an iteration here
  LAUNCH_TIMEOUT=3000
  echo "sanitized build: each run may take up to $LAUNCH_TIMEOUT s"
fi
run() { # NAME FLAGS...
  name=$1
  shift
  # shellcheck disable=SC2086
  launch 2 "$TRAIN" $CORPUS --train-iters 100 --lr-decay-iters 300 --log-interval 1 --eval-iters 0 \
    --tensor-model-parallel-size 2 --micro-batch-size 4 --global-batch-size 8 --run-file none "$@" > "$TMPD/$name.log" 2>&1
  ok $? "$name: $*"
}
run fp32
run bf16 --bf16
$PYTHON3 - "$TMPD/fp32.log" "$TMPD/bf16.log" <<'PY'
import re, sys
def losses(path):
    return [float(m.group(1)) for m in (re.search(r"^ iteration +\d+/.*lm loss: (\S+) ", l) for l in open(path)) if m]
a, b = losses(sys.argv[1]), losses(sys.argv[2])
bad = 0
def check(cond, msg):
    global bad
    print(("ok   " if cond else "FAIL ") + msg)
    bad += not cond
check(len(a) == 100 and len(b) == 100, f"100 iterations each ({len(a)}, {len(b)})")
if len(a) == 100 and len(b) == 100:
    rel = [abs(x - y) / y for x, y in zip(b, a)]
    worst = max(range(100), key=lambda i: rel[i])
    check(rel[worst] <= 2e-1, f"every iteration within 2e-1 relative: worst {rel[worst]:.2e} at iteration {worst + 1}"
                              f" (after iteration 50: {max(rel[50:]):.2e})")
    ma, mb = sum(a[90:]) / 10, sum(b[90:]) / 10
    check(abs(mb - ma) / ma <= 1e-2, f"mean of iterations 91..100: bf16 {mb:.4f}, fp32 {ma:.4f}, "
                                     f"relative {abs(mb - ma) / ma:.2e} <= 1e-2")
    check(a[0] - ma >= 1.0 and b[0] - mb >= 1.0, f"both learn: iteration 1 {a[0]:.3f} / {b[0]:.3f} -> {ma:.3f} / {mb:.3f}")
sys.exit(1 if bad else 0)
PY
ok $? "bf16 tracks fp32 over 100 iterations of the real corpus"
finish
