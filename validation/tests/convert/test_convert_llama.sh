#!/bin/sh
# ptdp-convert for the Llama family: ptdp checkpoints of RMSNorm, rotary positions
# (rotate-half, Llama 3's base), SwiGLU, no linear biases, grouped-query attention and an untied
# output layer to Hugging Face's LlamaForCausalLM directories and back.
#  - a tiny Llama trained and saved at t = 2 (SwiGLU's fc1 in two row blocks per rank) converted
#    out in fp32 and back is bit for bit the original (every /model dataset); the export passes
#    the independent reader (st_read.py); config.json has LlamaForCausalLM's keys (heads, key/value
#    heads, head_dim, intermediate_size, rope_theta, rms_norm_eps, tie_word_embeddings false) and
#    its tensors Hugging Face's names and shapes (q_proj [a hd, h], k_proj [g hd, h], gate_proj
#    and up_proj [f, h], lm_head);
#  - logits: ptdp on the imported checkpoint (t = 2) and a numpy Llama written from Hugging Face's
#    definition on the exported tensors (hf_llama_logits.py) agree to 1e-5 (max|diff| / max|ref|,
#    as validation/reference); three planted mistakes fail that check: q_proj and k_proj rows in
#    the interleaved rotation's order (what rotary-interleaved would need), gate_proj and up_proj
#    exchanged, rope_theta of Llama 2 (10000) in config.json;
#  - kv-channels other than h / a (head_dim) and a tied output layer (no lm_head, tie_word_embeddings
#    true) round trip bit for bit, and a checkpoint naming a tokenizer.json (HuggingFaceTokenizer):
#    the file copied out and in;
#  - refused, naming the key: rotary-interleaved, rotary-percent 0.5, RMSNorm and rope without
#    SwiGLU, biases, a GPT-2 model with SwiGLU; config.json with rope_scaling or hidden_act gelu,
#    values outside the range of the ptdp-train key they set (rope_theta 0, head_dim 0, a negative
#    dropout) or of another type (a string, null), query groups that do not divide the heads, and
#    num_hidden_layers that the tensors do not have (named before the model is built);
#  - where $PYTHON3 has safetensors and transformers (a GPU machine's image), transformers'
#    LlamaForCausalLM gives the same logits (validation/gpu/check_hf_export.py); PTDP_HF_EXPORT_KEEP=DIR
#    keeps the inputs for carrying there (llama-hf, llama-ref.npz).
# SKIP (77) when $PYTHON3 has no numpy or h5py.
. "$top_srcdir/validation/tests/common.sh"
: "${PYTHON3:=python3}"
python_or_skip numpy h5py
CONVERT="$top_builddir/ptdp-convert"
HERE="$top_srcdir/validation/tests/convert"
export HERE # the checks below import st_read.py from it
CHECK="$PYTHON3 $HERE/convert_checks.py"
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 PYTHONDONTWRITEBYTECODE=1 # no __pycache__ in the source tree

convert() { # NAME ARGS...: ptdp-convert on one rank, its output in $TMPD/NAME.log; its exit status
  convert_name=$1
  shift
  launch 1 "$CONVERT" "$@" > "$TMPD/$convert_name.log" 2>&1
}
same() { # NAME CKPT_A CKPT_B: the two checkpoints' weights are bit for bit equal
  $CHECK same-model "$2" "$3"
  ok $? "$1: bit for bit the original checkpoint's weights"
}
refused() { # NAME PATTERN ARGS...: ptdp-convert exits 1 with a message matching PATTERN
  refused_name=$1 refused_pattern=$2
  shift 2
  convert "$refused_name" "$@"
  rc=$?
  [ $rc -eq 1 ] && grep -q -- "$refused_pattern" "$TMPD/$refused_name.log"
  ok $? "$refused_name: refused (exit $rc): $(grep -m 1 'error' "$TMPD/$refused_name.log" | cut -c 1-160)"
}

