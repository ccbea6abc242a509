#!/bin/sh
# Activation memory: the bytes per layer per micro-batch that the arena holds equal the count
# derived in ptdp(7) (ACTIVATION MEMORY) for every setting, and move with t, sequence
# parallelism and recomputation as Korthikanti et al.'s formulas say: the measured ratios are
# printed beside the paper's (they differ only by the fp32/1-byte mapping ptdp(7) derives) and
# checked to order the same way.
. "$top_srcdir/validation/tests/common.sh"
DECK="$TMPD/deck.in"
write_deck "$DECK" num-layers=4 num-attention-heads=8 seq-length=64 global-batch-size=8 \
  train-iters=1 log-interval=1
run() { # np flags -> "measured ptdp paper"
  np=$1; shift
  launch "$np" "$TRAIN" "$DECK" "$@" 2>&1 |
    sed -n 's/.*per micro-batch: measured \([0-9]*\) bytes, ptdp fp32 count \([0-9]*\) bytes, Korthikanti et al. (2-byte activations) \([0-9]*\) bytes.*/\1 \2 \3/p'
}
check() { # name np flags...
  name=$1; shift
  set -- $(run "$@")
  [ $# -eq 3 ] && [ "$1" = "$2" ]; ok $? "$name: measured $1 bytes = derived count $2 (paper: $3)"
  eval "m_$name=$1; p_$name=$3"
}
check tp1 1
check tp2 2 --tensor-model-parallel-size 2
check tp4 4 --tensor-model-parallel-size 4
check sp2 2 --tensor-model-parallel-size 2 --sequence-parallel
check sel2 2 --tensor-model-parallel-size 2 --recompute-granularity selective
check spsel2 2 --tensor-model-parallel-size 2 --sequence-parallel --recompute-granularity selective
check full1 1 --recompute-granularity full
check nodrop1 1 --hidden-dropout 0 --attention-dropout 0
check pp2 2 --pipeline-model-parallel-size 2
check rms2 2 --tensor-model-parallel-size 2 --sequence-parallel --normalization RMSNorm --position-embedding-type rope \
  --disable-bias-linear
check flash1 1 --attention-backend flash
check glu2 2 --tensor-model-parallel-size 2 --sequence-parallel --normalization RMSNorm --position-embedding-type rope \
  --disable-bias-linear --swiglu --ffn-hidden-size 256
# the orderings the formulas predict
lt() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a < b) }'; }
lt "$m_tp2" "$m_tp1" && lt "$m_tp4" "$m_tp2"; ok $? "more tensor parallelism holds less ($m_tp1 > $m_tp2 > $m_tp4)"
lt "$m_sp2" "$m_tp2"; ok $? "sequence parallelism holds less ($m_sp2 < $m_tp2)"
lt "$m_sel2" "$m_tp2" && lt "$m_spsel2" "$m_sel2" && lt "$m_spsel2" "$m_sp2"; ok $? "selective recomputation holds less, least with SP"
lt "$m_full1" "$m_spsel2"; ok $? "full recomputation holds least"
[ "$m_pp2" = "$m_tp1" ]; ok $? "pipeline parallelism does not change a layer's bytes"
# RMSNorm keeps 1/std and no mean: 2 x 4 Nl bytes fewer than LayerNorm (Nl = s b / t = 64); the
# rotary embedding turns QKV in place and keeps nothing; no biases change no activation
[ "$m_rms2" = $((m_sp2 - 2 * 4 * 64)) ]; ok $? "RMSNorm + rope: sp2's bytes less two means ($m_rms2 = $m_sp2 - 512)"
# SwiGLU at the same f (4 h = 256): fc1's output [gate | up] is 2 f / t wide, the activation
# f / t as GELU's: 4 bytes x N fl more, N = s b = 128 (all rows: fc1 is column-parallel), fl = 128
[ "$m_glu2" = $((m_rms2 + 4 * 128 * 128)) ]; ok $? "SwiGLU: rms2's bytes plus fc1's up half, 4 N f / t ($m_glu2)"
# flash: no softmax, dropout output and mask (9 b a s^2 / t), the log-sum-exp (4 b a s / t) instead
[ "$m_flash1" = $((m_tp1 - 9 * 2 * 8 * 64 * 64 + 4 * 2 * 8 * 64)) ]
ok $? "flash attention: tp1's bytes less 9 b a s^2 plus 4 b a s ($m_flash1)"
# the layer input alone under full recomputation: 4 bytes x s b h
[ "$m_full1" = $((4 * 64 * 2 * 64)) ]; ok $? "full recomputation keeps exactly the fp32 layer input, 4 s b h bytes"
# sequence-parallel and selective: everything scales with 1/t (paper eq. 6: 34 s b h / t)
awk -v a="$m_spsel2" -v b="$m_tp1" -v sel1="$(set -- $(run 1 --recompute-granularity selective); echo $1)" \
  'BEGIN { r = a / sel1; printf "SP+selective at t=2 / selective at t=1 = %.4f\n", r; exit !(r > 0.499 && r < 0.501) }'
ok $? "SP + selective recomputation divides the layer's bytes by t exactly"
for k in tp2 tp4 sp2 sel2 spsel2 full1; do
  eval "awk -v m=\$m_$k -v m1=\$m_tp1 -v p=\$p_$k -v p1=\$p_tp1 'BEGIN { printf \"ratio to t=1: %-7s measured %.3f  paper %.3f\\n\", \"$k\", m / m1, p / p1 }'"
done
finish
