/* GPT model: parameter table, initialisation, activation storage.  Forward and backward live in
 * layer.c (transformer layers) and head.c (embedding, final LayerNorm, output layer, loss). */
#include "ptdp/gpt.h"

#include "ptdp/error.h"
#include "ptdp/rng.h"
#include "model_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Tensor ids key the initial values: stable per global tensor, whatever the layout. */
#define TID_WTE 1
#define TID_WPE 2
#define TID_LNF 3
#define TID_LAYER(l, k) (100 + 16 * (l) + (k))

static int add_param(ptdp_gpt *m, int *cap, const char *name, long long grows, long long gcols, ptdp_split split,
                     int tid, int init, int no_decay, int sp_partial)
{
  if (m->nparams == *cap) {
    *cap = *cap ? 2 * *cap : 64;
    ptdp_param *p = realloc(m->params, (size_t)*cap * sizeof *p);
    if (!p) return ptdp_error_push(PTDP_ERR_MEM, __FILE__, __LINE__, __func__, "out of memory (parameter table)");
    m->params = p;
  }
  ptdp_param *p = &m->params[m->nparams++];
  memset(p, 0, sizeof *p);
  snprintf(p->name, sizeof p->name, "%s", name);
  p->grows = grows;
  p->gcols = gcols;
  p->split = split;
  p->rows = split == PTDP_SPLIT_ROWS ? grows / m->t : grows;
  p->cols = split == PTDP_SPLIT_COLS ? gcols / m->t : gcols;
  p->offset = m->nelem;
  p->tensor_id = tid;
  p->init = init;
  p->no_decay = no_decay;
  p->tp_replicated = split == PTDP_SPLIT_NONE;
  p->sp_partial = sp_partial && m->cfg.sequence_parallel && m->t > 1;
  /* keep every tensor 16-element aligned in the flat buffer */
  m->nelem += (p->rows * p->cols + 15) / 16 * 16;
  return m->nparams - 1;
}

static int build_params(ptdp_gpt *m)
{
  const ptdp_gpt_config *c = &m->cfg;
  const long long h = c->hidden, f = c->ffn, V = c->padded_vocab;
  int cap = 0, nl_total = 0;
  char nm[96];
  for (int ci = 0; ci < m->nchunks; ci++) nl_total += m->chunks[ci].nlayers;
  PTDP_ALLOC(m->layer_param0, sizeof(int) * (size_t)(nl_total > 0 ? nl_total : 1));
  m->wte_index = m->wte_copy_index = m->wpe_index = m->lnf_w_index = m->lnf_b_index = -1;
  int li = 0;
  for (int ci = 0; ci < m->nchunks; ci++) {
    const ptdp_chunk *ch = &m->chunks[ci];
    if (ch->has_embedding) {
      m->wte_index = add_param(m, &cap, "embedding.word_embeddings.weight", V, h, PTDP_SPLIT_ROWS, TID_WTE, 2, 0, 0);
      m->wpe_index = add_param(m, &cap, "embedding.position_embeddings.weight", c->max_pos, h, PTDP_SPLIT_NONE, TID_WPE,
                               2, 0, 1);
      if (m->wte_index < 0 || m->wpe_index < 0) return PTDP_ERR_MEM;
      m->params[m->wte_index].embedding = 1;
    }
    for (int i = 0; i < ch->nlayers; i++, li++) {
      int l = ch->layer0 + i;
      m->layer_param0[li] = m->nparams;
#define LP(suffix, r, cc, split, k, init, nd, spp)                                           \
  do {                                                                                     \
    snprintf(nm, sizeof nm, "decoder.layers.%d.%s", l, suffix);                            \
    if (add_param(m, &cap, nm, r, cc, split, TID_LAYER(l, k), init, nd, spp) < 0) return PTDP_ERR_MEM; \
  } while (0)
      LP("input_layernorm.weight", h, 1, PTDP_SPLIT_NONE, 0, 1, 1, 1);
      LP("input_layernorm.bias", h, 1, PTDP_SPLIT_NONE, 1, 0, 1, 1);
      LP("self_attention.linear_qkv.weight", 3 * h, h, PTDP_SPLIT_ROWS, 2, 2, 0, 0);
      LP("self_attention.linear_qkv.bias", 3 * h, 1, PTDP_SPLIT_ROWS, 3, 0, 1, 0);
      LP("self_attention.linear_proj.weight", h, h, PTDP_SPLIT_COLS, 4, 3, 0, 0);
      LP("self_attention.linear_proj.bias", h, 1, PTDP_SPLIT_NONE, 5, 0, 1, 1);
      LP("pre_mlp_layernorm.weight", h, 1, PTDP_SPLIT_NONE, 6, 1, 1, 1);
      LP("pre_mlp_layernorm.bias", h, 1, PTDP_SPLIT_NONE, 7, 0, 1, 1);
      LP("mlp.linear_fc1.weight", f, h, PTDP_SPLIT_ROWS, 8, 2, 0, 0);
      LP("mlp.linear_fc1.bias", f, 1, PTDP_SPLIT_ROWS, 9, 0, 1, 0);
      LP("mlp.linear_fc2.weight", h, f, PTDP_SPLIT_COLS, 10, 3, 0, 0);
      LP("mlp.linear_fc2.bias", h, 1, PTDP_SPLIT_NONE, 11, 0, 1, 1);
#undef LP
    }
    if (ch->has_head) {
      m->lnf_w_index = add_param(m, &cap, "decoder.final_layernorm.weight", h, 1, PTDP_SPLIT_NONE, TID_LNF, 1, 1, 1);
      m->lnf_b_index = add_param(m, &cap, "decoder.final_layernorm.bias", h, 1, PTDP_SPLIT_NONE, TID_LNF + 1000, 0, 1, 1);
      if (m->lnf_w_index < 0 || m->lnf_b_index < 0) return PTDP_ERR_MEM;
      if (m->wte_index < 0) { /* pipeline: the last stage keeps its own copy of the tied embedding */
        m->wte_copy_index = add_param(m, &cap, "output_layer.weight", V, h, PTDP_SPLIT_ROWS, TID_WTE, 2, 0, 0);
        if (m->wte_copy_index < 0) return PTDP_ERR_MEM;
        m->params[m->wte_copy_index].tied_copy = 1;
        m->params[m->wte_copy_index].embedding = 1;
      }
    }
  }
  return 0;
}

