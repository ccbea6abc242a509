#!/bin/sh
# Checkpoints of a mixture-of-experts model (4 experts, top 2, SwiGLU experts with biases: each
# expert's linear_fc1 is two row blocks per TP rank) through the parameter table, on any layout.
#   written at t2 -> loaded at t1, p2 and t2 d2 with the distributed optimizer;
#   written at t2 d2 with the distributed optimizer in runs of 112 elements -> loaded at t1.
# Exact checks (as test_checkpoint_swiglu.sh): the dump's final weights of the saving run equal
# the checkpoint's /model datasets bit for bit, the router and every expert among them, and a run
# that loads it and trains no further starts from them bit for bit.  The Adam moments: t2 -> t1
# resumed for three more iterations equals the run that never stopped (losses within 1e-5, final
# weights within 1e-4: the equivalence tolerances).  A dense model refuses the checkpoint,
# naming num-experts.
. "$top_srcdir/validation/tests/common.sh"
python_or_skip h5py numpy
DECK="$TMPD/deck.in"
write_deck "$DECK" swiglu=true ffn-hidden-size=96 global-batch-size=8 train-iters=6 lr=1e-3 lr-warmup-iters=2 \
  log-interval=1 hidden-dropout=0.1 attention-dropout=0.1 num-experts=4 moe-router-topk=2 moe-ffn-hidden-size=48 \
  moe-aux-loss-coeff=0.01 moe-z-loss-coeff=0.001
. "$top_srcdir/validation/tests/equivalence_lib.sh"

# same CKPT_FILE DUMP GROUP: every /model dataset of the checkpoint equals DUMP's GROUP/name
same() {
  $PYTHON3 - "$@" <<'PY'
import sys, h5py, numpy as np
ck, dump = h5py.File(sys.argv[1], "r"), h5py.File(sys.argv[2], "r")[sys.argv[3]]
names = []
ck["model"].visititems(lambda n, o: names.append(n) if isinstance(o, h5py.Dataset) else None)
bad = [n for n in names if not np.array_equal(ck["model"][n][...], dump[n.replace("/", ".")][...])]
experts = [n for n in names if "local_experts" in n or "router" in n]
print("%d tensors (%d of the mixtures), %d differ %s" % (len(names), len(experts), len(bad), bad[:3]))
sys.exit(1 if bad or len(experts) != 2 * (1 + 4 * 4) or len(names) != len(dump.keys()) else 0)
PY
}
T2="--tensor-model-parallel-size 2"
saved t2 2 3 $T2
loaded t2_to_t1 1 ck_t2 3
loaded t2_to_p2 2 ck_t2 3 --pipeline-model-parallel-size 2
loaded t2_to_t2d2 4 ck_t2 3 $T2 --use-distributed-optimizer
PTDP_CHECKPOINT_CHUNK=112 saved t2d2 4 3 $T2 --use-distributed-optimizer --ddp-bucket-size 3000
PTDP_CHECKPOINT_CHUNK=112 loaded t2d2_to_t1 1 ck_t2d2 3

train straight 2 $T2
train t2_resumed_t1 1 --load "$TMPD/ck_t2"
$PYTHON3 "$top_srcdir/validation/tests/io/compare_resume.py" "$TMPD/straight.h5" "$TMPD/t2_resumed_t1.h5" 4 6 \
  --rtol "$LOSS_TOL" > "$TMPD/near.log"
ok $? "t2 -> t1: iterations 4..6 as the straight run's ($(tr '\n' ' ' < "$TMPD/near.log"))"
$PYTHON3 - "$TMPD/straight.h5" "$TMPD/t2_resumed_t1.h5" "$PARAM_TOL" <<'PY'
import sys, h5py, numpy as np
a, b = h5py.File(sys.argv[1], "r")["final"], h5py.File(sys.argv[2], "r")["final"]
rel = {n: float(np.max(np.abs(a[n][...] - b[n][...])) / np.max(np.abs(a[n][...]))) for n in a}
worst = max(rel, key=rel.get)
print("final weights: worst relative difference %.3e (%s)" % (rel[worst], worst))
sys.exit(0 if rel[worst] <= float(sys.argv[3]) else 1)
PY
ok $? "t2 -> t1: the final weights as the straight run's"

# a dense model refuses the mixture's checkpoint by name
launch 1 "$TRAIN" "$DECK" --num-experts 0 --load "$TMPD/ck_t2" > "$TMPD/dense.log" 2>&1
rc=$?
grep -q "num-experts" "$TMPD/dense.log"
found=$?
[ $rc -ne 0 ] && [ $found -eq 0 ]
ok $? "a dense model refuses the checkpoint ($(grep -m1 num-experts "$TMPD/dense.log"))"
finish
