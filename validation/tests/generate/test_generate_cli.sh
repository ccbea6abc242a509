#!/bin/sh
# ptdp-generate end to end, on checkpoints written by ptdp-train:
#  - the same text at t = 1, 2 and 4 from a checkpoint saved at t = 2 (greedy, top-k, top-p), and
#    at t = 2 under the guard backend; KV cache on and off give the same greedy text;
#  - a checkpoint saved by a pipeline (p = 2) loads on t = 1 and t = 2 alike;
#  - Megatron's --tensor-model-parallel-size is taken when it equals the ranks, refused otherwise;
#    a seed given to greedy decoding is reported as without effect (the shared options layer);
#  - bad input: one clear message from rank 0 and a non-zero exit, no hang.
# The model: 2 layers, h 64, 4 heads, the byte-level tokenizer (vocabulary 257), trained 10
# iterations on mock data (its text is noise; what matters is that every layout computes it alike).
. "$top_srcdir/validation/tests/common.sh"
GEN="$top_builddir/ptdp-generate"
DECK="$TMPD/deck.in"
write_deck "$DECK" max-position-embeddings=64 train-iters=10 lr=1e-3 log-interval=10 vocab-size=257 \
  tokenizer-type=ByteLevel save-interval=10

train() { # train NAME NP FLAGS...: save a checkpoint to $TMPD/NAME (may run in the background)
  name=$1 np=$2
  shift 2
  launch_apart "$name" "$np" "$TRAIN" "$DECK" --save "$TMPD/$name" "$@" > "$TMPD/$name.log" 2>&1
  echo $? > "$TMPD/$name.trained"
}
trained() { # trained NAME...: count each training run's success
  for name in "$@"; do
    rc=$(cat "$TMPD/$name.trained")
    ok "$rc" "ptdp-train saved checkpoint $name"
    [ "$rc" -eq 0 ] || tail -15 "$TMPD/$name.log"
  done
}
# Runs are mostly launcher start-up latency: up to $JOBS run at once (`spawn`), then `drain`;
# each in its own TMPDIR (concurrent mpiruns race creating Open MPI's session directory).
JOBS=${PTDP_GENERATE_JOBS:-6}
running=0
spawn() { "$@" & running=$((running + 1)); if [ $running -ge "$JOBS" ]; then wait; running=0; fi; }
drain() { wait; running=0; }
gen() { # gen OUT NP FLAGS...: generate into $TMPD/OUT.txt (stderr in OUT.err)
  out=$1 np=$2
  shift 2
  launch_apart "$out" "$np" "$GEN" "$@" > "$TMPD/$out.txt" 2> "$TMPD/$out.err"
}
same() { # same MESSAGE OUT...: every OUT.txt equals the first, which is not empty
  msg=$1
  shift
  first=$1 st=0
  [ -s "$TMPD/$first.txt" ] || st=1
  for o in "$@"; do cmp -s "$TMPD/$first.txt" "$TMPD/$o.txt" || st=1; done
  ok $st "$msg"
  if [ $st -ne 0 ]; then for o in "$@"; do echo "--- $o"; od -c "$TMPD/$o.txt" | head -4; tail -3 "$TMPD/$o.err"; done; fi
}

train tp2 2 --tensor-model-parallel-size 2
trained tp2
CK="--load $TMPD/tp2 --prompt Hello,_world --num-tokens-to-generate 40"
printf 'Hello,_world' > "$TMPD/prompt.txt"
for np in 1 2 4; do
  spawn gen greedy$np "$np" $CK --top-k 1
  spawn gen topk$np "$np" $CK --top-k 10 --seed 5
  spawn gen topp$np "$np" $CK --top-p 0.9 --temperature 0.7 --seed 6
done
spawn gen greedy_guard 2 $CK --top-k 1 --backend guard
spawn gen greedy_nocache 1 $CK --top-k 1 --kv-cache false
spawn gen greedy_t0 2 $CK --temperature 0
spawn gen greedy_tpkey 2 $CK --top-k 1 --tensor-model-parallel-size 2
spawn gen greedy_seed 1 $CK --top-k 1 --seed 3
spawn gen seed7 2 $CK --top-k 10 --seed 7
spawn gen file2 2 --load "$TMPD/tp2" --prompt-file "$TMPD/prompt.txt" --num-tokens-to-generate 40 --top-k 1
drain
same "greedy: the same text at t = 1, 2, 4, under the guard backend, without the KV cache, with temperature 0" \
  greedy1 greedy2 greedy4 greedy_guard greedy_nocache greedy_t0
same "greedy: --tensor-model-parallel-size 2 on 2 ranks and a seed change nothing" greedy2 greedy_tpkey greedy_seed
w="ptdp: warning: seed is given but has no effect: decoding is greedy (temperature 0 or top-k 1)"
[ "$(grep -cxF "$w" "$TMPD/greedy_seed.err")" -eq 1 ] && ! grep -q "warning" "$TMPD/greedy_tpkey.err" "$TMPD/seed7.err"
ok $? "a seed with greedy decoding is warned about once, a seed with sampling and the t key are not"
same "top-k 10: the same text at t = 1, 2, 4" topk1 topk2 topk4
same "top-p 0.9, temperature 0.7: the same text at t = 1, 2, 4" topp1 topp2 topp4
cmp -s "$TMPD/greedy1.txt" "$TMPD/topk1.txt"
[ $? -ne 0 ]; ok $? "sampling (top-k 10) differs from greedy"
cmp -s "$TMPD/topk2.txt" "$TMPD/seed7.txt"
[ $? -ne 0 ]; ok $? "another seed draws another text"
grep -q "^\[checkpoint\] loaded iteration 10 from $TMPD/tp2/iter_0000010" "$TMPD/greedy2.err"
ok $? "the checkpoint's load is reported"
grep -Eq "^\[generate\] 40 tokens in [0-9.]+ s: [0-9.]+ tokens/s" "$TMPD/greedy2.err"
ok $? "a line with tokens/s"
same "prompt-file gives what prompt gives" greedy2 file2

