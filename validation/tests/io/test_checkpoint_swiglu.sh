#!/bin/sh
# Checkpoints of a SwiGLU model on any layout, bit for bit.  SwiGLU's linear_fc1 weight [2f, h] and
# bias [2f] are [gate; up]: TP rank r holds [gate_r; up_r], two row blocks of the global tensor
# apart in the file (ptdp_param_info.blocks), so a rank's part is not one rectangle.  The model:
# f = 96 (24 gate and 24 up rows per rank at t4), biases on (the bias has the two blocks too), a
# vocabulary of 300 (padding rows at t > 1).
#   written at t2 -> loaded at t1 and t4;  written at t1 and t4 -> loaded at t2;
#   written at t2 d2 with the distributed optimizer in runs of 112 elements (shard and run
#   boundaries inside the blocks) -> loaded at t1 and t4.
# Exact checks: a run's debug dump holds the global tensors (src/train/dump.c writes each rank's
# blocks where they belong); the dump's final weights of the saving run equal the checkpoint's
# /model datasets bit for bit, and the initial weights of a run that loads it and trains no
# further (train-iters = the saved iteration) equal them too.  The Adam moments (not in a dump):
# t2 -> t4 resumed for three more iterations equals the run that never stopped, losses and
# final weights within the equivalence tolerances (a moment of the wrong row moves a weight by
# ~lr, 1e-3 of weights of ~2e-2: far outside 1e-4).  Planted: the comparison refuses a
# checkpoint whose fc1 blocks are exchanged.
. "$top_srcdir/validation/tests/common.sh"
python_or_skip h5py numpy
DECK="$TMPD/deck.in"
write_deck "$DECK" swiglu=true ffn-hidden-size=96 global-batch-size=8 train-iters=6 lr=1e-3 lr-warmup-iters=2 \
  log-interval=1 hidden-dropout=0.1 attention-dropout=0.1
. "$top_srcdir/validation/tests/equivalence_lib.sh"

# same CKPT_FILE DUMP GROUP: every /model dataset of the checkpoint equals DUMP's GROUP/name
same() {
  $PYTHON3 - "$@" <<'PY'
import sys, h5py, numpy as np
ck, dump, group = h5py.File(sys.argv[1], "r"), h5py.File(sys.argv[2], "r")[sys.argv[3]], sys.argv[3]
names = []
ck["model"].visititems(lambda n, o: names.append(n) if isinstance(o, h5py.Dataset) else None)
bad = [n for n in names if not np.array_equal(ck["model"][n][...], dump[n.replace("/", ".")][...])]
fc1 = [n for n in names if n.endswith("linear_fc1/weight")]
print("%d tensors (%s %s), %d differ %s" % (len(names), fc1[0] if fc1 else "no fc1",
      ck["model"][fc1[0]].shape if fc1 else "", len(bad), bad[:3]))
sys.exit(1 if bad or not fc1 or len(names) < 10 else 0)
PY
}
T2="--tensor-model-parallel-size 2"
T4="--tensor-model-parallel-size 4"
saved t2 2 3 $T2
loaded t2_to_t1 1 ck_t2 3
loaded t2_to_t4 4 ck_t2 3 $T4
saved t1 1 3
loaded t1_to_t2 2 ck_t1 3 $T2
saved t4 4 3 $T4
loaded t4_to_t2 2 ck_t4 3 $T2
PTDP_CHECKPOINT_CHUNK=112 saved t2d2 4 3 $T2 --use-distributed-optimizer --ddp-bucket-size 3000
PTDP_CHECKPOINT_CHUNK=112 loaded t2d2_to_t1 1 ck_t2d2 3
loaded t2d2_to_t4 4 ck_t2d2 3 $T4

