/* GPT model: set-up from the parameter table, the flat-buffer layout and the memory plan;
 * initialisation.  Forward and backward live in chunk.c, layer.c (transformer layers) and head.c
 * (embedding, final LayerNorm, output layer, loss); binding planned buffers to fields in
 * gpt_bind.c. */
#include "ptdp/gpt.h"

#include "ptdp/error.h"
#include "ptdp/rng.h"
#include "ptdp/shard_map.h"
#include "model_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

ptdp_layer_shape ptdp_gpt_layer_shape(const ptdp_gpt *m)
{
  return (ptdp_layer_shape){.r = m->sh, .hidden_dropout = m->cfg.hidden_dropout > 0,
                            .attention_dropout = m->cfg.attn_dropout > 0, .recompute = m->cfg.recompute,
                            .bytes = (int)m->es, .flash_attention = m->cfg.flash_attention,
                            .arch = m->cfg.arch,
                            .moe = m->nchunks > 0 && ptdp_moe_layer(&m->cfg.arch, m->chunks[0].layer0)};
}

float *ptdp_gpt_param_data(const ptdp_gpt *m, int i) { return m->param ? m->param + m->layout.offset[i] : NULL; }
float *ptdp_gpt_grad_data(const ptdp_gpt *m, int i) { return m->grad ? m->grad + m->layout.offset[i] : NULL; }
void *ptdp_gpt_weight_data(const ptdp_gpt *m, int i) { return (char *)m->wt + (size_t)m->layout.offset[i] * m->es; }

int ptdp_gpt_sync_weights(ptdp_gpt *m, long long lo, long long hi)
{
  PTDP_CHECK_INTERNAL(!m->master_sharded, "ptdp_gpt_sync_weights on sharded master weights");
  if (m->wt == (void *)m->param || hi <= lo) return 0;
  return m->be->convert(m->be, (char *)m->wt + (size_t)lo * m->es, m->cfg.dtype, m->param + lo, PTDP_F32,
                        (size_t)(hi - lo));
}

long long ptdp_gpt_max_param_elems(const ptdp_gpt *m)
{
  long long most = 1;
  for (int i = 0; i < m->nparams; i++)
    most = ptdp_param_local_elems(&m->params[i]) > most ? ptdp_param_local_elems(&m->params[i]) : most;
  return most;
}

int ptdp_gpt_vocab_columns(const ptdp_gpt *m)
{
  long long vv = m->cfg.vocab - m->sh.v0;
  return (int)(vv < 0 ? 0 : vv > m->sh.vl ? m->sh.vl : vv);
}

/* The parameter table of this rank and where each entry sits in the flat buffers. */
static int build_params(ptdp_gpt *m, const ptdp_param_position *pos)
{
  const ptdp_model_shape shape = ptdp_gpt_shape(&m->cfg);
  m->nparams = ptdp_params_count(&shape, pos);
  PTDP_CALLOC(m->params, m->nparams > 0 ? m->nparams : 1, sizeof *m->params);
  ptdp_params_list(&shape, pos, m->params, m->nparams);
  return ptdp_grad_layout_build(m->params, m->nparams, m->cfg.bucket_elems, m->cfg.dp_size, &m->layout);
}

/* Values of one parameter's local buffer on the host: zeros, ones, or normal draws keyed by
 * (tensor key, global row, global column), padding rows included (keyed by their row in the
 * padded vocabulary), so every layout holds the same numbers. */
static void init_values(const ptdp_gpt *m, const ptdp_param_info *p, float *w)
{
  const long long n = ptdp_param_local_elems(p);
  if (p->init == PTDP_INIT_ZEROS || p->init == PTDP_INIT_ONES) {
    for (long long k = 0; k < n; k++) w[k] = p->init == PTDP_INIT_ONES ? 1.0f : 0.0f;
    return;
  }
  const float sd = p->init == PTDP_INIT_NORMAL_SCALED ? m->cfg.init_std / sqrtf(2.0f * (float)m->cfg.num_layers)
                                                      : m->cfg.init_std;
#pragma omp parallel for schedule(static)
  for (long long r = 0; r < p->lrows; r++) {
    uint64_t rh = ptdp_rng_row(m->cfg.seed, PTDP_RNG_INIT, p->init_key, 0, (uint64_t)ptdp_param_global_row(p, r));
    for (long long c = 0; c < p->lcols; c++)
      w[r * p->lcols + c] = sd * (float)ptdp_rng_normal(ptdp_rng_at(rh, (uint64_t)(p->col0 + c)));
  }
}

void ptdp_gpt_master_shard(const ptdp_gpt *m, int bucket, ptdp_shard *s)
{
  ptdp_shard_of(&m->layout, bucket, 1, m->grid->dp.size, m->grid->dp.rank, s);
}