spawn train pp2 2 --pipeline-model-parallel-size 2
# a mock-data model that records the GPT-2 tokenizer type but no files, and one whose vocabulary
# is not its tokenizer's (for the bad input below)
spawn train gpt2type 1 --tokenizer-type GPT2BPETokenizer --train-iters 1 --save-interval 1
spawn train v300 1 --vocab-size 300 --train-iters 1 --save-interval 1
drain
trained pp2 gpt2type v300
spawn gen pp_1 1 --load "$TMPD/pp2" --prompt "abc" --num-tokens-to-generate 20 --top-k 1
spawn gen pp_2 2 --load "$TMPD/pp2" --prompt "abc" --num-tokens-to-generate 20 --top-k 1
drain
same "a checkpoint saved at p = 2 generates the same text at t = 1 and t = 2" pp_1 pp_2

# ---------------------------------------------------------------- bad input
: > "$TMPD/cases"
bad() { # bad NAME NP PHRASE ARGS...: expect a non-zero exit and PHRASE in exactly one "ptdp: error" line
  name=$1 np=$2
  printf '%s\t%s\n' "$name" "$3" >> "$TMPD/cases"
  shift 3
  spawn run_bad "$name" "$np" "$@"
}
run_bad() {
  name=$1 np=$2
  shift 2
  launch_apart "$name" "$np" "$GEN" "$@" > "$TMPD/$name.out" 2> "$TMPD/$name.err"
  echo $? > "$TMPD/$name.rc"
}
judge() { # judge NAME PHRASE
  name=$1 phrase=$2
  rc=$(cat "$TMPD/$name.rc")
  n=$(grep -c "ptdp: error" "$TMPD/$name.err")
  hit=$(grep "ptdp: error" "$TMPD/$name.err" | grep -cF -- "$phrase")
  [ $rc -ne 0 ] && [ $rc -ne 124 ] && [ "$n" -eq 1 ] && [ "$hit" -eq 1 ]
  ok $? "$name: exit $rc, one message: $phrase"
  [ "$n" -eq 1 ] && [ "$hit" -eq 1 ] || head -5 "$TMPD/$name.err"
}
L="--load $TMPD/tp2"
bad no-load 2 "no checkpoint to load: give --load DIR" --prompt hi
bad no-checkpoint 2 "no checkpoint in '$TMPD/nothing'" --load "$TMPD/nothing" --prompt hi
bad no-prompt 2 "the prompt is empty: give --prompt TEXT or --prompt-file FILE" $L
bad empty-prompt 2 "the prompt is empty" $L --prompt ""
bad both-prompts 2 "both prompt and prompt-file are given" $L --prompt hi --prompt-file "$TMPD/prompt.txt"
bad missing-file 2 "cannot open prompt-file '$TMPD/none.txt'" $L --prompt-file "$TMPD/none.txt"
: > "$TMPD/empty.txt"
bad empty-file 2 "the prompt is empty (prompt-file '$TMPD/empty.txt')" $L --prompt-file "$TMPD/empty.txt"
bad too-long 2 "the prompt (5 tokens) and num-tokens-to-generate 60 make 65 positions, more than the model's max-position-embeddings 64" \
  $L --prompt hello --num-tokens-to-generate 60
bad temperature 2 "value -1 for temperature (command line) is out of range" $L --prompt hi --temperature -1
bad top-p 2 "value 1.5 for top-p (command line) is out of range" $L --prompt hi --top-p 1.5
bad top-k-and-p 2 "cannot set both top-k (5) and top-p (0.5)" $L --prompt hi --top-k 5 --top-p 0.5
bad top-k-vocab 2 "top-k 300 is larger than the vocabulary (257 tokens)" $L --prompt hi --top-k 300
bad greedy-top-k 2 "temperature 0 is greedy decoding" $L --prompt hi --temperature 0 --top-k 5
bad tokens-0 2 "value 0 for num-tokens-to-generate (command line) is out of range" $L --prompt hi --num-tokens-to-generate 0
bad three-ranks 3 "3 ranks cannot split the model's 4 attention heads" $L --prompt hi
bad unknown-key 2 "unknown key 'top-z' (command line); did you mean 'top-k'? (ptdp-generate --help lists every key)" \
  $L --prompt hi --top-z 3
bad positional 2 "unexpected argument 'deck.in'" deck.in $L --prompt hi
bad tp-not-ranks 2 "tensor-model-parallel-size 4 is not the number of ranks 2: ptdp-generate runs the model tensor-parallel over all its ranks" \
  $L --prompt hi --tensor-model-parallel-size 4
bad backend-cuda 1 "backend cuda: ptdp-generate does not run on GPUs yet" $L --prompt hi --backend cuda
bad tp-exponent 2 "invalid value '2e0' for tensor-model-parallel-size (command line): expected an integer" \
  $L --prompt hi --tensor-model-parallel-size 2e0
bad no-vocab-file 2 "names no vocab-file or merge-file" --load "$TMPD/gpt2type" --prompt hi
bad vocab-mismatch 2 "the tokenizer (ByteLevel, 257 tokens) does not fit the model's vocabulary of 300 tokens" \
  --load "$TMPD/v300" --prompt hi
drain
while IFS="$(printf '\t')" read -r name phrase; do judge "$name" "$phrase"; done < "$TMPD/cases"
finish
