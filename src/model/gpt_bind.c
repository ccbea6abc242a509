/* Binding the allocations of the memory plan (ptdp/plan.h, ptdp/memory.h) to the model's named
 * fields, and the parameter table's entries to named parameter pointers.  The plan says what
 * exists; this file only says where each kind of buffer goes. */
#include "model_internal.h"

#include "ptdp/error.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* One layer's activation buffer; returns 0 if the kind is not a layer activation. */
static int bind_act(ptdp_layer_acts *a, ptdp_buffer_kind k, void *p)
{
  switch (k) {
#define BIND(kind, type, field, name, part, elems, unit, when)                                             \
  case kind: a->field = p; break;
    PTDP_LAYER_ACTIVATIONS(BIND)
#undef BIND
  default: return 0;
  }
  return 1;
}

/* A slot's buffers outside the layers. */
static int bind_slot(ptdp_chunk_slot *sl, ptdp_buffer_kind k, void *p)
{
  switch (k) {
  case PTDP_BUF_CHUNK_OUTPUT: sl->out = p; break;
  case PTDP_BUF_TOKENS: sl->tokens = p; break;
  case PTDP_BUF_TARGETS: sl->targets = p; break;
  case PTDP_BUF_EMBEDDING_MASK: sl->emb_mask = p; break;
  case PTDP_BUF_FINAL_LN_MEAN: sl->lnf_mean = p; break;
  case PTDP_BUF_FINAL_LN_RSTD: sl->lnf_rstd = p; break;
  case PTDP_BUF_FINAL_LN_OUT: sl->lnf_out = p; break;
  case PTDP_BUF_LOGITS: sl->logits = p; break;
  default: return 0;
  }
  return 1;
}

/* Work space shared by every micro-batch. */
static int bind_work(ptdp_gpt_work *w, ptdp_buffer_kind k, void *p)
{
  switch (k) {
  case PTDP_BUF_WORK_FULL_A: w->full_a = p; break;
  case PTDP_BUF_WORK_FULL_B: w->full_b = p; break;
  case PTDP_BUF_WORK_SHARD_A: w->shard_a = p; break;
  case PTDP_BUF_WORK_SHARD_B: w->shard_b = p; break;
  case PTDP_BUF_WORK_SHARD_C: w->shard_c = p; break;
  case PTDP_BUF_WORK_DQKV: w->dqkv = p; break;
  case PTDP_BUF_WORK_DCTX: w->dctx = p; break;
  case PTDP_BUF_WORK_DFC: w->dfc = p; break;
  case PTDP_BUF_WORK_ATTN: w->attn = p; break;
  case PTDP_BUF_WORK_XENT: w->xent = p; break;
  case PTDP_BUF_WORK_LOSSES: w->losses = p; break;
  case PTDP_BUF_WORK_GRAD_A: w->grad_a = p; break;
  case PTDP_BUF_WORK_GRAD_B: w->grad_b = p; break;
  case PTDP_BUF_WORK_POSITIONS: w->pos = p; break;
  case PTDP_BUF_WORK_ROPE: w->rope = p; break;
  case PTDP_BUF_WORK_MOE_ROWS_A: w->moe_rows_a = p; break;
  case PTDP_BUF_WORK_MOE_ROWS_B: w->moe_rows_b = p; break;
  case PTDP_BUF_WORK_MOE_DFC: w->moe_dfc = p; break;
  case PTDP_BUF_WORK_MOE_ROUTER: w->moe_router = p; break;
  default: return 0;
  }
  return 1;
}

/* Named pointers to each parameter and its gradient. */
static void bind_layer_param(ptdp_layer_params *lp, ptdp_param_role r, float *p)
{
  switch (r) {
  case PTDP_PARAM_LN1_WEIGHT: lp->ln1_w = p; break;
  case PTDP_PARAM_LN1_BIAS: lp->ln1_b = p; break;
  case PTDP_PARAM_QKV_WEIGHT: lp->qkv_w = p; break;
  case PTDP_PARAM_QKV_BIAS: lp->qkv_b = p; break;
  case PTDP_PARAM_PROJ_WEIGHT: lp->proj_w = p; break;
  case PTDP_PARAM_PROJ_BIAS: lp->proj_b = p; break;
  case PTDP_PARAM_LN2_WEIGHT: lp->ln2_w = p; break;
  case PTDP_PARAM_LN2_BIAS: lp->ln2_b = p; break;
  case PTDP_PARAM_FC1_WEIGHT: lp->fc1_w = p; break;
  case PTDP_PARAM_FC1_BIAS: lp->fc1_b = p; break;
  case PTDP_PARAM_FC2_WEIGHT: lp->fc2_w = p; break;
  case PTDP_PARAM_FC2_BIAS: lp->fc2_b = p; break;
  default: break;
  }
}

