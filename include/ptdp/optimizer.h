/* AdamW with global-norm clipping and Megatron's learning-rate schedule.
 *
 * After the last micro-batch of an iteration the gradients are made whole:
 *   1. sequence-parallel partial gradients (LayerNorm, row-parallel biases, position embedding)
 *      are all-reduced over TP;
 *   2. the tied word embedding's two copies (first and last stage, p > 1) are all-reduced over
 *      the embedding group;
 *   3. gradients are averaged over DP (all-reduce; with the distributed optimizer a
 *      reduce-scatter, each DP rank updating its shard, then an all-gather of parameters).
 * The global norm counts each parameter once: TP-replicated tensors on TP rank 0 only, the
 * last stage's embedding copy not at all, then a sum over TP x PP (and DP for shards). */
#ifndef PTDP_OPTIMIZER_H
#define PTDP_OPTIMIZER_H

#include "ptdp/gpt.h"
#include "ptdp/lr_schedule.h"

typedef struct {
  double lr, min_lr, wd, clip, beta1, beta2, eps;
  long long warmup, decay_iters;
  ptdp_lr_decay_style decay_style;
  int distributed; /* ZeRO-1 (buckets: ptdp_gpt_config.bucket_elems) */
} ptdp_optim_config;

typedef struct {
  ptdp_optim_config cfg;
  ptdp_gpt *model;
  float *m, *v;          /* Adam moments: all local elements, or the DP shard */
  float *buf;            /* distributed: reduce-scatter results, laid out as m and v */
  double wait_seconds;   /* last sync: time blocked waiting for data-parallel reductions */
  long long step;
  size_t state_bytes;    /* optimizer state held by this rank */
} ptdp_optimizer;

int ptdp_optimizer_create(ptdp_optimizer *o, const ptdp_optim_config *cfg, ptdp_gpt *model);
void ptdp_optimizer_destroy(ptdp_optimizer *o);
/* Learning rate after n completed iterations (Megatron's OptimizerParamScheduler). */
double ptdp_lr_at(const ptdp_optim_config *c, long long n);
/* Synchronise gradients, clip, update; *grad_norm is the norm before clipping.
 * = ptdp_optimizer_sync (steps 1-3 above) then ptdp_optimizer_update (norm, clip, AdamW). */
int ptdp_optimizer_step(ptdp_optimizer *o, double lr, double *grad_norm);
int ptdp_optimizer_sync(ptdp_optimizer *o);
int ptdp_optimizer_update(ptdp_optimizer *o, double lr, double *grad_norm);

#endif