"$PYTHON3" "$top_srcdir/validation/tests/data/write_vocab.py" good "$TMPD/vocab.json" "$TMPD/merges.txt" > /dev/null
DECK="$TMPD/tiny.in"
write_deck "$DECK" vocab-size=260 tokenizer-type=GPT2BPETokenizer vocab-file="$TMPD/vocab.json" \
  merge-file="$TMPD/merges.txt" hidden-dropout=0 attention-dropout=0 train-iters=3 eval-iters=0 log-interval=1 \
  normalization=RMSNorm position-embedding-type=rope rotary-base=500000 swiglu=true ffn-hidden-size=96 \
  disable-bias-linear=true untie-embeddings-and-output-weights=true group-query-attention=true num-query-groups=2
train_log orig 2 --tensor-model-parallel-size 2 --save "$TMPD/ck"
ok $? "ptdp-train saves a tiny Llama at iteration 3 on t = 2"

# ---- out, in fp32, and back bit for bit
convert out --load "$TMPD/ck" --hf-out "$TMPD/hf"
ok $? "ptdp-convert --load --hf-out: $(tail -n 1 "$TMPD/out.log")"
"$PYTHON3" "$HERE/st_read.py" check "$TMPD/hf/model.safetensors"
ok $? "the independent reader accepts model.safetensors"
$PYTHON3 - "$TMPD/hf" <<'PY'
import json, os, sys
sys.path.insert(0, os.environ["HERE"])
import st_read
d = sys.argv[1]
c = json.load(open(os.path.join(d, "config.json")))
want = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64, "intermediate_size": 96,
        "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
        "rope_theta": 500000, "rms_norm_eps": 1e-5, "tie_word_embeddings": False, "hidden_act": "silu",
        "vocab_size": 260, "attention_bias": False, "mlp_bias": False, "rope_scaling": None}
bad = {k: c.get(k, "(absent)") for k, v in want.items() if c.get(k, "(absent)") != v}
T = st_read.read_dir(d)[0]
shapes = {"model.layers.1.self_attn.q_proj.weight": (64, 64), "model.layers.1.self_attn.k_proj.weight": (32, 64),
          "model.layers.1.self_attn.v_proj.weight": (32, 64), "model.layers.1.self_attn.o_proj.weight": (64, 64),
          "model.layers.1.mlp.gate_proj.weight": (96, 64), "model.layers.1.mlp.up_proj.weight": (96, 64),
          "model.layers.1.mlp.down_proj.weight": (64, 96), "lm_head.weight": (260, 64),
          "model.embed_tokens.weight": (260, 64), "model.norm.weight": (64,)}
bad.update({n: T[n].shape if n in T else "(absent)" for n, s in shapes.items() if n not in T or T[n].shape != s})
print("%d tensors; config.json and shapes that differ: %s" % (len(T), bad or "none"))
sys.exit(1 if bad or len(T) != 2 + 2 * 9 + 1 else 0)
PY
ok $? "config.json has LlamaForCausalLM's keys, the tensors Hugging Face's names and shapes"
convert in --hf-in "$TMPD/hf" --save "$TMPD/ck2"
ok $? "ptdp-convert --hf-in --save"
same "ptdp (t = 2) -> LlamaForCausalLM -> ptdp in fp32" "$TMPD/ck" "$TMPD/ck2"

# ---- logits against a numpy Llama of Hugging Face's definition
train_log dump 2 --load "$TMPD/ck2" --finetune --train-iters 1 --tensor-model-parallel-size 2 \
  --debug-dump "$TMPD/dump.h5"
ok $? "ptdp-train on the imported checkpoint, t = 2, dumps its logits"
"$PYTHON3" "$HERE/hf_llama_logits.py" "$TMPD/hf" "$TMPD/dump.h5" --save "$TMPD/ref.npz" > "$TMPD/logits.log" 2>&1
ok $? "ptdp's logits equal the numpy Llama's on the exported tensors ($(tail -n 1 "$TMPD/logits.log"))"
for kind in qk_interleaved gate_up_swapped theta_10000; do
  rm -rf "$TMPD/hf-$kind"
  cp -r "$TMPD/hf" "$TMPD/hf-$kind"
  $PYTHON3 - "$TMPD/hf-$kind" "$kind" <<'PY'
