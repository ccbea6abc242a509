/* The parameter table: every parameter a rank holds, as a pure function of the model shape and
 * the rank's position in the grid (no MPI, no allocation, no device).
 *
 * The model allocates from it; the debug dump, checkpoints and the simulator read it.  Each entry
 * names a parameter as Megatron-core does, gives its global (unsharded) shape, how tensor
 * parallelism splits it, this rank's slice of the global tensor (origin and extent) and the shape
 * of the local buffer that holds the slice.  The two differ only for the word embedding and its
 * tied copy: the global tensor is [vocab, h] (the real vocabulary), while each TP rank's buffer
 * holds V'/t rows of the vocabulary padded to V' = a multiple of make-vocab-size-divisible-by x t;
 * the padding rows are in no global tensor, so nothing outside the model depends on t.
 *
 * Order: chunk by chunk (chunk c of stage s holds virtual stage c p + s); within a chunk the
 * embedding (first virtual stage), the layers (twelve tensors each, in the order of the layer
 * roles below; fewer where the architecture has no biases: ptdp_params_has_role), then the head
 * (last virtual stage: final LayerNorm, and with p v > 1 the output layer, the last stage's own
 * copy of the tied word embedding; untied, the output layer is a tensor of its own, always
 * there).
 *
 * Worked example: vocab 300, divisible-by 128, h 64, t 2: V' = 512, local word-embedding buffer
 * [256, 64] on each TP rank; rank 0's slice is rows [0, 256) of the global [300, 64], rank 1's
 * rows [256, 300) (extent 44; its last 212 buffer rows are padding). */
#ifndef PTDP_PARAMS_H
#define PTDP_PARAMS_H

#include <stdint.h>

/* How a parameter's global tensor is split across TP ranks. */
typedef enum { PTDP_SPLIT_NONE = 0, PTDP_SPLIT_ROWS, PTDP_SPLIT_COLS } ptdp_split;

/* Initial values: zeros (biases), ones (LayerNorm weights), normal(0, init-method-std), or
 * normal(0, init-method-std / sqrt(2 L)) for the two output projections of each layer. */
typedef enum { PTDP_INIT_ZEROS = 0, PTDP_INIT_ONES, PTDP_INIT_NORMAL, PTDP_INIT_NORMAL_SCALED } ptdp_init_kind;

/* What a parameter is.  The twelve layer roles come first, in the table's order within a layer. */
typedef enum {
  PTDP_PARAM_LN1_WEIGHT = 0, PTDP_PARAM_LN1_BIAS, PTDP_PARAM_QKV_WEIGHT, PTDP_PARAM_QKV_BIAS,
  PTDP_PARAM_PROJ_WEIGHT, PTDP_PARAM_PROJ_BIAS, PTDP_PARAM_LN2_WEIGHT, PTDP_PARAM_LN2_BIAS,
  PTDP_PARAM_FC1_WEIGHT, PTDP_PARAM_FC1_BIAS, PTDP_PARAM_FC2_WEIGHT, PTDP_PARAM_FC2_BIAS,
  PTDP_PARAM_LAYER_ROLES, /* count of the layer roles */
  PTDP_PARAM_WORD_EMBEDDING = PTDP_PARAM_LAYER_ROLES, PTDP_PARAM_POSITION_EMBEDDING,
  PTDP_PARAM_FINAL_LN_WEIGHT, PTDP_PARAM_FINAL_LN_BIAS,
  PTDP_PARAM_OUTPUT_LAYER, /* the last stage's copy of the tied word embedding (p v > 1) */
  /* a mixture-of-experts layer's MLP (ptdp_moe_layer): its router, then each expert's fc1 and fc2
   * (in the table after pre_mlp_layernorm, in place of the dense linear_fc1 and linear_fc2; the
   * expert is ptdp_param_info.expert) */
  PTDP_PARAM_ROUTER_WEIGHT, PTDP_PARAM_EXPERT_FC1_WEIGHT, PTDP_PARAM_EXPERT_FC1_BIAS, PTDP_PARAM_EXPERT_FC2_WEIGHT,
  PTDP_PARAM_EXPERT_FC2_BIAS
} ptdp_param_role;

/* Where positions come from (Megatron's position-embedding-type, in the order of its choices). */
typedef enum { PTDP_POS_LEARNED = 0, PTDP_POS_ROPE = 1, PTDP_POS_NONE = 2 } ptdp_position_type;
/* The normalisation layers (Megatron's normalization). */
typedef enum { PTDP_NORM_LAYERNORM = 0, PTDP_NORM_RMSNORM = 1 } ptdp_norm_type;