/* A mixture layer's router and experts (the experts' pointer table allocated on first use, freed
 * by ptdp_gpt_destroy). */
static int bind_moe_param(ptdp_layer_params *lp, const ptdp_param_info *p, int E, float *ptr)
{
  if (p->role == PTDP_PARAM_ROUTER_WEIGHT) {
    lp->router_w = ptr;
    return 0;
  }
  if (p->expert < 0) return 0;
  if (!lp->experts) PTDP_CALLOC(lp->experts, (size_t)4 * E, sizeof *lp->experts);
  lp->experts[4 * p->expert + (p->role - PTDP_PARAM_EXPERT_FC1_WEIGHT)] = ptr;
  return 0;
}

static int bind_params(ptdp_gpt *m)
{
  ptdp_gpt_param_ref none = {.index = -1};
  m->wte = m->output = m->wpe = m->lnf_w = m->lnf_b = none;
  for (int i = 0; i < m->params.n; i++) {
    const ptdp_param_info *p = &m->params.table[i];
    ptdp_gpt_param_ref ref = {.index = i, .w = ptdp_gpt_weight_data(m, i), .g = ptdp_gpt_grad_data(m, i)};
    if (p->layer >= 0) {
      ptdp_chunk *ch = &m->chunks[p->chunk];
      ptdp_gpt_layer_ref *lr = &ch->layers[p->layer - ch->layer0];
      if (lr->param_end == lr->param_first) lr->param_first = i;
      lr->param_end = i + 1;
      bind_layer_param(&lr->w, p->role, ref.w);
      bind_layer_param(&lr->g, p->role, ref.g);
      PTDP_CALL(bind_moe_param(&lr->w, p, m->sh.E, ref.w));
      PTDP_CALL(bind_moe_param(&lr->g, p, m->sh.E, ref.g));
      continue;
    }
    switch (p->role) {
    case PTDP_PARAM_WORD_EMBEDDING: m->wte = ref; break;
    case PTDP_PARAM_OUTPUT_LAYER: m->output = ref; break;
    case PTDP_PARAM_POSITION_EMBEDDING: m->wpe = ref; break;
    case PTDP_PARAM_FINAL_LN_WEIGHT: m->lnf_w = ref; break;
    case PTDP_PARAM_FINAL_LN_BIAS: m->lnf_b = ref; break;
    default: break;
    }
  }
  return 0;
}

/* The position of each local token row (row0 + r) / b, computed on the host and copied in. */
static int set_positions(ptdp_gpt *m)
{
  int32_t *pos;
  PTDP_ALLOC(pos, sizeof(int32_t) * (size_t)(m->sh.Nl > 0 ? m->sh.Nl : 1));
  for (long long r = 0; r < m->sh.Nl; r++) pos[r] = (int32_t)((m->sh.row0 + r) / m->cfg.micro_batch);
  int err = m->be->to_device(m->be, m->work.pos, pos, sizeof(int32_t) * (size_t)m->sh.Nl);
  free(pos);
  return err;
}

/* The rotary angles, computed once on the host in double and rounded to fp32, so every backend
 * and layout turns by the same numbers: angle = position base^(-2i/rd), i < rd/2 (Megatron's
 * and Hugging Face's inv_freq; they compute it in fp32, whose error grows with the position). */
