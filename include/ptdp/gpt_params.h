/* The model's parameters: the parameter table of this rank, where each entry sits in the flat
 * buffers (ptdp/grad_buffer.h), and the flat buffers themselves (Megatron's param_and_grad_buffer).
 *
 * Three flat buffers of layout.total elements each:
 *   fp32  the fp32 weights the optimizer updates and checkpoints save (in bf16/fp16: the master
 *         weights); NULL when no rank holds them whole: the distributed optimizer then keeps each
 *         rank's shards of them (ptdp/master.h)
 *   wt    the weights the layers compute with, in the storage type (wt == fp32 in fp32; in
 *         bf16/fp16 each element is the rounding of its master, ptdp_gpt_sync_weights)
 *   grad  fp32 gradients (Megatron's main_grad); NULL in inference
 * The model allocates them (its memory plan) and computes with wt and grad; the optimizer, the
 * data-parallel module and checkpoints write fp32 and grad. */
#ifndef PTDP_GPT_PARAMS_H
#define PTDP_GPT_PARAMS_H

#include "ptdp/grad_buffer.h"
#include "ptdp/params.h"

#include <stddef.h>

typedef struct {
  int n;                   /* entries of the table */
  ptdp_param_info *table;  /* [n] the parameter table (ptdp/params.h) */
  ptdp_grad_layout layout; /* each entry's offset and bucket in the flat buffers */
  float *fp32, *grad;      /* see above */
  void *wt;
} ptdp_gpt_params;

struct ptdp_gpt;
/* Device pointers to parameter i's local buffer (ptdp_param_info lrows x lcols): fp32 (the
 * master weights in bf16/fp16; NULL where the distributed optimizer shards them), its gradient
 * (fp32), and its weights in the storage type. */
float *ptdp_gpt_param_data(const struct ptdp_gpt *m, int i);
float *ptdp_gpt_grad_data(const struct ptdp_gpt *m, int i);
void *ptdp_gpt_weight_data(const struct ptdp_gpt *m, int i);
/* Elements of the largest local parameter buffer (host staging for copies). */
long long ptdp_gpt_max_param_elems(const struct ptdp_gpt *m);
/* Parameter i's initial values into host memory w (its local buffer, fp32): zeros, ones, or
 * normal draws keyed by (tensor key, global row, global column), padding rows included (keyed by
 * their row in the padded vocabulary), so every layout holds the same numbers. */
void ptdp_gpt_init_values(const struct ptdp_gpt *m, int i, float *w);
/* Set every parameter of fp32 from its initial values, then the weights wt from them.  Needs
 * fp32 (where the distributed optimizer shards the master weights: ptdp_master_init). */
int ptdp_gpt_init_params(struct ptdp_gpt *m);
/* wt[lo, hi) = fp32[lo, hi) rounded to the storage type (flat offsets; a no-op in fp32): after
 * anything writes fp32 (initialisation, a checkpoint, an optimizer step).  Needs fp32 (sharded
 * master weights: ptdp_master_sync_shard). */
int ptdp_gpt_sync_weights(struct ptdp_gpt *m, long long lo, long long hi);

#endif