# the moments: t2 -> t4, three more iterations, against the run that never stopped
# (compare_resume.py: losses and grad norms of iterations 4..6; the final weights as compare_dumps.py)
# near NAME: NAME's iterations 4..6 and final weights against the straight run's
near() {
  $PYTHON3 "$top_srcdir/validation/tests/io/compare_resume.py" "$TMPD/straight.h5" "$TMPD/$1.h5" 4 6 --rtol "$LOSS_TOL"
  near_rc=$?
  $PYTHON3 - "$TMPD/straight.h5" "$TMPD/$1.h5" "$PARAM_TOL" <<'PY'
import sys, h5py, numpy as np
a, b = h5py.File(sys.argv[1], "r")["final"], h5py.File(sys.argv[2], "r")["final"]
rel = {n: float(np.max(np.abs(a[n][...] - b[n][...])) / np.max(np.abs(a[n][...]))) for n in a}
worst = max(rel, key=rel.get)
print("final weights: worst relative difference %.3e (%s)" % (rel[worst], worst))
sys.exit(0 if rel[worst] <= float(sys.argv[3]) else 1)
PY
  [ $? -eq 0 ] && [ $near_rc -eq 0 ]
}

train straight 2 $T2
train t2_resumed_t4 4 --load "$TMPD/ck_t2" $T4
near t2_resumed_t4 > "$TMPD/near.log"
ok $? "t2 -> t4: iterations 4..6 and the final weights as the straight run's ($(tr '\n' ' ' < "$TMPD/near.log"))"
# planted: the moments of fc1's gate and up exchanged (checksums made again, so the file loads)
mkdir -p "$TMPD/ck_swapped/iter_0000003"
cp "$TMPD/ck_t2/latest_checkpointed_iteration.txt" "$TMPD/ck_swapped/"
cp "$TMPD/ck_t2/iter_0000003/checkpoint.h5" "$TMPD/ck_swapped/iter_0000003/"
$PYTHON3 - "$TMPD/ck_swapped/iter_0000003/checkpoint.h5" <<'PY'
import sys, h5py, numpy as np
M = np.uint64(0xFFFFFFFFFFFFFFFF)
def checksum(x):  # ckpt_mix summed over the elements (src/io/checkpoint_impl.h)
    with np.errstate(over="ignore"):
        i = np.arange(x.size, dtype=np.uint64)
        z = i * np.uint64(0x9E3779B97F4A7C15) + x.ravel().view(np.uint32).astype(np.uint64) + np.uint64(1)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return int(np.sum(z ^ (z >> np.uint64(31)), dtype=np.uint64) & M)
f = h5py.File(sys.argv[1], "r+")
for kind in ("exp_avg", "exp_avg_sq"):
    d = f["optimizer/%s/decoder/layers/0/mlp/linear_fc1/weight" % kind]
    w = d[...]
    assert int(d.attrs["checksum"]) == checksum(w), "the checksum is not ckpt_mix's"
    w = np.ascontiguousarray(np.concatenate([w[w.shape[0] // 2:], w[:w.shape[0] // 2]]))
    d[...] = w
    d.attrs["checksum"] = np.uint64(checksum(w))
PY
ok $? "planted: ck_t2 with fc1's moments of gate and up exchanged"
train swapped_t4 4 --load "$TMPD/ck_swapped" $T4
near swapped_t4 > "$TMPD/near.log"
[ $? -ne 0 ]
ok $? "... and the comparison refuses the run resumed from it ($(tr '\n' ' ' < "$TMPD/near.log"))"

# planted: gate and up exchanged in a copy of the checkpoint written at t2
cp "$TMPD/ck_t2/iter_0000003/checkpoint.h5" "$TMPD/plant.h5"
$PYTHON3 - "$TMPD/plant.h5" <<'PY'
import sys, h5py, numpy as np
d = h5py.File(sys.argv[1], "r+")["model/decoder/layers/0/mlp/linear_fc1/weight"]
w = d[...]
d[...] = np.concatenate([w[w.shape[0] // 2:], w[:w.shape[0] // 2]])
PY
same "$TMPD/plant.h5" "$TMPD/t2_to_t1.h5" init > "$TMPD/plant.log"
[ $? -eq 1 ]
ok $? "the comparison refuses a checkpoint with gate and up exchanged ($(cat "$TMPD/plant.log"))"
finish
