/* Keys to the model's configuration: see include/ptdp/model_config.h. */
#include "ptdp/model_config.h"

#include "ptdp/error.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Megatron's default: 4 h, or with SwiGLU two thirds of it (three matrices instead of two), floored
 * to a multiple of 64 (int(4 h 2/3 / 64) * 64). */
long long ptdp_model_keys_ffn(const ptdp_model_keys *k)
{
  if (k->ffn_hidden_size) return k->ffn_hidden_size;
  return k->swiglu ? 8 * k->hidden_size / 192 * 64 : 4 * k->hidden_size;
}

/* A list "[a, b, ...]" of 0/1 entries times an optional count "*n", appended at layer[*at]. */
static int pattern_term(const char **p, unsigned char *layer, long long *at, long long cap)
{
  const char *s = *p;
  if (*s != '[') return -1;
  s++;
  unsigned char item[PTDP_MOE_MAX_LAYERS];
  int n = 0;
  for (;;) {
    while (isspace((unsigned char)*s)) s++;
    if (*s != '0' && *s != '1') return -1;
    if (n >= PTDP_MOE_MAX_LAYERS) return -1;
    item[n++] = (unsigned char)(*s++ - '0');
    while (isspace((unsigned char)*s)) s++;
    if (*s == ',') { s++; continue; }
    if (*s == ']') { s++; break; }
    return -1;
  }
  long long times = 1;
  while (isspace((unsigned char)*s)) s++;
  if (*s == '*') {
    char *end;
    times = strtoll(s + 1, &end, 10);
    if (end == s + 1 || times < 0) return -1;
    s = end;
  }
  for (long long r = 0; r < times; r++)
    for (int i = 0; i < n; i++) {
      if (*at >= cap) return -2;
      layer[(*at)++] = item[i];
    }
  *p = s;
  return 0;
}

int ptdp_model_moe_layers(const char *freq, long long num_layers, unsigned char *layer, char *err, size_t n)
{
  memset(layer, 0, PTDP_MOE_MAX_LAYERS);
  const char *s = freq;
  while (isspace((unsigned char)*s)) s++;
  if (num_layers > PTDP_MOE_MAX_LAYERS) {
    snprintf(err, n, "num-layers %lld: a mixture of experts is built for at most %d layers", num_layers,
             PTDP_MOE_MAX_LAYERS);
    return -1;
  }
  if (isdigit((unsigned char)*s)) { /* an integer: every n-th layer */
    char *end;
    long long every = strtoll(s, &end, 10);
    while (isspace((unsigned char)*end)) end++;
    if (*end || every < 1) {
      snprintf(err, n, "moe-layer-freq '%s' is neither a positive integer nor a pattern such as ([0]*1+[1]*3)", freq);
      return -1;
    }
    for (long long i = 0; i < num_layers; i++) layer[i] = i % every == 0;
    return 0;
  }
  int paren = *s == '(';
  if (paren) s++;
  long long at = 0;
  for (;;) {
    while (isspace((unsigned char)*s)) s++;
    int rc = pattern_term(&s, layer, &at, num_layers);
    if (rc == -2) {
      snprintf(err, n, "moe-layer-freq '%s' has more entries than num-layers %lld", freq, num_layers);
      return -1;
    }
    if (rc) break;
    while (isspace((unsigned char)*s)) s++;
    if (*s == '+') { s++; continue; }
    if (paren && *s == ')') { s++; paren = 0; }
    while (isspace((unsigned char)*s)) s++;
    if (*s || paren) break;
    if (at != num_layers) {
      snprintf(err, n, "moe-layer-freq '%s' has %lld entries; num-layers is %lld", freq, at, num_layers);
      return -1;
    }
    return 0;
  }
  snprintf(err, n, "moe-layer-freq '%s' is neither a positive integer nor a pattern such as ([0]*1+[1]*3)", freq);
  return -1;
}

static ptdp_moe moe_of(const ptdp_model_keys *k)
{
  ptdp_moe m = {0};
  if (k->num_experts <= 0) return m;
  char err[256];
  if (ptdp_model_moe_layers(k->moe_layer_freq, k->num_layers, m.layer, err, sizeof err)) return m; /* checked */
  m.num_experts = (int)k->num_experts;
  m.topk = (int)k->moe_router_topk;
  m.ffn = (int)k->moe_ffn_hidden_size;
  m.score = k->moe_router_score_function;
  m.pre_softmax = k->moe_router_pre_softmax;
  m.topk_scaling = k->moe_router_topk_scaling_factor;
  m.balance = k->moe_router_load_balancing_type;
  m.aux_coeff = k->moe_aux_loss_coeff;
  m.z_coeff = k->moe_z_loss_coeff;
  return m;
}

