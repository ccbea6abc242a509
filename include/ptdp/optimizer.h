/* AdamW with global-norm clipping (the optimizer step after ptdp_ddp_sync).
 *
 * The global gradient norm counts each parameter once: TP-replicated tensors on TP rank 0 only,
 * the last stage's copy of the tied embedding not at all, each distributed-optimizer shard once;
 * then a sum over TP x PP (and DP for shards).  Clipping scales the gradients by
 * clip / (norm + 1e-6) when that is below 1.  AdamW (Loshchilov & Hutter) updates this rank's
 * shard of every bucket (ptdp_ddp_shard: the whole bucket without the distributed optimizer),
 * with no weight decay on biases and LayerNorm parameters; with the distributed optimizer the
 * updated shards are then all-gathered over DP. */
#ifndef PTDP_OPTIMIZER_H
#define PTDP_OPTIMIZER_H

#include "ptdp/ddp.h"
#include "ptdp/gpt.h"
#include "ptdp/lr_schedule.h"

typedef struct {
  double wd, clip, beta1, beta2, eps;
  ptdp_lr_schedule lr;
} ptdp_optim_config;

typedef struct {
  ptdp_optim_config cfg;
  ptdp_gpt *model;
  ptdp_ddp *ddp;
  float *m, *v;          /* Adam moments of this rank's shard (planned buffers adam_m, adam_v) */
  long long step;
  size_t state_bytes;    /* optimizer state held by this rank */
} ptdp_optimizer;

int ptdp_optimizer_create(ptdp_optimizer *o, const ptdp_optim_config *cfg, ptdp_gpt *model, ptdp_ddp *ddp);
void ptdp_optimizer_destroy(ptdp_optimizer *o);
/* Norm, clip and AdamW at learning rate lr; *grad_norm is the norm before clipping.  Call after
 * ptdp_ddp_sync. */
int ptdp_optimizer_update(ptdp_optimizer *o, double lr, double *grad_norm);

#endif
