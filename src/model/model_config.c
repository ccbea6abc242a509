/* Keys to the model's configuration: see include/ptdp/model_config.h. */
#include "ptdp/model_config.h"

#include "ptdp/error.h"

/* Megatron's default: 4 h, or with SwiGLU two thirds of it (three matrices instead of two), floored
 * to a multiple of 64 (int(4 h 2/3 / 64) * 64). */
long long ptdp_model_keys_ffn(const ptdp_model_keys *k)
{
  if (k->ffn_hidden_size) return k->ffn_hidden_size;
  return k->swiglu ? 8 * k->hidden_size / 192 * 64 : 4 * k->hidden_size;
}

ptdp_arch ptdp_model_keys_arch(const ptdp_model_keys *k)
{
  return (ptdp_arch){.norm = k->normalization, .no_linear_bias = k->disable_bias_linear,
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

int ptdp_model_keys_check(const ptdp_model_keys *a, int world)
{
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