ptdp_arch ptdp_model_keys_arch(const ptdp_model_keys *k)
{
  return (ptdp_arch){.moe = moe_of(k), .norm = k->normalization, .no_linear_bias = k->disable_bias_linear,
                     .untie = k->untie_embeddings_and_output_weights, .position = k->position_embedding_type,
                     .rotary_base = k->rotary_base, .rotary_percent = k->rotary_percent,
                     .rotary_interleaved = k->rotary_interleaved,
                     .query_groups = k->group_query_attention ? (int)k->num_query_groups : 0,
                     .kv_channels = (int)k->kv_channels, .swiglu = k->swiglu};
}

ptdp_dtype ptdp_model_keys_dtype(const ptdp_model_keys *k)
{
  return k->bf16 ? PTDP_BF16 : k->fp16 ? PTDP_F16 : PTDP_F32;
}

long long ptdp_model_keys_max_pos(const ptdp_model_keys *k)
{
  return k->max_position_embeddings ? k->max_position_embeddings : k->seq_length;
}

/* The mixture-of-experts keys: what describes no model, and what ptdp has not built yet. */
static int moe_keys_check(const ptdp_model_keys *a)
{
  const long long t = a->tensor_model_parallel_size;
  const char *later = "is not built yet in ptdp (every expert is on every rank, dropless, routed by aux_loss or none)";
  if (a->num_experts <= 0) {
    PTDP_CHECK(a->expert_model_parallel_size == 1, "expert-model-parallel-size %lld needs num-experts",
               a->expert_model_parallel_size);
    return 0;
  }
  char err[256];
  PTDP_CHECK(ptdp_model_moe_layers(a->moe_layer_freq, a->num_layers, (unsigned char[PTDP_MOE_MAX_LAYERS]){0}, err,
                                   sizeof err) == 0, "%s", err);
  PTDP_CHECK(a->moe_router_topk >= 1 && a->moe_router_topk <= a->num_experts,
             "moe-router-topk %lld must be between 1 and num-experts %lld", a->moe_router_topk, a->num_experts);
  const long long fe = a->moe_ffn_hidden_size ? a->moe_ffn_hidden_size : ptdp_model_keys_ffn(a);
  PTDP_CHECK(fe % t == 0, "moe-ffn-hidden-size %lld is not divisible by tensor-model-parallel-size %lld (each expert's "
             "MLP is split over the tensor-parallel ranks)", fe, t);
  PTDP_CHECK(a->expert_model_parallel_size == 1, "expert-model-parallel-size %lld: expert parallelism %s",
             a->expert_model_parallel_size, later);
  PTDP_CHECK(a->expert_tensor_parallel_size == 0 || a->expert_tensor_parallel_size == t,
             "expert-tensor-parallel-size %lld other than tensor-model-parallel-size %lld %s",
             a->expert_tensor_parallel_size, t, later);
  PTDP_CHECK(a->moe_expert_capacity_factor <= 0, "moe-expert-capacity-factor %g: token dropping %s",
             a->moe_expert_capacity_factor, later);
  PTDP_CHECK(!a->moe_router_enable_expert_bias, "moe-router-enable-expert-bias: aux-loss-free balancing %s", later);
  PTDP_CHECK(a->moe_router_num_groups == 0 && a->moe_router_group_topk == 0,
             "moe-router-num-groups and moe-router-group-topk: group-limited routing %s", later);
  PTDP_CHECK(a->moe_shared_expert_intermediate_size == 0, "moe-shared-expert-intermediate-size: shared experts %s",
             later);
  PTDP_CHECK(a->moe_router_load_balancing_type == PTDP_MOE_AUX_LOSS ||
                 a->moe_router_load_balancing_type == PTDP_MOE_BALANCE_NONE,
             "moe-router-load-balancing-type %s %s",
             a->moe_router_load_balancing_type == PTDP_MOE_SEQ_AUX_LOSS      ? "seq_aux_loss"
             : a->moe_router_load_balancing_type == PTDP_MOE_GLOBAL_AUX_LOSS ? "global_aux_loss"
                                                                              : "sinkhorn",
             later);
  PTDP_CHECK(a->moe_router_dtype == PTDP_MOE_ROUTER_FP32, "moe-router-dtype fp64 %s", later);
  PTDP_CHECK(!a->fp16 && !a->bf16, "num-experts with %s: the mixture of experts in 16-bit types %s",
             a->fp16 ? "fp16" : "bf16", later);
  PTDP_CHECK(!a->moe_router_pre_softmax || a->moe_router_score_function == PTDP_MOE_SOFTMAX,
             "moe-router-pre-softmax needs moe-router-score-function softmax");
  return 0;
}