int ptdp_gpt_sync_shard(ptdp_gpt *m, int bucket)
{
  ptdp_shard s;
  ptdp_gpt_master_shard(m, bucket, &s);
  char *wt = m->wt;
  PTDP_CALL(m->be->convert(m->be, wt + (size_t)s.lo * m->es, m->cfg.dtype, m->master + s.state, PTDP_F32,
                           (size_t)(s.hi - s.lo)));
  return ptdp_gpt_gather_shard(m, bucket);
}

int ptdp_gpt_gather_shard(ptdp_gpt *m, int bucket)
{
  ptdp_shard s;
  ptdp_gpt_master_shard(m, bucket, &s);
  const ptdp_bucket_range *bk = &m->layout.buckets[bucket];
  char *wt = m->wt;
  return ptdp_comm_allgather_t(&m->grid->dp, wt + (size_t)s.lo * m->es, wt + (size_t)bk->lo * m->es,
                               (size_t)(s.hi - s.lo), m->cfg.dtype, PTDP_TAG_PARAM);
}

int ptdp_gpt_sync_all(ptdp_gpt *m)
{
  if (!m->master_sharded) return ptdp_gpt_sync_weights(m, 0, m->layout.total);
  for (int b = 0; b < m->layout.nbuckets; b++) PTDP_CALL(ptdp_gpt_sync_shard(m, b));
  return 0;
}

int ptdp_gpt_gather_master(ptdp_gpt *m, float *flat)
{
  if (!m->master_sharded) return m->be->copy(m->be, flat, m->param, (size_t)m->layout.total * sizeof(float));
  for (int b = 0; b < m->layout.nbuckets; b++) {
    ptdp_shard s;
    ptdp_gpt_master_shard(m, b, &s);
    PTDP_CALL(m->be->copy(m->be, flat + s.lo, m->master + s.state, (size_t)(s.hi - s.lo) * sizeof(float)));
    PTDP_CALL(ptdp_comm_allgather(&m->grid->dp, flat + s.lo, flat + m->layout.buckets[b].lo, (size_t)(s.hi - s.lo),
                                  PTDP_TAG_PARAM));
  }
  return 0;
}

/* Parameter i's initial values (host, fp32) into this rank's master shards: the pieces of it
 * inside each shard of its bucket that this rank owns. */
static int init_master_shard(ptdp_gpt *m, int i, const float *host)
{
  ptdp_shard s;
  ptdp_gpt_master_shard(m, m->layout.bucket[i], &s);
  const long long off = m->layout.offset[i], n = ptdp_param_local_elems(&m->params[i]);
  const long long a = off > s.lo ? off : s.lo, b = off + n < s.hi ? off + n : s.hi;
  if (b <= a) return 0;
  return m->be->to_device(m->be, m->master + s.state + (a - s.lo), host + (a - off), (size_t)(b - a) * sizeof(float));
}

int ptdp_gpt_init_params(ptdp_gpt *m)
{
  if (m->master_sharded) { /* each rank sets its master shards; the weights come from them */
    float *host;
    PTDP_ALLOC(host, (size_t)ptdp_gpt_max_param_elems(m) * sizeof(float));
    int err = 0;
    for (int i = 0; i < m->nparams && !err; i++) {
      init_values(m, &m->params[i], host);
      err = init_master_shard(m, i, host);
    }
    free(host);
    return err ? err : ptdp_gpt_sync_all(m);
  }
  float *host;
  PTDP_ALLOC(host, (size_t)ptdp_gpt_max_param_elems(m) * sizeof(float));
  int err = 0;
  for (int i = 0; i < m->nparams && !err; i++) {
    init_values(m, &m->params[i], host);
    err = m->be->to_device(m->be, ptdp_gpt_param_data(m, i), host,
                           (size_t)ptdp_param_local_elems(&m->params[i]) * sizeof(float));
  }
  free(host);
  return err ? err : ptdp_gpt_sync_weights(m, 0, m->layout.total);
}

/* Chunk c of this stage holds virtual stage c p + stage: layers [k L/(p v), (k+1) L/(p v)). */
static int build_chunks(ptdp_gpt *m, const ptdp_param_position *pos)
{
  const ptdp_model_shape shape = ptdp_gpt_shape(&m->cfg);
  m->nchunks = pos->v;
  PTDP_CALLOC(m->chunks, pos->v, sizeof *m->chunks);
  for (int c = 0; c < pos->v; c++) {
    ptdp_chunk *ch = &m->chunks[c];
    ch->layer0 = ptdp_params_chunk_layer0(&shape, pos, c);
    ch->nlayers = ptdp_params_layers_per_chunk(&shape, pos);
    ch->has_embedding = ptdp_params_chunk_has_embedding(pos, c);
    ch->has_head = ptdp_params_chunk_has_head(pos, c);
    PTDP_CALLOC(ch->layers, ch->nlayers > 0 ? ch->nlayers : 1, sizeof *ch->layers);
  }
  return 0;
}