import json, os, sys
import numpy as np
sys.path.insert(0, os.environ["HERE"])
import st_read
d, kind = sys.argv[1], sys.argv[2]
path = os.path.join(d, "config.json")
if kind == "theta_10000":
    c = json.load(open(path))
    c["rope_theta"] = 10000.0
    json.dump(c, open(path, "w"))
    sys.exit(0)
T, dt = st_read.read_dir(d)
hd = 16
for n in list(T):
    if kind == "qk_interleaved" and (n.endswith("q_proj.weight") or n.endswith("k_proj.weight")):
        w = T[n].reshape(-1, hd, T[n].shape[1])  # each head's rows (i, i + hd/2) -> (2i, 2i + 1)
        T[n] = np.stack([w[:, :hd // 2], w[:, hd // 2:]], axis=2).reshape(T[n].shape)
    if kind == "gate_up_swapped" and n.endswith("gate_proj.weight"):
        up = n.replace("gate_proj", "up_proj")
        T[n], T[up] = T[up], T[n]
st_read.write_file(os.path.join(d, "model.safetensors"), {n: (dt[n], x) for n, x in T.items()}, {"format": "pt"})
PY
  ! "$PYTHON3" "$HERE/hf_llama_logits.py" "$TMPD/hf-$kind" "$TMPD/dump.h5" > "$TMPD/plant-$kind.log" 2>&1
  ok $? "planted $kind: the logits check fails ($(tail -n 1 "$TMPD/plant-$kind.log"))"
done

# ---- a head size other than h / a, a tied output layer; one rank
train_log kv 1 --save "$TMPD/ck-kv" --kv-channels 24 --untie-embeddings-and-output-weights false
ok $? "ptdp-train saves a tied Llama with kv-channels 24"
convert kv-out --load "$TMPD/ck-kv" --hf-out "$TMPD/hf-kv" &&
  convert kv-in --hf-in "$TMPD/hf-kv" --save "$TMPD/ck-kv2"
ok $? "ptdp-convert out and in"
grep -q '"head_dim": 24' "$TMPD/hf-kv/config.json" && grep -q '"tie_word_embeddings": true' "$TMPD/hf-kv/config.json" &&
  "$PYTHON3" -c 'import os, sys; sys.path.insert(0, os.environ["HERE"]); import st_read
sys.exit("lm_head.weight" in st_read.read_file(sys.argv[1])[0])' "$TMPD/hf-kv/model.safetensors"
ok $? "config.json: head_dim 24, tie_word_embeddings true; no lm_head in the file"
same "kv-channels 24, tied" "$TMPD/ck-kv" "$TMPD/ck-kv2"

# ---- a Hugging Face tokenizer (tokenizer.json: the byte-level file of the fuzzing corpus, 265
# tokens): copied out with a tokenizer_config.json and the end of text as eos_token_id, and in,
# named by the imported checkpoint's tokenizer-model
mkdir -p "$TMPD/tok"
sed -n '/^%%$/q;p' "$top_srcdir/validation/fuzz/corpus/hf/byte_level" > "$TMPD/tok/tokenizer.json"
train_log tok 1 --save "$TMPD/ck-tok" --train-iters 1 --tokenizer-type HuggingFaceTokenizer \
  --tokenizer-model "$TMPD/tok/tokenizer.json" --vocab-size 265
convert tok-out --load "$TMPD/ck-tok" --hf-out "$TMPD/hf-tok" &&
  convert tok-in --hf-in "$TMPD/hf-tok" --save "$TMPD/ck-tok2"
ok $? "a checkpoint with a tokenizer.json out and in"
cmp -s "$TMPD/tok/tokenizer.json" "$TMPD/hf-tok/tokenizer.json" && grep -q PreTrainedTokenizerFast \
  "$TMPD/hf-tok/tokenizer_config.json" && grep -q '"eos_token_id": 264' "$TMPD/hf-tok/config.json" &&
  cmp -s "$TMPD/tok/tokenizer.json" "$TMPD/ck-tok2/tokenizer.json" && grep -q "$TMPD/ck-tok2/tokenizer.json" \
  "$TMPD/ck-tok2/iter_0000000/checkpoint.h5"
ok $? "tokenizer.json copied both ways (eos_token_id 264), the imported checkpoint's tokenizer-model names its copy"
same "with a tokenizer.json" "$TMPD/ck-tok" "$TMPD/ck-tok2"

# ---- what LlamaForCausalLM cannot express, and config.json's keys ptdp does not compute
for case in "interleaved:rotary-interleaved is set:--rotary-interleaved" \
  "partial:rotary-percent is not 1:--rotary-percent 0.5" "gelu:swiglu is not set:--swiglu false" \
  "biases:disable-bias-linear:--disable-bias-linear false" \
  "gpt2-swiglu:LlamaForCausalLM cannot express:--normalization LayerNorm --position-embedding-type learned_absolute"; do
  name=${case%%:*} rest=${case#*:}
  pattern=${rest%%:*} flags=${rest#*:}
  # shellcheck disable=SC2086
  train_log "bad-$name" 1 --save "$TMPD/ck-$name" --train-iters 1 $flags
  refused "export-$name" "$pattern" --load "$TMPD/ck-$name" --hf-out "$TMPD/x"
done
# a value present is used or refused, never replaced by the default: rope_theta 0 would have become
# rotary-base 10000; the message names the key, its value and the range (ptdp-train's key table)
for edit in 'rope_scaling={"rope_type": "llama3", "factor": 8.0}|rope_scaling is set' \
  'hidden_act="gelu"|hidden_act is not' \
  'rope_theta=0|rope_theta is 0: ptdp needs a number in \[1, 1e+12\] there (the range of ptdp-train.s rotary-base' \
  'rope_theta="500000"|rope_theta is the string "500000": ptdp needs a number' \
  'rms_norm_eps=null|rms_norm_eps is null: ptdp needs a number in \[1e-12, 1\]' \
  'tie_word_embeddings="false"|tie_word_embeddings is the string "false", not true or false' \
  'num_key_value_heads=3|num_attention_heads 4 is not a multiple of num_key_value_heads 3' \
  'head_dim=0|head_dim is 0: ptdp needs an integer in \[1, 65536\] there (the range of ptdp-train.s kv-channels' \
  'attention_dropout=-0.1|attention_dropout is -0.1: ptdp needs a number in \[0, 0.99\]' \
  'num_hidden_layers=65536|holds no tensor .model.layers.2.input_layernorm.weight.'; do
  rm -rf "$TMPD/hf-edit"
  cp -r "$TMPD/hf" "$TMPD/hf-edit"
  $CHECK edit "$TMPD/hf-edit" "${edit%%|*}"
  refused "import-${edit%%=*}" "${edit#*|}" --hf-in "$TMPD/hf-edit" --save "$TMPD/x"
done

# ---- Hugging Face's own packages, where they are (a GPU machine's image; not this one's)
if [ -n "${PTDP_HF_EXPORT_KEEP:-}" ]; then # the inputs of validation/gpu/check_hf_export.py
  mkdir -p "$PTDP_HF_EXPORT_KEEP" && rm -rf "$PTDP_HF_EXPORT_KEEP/llama-hf" &&
    cp -r "$TMPD/hf" "$PTDP_HF_EXPORT_KEEP/llama-hf" && cp "$TMPD/ref.npz" "$PTDP_HF_EXPORT_KEEP/llama-ref.npz"
  ok $? "the export kept in $PTDP_HF_EXPORT_KEEP (llama-hf, llama-ref.npz)"
fi
if "$PYTHON3" -c 'import safetensors, transformers, torch' > /dev/null 2>&1; then
  "$PYTHON3" "$top_srcdir/validation/gpu/check_hf_export.py" "$TMPD/hf" "$TMPD/ref.npz"
  ok $? "transformers' LlamaForCausalLM gives ptdp's logits (1e-4)"
else
  echo "note: $PYTHON3 has no safetensors and transformers: validation/gpu/check_hf_export.py runs where they are"
fi
finish