int ptdp_model_keys_check(const ptdp_model_keys *a, int world)
{
  PTDP_CALL(moe_keys_check(a));
  long long t = a->tensor_model_parallel_size, p = a->pipeline_model_parallel_size;
  PTDP_CHECK(a->kv_channels > 0 || a->hidden_size % a->num_attention_heads == 0,
             "hidden-size %lld is not divisible by num-attention-heads %lld", a->hidden_size, a->num_attention_heads);
  long long maxpos = a->max_position_embeddings ? a->max_position_embeddings : a->seq_length;
  PTDP_CHECK(a->seq_length <= maxpos, "seq-length %lld is longer than max-position-embeddings %lld", a->seq_length,
             maxpos);
  PTDP_CHECK(world % (t * p) == 0,
             "the world size %d is not divisible by tensor-model-parallel-size x pipeline-model-parallel-size = %lld x %lld",
             world, t, p);
  long long d = world / (t * p);
  PTDP_CHECK(a->num_attention_heads % t == 0, "num-attention-heads %lld is not divisible by tensor-model-parallel-size %lld",
             a->num_attention_heads, t);
  PTDP_CHECK(!a->group_query_attention || a->num_attention_heads % a->num_query_groups == 0,
             "num-attention-heads %lld is not divisible by num-query-groups %lld", a->num_attention_heads,
             a->num_query_groups);
  PTDP_CHECK(!a->group_query_attention || a->num_query_groups % t == 0,
             "num-query-groups %lld is not divisible by tensor-model-parallel-size %lld (each rank holds whole groups, "
             "as Megatron requires)", a->num_query_groups, t);
  PTDP_CHECK(ptdp_model_keys_ffn(a) > 0, "swiglu: hidden-size %lld gives ffn-hidden-size 0 by Megatron's rule "
             "int(8 hidden-size / 3 / 64) * 64; give ffn-hidden-size", a->hidden_size);
  PTDP_CHECK(ptdp_model_keys_ffn(a) % t == 0, "ffn-hidden-size %lld is not divisible by tensor-model-parallel-size %lld",
             ptdp_model_keys_ffn(a), t);
  PTDP_CHECK(!a->sequence_parallel || a->seq_length % t == 0,
             "with sequence-parallel, seq-length %lld must be divisible by tensor-model-parallel-size %lld", a->seq_length, t);
  long long gbs = a->global_batch_size ? a->global_batch_size : a->micro_batch_size * d;
  PTDP_CHECK(gbs % (a->micro_batch_size * d) == 0,
             "global-batch-size %lld is not divisible by micro-batch-size x data-parallel size = %lld x %lld", gbs,
             a->micro_batch_size, d);
  PTDP_CHECK(gbs / (a->micro_batch_size * d) <= 1000000,
             "global-batch-size %lld gives %lld micro-batches per iteration (micro-batch-size %lld x data-parallel size "
             "%lld per micro-batch); at most 1000000 are supported",
             gbs, gbs / (a->micro_batch_size * d), a->micro_batch_size, d);
  PTDP_CHECK(a->num_layers % p == 0, "num-layers %lld is not divisible by pipeline-model-parallel-size %lld",
             a->num_layers, p);
  if (a->num_layers_per_virtual_pipeline_stage) {
    long long lps = a->num_layers / p;
    PTDP_CHECK(p > 1, "num-layers-per-virtual-pipeline-stage needs pipeline-model-parallel-size > 1");
    PTDP_CHECK(lps % a->num_layers_per_virtual_pipeline_stage == 0,
               "layers per pipeline stage (%lld = num-layers %lld / pipeline-model-parallel-size %lld) are not divisible "
               "by num-layers-per-virtual-pipeline-stage %lld",
               lps, a->num_layers, p, a->num_layers_per_virtual_pipeline_stage);
  }
  return 0;
}

void ptdp_model_layout_of(const ptdp_model_keys *k, int world, ptdp_model_layout *l)
{
  const long long t = k->tensor_model_parallel_size, p = k->pipeline_model_parallel_size;
  *l = (ptdp_model_layout){.t = (int)t, .p = (int)p, .d = t * p > 0 ? (int)(world / (t * p)) : 1, .v = 1,
                           .schedule = k->pipeline_schedule};
  if (k->num_layers_per_virtual_pipeline_stage) {
    l->schedule = PTDP_SCHED_INTERLEAVED; /* as Megatron: chunks imply the interleaved schedule */
    l->v = (int)(k->num_layers / p / k->num_layers_per_virtual_pipeline_stage);
  }
  if (l->d < 1) l->d = 1;
  l->global_batch = k->global_batch_size ? k->global_batch_size : k->micro_batch_size * l->d;
  l->m = (int)(l->global_batch / (k->micro_batch_size * l->d));
}