int ptdp_gpt_create(ptdp_gpt *m, const ptdp_gpt_config *cfg, ptdp_backend *be, ptdp_grid *grid)
{
  memset(m, 0, sizeof *m);
  PTDP_CHECK(!cfg->inference || cfg->arch.moe.num_experts == 0,
             "the model has a mixture of experts (num-experts %d): generation and conversion of such a model are "
             "not built yet (ptdp-train trains it)", cfg->arch.moe.num_experts);
  m->cfg = *cfg;
  m->be = be;
  m->grid = grid;
  m->t = grid->layout.t;
  m->tp_rank = grid->me.tp;
  m->p = grid->layout.p;
  m->stage = grid->me.pp;
  PTDP_CHECK_INTERNAL(be->dtype == cfg->dtype, "the model stores %s on a backend storing %s",
             ptdp_dtype_name(cfg->dtype), ptdp_dtype_name(be->dtype));
  PTDP_CHECK_INTERNAL(cfg->dtype == PTDP_F32 || !cfg->inference, "inference runs in fp32");
  PTDP_CHECK_INTERNAL(!cfg->flash_attention || (be->flash_forward && be->flash_backward),
                      "fused attention asked of the %s backend, which has none", be->name);
  PTDP_CHECK(cfg->arch.norm != PTDP_NORM_RMSNORM || (be->rmsnorm_forward && be->rmsnorm_backward),
             "normalization = RMSNorm: the %s backend has no RMSNorm yet (the cpu and guard backends have it)",
             be->name);
  PTDP_CHECK(!cfg->arch.query_groups || cfg->arch.query_groups == cfg->heads || be->grouped_attention,
             "group-query-attention: the %s backend has no grouped-query attention yet (the cpu and guard backends "
             "have it)", be->name);
  PTDP_CHECK(cfg->arch.position != PTDP_POS_ROPE || be->rope,
             "position-embedding-type = rope: the %s backend has no rotary embedding yet (the cpu and guard backends "
             "have it)", be->name);
  PTDP_CHECK(!cfg->arch.swiglu || (be->swiglu_forward && be->swiglu_backward),
             "swiglu: the %s backend has no SwiGLU yet (the cpu and guard backends have it)", be->name);
  m->es = ptdp_dtype_size(cfg->dtype);
  ptdp_layer_passes_choose(be, cfg->arch.norm, &m->passes);
  m->master_sharded = cfg->dtype != PTDP_F32 && !cfg->inference && cfg->distributed_optimizer && cfg->dp_size > 1;
  const int groups = cfg->arch.query_groups > 0 ? cfg->arch.query_groups : cfg->heads;
  PTDP_CHECK(cfg->heads % m->t == 0 && (cfg->arch.kv_channels > 0 || cfg->hidden % cfg->heads == 0) &&
                 cfg->heads % groups == 0 && groups % m->t == 0 && cfg->ffn % m->t == 0 &&
                 cfg->num_layers % (m->p * cfg->chunks) == 0,
             "model dimensions do not divide over the grid (internal check)");
  const ptdp_model_shape shape = ptdp_gpt_shape(cfg);
  m->sh = ptdp_rank_shape_of(&shape, cfg->seq, cfg->micro_batch, m->t, m->tp_rank);
  const ptdp_param_position pos = {.t = m->t, .tp_rank = m->tp_rank, .p = m->p, .stage = m->stage, .v = cfg->chunks};
  PTDP_CALL(build_chunks(m, &pos));
  PTDP_CALL(build_params(m, &pos));
  const ptdp_plan_config pc = ptdp_gpt_plan_config(cfg, &pos);
  PTDP_CALL(ptdp_plan_build(&pc, &m->plan));
  PTDP_CALL(ptdp_memory_allocate_plan(&m->mem, be, &m->plan));
  PTDP_CALL(ptdp_gpt_bind(m));
  PTDP_ALLOC(m->host_xent, sizeof(float) * 3 * (size_t)m->sh.N);
  m->loss_cap = cfg->m > 0 ? cfg->m : 1; /* the plan's work_losses */
  PTDP_ALLOC(m->loss_sample0, sizeof(long long) * (size_t)m->loss_cap);
  PTDP_ALLOC(m->host_losses, sizeof(float) * (size_t)m->loss_cap);
  return 0;
}

void ptdp_gpt_destroy(ptdp_gpt *m)
{
  if (!m->be) return;
  ptdp_memory_free_all(&m->mem, m->be);
  for (int c = 0; c < m->nchunks; c++) {
    for (int s = 0; s < m->plan.slots && m->chunks[c].slots; s++) free(m->chunks[c].slots[s].layers);
    for (int i = 0; i < m->chunks[c].nlayers && m->chunks[c].layers; i++) { /* the experts' pointer tables */
      free(m->chunks[c].layers[i].w.experts);
      free(m->chunks[c].layers[i].g.experts);
    }
    free(m->chunks[c].slots);
    free(m->chunks[c].layers);
  }
  free(m->chunks);
  free(m->work.recomp);
  free(m->params);
  free(m->host_xent);
  free(m->loss_sample0);
  free(m->host_losses);
  ptdp_grad_layout_free(&m->layout);
  ptdp_plan_free(&m->plan);
  memset(m, 0, sizeof *m);
}
