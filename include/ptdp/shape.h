/* The sizes one rank works with, derived in one place.
 *
 * From the model's shape (ptdp/params.h), the micro-batch and the rank's place in its
 * tensor-parallel group: what the model allocates and loops over (gpt.c, layer.c, head.c), what
 * the memory plan counts (plan.c), what the activation-memory formula prices (memory_formula.h)
 * and what both cost models of ptdp-sim time (sim/layer.c, sim/layer_cpu.c).  Pure: no MPI, no
 * allocation.  A new model dimension (grouped keys and values, a SwiGLU width) is added here
 * once, and every user sees the same number.
 *
 * Symbols (ptdp(7) and the papers): s sequence, b micro-batch, h hidden, a heads, f ffn width,
 * t tensor-parallel ranks; activations are [s, b, h] with token row = position b + sample, so a
 * sequence shard is a contiguous block of rows. */
#ifndef PTDP_SHAPE_H
#define PTDP_SHAPE_H

#include "ptdp/params.h"

typedef struct {
  long long s, b;   /* sequence length, micro-batch size */
  long long N;      /* token rows of one micro-batch: s b */
  long long Nl;     /* rows of this rank's LayerNorm and dropout regions: N / t with sequence
                       parallelism, else N */
  long long row0;   /* first global token row of this rank's sequence shard (0 without SP) */
  int t, tp_rank;
  int sp;           /* sequence parallelism over t > 1 ranks (collectives change) */
  int h, a, f;      /* hidden size, heads, ffn width (global) */
  int hd;           /* head size: h / a, or kv-channels */
  int al, hl;       /* this rank's heads a / t and attention width al hd */
  int gl, hpg;      /* this rank's key/value groups g / t and the query heads of a group a / g
                       (gl = al, hpg = 1 without grouped-query attention) */
  int qkv;          /* width of this rank's QKV rows: (al + 2 gl) hd (3 hl without GQA) */
  int fl;           /* this rank's ffn width f / t (fc2's input) */
  int fc1;          /* width of this rank's fc1 output rows: fl, or 2 fl with SwiGLU ([gate | up]) */
  long long padded_vocab; /* V': the vocabulary padded to a multiple of divisible-by x t */
  long long vl, v0;       /* this rank's vocabulary rows V' / t and the first of them */
  long long att;          /* elements of one attention score tensor: b al s s */
  int rd;                 /* rotary embedding: the turned columns of each head (rotary-percent of
                             hd, even; 0 without rotary positions) */
  /* the mixture-of-experts MLP (0 without experts) */
  int E, k;               /* experts, and the experts each token goes to */
  int efl, efc1;          /* an expert's fc2 input width f_e / t and fc1 output width (2 efl with SwiGLU) */
  long long Nk;           /* rows through the experts: N k (each token once per expert it goes to) */
} ptdp_rank_shape;

/* The sizes of TP rank tp_rank of t for micro-batches of micro_batch sequences of seq tokens.
 * The caller has checked divisibility (heads and ffn by t, hidden by heads: ptdp_args_validate). */
ptdp_rank_shape ptdp_rank_shape_of(const ptdp_model_shape *m, int seq, int micro_batch, int t, int tp_rank);

#endif