/* The router's score function and the load-balancing loss (Megatron's moe-router-score-function and
 * moe-router-load-balancing-type, in the order of its choices). */
typedef enum { PTDP_MOE_SOFTMAX = 0, PTDP_MOE_SIGMOID = 1 } ptdp_moe_score;
typedef enum {
  PTDP_MOE_AUX_LOSS = 0, PTDP_MOE_SEQ_AUX_LOSS, PTDP_MOE_GLOBAL_AUX_LOSS, PTDP_MOE_SINKHORN, PTDP_MOE_BALANCE_NONE
} ptdp_moe_balance;
#define PTDP_MOE_MAX_LAYERS 1024 /* the longest moe-layer-freq pattern */

/* The mixture-of-experts MLP (Megatron-core's MoELayer, every expert on every rank): a router
 * (linear h -> E, fp32 scores) sends each token to its top k experts, each expert is the model's
 * MLP of width f_e, and the token's output is the sum of its experts' outputs weighted by the
 * routing probabilities.  num_experts 0: every MLP is dense. */
typedef struct {
  int num_experts;           /* E (num-experts) */
  int topk;                  /* k (moe-router-topk) */
  int ffn;                   /* f_e: each expert's width (moe-ffn-hidden-size; 0: the model's f) */
  ptdp_moe_score score;      /* softmax or sigmoid */
  int pre_softmax;           /* moe-router-pre-softmax: softmax over all E, then the top k */
  double topk_scaling;       /* moe-router-topk-scaling-factor (0: none) */
  ptdp_moe_balance balance;  /* aux_loss or none here */
  double aux_coeff, z_coeff; /* moe-aux-loss-coeff, moe-z-loss-coeff */
  unsigned char layer[PTDP_MOE_MAX_LAYERS]; /* 1: layer i's MLP is the mixture (moe-layer-freq) */
} ptdp_moe;

/* The architecture beyond the sizes, with Megatron's keys; all zero is GPT-2 (LayerNorm, biases,
 * learned absolute positions, the output layer tied to the word embedding). */
typedef struct {
  ptdp_norm_type norm;         /* normalization: RMSNorm has a weight and no bias */
  int no_linear_bias;          /* disable-bias-linear: no bias on QKV, proj, fc1, fc2 */
  int untie;                   /* untie-embeddings-and-output-weights: output_layer is its own tensor */
  ptdp_position_type position; /* position-embedding-type */
  double rotary_base;          /* rotary-base (0: 10000) */
  double rotary_percent;       /* rotary-percent: the rotated part of each head (0: all of it) */
  int rotary_interleaved;      /* rotary-interleaved: pairs (2i, 2i+1) instead of Llama's halves */
  int query_groups;            /* num-query-groups with group-query-attention: heads share the keys
                                  and values of their group (0: one group per head) */
  int kv_channels;             /* kv-channels: the head size (0: hidden / heads) */
  int swiglu;                  /* swiglu: the MLP is fc2(silu(gate) * up), fc1 holding [gate; up]
                                  (2 f rows: two row blocks, ptdp_param_info.blocks) */
  ptdp_moe moe;                /* the mixture-of-experts layers (zero: none) */
} ptdp_arch;

/* Is global layer `layer`'s MLP the mixture of experts? */
static inline int ptdp_moe_layer(const ptdp_arch *a, int layer)
{
  return a->moe.num_experts > 0 && layer >= 0 && layer < PTDP_MOE_MAX_LAYERS && a->moe.layer[layer];
}
/* Each expert's width f_e. */
static inline int ptdp_moe_ffn(const ptdp_arch *a, int ffn) { return a->moe.ffn > 0 ? a->moe.ffn : ffn; }

/* The model's shape, independent of the layout. */
typedef struct {
  int num_layers, hidden, heads, ffn, max_pos;
  long long vocab;             /* the real vocabulary */
  int vocab_divisible_by;      /* make-vocab-size-divisible-by */
  int sequence_parallel;       /* decides which gradients are partial sums over TP */
  ptdp_arch arch;
} ptdp_model_shape;

/* A rank's place in the grid, as far as the parameters care. */
typedef struct {
  int t, tp_rank;  /* tensor parallelism */
  int p, stage;    /* pipeline stages */
  int v;           /* model chunks per stage (1 unless interleaved) */
} ptdp_param_position;

