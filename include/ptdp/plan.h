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

/* One transformer layer's activations, listed once: the plan's buffer kinds and names, the
 * model's fields (ptdp_layer_acts, ptdp/gpt.h), their binding to the allocations (gpt_bind.c), the
 * sizes the plan gives them (plan.c) and what selective recomputation replaces (chunk.c) all come
 * from this table.  Adding an activation tensor is one line here plus its use in the layer.
 *   X(kind, type, field, name, part, elements, unit, when)
 *   part      IN: the layer input (full recomputation keeps only it); CORE: the attention core
 *             (selective recomputation drops it); REST: everything else;
 *   elements  in the sizes z of ptdp/shape.h;
 *   unit      STORE: the storage type; F32; MASK: one byte;
 *   when      ALWAYS; DENSE: a dense MLP; MOE: the mixture of experts (ptdp_moe_layer; the
 *             recomputation scratch holds what any layer of the model needs); LN: LayerNorm (RMSNorm keeps no mean); HDROP: hidden dropout > 0; UNFUSED: the unfused attention (the
 *             probabilities); ADROP: attention dropout > 0 with the unfused attention (the fused
 *             kernel keeps no mask: it draws the bits again); FLASH: the fused attention.
 * The order within a part is the order of allocation. */
#define PTDP_LAYER_ACTIVATIONS(X)                                                                          \
  X(PTDP_BUF_LAYER_INPUT, float, x, "layer_input", IN, z.Nl * z.h, STORE, ALWAYS) /* LN1 input */        \
  X(PTDP_BUF_LN1_MEAN, float, ln1_mean, "ln1_mean", REST, z.Nl, F32, LN)                                  \
  X(PTDP_BUF_LN1_RSTD, float, ln1_rstd, "ln1_rstd", REST, z.Nl, F32, ALWAYS)                              \
  /* QKV input (a shard under SP; re-gathered in the backward) */                                         \
  X(PTDP_BUF_LN1_OUT, float, ln1_out, "ln1_out", REST, z.Nl * z.h, STORE, ALWAYS)                         \
  X(PTDP_BUF_QKV, float, qkv, "qkv", REST, z.N * z.qkv, STORE, ALWAYS)                                   \
  X(PTDP_BUF_ATTN_PROBS, float, probs, "attn_probs", CORE, z.att, STORE, UNFUSED) /* softmax output */   \
  X(PTDP_BUF_ATTN_MASK, uint8_t, attn_mask, "attn_dropout_mask", CORE, z.att, MASK, ADROP)                \
  /* the dropout output (aliases probs when p = 0) */                                                     \
  X(PTDP_BUF_ATTN_PROBS_DROPPED, float, probs_drop, "attn_probs_dropped", CORE, z.att, STORE, ADROP)     \
  X(PTDP_BUF_ATTN_CONTEXT, float, ctx, "attn_context", REST, z.N * z.hl, STORE, ALWAYS) /* proj input */ \
  X(PTDP_BUF_ATTN_RESID_MASK, uint8_t, mask1, "attn_resid_mask", REST, z.Nl * z.h, MASK, HDROP)          \
  X(PTDP_BUF_LN2_INPUT, float, x2, "ln2_input", REST, z.Nl * z.h, STORE, ALWAYS)                          \
  X(PTDP_BUF_LN2_MEAN, float, ln2_mean, "ln2_mean", REST, z.Nl, F32, LN)                                  \
  X(PTDP_BUF_LN2_RSTD, float, ln2_rstd, "ln2_rstd", REST, z.Nl, F32, ALWAYS)                              \
  X(PTDP_BUF_LN2_OUT, float, ln2_out, "ln2_out", REST, z.Nl * z.h, STORE, ALWAYS) /* fc1 input */        \
  /* GELU input; SwiGLU's [gate | up], 2 fl wide */                                                      \
  X(PTDP_BUF_FC1_OUT, float, fc1, "fc1_out", REST, z.N * z.fc1, STORE, DENSE)                           \
  X(PTDP_BUF_GELU_OUT, float, gelu, "gelu_out", REST, z.N * z.fl, STORE, DENSE) /* fc2 input */          \
  X(PTDP_BUF_MLP_RESID_MASK, uint8_t, mask2, "mlp_resid_mask", REST, z.Nl * z.h, MASK, HDROP)          \
  /* the fused attention's log-sum-exp of each query row [b, al, s]: what its backward needs */         \
  X(PTDP_BUF_ATTN_LSE, float, lse, "attn_lse", REST, z.b * z.al * z.s, F32, FLASH)                      \
  /* the mixture: the router's logits (fp32; the routing is recomputed from them), and in the    \
   * experts' order (token blocks by expert) fc1's output, the activation and each expert's output \
   * before the weighting (partial sums over TP: the probabilities' gradient is their dot product) */ \
  X(PTDP_BUF_MOE_LOGITS, float, moe_logits, "moe_router_logits", REST, z.N * z.E, F32, MOE)              \
  X(PTDP_BUF_MOE_FC1_OUT, float, moe_fc1, "moe_fc1_out", REST, z.Nk * z.efc1, STORE, MOE)               \
  X(PTDP_BUF_MOE_ACT_OUT, float, moe_act, "moe_act_out", REST, z.Nk * z.efl, STORE, MOE)                \
  X(PTDP_BUF_MOE_EXPERT_OUT, float, moe_y, "moe_expert_out", REST, z.Nk * z.h, STORE, MOE)

