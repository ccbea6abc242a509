#!/bin/sh
# On the real corpus, a resumed run continues the data exactly where it stopped: the training
# samples (consumed samples, losses) and the validation stream (each evaluation walks on from
# the last) of iterations 5..8 equal the uninterrupted run's, line for line, after a save at
# iteration 4 on t 2 and a resume on the same layout; a resume with another eval-interval goes on
# from the checkpoint's consumed_valid_samples.  SKIP (77) without the prepared data.
. "$top_srcdir/validation/tests/common.sh"
corpus_or_skip
run() { # NAME FLAGS...
  name=$1
  shift
  # shellcheck disable=SC2086
  launch 2 "$TRAIN" $CORPUS --train-iters 8 --lr-decay-iters 300 --log-interval 1 --eval-interval 2 --eval-iters 1 \
    --micro-batch-size 4 --tensor-model-parallel-size 2 "$@" > "$TMPD/$name.log" 2>&1
  ok $? "$name: $*"
}
run straight
run first --save "$TMPD/ck" --exit-interval 4
run resumed --load "$TMPD/ck"
lines() { grep -E "^ iteration +[5-8]/|validation loss at iteration [5-8] " "$1" | sed 's/elapsed time per iteration.*learning rate/... learning rate/'; }
lines "$TMPD/straight.log" > "$TMPD/a"
lines "$TMPD/resumed.log" > "$TMPD/b"
[ "$(wc -l < "$TMPD/a")" -eq 6 ] && cmp -s "$TMPD/a" "$TMPD/b"
ok $? "iterations 5..8 and the validation losses at 6 and 8: the same log text ($(wc -l < "$TMPD/b") lines)"
[ $ptdp_fail -eq 0 ] || diff "$TMPD/a" "$TMPD/b"
# the validation position is the checkpoint's consumed_valid_samples, not a function of the
# eval keys: saved at 4 after evaluations at 2 and 4 (2 batches), resumed with eval-interval 4,
# the evaluation at 8 reads the third batch and the save at 8 records 3
run reeval --load "$TMPD/ck" --save "$TMPD/ck2" --eval-interval 4
$PYTHON3 - "$TMPD/ck/iter_0000004/checkpoint.h5" "$TMPD/ck2/iter_0000008/checkpoint.h5" <<'PY'
import sys, h5py
a, b = (h5py.File(f, "r").attrs for f in sys.argv[1:])
gbs = a["consumed_train_samples"] // 4
print("global batch", gbs, "consumed_valid_samples", a["consumed_valid_samples"], b["consumed_valid_samples"])
sys.exit(0 if gbs > 0 and a["consumed_valid_samples"] == 2 * gbs and b["consumed_valid_samples"] == 3 * gbs else 1)
PY
ok $? "consumed_valid_samples: 2 global batches at iteration 4, 3 at 8 after a resume with eval-interval 4"
finish