ptdp_layer_params ptdp_gpt_layer(const ptdp_gpt *m, int chunk, int i, float *base)
{
  int li = i;
  for (int c = 0; c < chunk; c++) li += m->chunks[c].nlayers;
  const ptdp_param *p = &m->params[m->layer_param0[li]];
  ptdp_layer_params lp;
  float **f[12] = {&lp.ln1_w, &lp.ln1_b, &lp.qkv_w, &lp.qkv_b, &lp.proj_w, &lp.proj_b,
                   &lp.ln2_w, &lp.ln2_b, &lp.fc1_w, &lp.fc1_b, &lp.fc2_w, &lp.fc2_b};
  for (int k = 0; k < 12; k++) *f[k] = base + p[k].offset;
  return lp;
}

int ptdp_gpt_init_params(ptdp_gpt *m)
{
  const float std = m->cfg.init_std, std_out = m->cfg.init_std / sqrtf(2.0f * (float)m->cfg.num_layers);
  for (int i = 0; i < m->nparams; i++) {
    const ptdp_param *p = &m->params[i];
    float *w = m->param + p->offset;
    long long r0 = p->split == PTDP_SPLIT_ROWS ? (long long)m->tp_rank * p->rows : 0;
    long long c0 = p->split == PTDP_SPLIT_COLS ? (long long)m->tp_rank * p->cols : 0;
    if (p->init <= 1) {
      for (long long k = 0; k < p->rows * p->cols; k++) w[k] = (float)p->init;
      continue;
    }
    float sd = p->init == 3 ? std_out : std;
#pragma omp parallel for schedule(static)
    for (long long r = 0; r < p->rows; r++) {
      uint64_t rh = ptdp_rng_row(m->cfg.seed, PTDP_RNG_INIT, (uint32_t)p->tensor_id, 0, (uint64_t)(r0 + r));
      for (long long cc = 0; cc < p->cols; cc++)
        w[r * p->cols + cc] = sd * (float)ptdp_rng_normal(ptdp_rng_at(rh, (uint64_t)(c0 + cc)));
    }
  }
  return 0;
}

