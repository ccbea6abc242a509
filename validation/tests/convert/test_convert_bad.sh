#!/bin/sh
# ptdp-convert refuses what it cannot convert, each with one message naming the file and the
# reason and exit status 1 (never a crash): wrong usage, a missing checkpoint or directory,
# another architecture or a model ptdp does not compute (config.json's keys), a key's value
# outside the range of the ptdp-train key it sets or of another JSON type (never replaced by a
# default), sizes that disagree with the tensors (named before the model takes memory: under a
# 1.5 GB address-space limit, a vocab_size of 2^24 is named, not an out-of-memory), tensors
# missing, extra, of the wrong shape or dtype, one weight under two names, an untied output
# layer, damaged safetensors headers, an index naming files outside the directory, a
# config.json or tokenizer.json that is not a regular file or is too large.  A value that is not
# finite converts with a warning naming the tensor, and ptdp-train from it warns at the load
# and stops at the first loss naming the weight.  Also the independent reader (st_read.py) refuses the
# damaged headers, so it is shown to catch what it checks ptdp's files for.
# SKIP (77) when $PYTHON3 has no numpy or h5py.
. "$top_srcdir/validation/tests/common.sh"
: "${PYTHON3:=python3}"
python_or_skip numpy h5py
CONVERT="$top_builddir/ptdp-convert"
HERE="$top_srcdir/validation/tests/convert"
CHECK="$PYTHON3 $HERE/convert_checks.py"
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 PYTHONDONTWRITEBYTECODE=1 # no __pycache__ in the source tree

# refused NAME PATTERN NP ARGS...: ptdp-convert on NP ranks exits 1 with a message matching PATTERN
refused() {
  refused_name=$1 refused_pattern=$2 refused_np=$3
  shift 3
  launch "$refused_np" "$CONVERT" "$@" > "$TMPD/$refused_name.log" 2>&1
  rc=$?
  [ $rc -eq 1 ] && grep -q -- "$refused_pattern" "$TMPD/$refused_name.log"
  ok $? "$refused_name: refused (exit $rc): $(grep -m 1 'error' "$TMPD/$refused_name.log" | cut -c 1-150)"
}

DECK="$TMPD/tiny.in"
write_deck "$DECK" hidden-dropout=0 attention-dropout=0 train-iters=1 eval-iters=0
train_log orig 1 --save "$TMPD/ck"
ok $? "ptdp-train saves a tiny GPT"
launch 1 "$CONVERT" --load "$TMPD/ck" --hf-out "$TMPD/hf" > "$TMPD/out.log" 2>&1
ok $? "ptdp-convert exports it"

# ---- usage
refused nothing "nothing to do" 1
refused both "not keys of both" 1 --load "$TMPD/ck" --hf-in "$TMPD/hf"
refused half "needs both --load" 1 --load "$TMPD/ck"
refused two-ranks "runs on one rank" 2 --load "$TMPD/ck" --hf-out "$TMPD/x"
refused shard-size "unknown unit" 1 --load "$TMPD/ck" --hf-out "$TMPD/x" --max-shard-size 5XB
refused no-checkpoint "no checkpoint in" 1 --load "$TMPD/none" --hf-out "$TMPD/x"
refused no-dir "no readable config.json" 1 --hf-in "$TMPD/none" --save "$TMPD/x"

