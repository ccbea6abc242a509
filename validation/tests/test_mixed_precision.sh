#!/bin/sh
# Mixed precision (bf16, fp16) on the CPU backend.
#  1. Every layout in bf16 gives one rank's bf16 run: t2, t2 + SP, d2, p2 (1F1B), p2 interleaved,
#     t2 d2 + SP + distributed optimizer, against one rank in bf16: the loss of every iteration,
#     the initial weights (exactly) and the first step's fp32 main gradients.  And bf16 is not
#     fp32: the one-rank bf16 run differs from the fp32 run (it really rounds).
#  2. fp16 with a forced overflow: initial-loss-scale 2^40 (fp16 holds at most 65504, so the first
#     steps overflow), loss-scale-window 4, hysteresis 2, and an inf injected into a gradient at
#     iteration 32.  From the log line of every iteration: the loss scale follows Megatron's rule
#     applied by hand (scale_rule below) to the sequence of skipped steps; 2^40 starts with a run
#     of skips; the injected iteration is skipped where the same run without the injection is
#     not, and the two runs agree on every iteration before it; the learning rate does not move
#     on a skipped step (the schedule counts updates).
#  3. Checkpoints hold the fp32 master weights: a bf16 run saved at iteration 4 and resumed to 8
#     gives the uninterrupted bf16 run's log lines exactly (the 16-bit weights are the rounding
#     of the master, so nothing is lost), also on t2 d2 with the distributed optimizer, whose
#     master weights are sharded (and that checkpoint resumes on t2); an fp32 checkpoint resumes
#     in bf16 and a bf16 one in fp32.
# Tolerances.  bf16 keeps 8 significant bits: one rounding moves a number by up to 2^-9 of itself.
# Another layout rounds at other places (a tensor-parallel GEMM's partial sums are each rounded,
# then summed and rounded again, where one rank rounds the whole sum once), so single values
# differ by an ulp or so.  Losses (BF16_LOSS_TOL): 5e-4 relative, a batch average of such
# differences; measured worst 3.0e-5 (t2, iteration 3).  First-step gradients (BF16_GRAD_TOL):
# 3e-2 of the tensor's largest entry, a few bf16 ulps (2^-8 = 3.9e-3 each) accumulated through
# the backward pass; measured worst 1.1e-2 (t2, a LayerNorm weight).  The weights after the last
# step are not compared entry by entry: AdamW moves an entry by about lr whatever the size of its
# gradient, so an entry whose bf16 gradient is near zero moves by +-lr in a direction the rounding
# decides (measured: up to 0.39 of a bias tensor's largest entry after 10 steps); the loss of
# every iteration is the check of the trained model.
. "$top_srcdir/validation/tests/common.sh"

BF16_LOSS_TOL=${PTDP_BF16_LOSS_TOL:-5e-4}
BF16_GRAD_TOL=${PTDP_BF16_GRAD_TOL:-3e-2}
. "$top_srcdir/validation/tests/equivalence_lib.sh"
DECK="$TMPD/mixed.in"
write_deck "$DECK" num-layers=4 global-batch-size=8 make-vocab-size-divisible-by=256 train-iters=10 lr=1e-3 \
  hidden-dropout=0.1 attention-dropout=0.1 log-interval=1
CMP="$PYTHON3 $top_srcdir/validation/tests/compare_dumps.py --loss-rtol $BF16_LOSS_TOL --grad-tol $BF16_GRAD_TOL --param-tol 0"

# --- 1. layouts in bf16 -----------------------------------------------------------------------
train fp32 1
train bf16 1 --bf16
$PYTHON3 - "$TMPD/fp32.h5" "$TMPD/bf16.h5" <<'PY'
import sys, h5py, numpy as np
a, b = (np.asarray(h5py.File(f, "r")["lm_loss"]) for f in sys.argv[1:])
d = np.max(np.abs(a - b) / np.abs(a))
print(f"bf16 vs fp32, one rank: worst relative loss difference {d:.2e}")
sys.exit(0 if 1e-5 < d < 5e-2 else 1)
PY
ok $? "one rank: bf16 differs from fp32 (it rounds), but by less than 5e-2 relative"
# name ranks reference flags (--bf16 added)
layouts init,step1/grads --bf16 <<'LAYOUTS'
bf16_t2    2 bf16 --tensor-model-parallel-size 2
bf16_t2sp  2 bf16 --tensor-model-parallel-size 2 --sequence-parallel
bf16_d2    2 bf16
bf16_p2    2 bf16 --pipeline-model-parallel-size 2
bf16_p2v2  2 bf16 --pipeline-model-parallel-size 2 --num-layers-per-virtual-pipeline-stage 1
bf16_t2d2  4 bf16 --tensor-model-parallel-size 2 --sequence-parallel --use-distributed-optimizer
LAYOUTS
cat "$TMPD/worst"