/* Which layers of a chunk store only their input (full recomputation): layer i belongs to the
 * group [g0, g1) recomputed together from the input of g0. */
int ptdp_gpt_recompute_group(const ptdp_gpt *m, int c, int i, int *g0, int *g1)
{
  const ptdp_gpt_config *cf = &m->cfg;
  int nl = m->chunks[c].nlayers, k = cf->recompute_num_layers;
  *g0 = i;
  *g1 = i + 1;
  if (cf->recompute != PTDP_RECOMPUTE_FULL) return 0;
  if (cf->recompute_method == PTDP_RECOMPUTE_UNIFORM) {
    *g0 = i / k * k;
    *g1 = *g0 + k < nl ? *g0 + k : nl;
    return 1;
  }
  return i < k; /* block: the first k layers of the chunk, each on its own */
}

#define MEMA(ptr, n, type, name, chunk, slot, layer, held)                                               \
  PTDP_CALL(ptdp_memory_alloc(&m->mem, m->be, (void **)&(ptr), (size_t)(n) * sizeof(type), name, chunk, slot, \
                              layer, held))

/* Allocate one layer's activation set; which parts are held depends on `what`. */
enum { ACTS_ALL = 0, ACTS_INPUT_ONLY = 1, ACTS_NO_ATTN_CORE = 2, ACTS_ATTN_CORE_ONLY = 3, ACTS_ALL_BUT_INPUT = 4 };
static int alloc_layer_acts(ptdp_gpt *m, ptdp_layer_acts *a, int what, int chunk, int slot, int layer, int held)
{
  const ptdp_gpt_config *c = &m->cfg;
  const long long N = m->N, Nl = m->Nl, h = c->hidden;
  const long long att = (long long)c->micro_batch * m->al * c->seq * c->seq;
  memset(a, 0, sizeof *a);
  int in = what == ACTS_ALL || what == ACTS_INPUT_ONLY || what == ACTS_NO_ATTN_CORE;
  int core = what == ACTS_ALL || what == ACTS_ATTN_CORE_ONLY || what == ACTS_ALL_BUT_INPUT;
  int rest = what == ACTS_ALL || what == ACTS_NO_ATTN_CORE || what == ACTS_ALL_BUT_INPUT;
  if (in) MEMA(a->x, Nl * h, float, "layer_input", chunk, slot, layer, held);
  if (core) {
    MEMA(a->probs, att, float, "attn_probs", chunk, slot, layer, held);
    if (c->attn_dropout > 0) {
      MEMA(a->attn_mask, att, uint8_t, "attn_dropout_mask", chunk, slot, layer, held);
      MEMA(a->probs_drop, att, float, "attn_probs_dropped", chunk, slot, layer, held);
    } else {
      a->probs_drop = a->probs;
    }
  }
  if (rest) {
    MEMA(a->ln1_mean, Nl, float, "ln1_mean", chunk, slot, layer, held);
    MEMA(a->ln1_rstd, Nl, float, "ln1_rstd", chunk, slot, layer, held);
    MEMA(a->ln1_out, Nl * h, float, "ln1_out", chunk, slot, layer, held);
    MEMA(a->qkv, N * 3 * m->hl, float, "qkv", chunk, slot, layer, held);
    MEMA(a->ctx, N * m->hl, float, "attn_context", chunk, slot, layer, held);
    if (c->hidden_dropout > 0) MEMA(a->mask1, Nl * h, uint8_t, "attn_resid_mask", chunk, slot, layer, held);
    MEMA(a->x2, Nl * h, float, "ln2_input", chunk, slot, layer, held);
    MEMA(a->ln2_mean, Nl, float, "ln2_mean", chunk, slot, layer, held);
    MEMA(a->ln2_rstd, Nl, float, "ln2_rstd", chunk, slot, layer, held);
    MEMA(a->ln2_out, Nl * h, float, "ln2_out", chunk, slot, layer, held);
    MEMA(a->fc1, N * m->fl, float, "fc1_out", chunk, slot, layer, held);
    MEMA(a->gelu, N * m->fl, float, "gelu_out", chunk, slot, layer, held);
    if (c->hidden_dropout > 0) MEMA(a->mask2, Nl * h, uint8_t, "mlp_resid_mask", chunk, slot, layer, held);
  }
  return 0;
}