# ---- config.json
edited() { # NAME KEY=JSON...: a copy of the export with config.json edited, in $TMPD/NAME
  edited_name=$1
  shift
  rm -rf "${TMPD:?}/$edited_name"
  cp -r "$TMPD/hf" "$TMPD/$edited_name"
  [ $# -eq 0 ] || $CHECK edit "$TMPD/$edited_name" "$@"
}
edited mistral 'architectures=["MistralForCausalLM"]' 'model_type="mistral"'
refused architecture "architecture 'MistralForCausalLM'" 1 --hf-in "$TMPD/mistral" --save "$TMPD/x"
edited llama 'architectures=["LlamaForCausalLM"]' 'model_type="llama"'
refused llama-keys "no hidden_size" 1 --hf-in "$TMPD/llama" --save "$TMPD/x"
edited erf 'activation_function="gelu"'
refused gelu-erf "activation_function 'gelu'" 1 --hf-in "$TMPD/erf" --save "$TMPD/x"
edited untied 'tie_word_embeddings=false'
refused untied-config "tie_word_embeddings is false" 1 --hf-in "$TMPD/untied" --save "$TMPD/x"
edited inner 'n_inner=200'
refused n-inner "needs \[64, 200\]" 1 --hf-in "$TMPD/inner" --save "$TMPD/x"
edited layer-scale 'scale_attn_by_inverse_layer_idx=true'
refused layer-scale "scale_attn_by_inverse_layer_idx is true" 1 --hf-in "$TMPD/layer-scale" --save "$TMPD/x"
edited heads 'n_head=5'
refused heads "not a multiple of n_head" 1 --hf-in "$TMPD/heads" --save "$TMPD/x"
printf '{"architectures": ["GPT2LMHeadModel"], "n_embd": 64,}' > "$TMPD/badjson.json"
edited badjson && cp "$TMPD/badjson.json" "$TMPD/badjson/config.json"
refused config-json "not valid JSON" 1 --hf-in "$TMPD/badjson" --save "$TMPD/x"
# a key given twice (Python's json, so transformers, keeps the last; a lookup would take the first):
# refused, naming the file, the key and both places
edited twice
"$PYTHON3" -c "import sys; p = sys.argv[1]; t = open(p).read(); assert t.startswith('{')
open(p, 'w').write('{\n  \"layer_norm_epsilon\": 0.1,' + t[1:])" "$TMPD/twice/config.json"
refused config-twice "twice/config.json: the key \"layer_norm_epsilon\" appears twice in one object: at line 2, column 3 (byte 4) and at line [0-9]*, column [0-9]* (byte [0-9]*)" \
  1 --hf-in "$TMPD/twice" --save "$TMPD/x"

# every key used or refused, in the range of the ptdp-train key it sets (its key table's), never
# replaced by a default; the message names the key, its value and the range
for edit in 'layer_norm_epsilon=0|layer_norm_epsilon is 0: ptdp needs a number in \[1e-12, 1\] there (the range of ptdp-train.s layernorm-epsilon' \
  'n_inner=0|n_inner is 0: ptdp needs an integer in \[1, 4194304\] there (the range of ptdp-train.s ffn-hidden-size' \
  'n_layer="2"|n_layer is the string "2": ptdp needs an integer in \[1, 100000\]' \
  'n_head=4.0|n_head is 4.0: ptdp needs an integer' \
  'vocab_size=-1|vocab_size is -1: ptdp needs an integer in \[1, 16777216\]' \
  'n_positions=null|n_positions is null: ptdp needs an integer' \
  'resid_pdrop=1|resid_pdrop is 1: ptdp needs a number in \[0, 0.99\]' \
  'initializer_range=[0.02]|initializer_range is an array: ptdp needs a number' \
  'embd_pdrop=0.2|embd_pdrop 0.2 differs from resid_pdrop' \
  'tie_word_embeddings="true"|tie_word_embeddings is the string "true", not true or false' \
  'scale_attn_weights=null|scale_attn_weights is null, not true or false' \
  'activation_function=1|activation_function is 1, not a string' \
  'model_type="llama"|model_type .llama. is not architectures. GPT2LMHeadModel.s' \
  'architectures="GPT2LMHeadModel"|architectures is not an array of class names'; do
  edited range "${edit%%|*}"
  refused "config-${edit%%=*}" "${edit#*|}" 1 --hf-in "$TMPD/range" --save "$TMPD/x"
done

# sizes that disagree with the tensors: named from the headers before the model is built, so a
# vocabulary of 2^24 (4 GB of fp32 at h = 64) fails on its message under 1.5 GB of address space
for edit in 'vocab_size=16777216|tensor .transformer.wte.weight. has shape \[300, 64\] where config.json.s model needs \[16777216, 64\]' \
  'n_layer=65536|holds no tensor .transformer.h.2.ln_1.weight. (a GPT2LMHeadModel of config.json.s sizes has it)' \
  'n_embd=1048576|tensor .transformer.wte.weight. has shape \[300, 64\] where config.json.s model needs \[300, 1048576\]'; do
  edited size "${edit%%|*}"
  (ulimit -v 1500000; launch 1 "$CONVERT" --hf-in "$TMPD/size" --save "$TMPD/x") > "$TMPD/size.log" 2>&1
  rc=$?
  [ $rc -eq 1 ] && grep -q -- "${edit#*|}" "$TMPD/size.log" && ! grep -q "out of memory" "$TMPD/size.log"
  ok $? "config-${edit%%=*} (1.5 GB address space): refused (exit $rc): $(grep -m 1 error "$TMPD/size.log" | cut -c 1-170)"
done

# not regular files, or too large: refused at once, not read until memory runs out or waited on
edited fifo && rm "$TMPD/fifo/config.json" && mkfifo "$TMPD/fifo/config.json"
refused config-fifo "fifo/config.json' is a FIFO, not a regular file" 1 --hf-in "$TMPD/fifo" --save "$TMPD/x"
edited bigconfig && truncate -s 2000000 "$TMPD/bigconfig/config.json"
refused config-large "bigconfig/config.json' has 2000000 bytes, more than the 1048576" 1 \
  --hf-in "$TMPD/bigconfig" --save "$TMPD/x"
edited zero && ln -s /dev/zero "$TMPD/zero/tokenizer.json"
refused tokenizer-zero "zero/tokenizer.json' is a character device, not a regular file" 1 \
  --hf-in "$TMPD/zero" --save "$TMPD/x"
edited tokfifo && mkfifo "$TMPD/tokfifo/tokenizer.json"
refused tokenizer-fifo "tokfifo/tokenizer.json' is a FIFO, not a regular file" 1 --hf-in "$TMPD/tokfifo" --save "$TMPD/x"
edited tokhuge && truncate -s 1073741825 "$TMPD/tokhuge/tokenizer.json"
refused tokenizer-huge "tokhuge/tokenizer.json' has 1073741825 bytes, more than the 1073741824" 1 \
  --hf-in "$TMPD/tokhuge" --save "$TMPD/x"

# ---- tensors
for kind in missing:"holds no tensor 'transformer.h.0.ln_2.bias'" extra:"is not part of a GPT2LMHeadModel" \
  int32:"stored as I32" shape:"has shape \[64, 255\]" lm_head_untied:"differs from the word embedding" \
  duplicate:"is in two of its weight files" \
  ambiguous:"tensors 'transformer.h.0.ln_1.weight' (.*model.safetensors) and 'h.0.ln_1.weight' (.*model.safetensors) are one weight, with and without the prefix 'transformer.'"; do
  k=${kind%%:*}
  $CHECK plant "$TMPD/hf" "$TMPD/p-$k" "$k" > /dev/null
  refused "tensor-$k" "${kind#*:}" 1 --hf-in "$TMPD/p-$k" --save "$TMPD/x"
done

# ---- a value that is not finite: converted (transformers loads it too) with a warning naming the
# first tensor and element; ptdp-train from the checkpoint warns at the load and its first loss's
# error names the weight
$CHECK plant "$TMPD/hf" "$TMPD/p-nan" nan > /dev/null
launch 1 "$CONVERT" --hf-in "$TMPD/p-nan" --save "$TMPD/ck-nan" > "$TMPD/nan.log" 2>&1
rc=$?
[ $rc -eq 0 ] && grep -q "warning: .*p-nan/model.safetensors: tensor 'transformer.h.1.mlp.c_fc.weight' holds a value that is not finite (nan) at element 773 (row 3, column 5): the first of 2 tensors in all" "$TMPD/nan.log"
ok $? "a NaN converts (exit $rc) with a warning: $(grep -m 1 warning "$TMPD/nan.log" | cut -c 1-170)"
train_log nan-train 1 --load "$TMPD/ck-nan" --finetune --train-iters 1
rc=$?
w="decoder.layers.1.mlp.linear_fc1.weight, element 323 (row 5, column 3)"
[ $rc -ne 0 ] && grep -q "warning: checkpoint '.*': weight $w is not finite" "$TMPD/nan-train.log" &&
  grep -q "the loss is not finite (nan) at micro-batch starting at sample 0 (the checkpoint loaded holds a weight that is not finite: $w)" \
    "$TMPD/nan-train.log"
ok $? "ptdp-train from it (exit $rc) names the weight at the load and in the loss's error: $(grep -m 1 'error' "$TMPD/nan-train.log" | cut -c 1-200)"

# ---- damaged files (each also refused by the independent reader)
damaged() { # NAME PYTHON-EXPR-OF-b: model.safetensors rewritten as the expression of its bytes b
  rm -rf "${TMPD:?}/$1"
  cp -r "$TMPD/hf" "$TMPD/$1"
  "$PYTHON3" -c "import sys; b = open(sys.argv[1], 'rb').read(); open(sys.argv[1], 'wb').write($2)" \
    "$TMPD/$1/model.safetensors"
}
damaged truncated 'b[:len(b) - 4]'
damaged length 'bytes([0xff] * 8) + b[8:]'
damaged json 'b[:8] + b"[" + b[9:]'
damaged offsets 'b.replace(b"\"data_offsets\":[0,", b"\"data_offsets\":[4,", 1)'
damaged dtype 'b.replace(b"\"F32\"", b"\"F31\"", 1)'
damaged unaligned b
$CHECK unpad "$TMPD/unaligned/model.safetensors"
# a tensor named twice: its entry repeated at the header's start, the header's length redone
damaged dup b
"$PYTHON3" - "$TMPD/dup/model.safetensors" <<'EOF'
import json, struct, sys
b = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", b[:8])[0]
e = json.loads(b[8:8 + n])["transformer.wte.weight"]
twice = b'"transformer.wte.weight":' + json.dumps(e).encode() + b","
open(sys.argv[1], "wb").write(struct.pack("<Q", n + len(twice)) + b"{" + twice + b[9:])
EOF
refused truncated "tensors end at\|past its end" 1 --hf-in "$TMPD/truncated" --save "$TMPD/x"
refused header-length "header length 18446744073709551615 exceeds" 1 --hf-in "$TMPD/length" --save "$TMPD/x"
refused header-json "does not start with '{'" 1 --hf-in "$TMPD/json" --save "$TMPD/x"
refused offsets "make [0-9]* bytes but data_offsets \[4, " 1 --hf-in "$TMPD/offsets" --save "$TMPD/x"
refused dtype "unknown dtype 'F31'" 1 --hf-in "$TMPD/dtype" --save "$TMPD/x"
refused tensor-twice "dup/model.safetensors (its JSON header): the key \"transformer.wte.weight\" appears twice in one object: at byte 1 and at byte [0-9]*" \
  1 --hf-in "$TMPD/dup" --save "$TMPD/x"
for d in truncated length json offsets dtype dup unaligned; do
  "$PYTHON3" "$HERE/st_read.py" check "$TMPD/$d/model.safetensors" > "$TMPD/st-$d.log" 2>&1
  [ $? -eq 1 ] && grep -q INVALID "$TMPD/st-$d.log"
  ok $? "the independent reader refuses the $d file: $(cut -c 1-120 "$TMPD/st-$d.log")"
done
launch 1 "$CONVERT" --hf-in "$TMPD/unaligned" --save "$TMPD/ck-unaligned" > "$TMPD/unaligned.log" 2>&1
ok $? "an unpadded header (valid, if not as the reference writes it) is read by ptdp"

# ---- the index
rm -rf "$TMPD/escape"
mkdir -p "$TMPD/escape"
cp "$TMPD/hf/config.json" "$TMPD/escape/"
cp "$TMPD/hf/model.safetensors" "$TMPD/outside.safetensors"
printf '{"metadata": {}, "weight_map": {"transformer.wte.weight": "../outside.safetensors"}}' \
  > "$TMPD/escape/model.safetensors.index.json"
refused index-escape "not a .safetensors file in the directory" 1 --hf-in "$TMPD/escape" --save "$TMPD/x"
printf '{"metadata": {}, "weight_map": {"transformer.wte.weight": "model.safetensors",\n "transformer.wte.weight": "outside.safetensors"}}' \
  > "$TMPD/escape/model.safetensors.index.json"
refused index-twice "index.json: the key \"transformer.wte.weight\" appears twice in one object: at line 1, column 33 (byte 32) and at line 2, column 2 (byte 80)" \
  1 --hf-in "$TMPD/escape" --save "$TMPD/x"
rm "$TMPD/escape/model.safetensors.index.json"
refused no-weights "no model.safetensors or model.safetensors.index.json" 1 --hf-in "$TMPD/escape" --save "$TMPD/x"
finish
