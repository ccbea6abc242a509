/* AdamW with global-norm clipping (the optimizer step after ptdp_ddp_sync).
 *
 * The global gradient norm counts each parameter once: TP-replicated tensors on TP rank 0 only,
 * the last stage's copy of the tied embedding not at all, each distributed-optimizer shard once;
 * then a sum over TP x PP (and DP for shards).  Clipping scales the gradients by
 * clip / (norm + 1e-6) when that is below 1.  AdamW (Loshchilov & Hutter) updates this rank's
 * shard of every bucket (ptdp_ddp_shard: the whole bucket without the distributed optimizer),
 * with no weight decay on biases and LayerNorm parameters; with the distributed optimizer the
 * updated shards are then all-gathered over DP.
 *
 * Mixed precision (Megatron's Float16OptimizerWithFloat16Params): the gradients are fp32 main
 * gradients, AdamW updates the fp32 master weights, and the model's bf16/fp16 weights are their
 * rounding.  With the distributed optimizer the master weights are sharded as the moments are
 * (ptdp/master.h, which also all-gathers the updated weights over DP after each bucket's step) and
 * the rounded 16-bit shards are all-gathered, as Megatron does: 2 + 4 + 12/d bytes per parameter. */
#ifndef PTDP_OPTIMIZER_H
#define PTDP_OPTIMIZER_H

#include "ptdp/ddp.h"
#include "ptdp/gpt.h"
#include "ptdp/grad_scaler.h"
#include "ptdp/lr_schedule.h"
#include "ptdp/master.h"

typedef struct {
  double wd, clip, beta1, beta2, eps;
  ptdp_lr_schedule lr;
} ptdp_optim_config;

typedef struct {
  ptdp_optim_config cfg;
  ptdp_gpt *model;
  ptdp_ddp *ddp;
  ptdp_master *master;   /* the fp32 weights it updates: the model's, or this rank's shards of them */
  float *m, *v;          /* Adam moments of this rank's shard (planned buffers adam_m, adam_v) */
  long long step;        /* updates taken (skipped steps do not count): Adam's t, the schedule's */
  size_t state_bytes;    /* optimizer state held by this rank (moments; master weights in bf16/fp16) */
  ptdp_grad_scaler scaler; /* loss scaling (fp16): set after create; kind NONE by default */
  ptdp_adamw_range *ranges; /* a shard's tensors for the backend's adamw_many (nparams of them) */
} ptdp_optimizer;

int ptdp_optimizer_create(ptdp_optimizer *o, const ptdp_optim_config *cfg, ptdp_gpt *model, ptdp_ddp *ddp,
                          ptdp_master *master);
void ptdp_optimizer_destroy(ptdp_optimizer *o);
/* Norm, clip and AdamW at learning rate lr; *grad_norm is the norm before clipping.  Call after
 * ptdp_ddp_sync.  With an active scaler the gradients are first multiplied by 1 / scale and
 * checked for inf/NaN over every rank (the scaler is then updated); a step that finds one sets
 * *skipped = 1, *grad_norm = NaN and changes no weight.  In bf16/fp16 the updated master
 * weights are rounded into the model's weights (ptdp_master_step_done). */
int ptdp_optimizer_update(ptdp_optimizer *o, double lr, double *grad_norm, int *skipped);

#endif
