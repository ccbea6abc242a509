/* Private to src/model: helpers shared by gpt.c, layer.c and head.c. */
#ifndef PTDP_MODEL_INTERNAL_H
#define PTDP_MODEL_INTERNAL_H

#include "ptdp/gpt.h"

/* The layer's passes for the family's normalisation on backend be (layer_passes.c). */
void ptdp_layer_passes_choose(const ptdp_backend *be, ptdp_norm_type norm, ptdp_layer_passes *p);
/* Bind the allocations of the plan to the model's fields (gpt_bind.c). */
int ptdp_gpt_bind(ptdp_gpt *m);
/* The parameter table and the flat-buffer layout of this rank at pos (gpt_params.c); freed by
 * ptdp_gpt_params_free. */
int ptdp_gpt_params_build(ptdp_gpt *m, const ptdp_param_position *pos);
void ptdp_gpt_params_free(ptdp_gpt *m);
/* The loss bookkeeping for cap micro-batches of N token rows (loss.c). */
int ptdp_gpt_losses_create(ptdp_gpt_losses *l, int cap, long long N);
void ptdp_gpt_losses_free(ptdp_gpt_losses *l);
/* Record the loss of slot sl's micro-batch from its reduced statistics mx, se, tg [N] each (loss.c). */
int ptdp_gpt_record_loss(ptdp_gpt *m, const ptdp_chunk_slot *sl, const float *mx, const float *se, const float *tg);
/* Tell grads_ready that params [first, end) of the table are final, within a last backward
 * (gpt_hooks.c). */
int ptdp_gpt_grads_ready(ptdp_gpt *m, int first, int end);
/* The logits [n] to the host buffer capture_logits asked for, widened to fp32; then forget it. */
int ptdp_gpt_hook_logits(ptdp_gpt *m, const float *logits, size_t n);
/* Layer i of chunk c: in a full-recomputation group [g0, g1)? (ptdp/recompute.h) */
static inline int ptdp_gpt_recompute_group(const ptdp_gpt *m, int c, int i, int *g0, int *g1)
{
  return ptdp_recompute_group(m->cfg.recompute, m->cfg.recompute_method, m->cfg.recompute_num_layers,
                              m->chunks[c].nlayers, i, g0, g1);
}

/* One transformer layer: forward writes `out` [Nl, h]; backward turns dout [Nl, h] into dx
 * [Nl, h] (dx may alias nothing else) and accumulates parameter gradients. */
int ptdp_layer_forward(ptdp_gpt *m, int chunk, int i, const ptdp_layer_acts *a, float *out, long long sample0);
int ptdp_layer_backward(ptdp_gpt *m, int chunk, int i, const ptdp_layer_acts *a, const float *dout, float *dx,
                        long long sample0);

ptdp_attn_desc ptdp_layer_attn_desc(const ptdp_gpt *m, int layer, long long sample0);

/* Embedding (first virtual stage) and head (last virtual stage). */
int ptdp_embedding_forward(ptdp_gpt *m, ptdp_chunk_slot *sl, float *out);
int ptdp_embedding_backward(ptdp_gpt *m, ptdp_chunk_slot *sl, float *dx);
int ptdp_head_forward(ptdp_gpt *m, ptdp_chunk_slot *sl);
int ptdp_head_backward(ptdp_gpt *m, ptdp_chunk_slot *sl, float loss_scale, float *dx);

/* TP/SP conjugate operators on [N, h] / [Nl, h] row blocks:
 * gather: SP all-gather of a shard into full (no SP: not called);
 * reduce: a partial sum over TP -> SP reduce-scatter into shard, or all-reduce in place. */
int ptdp_tp_gather(ptdp_gpt *m, const float *shard, float *full, int cols, int tag);
int ptdp_tp_reduce(ptdp_gpt *m, float *full, float *shard, int cols, int tag);

#endif
