#!/bin/sh
# Checkpoints under faults: kill -9 of a rank at three points of a save (half the datasets written;
# file complete but not renamed; renamed but the tracker not yet updated), and between the two
# renames of a save replacing the tracker's own iteration, leaves the previous checkpoint loadable, and the run resumed from it continues bit-identically; a flipped byte, a
# truncated file, an unknown format version, a wrong model shape, a tracker naming a missing
# directory, a checkpoint without optimizer state: each a clear message and a non-zero exit; a
# read failing on one rank of a t4 load and a write failing on one rank of a save
# (PTDP_CHECKPOINT_FAULT=read-error, write-error): its message, no hang.
# Also: bad key combinations, a load directory with nothing yet, keep-checkpoints, finetune,
# use-checkpoint-args, and every documented dataset in h5py with its global shape.
. "$top_srcdir/validation/tests/common.sh"
DECK="$TMPD/deck.in"
write_deck "$DECK" train-iters=8 lr=1e-3 log-interval=1
PY="$PYTHON3"
# expect_error NAME PATTERN MESSAGE: the run failed and its log holds PATTERN
expect_error() {
  rc=$1 name=$2 pat=$3
  [ "$rc" -ne 0 ] && grep -q -- "$pat" "$TMPD/$name.log"
  ok $? "$4 (exit $rc): $(grep -m1 -- "$pat" "$TMPD/$name.log" | cut -c1-200)"
}
train_log straight 2 --debug-dump "$TMPD/straight.h5"; ok $? "uninterrupted run"
train_log first 2 --save "$TMPD/ck" --exit-interval 4; ok $? "saved iteration 4 and exited"
cp -r "$TMPD/ck" "$TMPD/pristine"
cp -r "$TMPD/ck" "$TMPD/pristine.ref" # never read: what pristine must still hold at the end

