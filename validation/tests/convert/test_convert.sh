#!/bin/sh
# ptdp-convert: ptdp checkpoints to Hugging Face's GPT2LMHeadModel directories and back.
#  - a tiny GPT trained by ptdp-train (t = 1, the GPT-2 tokenizer's files of a small vocabulary)
#    converted out in fp32 and back is bit for bit the original (every /model dataset), and the
#    two train to the same losses on another layout (t = 2, p = 2, finetune);
#  - the export passes the independent reader (st_read.py: the format's specification, the header
#    padded to 8 bytes), its config.json has GPT-2's keys, the tokenizer's files are copied, and
#    the imported checkpoint names its copies (ptdp-generate decodes with them);
#  - logits: ptdp on the imported checkpoint (t = 2) and a numpy GPT-2 written from Hugging
#    Face's definition on the exported tensors agree to 1e-5 (max|diff| / max|ref|, as
#    validation/reference: fp32 sums of h..4h terms sit near 1e-6); two planted layout mistakes
#    (c_attn in Megatron's per-head order, an untransposed c_proj) fail that check;
#  - sharded (max-shard-size 100KB: several files and the index) and hub-style files (no
#    "transformer." prefix, mask buffers, a tied lm_head, fp16) import to the same checkpoint;
#  - bf16 and fp16 exports are numpy's nearest-even roundings of the fp32 one, and import back as
#    exactly their widened values;
#  - where $PYTHON3 has safetensors and transformers (a GPU machine's image), they read the export
#    (validation/gpu/check_hf_export.py); PTDP_HF_EXPORT_KEEP=DIR keeps its inputs for carrying there.
# SKIP (77) when $PYTHON3 has no numpy or h5py.
. "$top_srcdir/validation/tests/common.sh"
: "${PYTHON3:=python3}"
python_or_skip numpy h5py
CONVERT="$top_builddir/ptdp-convert"
GENERATE="$top_builddir/ptdp-generate"
HERE="$top_srcdir/validation/tests/convert"
CHECK="$PYTHON3 $HERE/convert_checks.py"
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 PYTHONDONTWRITEBYTECODE=1 # no __pycache__ in the source tree

# convert NAME ARGS...: ptdp-convert on one rank, its output in $TMPD/NAME.log; its exit status
convert() {
  convert_name=$1
  shift
  launch 1 "$CONVERT" "$@" > "$TMPD/$convert_name.log" 2>&1
}
# same NAME CKPT_A CKPT_B: the two checkpoints' weights are bit for bit equal
same() {
  $CHECK same-model "$2" "$3"
  ok $? "$1: bit for bit the original checkpoint's weights"
}

"$PYTHON3" "$top_srcdir/validation/tests/data/write_vocab.py" good "$TMPD/vocab.json" "$TMPD/merges.txt" > /dev/null
DECK="$TMPD/tiny.in"
write_deck "$DECK" vocab-size=260 tokenizer-type=GPT2BPETokenizer vocab-file="$TMPD/vocab.json" \
  merge-file="$TMPD/merges.txt" hidden-dropout=0 attention-dropout=0 train-iters=3 eval-iters=0 log-interval=1
train_log orig 1 --save "$TMPD/ck"
ok $? "ptdp-train saves a tiny GPT at iteration 3"

# ---- out, in fp32
convert out --load "$TMPD/ck" --hf-out "$TMPD/hf"
ok $? "ptdp-convert --load --hf-out (fp32)"
"$PYTHON3" "$HERE/st_read.py" check "$TMPD/hf/model.safetensors"
ok $? "the independent reader accepts model.safetensors (header padded to 8 bytes)"
$CHECK config "$TMPD/hf"
ok $? "config.json: GPT2LMHeadModel's keys"
cmp -s "$TMPD/vocab.json" "$TMPD/hf/vocab.json" && cmp -s "$TMPD/merges.txt" "$TMPD/hf/merges.txt" &&
  grep -q '"eos_token_id": 259' "$TMPD/hf/config.json" && [ -f "$TMPD/hf/tokenizer_config.json" ]
ok $? "the tokenizer's files copied (vocab.json, merges.txt, tokenizer_config.json; eos_token_id 259)"

# ---- back in, bit for bit, and the same losses on another layout
convert in --hf-in "$TMPD/hf" --save "$TMPD/ck2"
ok $? "ptdp-convert --hf-in --save"
same "ptdp -> Hugging Face -> ptdp in fp32" "$TMPD/ck" "$TMPD/ck2"
grep -q "$TMPD/ck2/vocab.json" "$TMPD/ck2/iter_0000000/checkpoint.h5" &&
  cmp -s "$TMPD/vocab.json" "$TMPD/ck2/vocab.json"
ok $? "the imported checkpoint's vocab-file names its copy of the tokenizer"
launch 1 "$GENERATE" --load "$TMPD/ck2" --prompt "ab c" --num-tokens-to-generate 4 --temperature 0 \
  > "$TMPD/gen.out" 2> "$TMPD/gen.err"
ok $? "ptdp-generate runs on the imported checkpoint with its tokenizer"
for c in ck ck2; do
  train_log "t2p2-$c" 4 --load "$TMPD/$c" --finetune --train-iters 2 --tensor-model-parallel-size 2 \
    --pipeline-model-parallel-size 2
  ok $? "ptdp-train loads $c on t = 2, p = 2 (finetune)"
  grep -o 'lm loss: [0-9.E+-]*' "$TMPD/t2p2-$c.log" > "$TMPD/t2p2-$c.loss"