static int alloc_activations(ptdp_gpt *m)
{
  const ptdp_gpt_config *c = &m->cfg;
  const long long N = m->N, Nl = m->Nl, h = c->hidden;
  for (int ci = 0; ci < m->nchunks; ci++) {
    ptdp_chunk *ch = &m->chunks[ci];
    PTDP_CALLOC(ch->slots, c->max_in_flight, sizeof *ch->slots);
    for (int s = 0; s < c->max_in_flight; s++) {
      ptdp_chunk_slot *sl = &ch->slots[s];
      PTDP_CALLOC(sl->layers, ch->nlayers > 0 ? ch->nlayers : 1, sizeof *sl->layers);
      for (int i = 0; i < ch->nlayers; i++) {
        int g0, g1, what;
        if (ptdp_gpt_recompute_group(m, ci, i, &g0, &g1))
          what = i == g0 ? ACTS_INPUT_ONLY : -1;
        else
          what = c->recompute == PTDP_RECOMPUTE_SELECTIVE ? ACTS_NO_ATTN_CORE : ACTS_ALL;
        if (what >= 0) PTDP_CALL(alloc_layer_acts(m, &sl->layers[i], what, ci, s, ch->layer0 + i, 1));
      }
      /* the chunk output: held on the head chunk (final LN input); on other chunks it is only
       * the send buffer (Korthikanti et al. App. B: freed once sent), not counted as held */
      MEMA(sl->out, Nl * h, float, "chunk_output", ci, s, PTDP_MEM_LAYER_NONE, ch->has_head);
      if (ch->has_embedding || ch->has_head) {
        MEMA(sl->tokens, N, int32_t, "tokens", ci, s, PTDP_MEM_LAYER_NONE, 0);
        MEMA(sl->targets, N, int32_t, "targets", ci, s, PTDP_MEM_LAYER_NONE, 0);
      }
      if (ch->has_embedding && c->hidden_dropout > 0)
        MEMA(sl->emb_mask, Nl * h, uint8_t, "embedding_dropout_mask", ci, s, PTDP_MEM_LAYER_NONE, 1);
      if (ch->has_head) {
        MEMA(sl->lnf_mean, Nl, float, "final_ln_mean", ci, s, PTDP_MEM_LAYER_NONE, 1);
        MEMA(sl->lnf_rstd, Nl, float, "final_ln_rstd", ci, s, PTDP_MEM_LAYER_NONE, 1);
        MEMA(sl->lnf_out, Nl * h, float, "final_ln_out", ci, s, PTDP_MEM_LAYER_NONE, 1);
        MEMA(sl->logits, N * m->vl, float, "logits", ci, s, PTDP_MEM_LAYER_NONE, 1);
      }
    }
  }
  /* work space shared by every micro-batch */
  ptdp_gpt_work *w = &m->work;
  int maxrows = N > Nl ? (int)N : (int)Nl;
  MEMA(w->full_a, (long long)maxrows * h, float, "work_full_a", -1, -1, PTDP_MEM_LAYER_NONE, 0);
  MEMA(w->full_b, (long long)maxrows * h, float, "work_full_b", -1, -1, PTDP_MEM_LAYER_NONE, 0);
  MEMA(w->shard_a, Nl * h, float, "work_shard_a", -1, -1, PTDP_MEM_LAYER_NONE, 0);
  MEMA(w->shard_b, Nl * h, float, "work_shard_b", -1, -1, PTDP_MEM_LAYER_NONE, 0);
  MEMA(w->shard_c, Nl * h, float, "work_shard_c", -1, -1, PTDP_MEM_LAYER_NONE, 0);
  MEMA(w->dqkv, N * 3 * m->hl, float, "work_dqkv", -1, -1, PTDP_MEM_LAYER_NONE, 0);
  MEMA(w->dctx, N * m->hl, float, "work_dctx", -1, -1, PTDP_MEM_LAYER_NONE, 0);
  MEMA(w->dfc, N * m->fl, float, "work_dfc", -1, -1, PTDP_MEM_LAYER_NONE, 0);
  MEMA(w->attn, (long long)c->seq * c->seq, float, "work_attn", -1, -1, PTDP_MEM_LAYER_NONE, 0);
  MEMA(w->xent, 3 * N, float, "work_xent", -1, -1, PTDP_MEM_LAYER_NONE, 0);
  MEMA(w->grad_a, Nl * h, float, "work_grad_a", -1, -1, PTDP_MEM_LAYER_NONE, 0);
  MEMA(w->grad_b, Nl * h, float, "work_grad_b", -1, -1, PTDP_MEM_LAYER_NONE, 0);
  MEMA(w->pos, Nl, int32_t, "work_positions", -1, -1, PTDP_MEM_LAYER_NONE, 0);
  for (long long r = 0; r < Nl; r++) w->pos[r] = (int32_t)((m->row0 + r) / c->micro_batch);
  /* recompute scratch: a group of full layer sets, or the attention core of one layer */
  int maxl = 0;
  for (int ci = 0; ci < m->nchunks; ci++) maxl = m->chunks[ci].nlayers > maxl ? m->chunks[ci].nlayers : maxl;
  if (c->recompute == PTDP_RECOMPUTE_FULL)
    w->nrecomp = c->recompute_method == PTDP_RECOMPUTE_UNIFORM ? (c->recompute_num_layers < maxl ? c->recompute_num_layers : maxl) : 1;
  else if (c->recompute == PTDP_RECOMPUTE_SELECTIVE)
    w->nrecomp = 1;
  if (w->nrecomp > 0) {
    PTDP_CALLOC(w->recomp, w->nrecomp, sizeof *w->recomp);
    for (int j = 0; j < w->nrecomp; j++)
      PTDP_CALL(alloc_layer_acts(m, &w->recomp[j], c->recompute == PTDP_RECOMPUTE_FULL ? ACTS_ALL : ACTS_ATTN_CORE_ONLY,
                                 -1, -1, PTDP_MEM_LAYER_NONE, 0));
  }
  return 0;
}