# --- 2. fp16 loss scaling with a forced overflow ----------------------------------------------
run16() { # NAME FLAGS...
  name=$1
  shift
  train_log "$name" 1 --fp16 --train-iters 36 --initial-loss-scale 1099511627776 --loss-scale-window 4 \
    --hysteresis 2 --debug-dump "$TMPD/$name.h5" "$@"
  ok $? "fp16 $name: $*"
}
run16 inject --debug-inject-inf 32
run16 plain
$PYTHON3 - "$TMPD/inject.log" "$TMPD/plain.log" <<'PY'
import re, sys
def read(path):
    rows = []
    for line in open(path):
        m = re.search(r"iteration +(\d+)/.*learning rate: (\S+) .*loss scale: (\S+) \|.*skipped iterations: +(\d+)", line)
        if m:
            rows.append((int(m.group(1)), float(m.group(2)), float(m.group(3)), int(m.group(4))))
    return rows
def scale_rule(found, initial, window, hysteresis, min_scale=1.0):
    """Megatron's DynamicGradScaler.update, step by step: the scale after each step."""
    scale, growth, hyst, out = initial, 0, hysteresis, []
    for f in found:
        if f:
            growth, hyst = 0, hyst - 1
            if hyst <= 0:
                scale = max(scale / 2, min_scale)
        else:
            growth += 1
            if growth == window:
                growth, hyst, scale = 0, hysteresis, scale * 2
        out.append(scale)
    return out
bad = 0
def check(cond, msg):
    global bad
    print(("ok   " if cond else "FAIL ") + msg)
    bad += not cond
inj, plain = read(sys.argv[1]), read(sys.argv[2])
check(len(inj) == 36 and len(plain) == 36, f"36 log lines each ({len(inj)}, {len(plain)})")
skipped = [r[3] for r in inj]
check(all(s in (0, 1) for s in skipped), "log-interval 1: each line counts 0 or 1 skipped iteration")
expected = scale_rule(skipped, 2.0 ** 40, 4, 2)
got = [r[2] for r in inj]
print("skipped:", "".join(map(str, skipped)))
print("scale  :", " ".join(f"2^{__import__('math').log2(s):g}" for s in got))
check(got == expected, "the loss scale follows Megatron's rule applied to the overflows")
lead = 0
while lead < len(skipped) and skipped[lead]:
    lead += 1
check(lead >= 2, f"2^40 overflows fp16 at once: a leading run of {lead} skipped steps (>= 2: hysteresis 2)")
pskip = [r[3] for r in plain]
check(skipped[31] == 1 and pskip[31] == 0, "iteration 32 is skipped with the injected inf, not without it")
check(pskip[:31] == skipped[:31], "the same skips before it, with and without the injection")
# the learning rate is the schedule's after the updates taken: it stays put across a skip
lrs = [r[1] for r in inj]
check(all(lrs[i] == lrs[i - 1] for i in range(1, len(lrs)) if skipped[i]),
      "a skipped step leaves the learning rate where it was")
# iterations 1..31 are the same in both runs (the same skips), the log text too
check([r[1:] for r in inj[:31]] == [r[1:] for r in plain[:31]], "iterations 1..31 agree between the two runs")
sys.exit(1 if bad else 0)
PY
ok $? "fp16: skips and loss scale trajectory"

