/* GPT model: set-up from the parameter table, the flat-buffer layout and the memory plan.
 * The parameter table, the flat buffers and their initialisation live in gpt_params.c; forward
 * and backward in chunk.c, layer.c (transformer layers) and head.c (embedding, final LayerNorm,
 * output layer, loss); the loss bookkeeping in loss.c; the hooks in gpt_hooks.c; binding planned
 * buffers to fields in gpt_bind.c. */
#include "ptdp/gpt.h"

#include "ptdp/error.h"
#include "model_internal.h"

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

int ptdp_gpt_vocab_columns(const ptdp_gpt *m)
{
  long long vv = m->cfg.vocab - m->sh.v0;
  return (int)(vv < 0 ? 0 : vv > m->sh.vl ? m->sh.vl : vv);
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
  const int groups = cfg->arch.query_groups > 0 ? cfg->arch.query_groups : cfg->heads;
  PTDP_CHECK(cfg->heads % m->t == 0 && (cfg->arch.kv_channels > 0 || cfg->hidden % cfg->heads == 0) &&
                 cfg->heads % groups == 0 && groups % m->t == 0 && cfg->ffn % m->t == 0 &&
                 cfg->num_layers % (m->p * cfg->chunks) == 0,
             "model dimensions do not divide over the grid (internal check)");
  const ptdp_model_shape shape = ptdp_gpt_shape(cfg);
  m->sh = ptdp_rank_shape_of(&shape, cfg->seq, cfg->micro_batch, m->t, m->tp_rank);
  const ptdp_param_position pos = {.t = m->t, .tp_rank = m->tp_rank, .p = m->p, .stage = m->stage, .v = cfg->chunks};
  PTDP_CALL(build_chunks(m, &pos));
  PTDP_CALL(ptdp_gpt_params_build(m, &pos));
  const ptdp_plan_config pc = ptdp_gpt_plan_config(cfg, &pos);
  PTDP_CALL(ptdp_plan_build(&pc, &m->plan));
  PTDP_CALL(ptdp_memory_allocate_plan(&m->mem, be, &m->plan));
  PTDP_CALL(ptdp_gpt_bind(m));
  PTDP_CALL(ptdp_gpt_losses_create(&m->loss, cfg->m, m->sh.N)); /* cfg->m: the plan's work_losses */
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
  ptdp_gpt_params_free(m);
  ptdp_gpt_losses_free(&m->loss);
  ptdp_plan_free(&m->plan);
  memset(m, 0, sizeof *m);
}