/* Chunk c of this stage holds virtual stage c p + stage: layers [k L/(p v), (k+1) L/(p v)). */
static int layout_buckets(ptdp_gpt *m);

static int build_chunks(ptdp_gpt *m)
{
  const int v = m->cfg.chunks, p = m->p, L = m->cfg.num_layers;
  const int per = L / (p * v);
  m->nchunks = v;
  PTDP_CALLOC(m->chunks, v, sizeof *m->chunks);
  for (int c = 0; c < v; c++) {
    int k = c * p + m->stage;
    m->chunks[c].layer0 = k * per;
    m->chunks[c].nlayers = per;
    m->chunks[c].has_embedding = k == 0;
    m->chunks[c].has_head = k == p * v - 1;
  }
  return 0;
}

int ptdp_gpt_create(ptdp_gpt *m, const ptdp_gpt_config *cfg, ptdp_backend *be, ptdp_grid *grid)
{
  memset(m, 0, sizeof *m);
  m->cfg = *cfg;
  m->be = be;
  m->grid = grid;
  m->t = grid->layout.t;
  m->tp_rank = grid->me.tp;
  m->p = grid->layout.p;
  m->stage = grid->me.pp;
  PTDP_CHECK(cfg->heads % m->t == 0 && cfg->hidden % cfg->heads == 0 && cfg->ffn % m->t == 0 &&
                 cfg->padded_vocab % m->t == 0 && cfg->num_layers % (m->p * cfg->chunks) == 0,
             "model dimensions do not divide over the grid (internal check)");
  m->al = cfg->heads / m->t;
  m->hd = cfg->hidden / cfg->heads;
  m->hl = m->al * m->hd;
  m->fl = cfg->ffn / m->t;
  m->vl = cfg->padded_vocab / m->t;
  m->v0 = (long long)m->tp_rank * m->vl;
  m->N = cfg->seq * cfg->micro_batch;
  m->Nl = cfg->sequence_parallel ? m->N / m->t : m->N;
  m->row0 = cfg->sequence_parallel ? (long long)m->tp_rank * m->Nl : 0;
  PTDP_CALL(build_chunks(m));
  PTDP_CALL(build_params(m));
  PTDP_CALL(layout_buckets(m));
  m->nalloc = m->nelem;
  PTDP_CALL(be->alloc(be, (void **)&m->param, (size_t)m->nalloc * sizeof(float)));
  PTDP_CALL(be->alloc(be, (void **)&m->grad, (size_t)m->nalloc * sizeof(float)));
  PTDP_CALL(alloc_activations(m));
  return 0;
}