typedef struct {
  char name[96];             /* Megatron-core name, e.g. decoder.layers.3.self_attention.linear_qkv.weight */
  ptdp_param_role role;
  int chunk;                 /* local model chunk holding it */
  int layer;                 /* global layer index, -1 outside the transformer layers */
  int ndim;                  /* 2 for matrices, 1 for vectors */
  long long grows, gcols;    /* global shape (gcols = 1 for vectors) */
  ptdp_split split;
  int blocks;                /* K: the global rows are K equal blocks, each split over TP on its own
                                (1; 2 for SwiGLU's fc1, [gate; up]): the local buffer holds this
                                rank's slice of each block, block after block, lrows / K rows apiece */
  long long row0, col0;      /* origin of this rank's slice in the global tensor (of its first block) */
  long long rows, cols;      /* extent of the slice, all its blocks (rows may be 0: a TP rank holding
                                only padding) */
  long long lrows, lcols;    /* local buffer shape: rows >= slice rows (word-embedding padding) */
  ptdp_init_kind init;
  uint32_t init_key;         /* key of its initial values: the same global tensor, the same key */
  int weight_decay;          /* AdamW decay applies (not to biases and LayerNorm parameters) */
  int tp_replicated;         /* every TP rank holds the whole tensor */
  int sp_partial;            /* with sequence parallelism its gradient is a partial sum over TP */
  int tied_copy;             /* the output layer: a copy of the word embedding, not a tensor of its own */
  int embedding;             /* the word embedding or its tied copy */
  int expert;                /* the expert of an expert role, else -1 */
} ptdp_param_info;

/* The attention's sizes: the head size (kv-channels, or h / a), the key/value groups (a without
 * grouped-query attention), the width of the attention's output a hd (the projection's input),
 * and the rows of linear_qkv, (a + 2 g) hd: per group, its a/g query heads, then its key and its
 * value head (Megatron-core's fused layout; one query per group is GPT-2's [q k v] per head). */
int ptdp_model_head_dim(const ptdp_model_shape *s);
int ptdp_model_query_groups(const ptdp_model_shape *s);
long long ptdp_model_attn_width(const ptdp_model_shape *s);
long long ptdp_model_qkv_rows(const ptdp_model_shape *s);
/* V' = vocab padded to a multiple of divisible_by x t (Megatron's rule). */
long long ptdp_padded_vocab(long long vocab, int divisible_by, int t);
/* Layers per model chunk, and the first (global) layer of local chunk c. */
int ptdp_params_layers_per_chunk(const ptdp_model_shape *s, const ptdp_param_position *pos);
int ptdp_params_chunk_layer0(const ptdp_model_shape *s, const ptdp_param_position *pos, int c);
/* Does local chunk c hold the embedding (first virtual stage) / the head (last)? */
int ptdp_params_chunk_has_embedding(const ptdp_param_position *pos, int c);
int ptdp_params_chunk_has_head(const ptdp_param_position *pos, int c);
/* Number of parameters this position holds. */
int ptdp_params_count(const ptdp_model_shape *s, const ptdp_param_position *pos);
/* Fill out[0 .. count) (cap entries available); returns the count, or -1 if cap is too small. */
int ptdp_params_list(const ptdp_model_shape *s, const ptdp_param_position *pos, ptdp_param_info *out, int cap);
/* The most row blocks a parameter has (ptdp_param_info.blocks). */
#define PTDP_PARAM_MAX_BLOCKS 2
/* Elements of a local buffer. */
static inline long long ptdp_param_local_elems(const ptdp_param_info *p) { return p->lrows * p->lcols; }
/* The global row of local row lr: block k = lr / (lrows / K) of the buffer is this rank's slice of
 * global block k, which starts at global row k grows / K.  Worked example: SwiGLU's fc1 weight,
 * f 6, t 2 ([gate; up], 12 rows): TP rank 1's six local rows are global rows 3, 4, 5 (gate_1)
 * and 9, 10, 11 (up_1).  Word-embedding padding rows (lr >= rows) map past the global tensor. */
static inline long long ptdp_param_global_row(const ptdp_param_info *p, long long lr)
{
  const long long per = p->lrows / p->blocks;
  return lr / per * (p->grows / p->blocks) + p->row0 + lr % per;
}
/* Does the architecture have this role (a layer role, the position embedding, the final norm's
 * bias)?  RMSNorm has no biases, disable-bias-linear none on the linear layers, RoPE and no
 * positions no position table. */
int ptdp_params_has_role(const ptdp_arch *a, ptdp_param_role r);
/* Layer-role suffix of a name ("self_attention.linear_qkv.weight"). */
const char *ptdp_param_role_suffix(ptdp_param_role r);

#endif