/* The other buffers: X(kind, name). */
#define PTDP_OTHER_BUFFERS(X)                                                                              \
  /* per chunk and slot, outside the layers */                                                            \
  X(PTDP_BUF_CHUNK_OUTPUT, "chunk_output") X(PTDP_BUF_TOKENS, "tokens") X(PTDP_BUF_TARGETS, "targets")    \
  X(PTDP_BUF_EMBEDDING_MASK, "embedding_dropout_mask") X(PTDP_BUF_FINAL_LN_MEAN, "final_ln_mean")          \
  X(PTDP_BUF_FINAL_LN_RSTD, "final_ln_rstd") X(PTDP_BUF_FINAL_LN_OUT, "final_ln_out")                      \
  X(PTDP_BUF_LOGITS, "logits")                                                                            \
  /* work space */                                                                                        \
  X(PTDP_BUF_WORK_FULL_A, "work_full_a") X(PTDP_BUF_WORK_FULL_B, "work_full_b")                            \
  X(PTDP_BUF_WORK_SHARD_A, "work_shard_a") X(PTDP_BUF_WORK_SHARD_B, "work_shard_b")                        \
  X(PTDP_BUF_WORK_SHARD_C, "work_shard_c") X(PTDP_BUF_WORK_DQKV, "work_dqkv") X(PTDP_BUF_WORK_DCTX, "work_dctx") \
  X(PTDP_BUF_WORK_DFC, "work_dfc") X(PTDP_BUF_WORK_ATTN, "work_attn") X(PTDP_BUF_WORK_XENT, "work_xent")    \
  X(PTDP_BUF_WORK_LOSSES, "work_losses")                                                                  \
  X(PTDP_BUF_WORK_GRAD_A, "work_grad_a") X(PTDP_BUF_WORK_GRAD_B, "work_grad_b")                            \
  X(PTDP_BUF_WORK_POSITIONS, "work_positions") X(PTDP_BUF_WORK_ROPE, "work_rope")                          \
  /* pipeline */                                                                                          \
  X(PTDP_BUF_P2P_GRAD_SEND, "p2p_grad_send") X(PTDP_BUF_P2P_GRAD_RECV, "p2p_grad_recv")                    \
  /* parameters and optimizer; mixed precision: the fp32 master weights (class optimizer) */             \
  X(PTDP_BUF_PARAMS, "params") X(PTDP_BUF_GRADS, "grads") X(PTDP_BUF_ADAM_M, "adam_m")                     \
  X(PTDP_BUF_ADAM_V, "adam_v") X(PTDP_BUF_GRAD_SHARD, "grad_shard") X(PTDP_BUF_MASTER_PARAMS, "master_params") \
  /* the mixture of experts' work space (models with experts only) */                                    \
  X(PTDP_BUF_WORK_MOE_ROWS_A, "work_moe_rows_a") X(PTDP_BUF_WORK_MOE_ROWS_B, "work_moe_rows_b")            \
  X(PTDP_BUF_WORK_MOE_DFC, "work_moe_dfc") X(PTDP_BUF_WORK_MOE_ROUTER, "work_moe_router")

#define PTDP_BUF_ENUM_LAYER_(kind, type, field, name, part, elems, unit, when) kind,
#define PTDP_BUF_ENUM_OTHER_(kind, name) kind,
#define PTDP_BUF_COUNT_LAYER_(kind, type, field, name, part, elems, unit, when) +1
enum { PTDP_BUF_LAYER_KINDS = 0 PTDP_LAYER_ACTIVATIONS(PTDP_BUF_COUNT_LAYER_) }; /* kinds [0, this) */
#undef PTDP_BUF_COUNT_LAYER_
typedef enum {
  PTDP_LAYER_ACTIVATIONS(PTDP_BUF_ENUM_LAYER_) /* one layer's (per chunk, slot and layer; recompute scratch) */
  PTDP_OTHER_BUFFERS(PTDP_BUF_ENUM_OTHER_)
  PTDP_BUF_KINDS
} ptdp_buffer_kind;
#undef PTDP_BUF_ENUM_LAYER_
#undef PTDP_BUF_ENUM_OTHER_

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
  int flash_attention;                     /* 1: the fused attention (lse, no s x s tensors) */
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
/* Whether the fp32 master weights (master_params: bf16/fp16 training) are sharded over the d
 * data-parallel ranks like the moments (the distributed optimizer and d > 1: total / d elements,
 * ptdp/shard_map.h) rather than whole (total elements). */
int ptdp_plan_master_sharded(const ptdp_plan_config *cfg);
/* Held bytes of one chunk's slot (all slots of a chunk are alike). */
size_t ptdp_plan_held_per_slot(const ptdp_plan *plan, int chunk);
/* Held bytes of one layer in one slot (for the per-layer report). */
size_t ptdp_plan_held_layer(const ptdp_plan *plan, int chunk, int layer);

#endif
