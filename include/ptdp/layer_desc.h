/* One transformer layer, described once.
 *
 * The layer of ptdp/gpt.h (src/model/layer.c runs it) as a list of operations in the order they
 * run, for one micro-batch on one tensor-parallel rank: the GEMMs with their shapes and the
 * parameters they read, the normalisations, the element-wise passes, the attention core, the
 * tensor-parallel collectives around the column- and row-parallel GEMMs, and for each operation
 * the activations it keeps for the backward pass (the entries of the memory plan's table
 * PTDP_LAYER_ACTIVATIONS, ptdp/plan.h, with their sizes).  Everything that counts the layer reads
 * this list instead of restating it:
 *   the model FLOPs (ptdp_model_flops: the GEMMs and the attention core at t = 1),
 *   the activation-memory formula (ptdp_layer_bytes_ptdp: the saved tensors),
 *   ptdp-sim's GPU cost model (sim/layer.c: one or more cost entries per operation),
 *   the run file's analytical tensor-parallel volume (the collectives).
 * A new operation or parameter of the layer (a mixture-of-experts MLP, another normalisation) is
 * a new entry of ptdp_layer_describe; each reader prices it by its kind.
 *
 * A mixture-of-experts layer (shape.moe) has instead of the MLP's GEMMs: the router GEMM
 * [N, h] x [h, E], the routing, the permutation, the experts' fc1 and fc2 GEMMs as a batch of E
 * GEMMs of k N / E rows each (the balanced load: the active experts' FLOPs), the unpermutation.
 *
 * For the configured family (ptdp_arch): LayerNorm or RMSNorm, biases or none, learned or rotary
 * positions, GELU or SwiGLU, grouped-query attention (in the widths of ptdp_rank_shape).  Symbols
 * of ptdp/shape.h: N = s b token rows, Nl = N / t under sequence parallelism, hl = al hd, fl = f / t,
 * qkv = (al + 2 gl) hd, fc1 = fl (2 fl with SwiGLU). */
#ifndef PTDP_LAYER_DESC_H
#define PTDP_LAYER_DESC_H

#include "ptdp/params.h"
#include "ptdp/plan.h"
#include "ptdp/recompute.h"
#include "ptdp/shape.h"

/* One layer of one rank: its sizes and what decides which tensors it keeps. */
typedef struct {
  ptdp_rank_shape r;                     /* the layer's sizes on one rank (ptdp/shape.h) */
  int hidden_dropout, attention_dropout; /* 1 if > 0 */
  ptdp_recompute recompute;              /* full: the layer stores its input only; selective: no
                                            attention core */
  int bytes;                             /* of one stored element: 4 fp32, 2 bf16/fp16 (0: 4) */
  ptdp_arch arch;                        /* the family: norm, biases, positions, MLP */
  int flash_attention;                   /* the fused attention: no s x s tensors; the log-sum-exp
                                            of each query row instead */
  int moe;                               /* 1: the MLP is the mixture of experts (arch.moe; the
                                            sizes E, k, efl, efc1, Nk of r) */
} ptdp_layer_shape;

typedef enum {
  PTDP_LOP_NORM = 0,   /* LayerNorm or RMSNorm over M = Nl rows of N = h */
  PTDP_LOP_TP_IN,      /* Megatron's f before a column-parallel GEMM, over M x N = N x h: forward
                          identity (SP: all-gather); backward all-reduce (SP: reduce-scatter, and
                          the weight gradient's all-gather of the input again) */
  PTDP_LOP_GEMM,       /* batch x [M, K] x [K, N] forward; backward the input gradient [M,N]x[N,K]
                          and the weight gradient [K,M]x[M,N] */
  PTDP_LOP_BIAS,       /* a column-parallel GEMM's bias added after it, M x N */
  PTDP_LOP_ROPE,       /* rotary positions on M rows of N turned columns (queries and keys) */
  PTDP_LOP_ATTENTION,  /* the attention core: batch = b al heads of [s, hd] queries against s
                          keys (M = N = s, K = hd), causal */
  PTDP_LOP_ACTIVATION, /* GELU or SwiGLU of M rows to N = fl columns (with fc1's bias, if any) */
  PTDP_LOP_TP_OUT,     /* Megatron's g after a row-parallel GEMM, over M x N = N x h: forward
                          all-reduce (SP: reduce-scatter); backward identity (SP: all-gather) */
  PTDP_LOP_RESIDUAL,   /* the row-parallel GEMM's bias, dropout and the residual add, M = Nl x h */
  PTDP_LOP_ROUTE,      /* the mixture's router after its GEMM: softmax or sigmoid and the top k of M = N
                          rows of N = E fp32 logits (the losses' passes with them); K = k: the
                          backward all-reduces the probabilities' gradient [N, k] over TP */
  PTDP_LOP_PERMUTE,    /* rows moved between token order and expert order, M = N k rows of N = h;
                          unpermute also weights them by the probabilities and sums each token's k */
  PTDP_LOP_KINDS
} ptdp_lop_kind;