ptdp_model_shape ptdp_gpt_shape(const ptdp_gpt_config *c)
{
  ptdp_model_shape s = {.num_layers = c->num_layers, .hidden = c->hidden, .heads = c->heads, .ffn = c->ffn,
                        .max_pos = c->max_pos, .vocab = c->vocab, .vocab_divisible_by = c->vocab_divisible_by,
                        .sequence_parallel = c->sequence_parallel, .arch = c->arch};
  return s;
}

ptdp_plan_config ptdp_gpt_plan_config(const ptdp_gpt_config *c, const ptdp_param_position *pos)
{
  ptdp_plan_config pc = {.shape = ptdp_gpt_shape(c), .pos = *pos, .seq = c->seq, .micro_batch = c->micro_batch,
                         .hidden_dropout = c->hidden_dropout > 0, .attention_dropout = c->attn_dropout > 0,
                         .recompute = c->recompute, .recompute_method = c->recompute_method,
                         .recompute_num_layers = c->recompute_num_layers, .schedule = c->schedule, .m = c->m,
                         .bucket_elems = c->bucket_elems, .d = c->dp_size,
                         .distributed_optimizer = c->distributed_optimizer, .inference = c->inference,
                         .dtype = (int)c->dtype, .flash_attention = c->flash_attention};
  return pc;
}

/* The parameters alone: one token row per micro-batch (the generator has its own buffers), no
 * dropout, no sequence parallelism, one stage and chunk, no gradients. */
static void weights_only(ptdp_model_config *c, int world)
{
  c->layout = (ptdp_model_layout){.t = world > 0 ? world : 1, .p = 1, .d = 1, .v = 1, .schedule = PTDP_SCHED_1F1B,
                                  .global_batch = 1, .m = 1};
  ptdp_gpt_config *g = &c->gpt;
  g->seq = 1;
  g->micro_batch = 1;
  g->hidden_dropout = g->attn_dropout = 0;
  g->sequence_parallel = 0;
  g->chunks = 1;
  g->schedule = PTDP_SCHED_1F1B;
  g->m = 1;
  g->recompute = PTDP_RECOMPUTE_NONE;
  g->recompute_method = 0;
  g->recompute_num_layers = 0;
  g->dp_size = 1;
  g->distributed_optimizer = 0;
  g->inference = 1;
  g->dtype = PTDP_F32;
  g->flash_attention = 0;
}

void ptdp_model_config_of(const ptdp_model_keys *k, const ptdp_model_env *env, ptdp_model_config *c)
{
  ptdp_model_layout_of(k, env->world, &c->layout);
  const ptdp_model_layout *l = &c->layout;
  c->gpt = (ptdp_gpt_config){
    .num_layers = (int)k->num_layers, .hidden = (int)k->hidden_size, .heads = (int)k->num_attention_heads,
    .ffn = (int)ptdp_model_keys_ffn(k), .seq = (int)k->seq_length, .max_pos = (int)ptdp_model_keys_max_pos(k),
    .micro_batch = (int)k->micro_batch_size, .vocab = env->vocab > 0 ? env->vocab : k->vocab_size,
    .vocab_divisible_by = (int)k->make_vocab_size_divisible_by, .eps = (float)k->layernorm_epsilon,
    .hidden_dropout = (float)k->hidden_dropout, .attn_dropout = (float)k->attention_dropout,
    .init_std = (float)k->init_method_std, .seed = (uint64_t)k->seed,
    .sequence_parallel = k->sequence_parallel && l->t > 1, .chunks = l->v, .schedule = l->schedule, .m = l->m,
    .recompute = k->recompute_granularity, .recompute_method = k->recompute_method,
    .recompute_num_layers = (int)k->recompute_num_layers, .bucket_elems = k->ddp_bucket_size, .dp_size = l->d,
    .distributed_optimizer = k->use_distributed_optimizer, .dtype = ptdp_model_keys_dtype(k),
    .flash_attention = env->flash_attention, .arch = ptdp_model_keys_arch(k)};
  if (env->use == PTDP_MODEL_WEIGHTS) weights_only(c, env->world);
  c->shape = ptdp_gpt_shape(&c->gpt);
}
