#!/bin/sh
# The fused (flash) attention against the unfused one, on the CPU
# backend whose flash_forward/backward are the reference of the GPU kernel:
#  1. One rank, fp32, dropout on (attention and hidden 0.1): --attention-backend flash trains as
#     unfused does: every iteration's loss, the initial weights, the first step's gradients and
#     the last weights (the dropout masks are the same bits: the fused path draws them again
#     from the same keys).  The same with selective recomputation, which with flash keeps the
#     log-sum-exp and recomputes nothing.
#  2. Layouts with flash against the one-rank flash run (so that each comparison isolates one
#     change: 1 the fused attention, 2 the parallelism): t2 + SP, p2 interleaved, t2 d2 + SP +
#     distributed optimizer.
#  3. bf16: flash against unfused, one rank and t2 + SP, within the bf16 bounds of
#     test_mixed_precision.sh.
#  4. Memory: with flash the plan holds no attn_probs/attn_dropout_mask/attn_probs_dropped and
#     one attn_lse per layer; the [memory] line's measured bytes per layer equal the ptdp count
#     (the formula without the s x s terms, plus 4 b a s / t of log-sum-exp) and are fewer than
#     the unfused run's.
#  5. --attention-backend accepts Megatron's flash, unfused and auto; another value is refused,
#     naming the choices.
# Tolerances.  fp32: the forward of flash is the unfused forward's arithmetic (the same products,
# the same softmax, block by block); the backward sums dK and dV over query blocks instead of all
# queries at once and takes the probabilities as exp(S - lse) instead of exp(S - max) / sum: a
# float32 reordering, held to equivalence_lib.sh's 1e-5 (losses, first-step gradients) and 1e-4
# (final weights); measured 2.1e-8, 4.6e-7 and 8.2e-6 (one rank), the layouts as in
# test_equivalence_*.  bf16: test_mixed_precision.sh's 5e-4 (losses) and 3e-2 (gradients);
# measured 2.1e-5 and 8.1e-3.
. "$top_srcdir/validation/tests/common.sh"
. "$top_srcdir/validation/tests/equivalence_lib.sh"
equiv_deck

train ref 1 --attention-backend unfused
train flash 1 --attention-backend flash
compare flash ref final,init,step1/grads
train ref_sel 1 --attention-backend unfused --recompute-granularity selective
train flash_sel 1 --attention-backend flash --recompute-granularity selective
compare flash_sel ref_sel final,init,step1/grads
train flash_v256 1 --attention-backend flash --make-vocab-size-divisible-by 256
train flash_l4 1 --attention-backend flash --num-layers 4

layouts final,init,step1/grads --attention-backend flash <<'EOF'
flash_t2_sp  2 flash_v256 --tensor-model-parallel-size 2 --sequence-parallel
flash_p2_v2  2 flash_l4 --num-layers 4 --pipeline-model-parallel-size 2 --num-layers-per-virtual-pipeline-stage 1
EOF
layouts final,init --attention-backend flash <<'EOF'
flash_t2_d2_sp_do 4 flash_v256 --tensor-model-parallel-size 2 --sequence-parallel --use-distributed-optimizer
EOF

# 3. bf16, with test_mixed_precision.sh's bounds; the weights after the last step are not
#    compared (AdamW turns near-zero bf16 gradients into +-lr steps: see that test)
CMP="$PYTHON3 $top_srcdir/validation/tests/compare_dumps.py --loss-rtol ${PTDP_BF16_LOSS_TOL:-5e-4}"
CMP="$CMP --grad-tol ${PTDP_BF16_GRAD_TOL:-3e-2} --param-tol 0"
train ref_bf16 1 --bf16 --attention-backend unfused
train flash_bf16 1 --bf16 --attention-backend flash
compare flash_bf16 ref_bf16 init,step1/grads
train ref_bf16_v256 1 --bf16 --attention-backend unfused --make-vocab-size-divisible-by 256
train flash_bf16_t2_sp 2 --bf16 --attention-backend flash --tensor-model-parallel-size 2 --sequence-parallel
compare flash_bf16_t2_sp ref_bf16_v256 init,step1/grads

# 4. memory: the [memory] line, "measured M bytes, ptdp fp32 count C bytes"
per_layer() { sed -n 's/.*per layer per micro-batch: measured \([0-9]*\) bytes, ptdp [a-z0-9]* count \([0-9]*\) bytes.*/\1 \2/p' "$1" | head -1; }
set -- $(per_layer "$TMPD/flash.log")
fm=${1:-0} fc=${2:-1}
set -- $(per_layer "$TMPD/ref.log")
um=${1:-0}
[ "$fm" = "$fc" ] && [ "$fm" -gt 0 ]
ok $? "flash: measured activations per layer ($fm bytes) equal the ptdp count ($fc bytes)"
[ "$fm" -lt "$um" ]
ok $? "flash keeps fewer bytes per layer than unfused ($fm < $um)"
# s 32, b 2, a 4, h 64, t 1, fp32, dropout on: unfused - flash = the s x s terms (softmax, dropout
# output 4 + 4 bytes, mask 1: 9 b a s^2) less the log-sum-exp (4 b a s)
[ $((um - fm)) -eq $((9 * 2 * 4 * 32 * 32 - 4 * 2 * 4 * 32)) ]
ok $? "unfused - flash = 9 b a s^2 - 4 b a s bytes ($((um - fm)))"

# 5. the key's values
launch 1 "$TRAIN" "$DECK" --train-iters 1 --attention-backend auto > "$TMPD/auto.log" 2>&1
ok $? "attention-backend = auto runs (unfused on the CPU backend)"
launch 1 "$TRAIN" "$DECK" --train-iters 1 --attention-backend fused > "$TMPD/fused.log" 2>&1
rc=$?
[ $rc -ne 0 ] && grep -q 'flash|unfused|auto' "$TMPD/fused.log"
ok $? "attention-backend = fused is refused, naming the choices (exit $rc)"

threads_and_worst_flash() { sed 's/^/  worst: /' "$TMPD/worst"; }
threads_and_worst_flash
finish
