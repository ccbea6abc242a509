/* Data-parallel gradient synchronisation (Megatron's distributed/): the gradient buckets of
 * ptdp/grad_buffer.h reduced over the DP group, overlapping the backward pass.
 *
 * The model reports each parameter whose gradient is final (after its chunk's last backward);
 * when every parameter of a bucket is final the bucket's reduction starts as a nonblocking
 * collective while the backward pass goes on: first its sequence-parallel partial gradients
 * (LayerNorm, row-parallel biases, position embedding) are summed over TP, then an all-reduce
 * over DP, or with the distributed optimizer a reduce-scatter into this rank's shard
 * (ptdp/shard_map.h).  ptdp_ddp_sync then sums the tied word embedding's two copies over the
 * embedding group (first and last stage), starts its ("late") bucket and any other not yet
 * started, waits, and averages: every element of this rank's shard is divided by d. */
#ifndef PTDP_DDP_H
#define PTDP_DDP_H

#include "ptdp/comm.h"
#include "ptdp/gpt.h"
#include "ptdp/shard_map.h"

typedef struct {
  ptdp_gpt *model;
  int distributed;      /* reduce-scatter into shards (distributed optimizer and d > 1) */
  float *grad_shard;    /* distributed: the reduce-scatter results, laid out as the optimizer state */
  int *remaining;       /* [nbuckets] parameters whose gradient is not final yet */
  int *started;         /* [nbuckets] */
  ptdp_comm_req *req;   /* [nbuckets] */
  double wait_seconds;  /* last sync: time blocked waiting for the reductions */
} ptdp_ddp;

/* Hooks itself to the model (grads_ready). */
int ptdp_ddp_create(ptdp_ddp *ddp, ptdp_gpt *model, int distributed_optimizer);
void ptdp_ddp_destroy(ptdp_ddp *ddp);
/* After the last micro-batch: finish every reduction (see above). */
int ptdp_ddp_sync(ptdp_ddp *ddp);
/* This rank's shard of bucket b (the whole bucket unless distributed). */
void ptdp_ddp_shard(const ptdp_ddp *ddp, int b, ptdp_shard *s);

#endif
