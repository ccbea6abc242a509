/* The model's configuration, made from keys in one place.
 *
 * Every program that builds, converts, generates with, simulates or sweeps a model reads the
 * same keys (Megatron-LM's names) and turns them into a model the same way: ptdp-train,
 * ptdp-convert, ptdp-generate, ptdp-sim and ptdp-sweep all call ptdp_model_config_of.  What the
 * keys are is written once, here (PTDP_MODEL_KEY_FIELDS); ptdp-train's key table (src/train/args.c)
 * declares each key's text, default and range over the same fields, and its CLI struct ptdp_args
 * holds them as its member `model`, so the programs above the trainer hand the model module a
 * ptdp_model_keys and never the trainer's own struct.
 *
 * A new model dimension (the experts of a mixture-of-experts MLP, a context-parallel size) is a
 * field here, a row of the key table and a line of ptdp_model_config_of: nothing else restates
 * how keys become a model.
 *
 * Symbols (ptdp(7)): l layers, h hidden, a heads, f ffn width, s sequence, b micro-batch, t, p, d
 * the tensor, pipeline and data-parallel sizes, v model chunks per stage, m micro-batches per
 * iteration and data-parallel rank. */
#ifndef PTDP_MODEL_CONFIG_H
#define PTDP_MODEL_CONFIG_H

#include "ptdp/backend.h"        /* ptdp_attention_backend */
#include "ptdp/dtype.h"
#include "ptdp/options.h"        /* PTDP_OPT_STRLEN */
#include "ptdp/parallel_kinds.h" /* ptdp_grid_order */
#include "ptdp/params.h"         /* ptdp_arch, ptdp_model_shape */
#include "ptdp/plan.h"           /* ptdp_plan_config */
#include "ptdp/recompute.h"
#include "ptdp/schedule.h"

#include <stdint.h>

/* The router's element type (moe-router-dtype): fp32 is what ptdp computes the router in. */
typedef enum { PTDP_MOE_ROUTER_FP32 = 0, PTDP_MOE_ROUTER_FP64 } ptdp_moe_router_dtype;

/* The keys that say what the model is, how it is laid out over the ranks, in which element type
 * it computes and how it recomputes: the fields of ptdp_model_keys, in one list (see
 * ptdp_args's `model` for why it is a list). */
#define PTDP_MODEL_KEY_FIELDS                                                                                   \
  /* sizes */                                                                                                   \
  long long num_layers, hidden_size, num_attention_heads, ffn_hidden_size, seq_length, max_position_embeddings; \
  long long vocab_size, make_vocab_size_divisible_by;                                                           \
  double init_method_std, hidden_dropout, attention_dropout, layernorm_epsilon;                                 \
  /* the architecture (ptdp_arch of ptdp/params.h) */                                                           \
  ptdp_norm_type normalization;                                                                                 \
  ptdp_position_type position_embedding_type;                                                                   \
  double rotary_base, rotary_percent;                                                                           \
  int rotary_interleaved, disable_bias_linear, untie_embeddings_and_output_weights, swiglu;                    \
  int group_query_attention;                                                                                    \
  long long num_query_groups, kv_channels;                                                                      \
  /* batches and the seed every initial value and dropout mask is keyed by */                                  \
  long long micro_batch_size, global_batch_size, seed;                                                          \
  /* parallelism */                                                                                             \
  long long tensor_model_parallel_size, pipeline_model_parallel_size, num_layers_per_virtual_pipeline_stage;    \
  ptdp_grid_order parallel_order;                                                                               \
  ptdp_schedule_kind pipeline_schedule;                                                                         \
  int sequence_parallel, use_distributed_optimizer;                                                             \
  long long ddp_bucket_size;                                                                                    \
  /* recomputation */                                                                                           \
  ptdp_recompute recompute_granularity;                                                                         \
  ptdp_recompute_method recompute_method;                                                                       \
  long long recompute_num_layers;                                                                               \
  /* element type and the attention core */                                                                     \
  int fp16, bf16;                                                                                               \
  ptdp_attention_backend attention_backend;                                                                     \
  /* the mixture of experts (ptdp_moe of ptdp/params.h) */                                                      \
  long long num_experts, moe_router_topk, moe_ffn_hidden_size;                                                  \
  char moe_layer_freq[PTDP_OPT_STRLEN];                                                                         \
  ptdp_moe_score moe_router_score_function;                                                                     \
  ptdp_moe_balance moe_router_load_balancing_type;                                                              \
  ptdp_moe_router_dtype moe_router_dtype;                                                                       \
  int moe_router_pre_softmax, moe_router_enable_expert_bias;                                                    \
  double moe_router_topk_scaling_factor, moe_aux_loss_coeff, moe_z_loss_coeff, moe_expert_capacity_factor;      \
  long long expert_model_parallel_size, expert_tensor_parallel_size, moe_router_num_groups;                     \
  long long moe_router_group_topk, moe_shared_expert_intermediate_size;

typedef struct {
  PTDP_MODEL_KEY_FIELDS
} ptdp_model_keys;

/* What ptdp_gpt_create builds (ptdp/gpt.h): the model's sizes and architecture, the batch it
 * plans for, and the layout of this rank's part of the grid. */