done
losses=$(tr '\n' ' ' < "$TMPD/t2p2-ck2.loss")
[ -s "$TMPD/t2p2-ck.loss" ] && cmp -s "$TMPD/t2p2-ck.loss" "$TMPD/t2p2-ck2.loss"
ok $? "the original and the round-tripped checkpoint train to the same losses on t2 p2: $losses"

# ---- logits against a numpy GPT-2 of Hugging Face's definition
train_log dump 2 --load "$TMPD/ck2" --finetune --train-iters 1 --tensor-model-parallel-size 2 \
  --debug-dump "$TMPD/dump.h5"
ok $? "ptdp-train on the imported checkpoint, t = 2, dumps its logits"
"$PYTHON3" "$HERE/hf_gpt2_logits.py" "$TMPD/hf" "$TMPD/dump.h5" --save "$TMPD/ref.npz"
ok $? "ptdp's logits equal the numpy GPT-2's on the exported tensors (1e-5)"
for kind in qkv_per_head proj_untransposed; do
  $CHECK plant "$TMPD/hf" "$TMPD/hf-$kind" "$kind" > /dev/null
  ! "$PYTHON3" "$HERE/hf_gpt2_logits.py" "$TMPD/hf-$kind" "$TMPD/dump.h5" > "$TMPD/plant-$kind.log" 2>&1
  ok $? "planted $kind: the logits check fails ($(tail -n 1 "$TMPD/plant-$kind.log"))"
done

# ---- shards and the index
convert shards --load "$TMPD/ck" --hf-out "$TMPD/hf-shards" --max-shard-size 100KB
ok $? "ptdp-convert --max-shard-size 100KB"
n=$(ls "$TMPD/hf-shards"/model-*-of-*.safetensors 2> /dev/null | wc -l)
[ "$n" -ge 3 ] && [ -f "$TMPD/hf-shards/model.safetensors.index.json" ] && [ ! -f "$TMPD/hf-shards/model.safetensors" ]
ok $? "$n shards and model.safetensors.index.json"
"$PYTHON3" "$HERE/st_read.py" check "$TMPD/hf-shards" && $CHECK widened "$TMPD/hf" "$TMPD/hf-shards" > /dev/null
ok $? "the independent reader takes the shards through the index: the same tensors as one file"
convert shards-in --hf-in "$TMPD/hf-shards" --save "$TMPD/ck3"
ok $? "ptdp-convert reads the sharded directory"
same "sharded round trip" "$TMPD/ck" "$TMPD/ck3"
convert reshard --load "$TMPD/ck" --hf-out "$TMPD/hf-shards"
[ -f "$TMPD/hf-shards/model.safetensors" ] && [ ! -f "$TMPD/hf-shards/model.safetensors.index.json" ] &&
  [ -z "$(ls "$TMPD/hf-shards" | grep -e '-of-')" ]
ok $? "an unsharded export over the sharded one removes the old shards and index"

# ---- the hub's older files: no prefix, mask buffers, a tied lm_head; fp16
$CHECK hub "$TMPD/hf" "$TMPD/hf-hub"
convert hub --hf-in "$TMPD/hf-hub" --save "$TMPD/ck-hub"
ok $? "ptdp-convert reads hub-style names, attn.bias buffers and a tied lm_head.weight (fp16)"
convert hub-out --load "$TMPD/ck-hub" --hf-out "$TMPD/hf-hub16" --dtype fp16
$CHECK rounded "$TMPD/hf" "$TMPD/hf-hub16" fp16
ok $? "the hub-style files imported: every weight the fp16 rounding of the original's"

# ---- bf16 and fp16
for dt in bf16 fp16; do
  convert "out-$dt" --load "$TMPD/ck" --hf-out "$TMPD/hf-$dt" --dtype "$dt"
  ok $? "ptdp-convert --dtype $dt"
  $CHECK rounded "$TMPD/hf" "$TMPD/hf-$dt" "$dt"
  ok $? "$dt export: numpy's nearest-even rounding of every fp32 weight"
  convert "in-$dt" --hf-in "$TMPD/hf-$dt" --save "$TMPD/ck-$dt"
  convert "again-$dt" --load "$TMPD/ck-$dt" --hf-out "$TMPD/hf-$dt-32"
  $CHECK widened "$TMPD/hf-$dt" "$TMPD/hf-$dt-32"
  ok $? "$dt import: the checkpoint holds the $dt values widened exactly"
done

# ---- Hugging Face's own packages, where they are (a GPU machine's image; not this one's)
if [ -n "${PTDP_HF_EXPORT_KEEP:-}" ]; then # the inputs of validation/gpu/check_hf_export.py
  mkdir -p "$PTDP_HF_EXPORT_KEEP" && cp -r "$TMPD/hf" "$TMPD/hf-bf16" "$TMPD/ref.npz" "$PTDP_HF_EXPORT_KEEP/"
  ok $? "the export kept in $PTDP_HF_EXPORT_KEEP (hf, hf-bf16, ref.npz)"
fi
if "$PYTHON3" -c 'import safetensors, transformers, torch' > /dev/null 2>&1; then
  "$PYTHON3" "$top_srcdir/validation/gpu/check_hf_export.py" "$TMPD/hf" "$TMPD/ref.npz"
  ok $? "safetensors reads the export as st_read.py does; transformers' GPT2LMHeadModel gives ptdp's logits (1e-4)"
else
  echo "note: $PYTHON3 has no safetensors and transformers: validation/gpu/check_hf_export.py runs where they are"
fi
finish