void ptdp_gpt_destroy(ptdp_gpt *m)
{
  if (!m->be) return;
  ptdp_memory_free_all(&m->mem, m->be);
  for (int c = 0; c < m->nchunks; c++) {
    for (int s = 0; s < m->cfg.max_in_flight && m->chunks[c].slots; s++) free(m->chunks[c].slots[s].layers);
    free(m->chunks[c].slots);
  }
  free(m->chunks);
  free(m->work.recomp);
  free(m->params);
  free(m->buckets);
  free(m->layer_param0);
  m->be->free(m->be, m->param);
  m->be->free(m->be, m->grad);
  memset(m, 0, sizeof *m);
}

/* Lay the parameters out in buckets (see ptdp_bucket): walk them in reverse, close a bucket once
 * it holds bucket_elems elements, give the word embedding its own; then assign offsets in
 * forward order, each bucket padded to a multiple of 16 d elements so that it splits evenly
 * over the data-parallel ranks. */
static int layout_buckets(ptdp_gpt *m)
{
  const long long align = 16LL * (m->cfg.dp_size > 0 ? m->cfg.dp_size : 1);
  const long long cap = m->cfg.bucket_elems > 0 ? m->cfg.bucket_elems : (1LL << 62);
  int nb = 0;
  long long acc = 0;
  for (int i = m->nparams - 1; i >= 0; i--) {
    ptdp_param *p = &m->params[i];
    if (p->embedding) continue;
    if (acc == 0) nb++;
    p->bucket = nb - 1;
    acc += p->rows * p->cols;
    if (acc >= cap) acc = 0;
  }
  int emb = -1;
  for (int i = 0; i < m->nparams; i++)
    if (m->params[i].embedding) {
      if (emb < 0) emb = nb++;
      m->params[i].bucket = emb;
    }
  PTDP_CALLOC(m->buckets, nb > 0 ? nb : 1, sizeof *m->buckets);
  m->nbuckets = nb;
  long long off = 0;
  /* memory order: the embedding bucket, then the others from the earliest parameters on */
  for (int pass = 0; pass < nb; pass++) {
    int nb0 = emb >= 0 ? nb - 1 : nb;
    int b = emb >= 0 ? (pass == 0 ? emb : nb0 - pass) : nb0 - 1 - pass;
    ptdp_bucket *bk = &m->buckets[b];
    bk->lo = off;
    bk->late = b == emb;
    for (int i = 0; i < m->nparams; i++) {
      ptdp_param *p = &m->params[i];
      if (p->bucket != b) continue;
      p->offset = off;
      off += (p->rows * p->cols + 15) / 16 * 16;
      bk->nparams++;
    }
    off = (off + align - 1) / align * align;
    bk->hi = off;
    bk->req = PTDP_COMM_REQ_NULL;
  }
  m->nelem = off;
  return 0;
}

int ptdp_gpt_global_params(const ptdp_gpt_config *cfg, ptdp_param **list, int *n)
{
  ptdp_gpt g;
  ptdp_chunk ch = {.layer0 = 0, .nlayers = cfg->num_layers, .has_embedding = 1, .has_head = 1};
  memset(&g, 0, sizeof g);
  g.cfg = *cfg;
  g.cfg.sequence_parallel = 0;
  g.t = 1;
  g.nchunks = 1;
  g.chunks = &ch;
  int err = build_params(&g);
  free(g.layer_param0);
  if (err) {
    free(g.params);
    return err;
  }
  *list = g.params;
  *n = g.nparams;
  return 0;
}

float *ptdp_gpt_input(ptdp_gpt *m, int c, int slot) { return m->chunks[c].slots[slot].layers[0].x; }
float *ptdp_gpt_output(ptdp_gpt *m, int c, int slot) { return m->chunks[c].slots[slot].out; }