# ---- kill -9 during a save: the previous checkpoint stays, the run resumes bit for bit
for fault in datasets:0 datasets:1 closed:0 renamed:0; do
  point=${fault%:*} rank=${fault#*:}
  rm -rf "$TMPD/ck" && cp -r "$TMPD/pristine" "$TMPD/ck"
  PTDP_CHECKPOINT_FAULT=$point PTDP_CHECKPOINT_FAULT_RANK=$rank train_log crash_$point 2 \
    --load "$TMPD/ck" --save "$TMPD/ck"
  rc=$?
  [ $rc -ne 0 ] && [ "$(cat "$TMPD/ck/latest_checkpointed_iteration.txt")" = 4 ] && [ -f "$TMPD/ck/iter_0000004/checkpoint.h5" ]
  ok $? "kill -9 of rank $rank at '$point' (exit $rc): the tracker still names iteration 4 ($(ls "$TMPD/ck" | tr '\n' ' '))"
  train_log recover_$point 2 --load "$TMPD/ck" --save "$TMPD/ck" --debug-dump "$TMPD/recover.h5"
  ok $? "resumed after the crash at '$point'"
  $PY "$top_srcdir/validation/tests/io/compare_resume.py" "$TMPD/straight.h5" "$TMPD/recover.h5" 5 8 --exact > "$TMPD/cmp.txt"
  ok $? "after the crash at '$point': iterations 5..8 bit-identical to the uninterrupted run"
  [ ! -e "$TMPD/ck/iter_0000008.tmp" ] && [ "$(cat "$TMPD/ck/latest_checkpointed_iteration.txt")" = 8 ]
  ok $? "the next save cleared the interrupted one's leftovers and completed ($(ls "$TMPD/ck" | tr '\n' ' '))"
done

# ---- a rerun from scratch saving an iteration that is there already (seed 99, other weights):
# the new directory replaces the old in one step (renameat2's exchange), nothing left beside it
rm -rf "$TMPD/ck" && cp -r "$TMPD/pristine" "$TMPD/ck"
train_log rerun 2 --save "$TMPD/ck" --exit-interval 4 --seed 99
rc=$?
[ $rc -eq 0 ] && [ "$(ls "$TMPD/ck" | grep -v "^run" | tr '\n' ' ')" = "iter_0000004 latest_checkpointed_iteration.txt " ] &&
  ! cmp -s "$TMPD/ck/iter_0000004/checkpoint.h5" "$TMPD/pristine/iter_0000004/checkpoint.h5"
ok $? "a rerun replacing iteration 4 (exit $rc): $(ls "$TMPD/ck" | tr '\n' ' ')"
# where the file system cannot exchange (the test hook forces the two renames), a kill between
# moving the old directory aside and renaming the new one into place: loading takes the old one,
# and the next save moves it back and clears the rest
rm -rf "$TMPD/ck" && cp -r "$TMPD/pristine" "$TMPD/ck"
PTDP_CHECKPOINT_NO_EXCHANGE=1 PTDP_CHECKPOINT_FAULT=moved-aside train_log aside 2 \
  --save "$TMPD/ck" --exit-interval 4 --seed 99
rc=$?
[ $rc -ne 0 ] && [ ! -e "$TMPD/ck/iter_0000004" ] && [ -d "$TMPD/ck/iter_0000004.old.tmp" ]
ok $? "kill -9 between the two renames of a replacing save (exit $rc): $(ls "$TMPD/ck" | tr '\n' ' ')"
train_log aside_recover 2 --load "$TMPD/ck" --save "$TMPD/ck" --debug-dump "$TMPD/recover.h5"
rc=$?
[ $rc -eq 0 ] && grep -q "loaded iteration 4 from .*iter_0000004.old.tmp" "$TMPD/aside_recover.log"
ok $? "the load took the directory moved aside (exit $rc): $(grep -m1 'loaded iteration' "$TMPD/aside_recover.log" | cut -c1-160)"
$PY "$top_srcdir/validation/tests/io/compare_resume.py" "$TMPD/straight.h5" "$TMPD/recover.h5" 5 8 --exact > "$TMPD/cmp.txt"
ok $? "... and it was the old checkpoint (seed 1234, not 99): iterations 5..8 bit-identical to the uninterrupted run"
[ "$(ls "$TMPD/ck" | grep -v '^run' | tr '\n' ' ')" = "iter_0000004 iter_0000008 latest_checkpointed_iteration.txt " ] &&
  cmp -s "$TMPD/ck/iter_0000004/checkpoint.h5" "$TMPD/pristine/iter_0000004/checkpoint.h5"
ok $? "the next save moved it back and cleared the rest: $(ls "$TMPD/ck" | tr '\n' ' ')"

# ---- a read failing on one rank while the others wait for it in an exchange of slices (t 4:
# every rank takes part in each row-parallel weight's all-to-all): its message, MPI_Abort, no hang
PTDP_CHECKPOINT_FAULT=read-error PTDP_CHECKPOINT_FAULT_RANK=2 train_log read_error 4 --load "$TMPD/pristine" \
  --tensor-model-parallel-size 4
expect_error $? read_error "error \[rank 2\]: injected read error" "a read error on rank 2 of a t4 load ends the run"
[ "$rc" -ne 124 ]; ok $? "the t4 load with a read error did not hang (exit $rc, 124 is the timeout's)"

F=iter_0000004/checkpoint.h5
# ---- a write failing on one rank halfway through a save: its message, MPI_Abort, no hang, and
# the previous checkpoint stays the tracker's
rm -rf "$TMPD/ck" && cp -r "$TMPD/pristine" "$TMPD/ck"
PTDP_CHECKPOINT_FAULT=write-error PTDP_CHECKPOINT_FAULT_RANK=1 train_log write_error 2 --load "$TMPD/ck" \
  --save "$TMPD/ck"
expect_error $? write_error "error \[rank 1\]: injected write error" "a write error on rank 1 during a save ends the run"
[ "$rc" -ne 124 ] && [ "$(cat "$TMPD/ck/latest_checkpointed_iteration.txt")" = 4 ] && cmp -s "$TMPD/ck/$F" "$TMPD/pristine/$F"
ok $? "no hang (exit $rc), and the tracker still names iteration 4, whose file is unchanged"

# the same at t 2, where the TP pair exchanges the column slices of every row-parallel weight
# before writing them as full rows: rank 0 waits in an exchange that rank 1 never joins
rm -rf "$TMPD/ck" && cp -r "$TMPD/pristine" "$TMPD/ck"
PTDP_CHECKPOINT_FAULT=write-error PTDP_CHECKPOINT_FAULT_RANK=1 train_log write_error_t2 2 --load "$TMPD/ck" \
  --save "$TMPD/ck" --tensor-model-parallel-size 2
expect_error $? write_error_t2 "error \[rank 1\]: injected write error" "a write error on rank 1 during a t2 save ends the run"
[ "$rc" -ne 124 ] && [ "$(cat "$TMPD/ck/latest_checkpointed_iteration.txt")" = 4 ] && cmp -s "$TMPD/ck/$F" "$TMPD/pristine/$F"
ok $? "no hang at t2 (exit $rc), and the tracker still names iteration 4, whose file is unchanged"

# ---- damaged checkpoints
damage() { rm -rf "$TMPD/bad" && cp -r "$TMPD/pristine" "$TMPD/bad"; }
damage
$PY - "$TMPD/bad/$F" <<'PYEOF'
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    off = f["/model/decoder/layers/1/mlp/linear_fc1/weight"].id.get_offset()
with open(sys.argv[1], "r+b") as g:
    g.seek(off + 1001); b = g.read(1); g.seek(off + 1001); g.write(bytes([b[0] ^ 0x10]))
PYEOF
train_log flipped 2 --load "$TMPD/bad"
expect_error $? flipped "damaged: dataset /model/decoder/layers/1/mlp/linear_fc1/weight" "a flipped byte names the dataset"
damage
truncate -s 20000 "$TMPD/bad/$F"
train_log truncated 2 --load "$TMPD/bad"
expect_error $? truncated "truncated or is not an HDF5 file" "a truncated file is refused"
damage
$PY -c "import sys, h5py; f = h5py.File(sys.argv[1], 'r+'); f.attrs['format_version'] = 99; f.close()" "$TMPD/bad/$F"
train_log version 2 --load "$TMPD/bad"
expect_error $? version "format version 99" "an unknown format version is refused"
train_log shape 2 --load "$TMPD/pristine" --hidden-size 128
expect_error $? shape "has hidden-size = 64, the model here 128" "a different model shape names the key and both values"
damage
echo 12 > "$TMPD/bad/latest_checkpointed_iteration.txt"
train_log gone 2 --load "$TMPD/bad"
expect_error $? gone "names iteration 12, but its directory .*iter_0000012' is missing" "a tracker naming a missing directory"
damage
rm "$TMPD/bad/$F"
train_log nofile 2 --load "$TMPD/bad"
expect_error $? nofile "iter_0000004' has no checkpoint.h5: the checkpoint is damaged" "a checkpoint directory without its file"
echo twelve > "$TMPD/bad/latest_checkpointed_iteration.txt"
train_log garbled 2 --load "$TMPD/bad"
expect_error $? garbled "holds 'twelve', not an iteration number" "a garbled tracker"
train_log nooptim_save 2 --save "$TMPD/noopt" --no-save-optim --exit-interval 2; ok $? "saved without optimizer state"
train_log nooptim 2 --load "$TMPD/noopt"
expect_error $? nooptim "holds no optimizer state.*no-load-optim" "loading optimizer state that is not there"
train_log nooptim_ok 2 --load "$TMPD/noopt" --no-load-optim; ok $? "... and with no-load-optim it loads"
diff -r "$TMPD/pristine" "$TMPD/pristine.ref" > /dev/null; ok $? "the checkpoint the failed loads read (shape, t4 read error) is unchanged"

# ---- keys
train_log combo1 2 --save-interval 2
expect_error $? combo1 "save-interval = 2 is given without save" "save-interval without save"
train_log combo2 2 --finetune
expect_error $? combo2 "finetune is given without load" "finetune without load"
grep -q "iteration  *1/" "$TMPD/combo2.log"; [ $? -ne 0 ]; ok $? "... refused before any iteration"
n=3
for combo in "--keep-checkpoints 2|keep-checkpoints = 2 is given without save" "--no-save-optim|no-save-optim is given without save" \
  "--no-load-optim|no-load-optim is given without load" "--use-checkpoint-args|use-checkpoint-args is given without load"; do
  train_log combo$n 2 ${combo%%|*}
  expect_error $? combo$n "${combo#*|}" "${combo%%|*} alone"
  n=$((n + 1))
done
train_log fresh 2 --load "$TMPD/nothing-here" --save "$TMPD/nothing-here" --train-iters 2
rc=$?
[ $rc -eq 0 ] && grep -q "no checkpoint in .*nothing-here .*starts from scratch" "$TMPD/fresh.log" &&
  [ "$(cat "$TMPD/nothing-here/latest_checkpointed_iteration.txt")" = 2 ]
ok $? "a load directory with no checkpoint yet: a notice, a fresh start, then saved there (exit $rc)"
train_log duration 2 --save "$TMPD/dur" --exit-duration-in-mins 1e-6
rc=$?
[ $rc -eq 0 ] && grep -q "^exiting program after .* minutes at iteration 1" "$TMPD/duration.log" &&
  [ "$(cat "$TMPD/dur/latest_checkpointed_iteration.txt")" = 1 ]
ok $? "exit-duration-in-mins: saved after the first iteration past the limit and exited 0 (exit $rc)"
train_log keep 2 --save "$TMPD/keep" --save-interval 2 --keep-checkpoints 2
[ "$(ls "$TMPD/keep" | tr '\n' ' ')" = "iter_0000006 iter_0000008 latest_checkpointed_iteration.txt run.h5 " ]
ok $? "keep-checkpoints 2 keeps the newest two (and the run file): $(ls "$TMPD/keep" | tr '\n' ' ')"
train_log finetune 2 --load "$TMPD/pristine" --finetune --train-iters 2
grep -q "iteration  *1/  *2 | consumed samples:  *4 " "$TMPD/finetune.log"
ok $? "finetune: the weights load, iteration and data start afresh"
train_log ckargs 2 --load "$TMPD/pristine" --use-checkpoint-args --hidden-size 128 --num-layers 3 --train-iters 6
rc=$?
[ $rc -eq 0 ] && grep -q "hidden-size .* 64 (checkpoint)" "$TMPD/ckargs.log" && grep -q "num-layers .* 2 (checkpoint)" "$TMPD/ckargs.log"
ok $? "use-checkpoint-args takes the model's shape from the checkpoint (exit $rc)"

# ---- the file as h5py sees it: every tensor of a 2-layer model in its global shape
$PY - "$TMPD/pristine/$F" <<'PYEOF'
import sys, h5py
h, f, V, P, L = 64, 256, 300, 32, 2
want = {"embedding/word_embeddings/weight": (V, h), "embedding/position_embeddings/weight": (P, h),
        "decoder/final_layernorm/weight": (h,), "decoder/final_layernorm/bias": (h,)}
for l in range(L):
    for n, s in {"input_layernorm/weight": (h,), "input_layernorm/bias": (h,),
                 "self_attention/linear_qkv/weight": (3 * h, h), "self_attention/linear_qkv/bias": (3 * h,),
                 "self_attention/linear_proj/weight": (h, h), "self_attention/linear_proj/bias": (h,),
                 "pre_mlp_layernorm/weight": (h,), "pre_mlp_layernorm/bias": (h,),
                 "mlp/linear_fc1/weight": (f, h), "mlp/linear_fc1/bias": (f,),
                 "mlp/linear_fc2/weight": (h, f), "mlp/linear_fc2/bias": (h,)}.items():
        want[f"decoder/layers/{l}/{n}"] = s
bad = 0
with h5py.File(sys.argv[1], "r") as x:
    for grp in ("model", "optimizer/exp_avg", "optimizer/exp_avg_sq"):
        for n, s in want.items():
            d = x.get(f"{grp}/{n}")
            if d is None or d.shape != s or d.dtype != "float32" or "checksum" not in d.attrs:
                print("missing or wrong:", grp, n, None if d is None else d.shape); bad += 1
    found = []
    x.visit(lambda n: found.append(n) if isinstance(x[n], h5py.Dataset) else None)
    if len(found) != 3 * len(want): print("datasets:", len(found), "expected", 3 * len(want)); bad += 1
    for a in ("format_version", "ptdp_version", "iteration", "consumed_train_samples", "consumed_valid_samples",
              "saved_tensor_model_parallel_size", "saved_data_parallel_size"):
        if a not in x.attrs: print("missing attribute", a); bad += 1
    if x.attrs["iteration"] != 4 or x.attrs["consumed_train_samples"] != 16 or x["optimizer"].attrs["step"] != 4: bad += 1
    if x["args"].attrs["hidden-size"].decode() != "64": bad += 1
    # saved on 2 ranks of the default layout (d 2), lr 1e-3 with no decay keys: constant after no warm-up
    want_attrs = {"format_version": 1, "consumed_valid_samples": 0, "lr_schedule_iterations": 4, "saved_world_size": 2,
                  "saved_tensor_model_parallel_size": 1, "saved_pipeline_model_parallel_size": 1,
                  "saved_virtual_pipeline_chunks": 1, "saved_data_parallel_size": 2, "saved_sequence_parallel": 0,
                  "saved_distributed_optimizer": 0}
    for a, v in want_attrs.items():
        if a not in x.attrs or x.attrs[a] != v: print("attribute", a, x.attrs.get(a), "expected", v); bad += 1
    lr = float(x.attrs.get("learning_rate", -1))
    if not 0 < lr <= 1e-3: print("learning_rate", lr); bad += 1
    if not x.attrs.get("ptdp_version", b"").decode(): print("no ptdp_version"); bad += 1
    model = {"num_layers": 2, "hidden_size": 64, "num_attention_heads": 4, "ffn_hidden_size": 256,
             "max_position_embeddings": P, "vocab_size": V}
    for a, v in model.items():
        if x["model"].attrs.get(a) != v: print("/model attribute", a, x["model"].attrs.get(a), "expected", v); bad += 1
    if x["optimizer"].attrs["kind"].decode() != "adamw": print("optimizer kind", x["optimizer"].attrs["kind"]); bad += 1
    if x["args"].attrs["num-layers"].decode() != "2" or x["args"].attrs["vocab-size"].decode() != "300": bad += 1
    print(len(found), "datasets,", bad, "problems")
sys.exit(bad > 0)
PYEOF
ok $? "h5py finds every documented dataset in its global shape (word embedding [300, 64]), with a checksum, and the documented attributes with their values"
finish
