/* The memory plan: every buffer a rank will hold, listed before anything is allocated.  Pure (no
 * MPI, no backend): a simulator asks it how many bytes a rank holds at peak, in microseconds.
 *
 * The model allocates exactly the plan's buffers (each allocation recorded by the accounting
 * allocator, ptdp/memory.h, with the same kind, place and size; a test checks allocation equals
 * plan), so the plan is also the per-rank memory report.  Buffers:
 *   activations   per model chunk, per activation slot (micro-batches in flight), per layer:
 *                 what the backward pass needs (held) and what a slot needs only while it runs
 *                 (tokens, targets, a non-last chunk's output send buffer: not held);
 *   work space    shared by every micro-batch (gathered inputs, gradients between layers, the
 *                 recomputation scratch);
 *   p2p           pipeline gradient send and receive buffers;
 *   parameters, gradients (flat buffers, ptdp/grad_buffer.h), optimizer state (Adam moments, of
 *                 the shard with the distributed optimizer) and the reduce-scatter target.
 * Bytes by type (Megatron's accounting): weights, activations and their gradients in the storage
 * type (cfg.dtype: 4 bytes in fp32, 2 in bf16/fp16); LayerNorm and cross-entropy statistics, the
 * attention backward's scratch, the gradients of the parameters (main grads), the optimizer's
 * moments in fp32.  In bf16/fp16 an fp32 copy of the weights, the master weights
 * (master_params), joins the optimizer state: weights 2 + main grads 4 + master 4 + moments 8
 * bytes per parameter; the distributed optimizer shards master and moments over d (2 + 4 + 12/d,
 * as Megatron).  Dropout masks are one byte per element.
 * The peak of held activations follows the schedule (ptdp/schedule.h): a slot's held bytes count
 * from its forward to its backward, walked item by item. */
#ifndef PTDP_PLAN_H
#define PTDP_PLAN_H

#include "ptdp/params.h"
#include "ptdp/recompute.h"
#include "ptdp/schedule.h"

#include <stddef.h>

typedef enum {
  /* one layer's activations (per chunk, slot and layer; also the recomputation scratch) */
  PTDP_BUF_LAYER_INPUT = 0, PTDP_BUF_LN1_MEAN, PTDP_BUF_LN1_RSTD, PTDP_BUF_LN1_OUT, PTDP_BUF_QKV,
  PTDP_BUF_ATTN_PROBS, PTDP_BUF_ATTN_MASK, PTDP_BUF_ATTN_PROBS_DROPPED, PTDP_BUF_ATTN_CONTEXT,
  PTDP_BUF_ATTN_RESID_MASK, PTDP_BUF_LN2_INPUT, PTDP_BUF_LN2_MEAN, PTDP_BUF_LN2_RSTD, PTDP_BUF_LN2_OUT,
  PTDP_BUF_FC1_OUT, PTDP_BUF_GELU_OUT, PTDP_BUF_MLP_RESID_MASK,
  /* per chunk and slot, outside the layers */
  PTDP_BUF_CHUNK_OUTPUT, PTDP_BUF_TOKENS, PTDP_BUF_TARGETS, PTDP_BUF_EMBEDDING_MASK, PTDP_BUF_FINAL_LN_MEAN,
  PTDP_BUF_FINAL_LN_RSTD, PTDP_BUF_FINAL_LN_OUT, PTDP_BUF_LOGITS,
  /* work space */
  PTDP_BUF_WORK_FULL_A, PTDP_BUF_WORK_FULL_B, PTDP_BUF_WORK_SHARD_A, PTDP_BUF_WORK_SHARD_B, PTDP_BUF_WORK_SHARD_C,
  PTDP_BUF_WORK_DQKV, PTDP_BUF_WORK_DCTX, PTDP_BUF_WORK_DFC, PTDP_BUF_WORK_ATTN, PTDP_BUF_WORK_XENT,
  PTDP_BUF_WORK_GRAD_A, PTDP_BUF_WORK_GRAD_B, PTDP_BUF_WORK_POSITIONS,
  /* pipeline */
  PTDP_BUF_P2P_GRAD_SEND, PTDP_BUF_P2P_GRAD_RECV,
  /* parameters and optimizer */
  PTDP_BUF_PARAMS, PTDP_BUF_GRADS, PTDP_BUF_ADAM_M, PTDP_BUF_ADAM_V, PTDP_BUF_GRAD_SHARD,
  PTDP_BUF_MASTER_PARAMS, /* mixed precision: the fp32 master weights (class optimizer) */
  PTDP_BUF_KINDS
} ptdp_buffer_kind;

/* What a buffer counts as in the per-rank totals. */
typedef enum {
  PTDP_MEM_ACTIVATIONS = 0, /* held for the backward pass */
  PTDP_MEM_TRANSIENT,       /* per-slot buffers not held (tokens, send buffers) */
  PTDP_MEM_WORK,            /* work space and recomputation scratch */
  PTDP_MEM_P2P,
  PTDP_MEM_PARAMS, PTDP_MEM_GRADS, PTDP_MEM_OPTIMIZER,
  PTDP_MEM_CLASSES
} ptdp_mem_class;

enum { PTDP_PLAN_NONE = -1 }; /* chunk, slot or layer that does not apply */

typedef struct {
  ptdp_buffer_kind kind;
  int chunk, slot, layer; /* layer: global index; PTDP_PLAN_NONE where it does not apply */
  int index;              /* several buffers of one kind in one place: recompute scratch layer, p2p buffer */
  int held;               /* held for the backward pass while its slot is busy */
  size_t bytes;
} ptdp_buffer;

/* Everything the plan depends on. */
typedef struct {
  ptdp_model_shape shape;
  ptdp_param_position pos;
  int seq, micro_batch;
  int hidden_dropout, attention_dropout;  /* 1 when the probability is > 0 */
  ptdp_recompute recompute;
  ptdp_recompute_method recompute_method;
  int recompute_num_layers;
  ptdp_schedule_kind schedule;
  int m;                                   /* micro-batches per iteration per DP rank */
  long long bucket_elems;                  /* ddp-bucket-size */
  int d;                                   /* data-parallel size */
  int distributed_optimizer;
  int inference;                           /* 1: no gradients, no optimizer state */
  int dtype;                               /* storage type (ptdp_dtype of ptdp/backend.h): 0 fp32 */
} ptdp_plan_config;

typedef struct {
  ptdp_plan_config cfg;
  ptdp_buffer *buf;
  int n, cap;
  int slots;                            /* activation slots per chunk (the schedule's most in flight) */
  size_t held_per_slot_max;             /* held bytes of the largest chunk slot */
  size_t total[PTDP_MEM_CLASSES];       /* bytes allocated per class */
  size_t allocated;                     /* every buffer together */
  size_t peak_activations;              /* most held bytes at once, walking the schedule */
  size_t peak;                          /* what a rank holds at peak: everything but the held
                                           activations, plus their peak */
} ptdp_plan;

int ptdp_plan_build(const ptdp_plan_config *cfg, ptdp_plan *plan);
void ptdp_plan_free(ptdp_plan *plan);
const char *ptdp_buffer_kind_name(ptdp_buffer_kind k);
ptdp_mem_class ptdp_buffer_class(const ptdp_buffer *b);
/* Held bytes of one chunk's slot (all slots of a chunk are alike). */
size_t ptdp_plan_held_per_slot(const ptdp_plan *plan, int chunk);
/* Held bytes of one layer in one slot (for the per-layer report). */
size_t ptdp_plan_held_layer(const ptdp_plan *plan, int chunk, int layer);

#endif