# --- 3. checkpoints keep the fp32 master weights ----------------------------------------------
runck() { # NAME NP FLAGS...
  name=$1 np=$2
  shift 2
  train_log "$name" "$np" --train-iters 8 "$@"
  ok $? "$name: $*"
}
lines() { grep -E "^ iteration +[5-8]/" "$1" | sed 's/elapsed time per iteration.*learning rate/... learning rate/'; }
runck straight 2 --bf16 --tensor-model-parallel-size 2
runck first 2 --bf16 --tensor-model-parallel-size 2 --save "$TMPD/ck16" --exit-interval 4
runck resumed 2 --bf16 --tensor-model-parallel-size 2 --load "$TMPD/ck16"
lines "$TMPD/straight.log" > "$TMPD/a"
lines "$TMPD/resumed.log" > "$TMPD/b"
[ "$(wc -l < "$TMPD/a")" -eq 4 ] && cmp -s "$TMPD/a" "$TMPD/b"
ok $? "bf16 saved at 4 and resumed: iterations 5..8 equal the uninterrupted run's, digit for digit"
[ $ptdp_fail -eq 0 ] || diff "$TMPD/a" "$TMPD/b"
# the distributed optimizer shards the master weights: each replica saves and loads its shard
runck dstraight 4 --bf16 --tensor-model-parallel-size 2 --use-distributed-optimizer
runck dfirst 4 --bf16 --tensor-model-parallel-size 2 --use-distributed-optimizer --save "$TMPD/ckd" --exit-interval 4
runck dresumed 4 --bf16 --tensor-model-parallel-size 2 --use-distributed-optimizer --load "$TMPD/ckd"
lines "$TMPD/dstraight.log" > "$TMPD/a"
lines "$TMPD/dresumed.log" > "$TMPD/b"
[ "$(wc -l < "$TMPD/a")" -eq 4 ] && cmp -s "$TMPD/a" "$TMPD/b"
ok $? "bf16 t2 d2 with sharded master weights, saved at 4 and resumed: iterations 5..8 digit for digit"
grep -q "optimizer state [0-9]* bytes (fp32 master weights and moments)" "$TMPD/dstraight.log"
ok $? "the [memory] line counts the master weights with the optimizer state"
# and the sharded checkpoint loads on another layout (t2, no distributed optimizer): the same run
runck dto_t2 2 --bf16 --tensor-model-parallel-size 2 --load "$TMPD/ckd"
$PYTHON3 - "$TMPD/ck16/iter_0000004/checkpoint.h5" <<'PY'
import sys, h5py
f = h5py.File(sys.argv[1], "r")
kinds = set()
f.visititems(lambda n, o: kinds.add(o.dtype.str) if isinstance(o, h5py.Dataset) and "model" in n else None)
prec = f.attrs["saved_precision"]
prec = prec.decode() if isinstance(prec, bytes) else prec
print("model tensor types", kinds, "saved_precision", prec)
sys.exit(0 if kinds == {"<f4"} and prec == "bf16" else 1)
PY
ok $? "a bf16 checkpoint stores fp32 tensors (the master weights) and says it came from bf16"
# across precisions, both ways: the loss after the resume stays within bf16's tolerance of the
# run that never changed precision
runck fp32_first 2 --tensor-model-parallel-size 2 --save "$TMPD/ck32" --exit-interval 4
runck fp32_straight 2 --tensor-model-parallel-size 2
runck to_bf16 2 --bf16 --tensor-model-parallel-size 2 --load "$TMPD/ck32"
runck to_fp32 2 --tensor-model-parallel-size 2 --load "$TMPD/ck16"
loss5() { sed -n 's/^ iteration \+5\/.*lm loss: \([^ ]*\) .*/\1/p' "$1"; }
$PYTHON3 - "$(loss5 "$TMPD/dto_t2.log")" "$(loss5 "$TMPD/straight.log")" "$BF16_LOSS_TOL" <<'PY'
import sys
a, b, tol = map(float, sys.argv[1:])
print(f"iteration 5: d2 sharded checkpoint resumed on t2 {a} vs t2 {b}")
sys.exit(0 if abs(a - b) / b <= tol else 1)
PY
ok $? "a checkpoint of sharded master weights resumes on another layout (iteration 5 within BF16_LOSS_TOL)"
$PYTHON3 - "$(loss5 "$TMPD/to_bf16.log")" "$(loss5 "$TMPD/fp32_straight.log")" "$(loss5 "$TMPD/to_fp32.log")" \
  "$(loss5 "$TMPD/straight.log")" "$BF16_LOSS_TOL" <<'PY'
import sys
a, b, c, d, tol = map(float, sys.argv[1:])
print(f"iteration 5: fp32 -> bf16 {a} vs fp32 {b}; bf16 -> fp32 {c} vs bf16 {d}")
sys.exit(0 if abs(a - b) / b <= tol and abs(c - d) / d <= tol else 1)
PY
ok $? "fp32 checkpoint resumed in bf16, bf16 checkpoint resumed in fp32: iteration 5 within BF16_LOSS_TOL"
finish