/* What a saved tensor's elements are: the storage type, fp32, one-byte masks. */
typedef enum { PTDP_SAVE_STORE = 0, PTDP_SAVE_F32, PTDP_SAVE_MASK } ptdp_save_unit;
/* Which recomputation keeps it: IN the layer input (full recomputation keeps only it); CORE the
 * attention core (selective recomputation drops it); REST the others. */
typedef enum { PTDP_SAVE_IN = 0, PTDP_SAVE_CORE, PTDP_SAVE_REST } ptdp_save_part;

typedef struct {
  ptdp_buffer_kind kind;  /* its entry of PTDP_LAYER_ACTIVATIONS (PTDP_BUF_KINDS: none, as for a
                             tensor the table does not have yet) */
  double elems;
  ptdp_save_unit unit;
  ptdp_save_part part;
} ptdp_lop_save;

#define PTDP_LOP_MAX_SAVES 5

typedef struct {
  ptdp_lop_kind kind;
  const char *name;       /* as reports and ptdp-sim's --explain print it */
  double M, N, K, batch;  /* sizes by kind (above) */
  int weight, bias;       /* the ptdp_param_role of the parameters it reads; -1: none */
  int row_parallel;       /* GEMM: the row-parallel ones (projection, fc2) */
  int nsave;
  ptdp_lop_save save[PTDP_LOP_MAX_SAVES]; /* what it keeps for the backward pass (present ones) */
} ptdp_layer_op;

#define PTDP_LAYER_MAX_OPS 32

typedef struct {
  ptdp_layer_shape shape;
  int n;
  ptdp_layer_op op[PTDP_LAYER_MAX_OPS];
} ptdp_layer_desc;

/* The layer with the shape l, its operations in the order of the forward pass. */
void ptdp_layer_describe(const ptdp_layer_shape *l, ptdp_layer_desc *d);
/* Append an operation (the last one is dropped past PTDP_LAYER_MAX_OPS: returns -1); its saves
 * are given by the caller. */
int ptdp_layer_desc_add(ptdp_layer_desc *d, const ptdp_layer_op *op);

/* Multiply-adds of the forward pass: every GEMM, and the attention core's two s x s products
 * counted whole (the model-FLOPs convention, causal mask or not). */
double ptdp_layer_desc_macs(const ptdp_layer_desc *d);
/* Elements one rank moves over its TP group per micro-batch, in the ring convention and in units
 * of the collective's own size times (t - 1) / t: all-reduce 2, all-gather and reduce-scatter 1.
 * forward_again: full recomputation runs the forward's collectives a second time. */
double ptdp_layer_desc_tp_elems(const ptdp_layer_desc *d, int forward_again);
/* Bytes of the tensors kept for the backward pass under the shape's recomputation. */
double ptdp_layer_desc_saved_bytes(const ptdp_layer_desc *d);

/* The size, unit and part of entry `kind` of PTDP_LAYER_ACTIVATIONS for shape l, and whether the
 * layer keeps it at all (its `when`); 0 for a kind outside the table. */
int ptdp_layer_activation(const ptdp_layer_shape *l, ptdp_buffer_kind kind, ptdp_lop_save *s);

#endif