typedef struct {
  int num_layers, hidden, heads, ffn, seq, max_pos, micro_batch;
  long long vocab;        /* the real vocabulary; the model pads it (ptdp_padded_vocab) */
  int vocab_divisible_by; /* make-vocab-size-divisible-by */
  float eps, hidden_dropout, attn_dropout, init_std;
  uint64_t seed;
  int sequence_parallel;
  int chunks;             /* v: model chunks per pipeline stage (1 unless interleaved) */
  ptdp_schedule_kind schedule;
  int m;                  /* micro-batches per iteration per DP rank (the schedule's, for the plan) */
  ptdp_recompute recompute;
  ptdp_recompute_method recompute_method;
  int recompute_num_layers;
  long long bucket_elems; /* gradient elements per data-parallel bucket (ddp-bucket-size) */
  int dp_size;            /* d */
  int distributed_optimizer;
  int inference;          /* 1: parameters only, no gradient or optimizer buffers (ptdp-generate) */
  ptdp_dtype dtype;       /* storage type of weights and activations (--bf16, --fp16): be->dtype */
  ptdp_arch arch;         /* normalisation, biases, tied output, positions (ptdp/params.h; zero: GPT-2) */
  int flash_attention;    /* 1: the backend's fused attention (flash_forward/backward; the layer keeps
                             each query row's log-sum-exp, no s x s tensor); 0: the unfused pair */
} ptdp_gpt_config;

/* What the model is built for. */
typedef enum {
  PTDP_MODEL_TRAIN = 0,  /* training on t x p x d ranks: the keys' layout, batches and dropout */
  PTDP_MODEL_WEIGHTS     /* the parameters only (ptdp-generate, ptdp-convert): one token row, one
                            stage and chunk, no dropout, no gradients; t is the world (generate:
                            tensor parallelism over every rank; convert: one rank) */
} ptdp_model_use;

/* What the keys alone cannot say. */
typedef struct {
  ptdp_model_use use;
  int world;            /* ranks: d = world / (t p) in training, t = world for the weights */
  long long vocab;      /* the real vocabulary as resolved (the tokenizer's); 0: the key vocab-size */
  int flash_attention;  /* the attention core the backend chose (ptdp_backend_use_flash) */
} ptdp_model_env;

/* The layout the keys give on `world` ranks. */
typedef struct {
  int t, p, d;                 /* tensor, pipeline, data-parallel sizes */
  int v;                       /* model chunks per stage: l / p / num-layers-per-virtual-pipeline-stage, else 1 */
  ptdp_schedule_kind schedule; /* interleaved whenever v > 1 (as Megatron: chunks imply it) */
  long long global_batch;      /* global-batch-size, or micro-batch-size x d */
  int m;                       /* micro-batches per iteration per data-parallel rank */
} ptdp_model_layout;

typedef struct {
  ptdp_model_layout layout;
  ptdp_gpt_config gpt;     /* what ptdp_gpt_create builds */
  ptdp_model_shape shape;  /* the sizes independent of the layout (ptdp_gpt_shape of gpt) */
} ptdp_model_config;

/* Refuse keys that describe no model on `world` ranks (sizes that do not divide, a sequence
 * longer than the position table, batches that do not split over the data-parallel ranks), with
 * a message naming the keys.  ptdp-train's checks (ptdp_args_validate) and ptdp-sim's start here. */
int ptdp_model_keys_check(const ptdp_model_keys *k, int world);

/* The layout and the model the keys k describe in env.  The keys are assumed checked
 * (ptdp_args_validate for ptdp-train's; the simulator checks its own); the layout's counts are
 * integer quotients of them. */
void ptdp_model_layout_of(const ptdp_model_keys *k, int world, ptdp_model_layout *l);
void ptdp_model_config_of(const ptdp_model_keys *k, const ptdp_model_env *env, ptdp_model_config *c);

/* Derived keys. */
long long ptdp_model_keys_ffn(const ptdp_model_keys *k);   /* ffn-hidden-size, or Megatron's default */
ptdp_arch ptdp_model_keys_arch(const ptdp_model_keys *k);  /* the architecture the keys describe */
ptdp_dtype ptdp_model_keys_dtype(const ptdp_model_keys *k); /* bf16, fp16, else fp32 */
long long ptdp_model_keys_max_pos(const ptdp_model_keys *k); /* max-position-embeddings, or seq-length */
/* The layers moe-layer-freq makes mixtures of experts, into layer[0 .. num-layers): an integer n
 * (every n-th layer from layer 0, Megatron's `i % n == 0`) or Megatron's pattern, a sum of lists
 * times counts such as "([0]*1+[1]*3)" with one entry per layer.  0, or -1 with a message in
 * err (n bytes) when the text is neither or the pattern's length is not num-layers. */
int ptdp_model_moe_layers(const char *freq, long long num_layers, unsigned char *layer, char *err, size_t n);

/* The model's shape (independent of the layout). */
ptdp_model_shape ptdp_gpt_shape(const ptdp_gpt_config *cfg);
/* The memory plan's configuration of this model on a rank at `pos`: what ptdp_gpt_create plans,
 * and what ptdp-sim prices for each stage. */
ptdp_plan_config ptdp_gpt_plan_config(const ptdp_gpt_config *cfg, const ptdp_param_position *pos);

#endif