static int set_rope_table(ptdp_gpt *m)
{
  const int rd = m->sh.rd, P = m->cfg.max_pos;
  if (!m->work.rope || rd <= 0) return 0;
  const double base = m->cfg.arch.rotary_base > 0 ? m->cfg.arch.rotary_base : 10000.0;
  float *t;
  PTDP_ALLOC(t, sizeof(float) * (size_t)P * (size_t)rd);
  for (int pos = 0; pos < P; pos++)
    for (int i = 0; i < rd / 2; i++) {
      const double a = pos * pow(base, -2.0 * i / rd);
      t[(size_t)pos * rd + 2 * i] = (float)cos(a);
      t[(size_t)pos * rd + 2 * i + 1] = (float)sin(a);
    }
  int err = m->be->to_device(m->be, m->work.rope, t, sizeof(float) * (size_t)P * (size_t)rd);
  free(t);
  return err;
}

/* Attach one recorded buffer to its field. */
static int bind_record(ptdp_gpt *m, const ptdp_mem_record *r)
{
  const ptdp_buffer *b = &r->buf;
  if (b->chunk >= 0 && b->slot >= 0 && b->kind <= PTDP_BUF_LOGITS) {
    ptdp_chunk *ch = &m->chunks[b->chunk];
    ptdp_chunk_slot *sl = &ch->slots[b->slot];
    if (b->layer >= 0) return bind_act(&sl->layers[b->layer - ch->layer0], b->kind, r->ptr);
    return bind_slot(sl, b->kind, r->ptr);
  }
  if (b->chunk < 0 && (int)b->kind < PTDP_BUF_LAYER_KINDS) return bind_act(&m->work.recomp[b->index], b->kind, r->ptr);
  if (bind_work(&m->work, b->kind, r->ptr)) return 1;
  if (b->kind == PTDP_BUF_PARAMS) m->params.wt = r->ptr;
  /* the fp32 master weights when whole; sharded, they are the distributed optimizer's (ptdp/master.h) */
  if (b->kind == PTDP_BUF_MASTER_PARAMS && !ptdp_plan_master_sharded(&m->plan.cfg)) m->params.fp32 = r->ptr;
  if (b->kind == PTDP_BUF_GRADS) m->params.grad = r->ptr;
  return 1; /* p2p and optimizer buffers: found by their users (ptdp_memory_find) */
}

int ptdp_gpt_bind(ptdp_gpt *m)
{
  const int slots = m->plan.slots;
  for (int c = 0; c < m->nchunks; c++) {
    ptdp_chunk *ch = &m->chunks[c];
    PTDP_CALLOC(ch->slots, slots > 0 ? slots : 1, sizeof *ch->slots);
    for (int s = 0; s < slots; s++) PTDP_CALLOC(ch->slots[s].layers, ch->nlayers > 0 ? ch->nlayers : 1, sizeof(ptdp_layer_acts));
  }
  const int nrec = ptdp_recompute_scratch_layers(m->cfg.recompute, m->cfg.recompute_method, m->cfg.recompute_num_layers,
                                                 m->nchunks ? m->chunks[0].nlayers : 0);
  m->work.nrecomp = nrec;
  if (nrec > 0) PTDP_CALLOC(m->work.recomp, nrec, sizeof *m->work.recomp);
  for (int i = 0; i < m->mem.n; i++)
    PTDP_CHECK_INTERNAL(bind_record(m, &m->mem.rec[i]), "planned buffer %s has no place in the model",
                     ptdp_buffer_kind_name(m->mem.rec[i].buf.kind));
  /* without attention dropout the dropout output is the softmax output itself */
  for (int c = 0; c < m->nchunks; c++)
    for (int s = 0; s < slots; s++)
      for (int i = 0; i < m->chunks[c].nlayers; i++) {
        ptdp_layer_acts *a = &m->chunks[c].slots[s].layers[i];
        if (a->probs && !a->probs_drop) a->probs_drop = a->probs;
      }
  for (int j = 0; j < nrec; j++)
    if (m->work.recomp[j].probs && !m->work.recomp[j].probs_drop) m->work.recomp[j].probs_drop = m->work.recomp[j].probs;
  if (m->cfg.dtype == PTDP_F32) m->params.fp32 = m->params.wt; /* fp32: the weights are their own master */
  PTDP_CHECK_INTERNAL((m->params.fp32 || ptdp_plan_master_sharded(&m->plan.cfg)) &&
                          (m->params.grad || m->cfg.inference),
                      "the plan has no parameter or gradient buffer");
  PTDP_CALL(bind_params(m));
  PTDP_CALL(set_rope_table(m));
  return set_positions(m);
}
