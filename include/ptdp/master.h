/* The fp32 weights the optimizer updates, as the distributed optimizer holds them (ZeRO-1;
 * Megatron's DistributedOptimizer, with Float16OptimizerWithFloat16Params's master weights).
 *
 * Each bucket [lo, hi) of the model's flat buffers splits into d equal shards (ptdp/shard_map.h);
 * with the distributed optimizer (d > 1) data-parallel rank r updates its shard of every bucket
 * only, and the updated weights are then all-gathered over the DP group, so each replica ends the
 * step with all of them:
 *   fp32        the model's fp32 buffer (params.fp32) is the weights; each rank updates its
 *               shard in place and the bucket is all-gathered in place (4 bytes per element).
 *   bf16/fp16   the fp32 master weights are sharded too ("sharded"): this rank holds only its
 *               shards, bucket after bucket at ptdp_shard.state (as Adam's moments), in the
 *               plan's master_params buffer, and the model has no whole fp32 copy (params.fp32
 *               NULL).  After the step each rank rounds its shard into the model's 16-bit weights
 *               and those are all-gathered (2 bytes per element, as Megatron does): 2 + 4 + 12/d
 *               bytes per parameter in all.
 * Without the distributed optimizer (or d = 1) a rank's shard is the whole bucket, the fp32
 * weights are the model's params.fp32, and no all-gather runs.
 *
 * Initialisation, checkpoints and the debug dump reach the fp32 weights through this module:
 * ptdp_master_init sets them (each rank its shards), ptdp_master_sync_all makes the 16-bit
 * weights from them, ptdp_master_gather puts them whole in one buffer.  master.c holds the
 * ownership (the shards and where each element sits), master_gather.c the DP collectives. */
#ifndef PTDP_MASTER_H
#define PTDP_MASTER_H

#include "ptdp/comm.h"
#include "ptdp/gpt.h"
#include "ptdp/shard_map.h"

typedef struct {
  ptdp_gpt *model;
  int distributed;  /* the distributed optimizer and d > 1: each rank updates its shards, then the
                       buckets are all-gathered over DP */
  int sharded;      /* distributed in bf16/fp16: the fp32 master weights are this rank's shards only */
  float *shards;    /* sharded: [total / d] this rank's shard of every bucket; else NULL */
} ptdp_master;

/* For a model created for training (its plan holds master_params in bf16/fp16). */
int ptdp_master_create(ptdp_master *w, ptdp_gpt *model, int distributed_optimizer);
void ptdp_master_destroy(ptdp_master *w);
/* This rank's shard of bucket b (ptdp_shard_of over d ranks; the whole bucket at d = 1): its
 * master elements, where sharded, are shards[s.state ...) for flat offsets [s.lo, s.hi). */
void ptdp_master_shard(const ptdp_master *w, int bucket, ptdp_shard *s);
/* Device address of the fp32 weight at local element k of parameter i: in the model's fp32
 * buffer, or where sharded in this rank's shard (the element must lie in it). */
float *ptdp_master_element(const ptdp_master *w, int i, long long k);
/* Every fp32 weight from its initial value (ptdp_gpt_init_values), then the model's weights from
 * them: ptdp_gpt_init_params, or where sharded each rank its own shards and ptdp_master_sync_all
 * (collective over DP then). */
int ptdp_master_init(ptdp_master *w);

/* The collectives over DP (master_gather.c). */
/* Sharded: wt[s.lo, s.hi) = shards[s.state ...] rounded to the storage type for this rank's shard
 * s of bucket b, then ptdp_master_gather_shard.  Collective over DP. */
int ptdp_master_sync_shard(ptdp_master *w, int bucket);
/* Sharded: bucket b's 16-bit weights all-gathered over DP from each rank's wt[s.lo, s.hi) (for a
 * shard whose 16-bit weights the optimizer wrote itself, adamw_many's copy back). */
int ptdp_master_gather_shard(ptdp_master *w, int bucket);
/* Every weight from its master: ptdp_gpt_sync_weights over everything, or ptdp_master_sync_shard
 * over every bucket where sharded (collective over DP then).  After anything writes the fp32
 * weights: initialisation, a checkpoint. */
int ptdp_master_sync_all(ptdp_master *w);
/* After the optimizer updated this rank's shard of bucket b (fp32 weights; copied: it also wrote
 * the shard's 16-bit weights): every replica's weights of the bucket made whole and current.
 * Sharded: ptdp_master_gather_shard (copied) or ptdp_master_sync_shard; distributed: the fp32
 * bucket all-gathered in place, then rounded; else the bucket rounded (unless copied). */
int ptdp_master_step_done(ptdp_master *w, int bucket, int copied);
/* The fp32 weights whole in flat (device memory of layout.total floats): a copy of the model's
 * fp32 buffer, or where sharded the shards all-gathered over DP (collective then). */
int ptdp_master_gather(ptdp_master *w, float *flat);
/* In place: every rank's shard of bucket b of the flat buffer base (fp32, laid out as the model's
 * flat buffers) all-gathered over dp, so every rank holds the whole bucket. */
int ptdp_master_allgather_bucket(ptdp_comm *dp, const ptdp_grad_layout *L, int bucket, float *base);

#endif
