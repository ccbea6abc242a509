/* The inference forward pass with a key/value cache (see include/ptdp/generate.h).
 *
 * Each layer is the model's own block (ptdp_gpt_block_forward, src/model/layer.c), run without
 * sequence parallelism and without dropout on n new token rows at positions len .. len + n - 1,
 * with the key/value cache as its attention core; the embedding and the head repeat the training
 * forward's operations (src/model/head.c) on those rows:
 *
 *   x  = all-reduce(wte_r[tok]) + wpe[pos]   (vocab-parallel embedding; no wpe with rotary positions)
 *   per layer:  qkv = LN1(x) Wqkv_r^T + b                           [n, 3 hl]  column-parallel
 *               K, V of the n rows appended to the cache            [cap, hl]
 *               ctx = softmax(q K^T / sqrt(hd)) V over positions <= its own     [n, hl]
 *               x2  = all-reduce(ctx Wproj_r^T) + b + x                         row-parallel
 *               x   = all-reduce(gelu(LN2(x2) Wfc1_r^T + b) Wfc2_r^T) + b + x2
 *   logits_r = LNf(x) wte_r^T over this rank's real vocabulary columns, gathered across TP.
 *
 * Attention: an empty cache takes the n rows in one causal pass of the backend's attention
 * (b = 1, s = n), exactly the training forward's; a single row against a filled cache is one
 * product per local head for the scores [1, len + 1] and one for the context, with the softmax
 * done by the backend's cross-entropy statistics (row max, sum of exponentials, then
 * exp(s - max) / sum with no target inside the row: a plain softmax over the al rows at once). */
#include "ptdp/generate.h"

#include "ptdp/error.h"

#include <math.h>
#include <string.h>

#define LOGIT_ROWS PTDP_GENERATE_LOGIT_ROWS

static int grow_probs(ptdp_generator *g, long long elems)
{
  if (elems <= g->probs_elems) return 0;
  ptdp_backend *be = g->m->be;
  if (g->probs) be->free(be, g->probs);
  g->probs = NULL;
  g->probs_elems = 0;
  PTDP_CALL(be->alloc(be, (void **)&g->probs, sizeof(float) * (size_t)elems));
  g->probs_elems = elems;
  return 0;
}

/* Where head a's query, and its group's key and value, sit in a qkv row ([groups][the group's
 * queries, key, value][hd]: [al][3][hd] without grouped-query attention). */
static size_t q_off(const ptdp_gpt *m, int a) { return ((size_t)(a / m->sh.hpg) * (m->sh.hpg + 2) + a % m->sh.hpg) * m->sh.hd; }
static size_t k_off(const ptdp_gpt *m, int gg) { return ((size_t)gg * (m->sh.hpg + 2) + m->sh.hpg) * m->sh.hd; }

/* Keys and values of rows [0, n) of qkv into cache rows len .. len + n - 1 ([cap, gl hd]: one
 * key and one value head per group). */
static int cache_append(ptdp_generator *g, int layer, int n)
{
  const ptdp_gpt *m = g->m;
  ptdp_backend *be = m->be;
  const size_t bytes = sizeof(float) * (size_t)m->sh.hd, kv = (size_t)m->sh.gl * m->sh.hd;
  for (int r = 0; r < n; r++)
    for (int gg = 0; gg < m->sh.gl; gg++) {
      const float *k = g->qkv + (size_t)r * m->sh.qkv + k_off(m, gg);
      const size_t at = (size_t)(g->len + r) * kv + (size_t)gg * m->sh.hd;
      PTDP_CALL(be->copy(be, g->kc[layer] + at, k, bytes));
      PTDP_CALL(be->copy(be, g->vc[layer] + at, k + m->sh.hd, bytes));
    }
  return 0;
}

/* ctx [n, hl] of the n new rows (cache already holds them). */
static int attention(ptdp_generator *g, int layer, int n)
{
  const ptdp_gpt *m = g->m;
  ptdp_backend *be = m->be;
  const int al = m->sh.al, hd = m->sh.hd, hl = m->sh.hl, kv = m->sh.gl * hd;
  if (g->len == 0) { /* prefill: causal attention over the n rows, as in training */
    PTDP_CALL(grow_probs(g, (long long)al * n * n));
    ptdp_attn_desc d = {.b = 1, .s = n, .al = al, .hd = hd, .groups = m->sh.gl, .head0 = (long long)m->tp_rank * al};
    d.drop.p = 0.0f;
    return be->attention_forward(be, &d, g->qkv, g->probs, NULL, g->probs, g->ctx);
  }
  /* one query row against keys 0 .. L-1 (L = len + 1, the new row included) */
  const int L = g->len + 1;
  const float scale = 1.0f / sqrtf((float)hd);
  for (int a = 0; a < al; a++) /* S[a, 0:L] = q_a K_group(a)^T / sqrt(hd) */
    PTDP_CALL(be->gemm(be, 0, 1, 1, L, hd, scale, g->qkv + q_off(m, a), m->sh.qkv,
                       g->kc[layer] + (size_t)(a / m->sh.hpg) * hd, kv, 0.0f, g->scores + (size_t)a * L, L));
  float *mx = g->stats, *se = g->stats + al, *unused = g->stats + 2 * al;
  PTDP_CALL(be->xent_stats(be, g->scores, g->notarget, 0, al, L, mx, unused));
  PTDP_CALL(be->xent_sumexp(be, g->scores, mx, al, L, se));
  PTDP_CALL(be->xent_grad(be, g->scores, g->notarget, 0, mx, se, al, L, 1.0f)); /* P = softmax(S) */
  for (int a = 0; a < al; a++) /* ctx_a = P[a] V_group(a) */
    PTDP_CALL(be->gemm(be, 0, 0, 1, hd, L, 1.0f, g->scores + (size_t)a * L, L,
                       g->vc[layer] + (size_t)(a / m->sh.hpg) * hd, kv, 0.0f, g->ctx + (size_t)a * hd, hl));
  return 0;
}

/* The block's attention core in inference: the n new rows' keys and values join the cache, then
 * the rows attend to every cached position up to their own. */
static int cache_attention(const ptdp_block_pass *p, ptdp_gpt *m, int layer, const ptdp_layer_acts *a)
{
  ptdp_generator *g = p->ctx;
  PTDP_CALL(cache_append(g, layer, (int)p->N));
  return attention(g, layer, (int)p->N);
}

/* One transformer layer on g->x [n, h] (the model's own block, src/model/layer.c); the output
 * replaces g->x.  Both LayerNorms share one output and statistics buffer: nothing reads them back. */
static int layer_forward(ptdp_generator *g, int layer, int n)
{
  ptdp_gpt *m = g->m;
  const ptdp_layer_acts a = {.x = g->x, .ln1_out = g->ln, .ln1_mean = g->mean, .ln1_rstd = g->rstd, .qkv = g->qkv,
                             .ctx = g->ctx, .x2 = g->x2, .ln2_out = g->ln, .ln2_mean = g->mean, .ln2_rstd = g->rstd,
                             .fc1 = g->fc, .gelu = g->act};
  const ptdp_block_pass p = {.N = n, .Nl = n, .pos0 = g->len, .b = 1, .attention = cache_attention, .ctx = g};
  PTDP_CALL(ptdp_gpt_block_forward(m, layer, &m->chunks[0].layers[layer].w, &p, &a, g->y));
  float *t = g->x; /* the output becomes the next layer's input */
  g->x = g->y;
  g->y = t;
  return 0;
}

/* x [n, h] = all-reduce over TP of this rank's word-embedding rows + position rows. */
static int embed(ptdp_generator *g, const int32_t *tokens, int n)
{
  ptdp_gpt *m = g->m;
  ptdp_backend *be = m->be;
  const int h = m->cfg.hidden;
  PTDP_CALL(be->to_device(be, g->tokens, tokens, sizeof(int32_t) * (size_t)n));
  PTDP_CALL(be->embedding_forward(be, m->wte.w, g->tokens, m->sh.v0, m->sh.vl, g->x, n, h));
  PTDP_CALL(ptdp_comm_allreduce_sum(&m->grid->tp, g->x, (size_t)n * h, PTDP_TAG_EMBED));
  if (m->wpe.index < 0) return 0; /* rotary or no positions: nothing to add */
  PTDP_CALL(be->embedding_forward(be, m->wpe.w, g->positions + g->len, 0, m->cfg.max_pos, g->y, n, h));
  return be->add(be, g->x, g->y, (size_t)n * h);
}

/* Host logits [rows, vocab] of the rows [r0, r0 + rows) of g->x: final LayerNorm, this rank's
 * columns of the output layer (the real vocabulary only), gathered over TP R rows at a time. */
static int head(ptdp_generator *g, int r0, int rows, float *out)
{
  ptdp_gpt *m = g->m;
  ptdp_backend *be = m->be;
  const int h = m->cfg.hidden, t = m->t, vv = ptdp_gpt_vocab_columns(m);
  const long long vl = m->sh.vl, vocab = m->cfg.vocab;
  const float *x = g->x + (size_t)r0 * h;
  PTDP_CALL(ptdp_gpt_norm_forward(m, x, m->lnf_w.w, m->lnf_b.w, g->ln, g->mean, g->rstd, rows));
  for (int b0 = 0; b0 < rows; b0 += LOGIT_ROWS) {
    const int nb = rows - b0 < LOGIT_ROWS ? rows - b0 : LOGIT_ROWS;
    if (vv > 0) /* [nb, vv] in rows of vl: the padding columns stay zero and are never read */
      PTDP_CALL(be->gemm(be, 0, 1, nb, vv, h, 1.0f, g->ln + (size_t)b0 * h, h, ptdp_gpt_output_layer(m)->w, h, 0.0f, g->logits, (int)vl));
    PTDP_CALL(ptdp_comm_allgather(&m->grid->tp, g->logits, g->gathered, (size_t)nb * vl, PTDP_TAG_EMBED));
    PTDP_CALL(be->to_host(be, g->host, g->gathered, sizeof(float) * (size_t)t * nb * vl));
    PTDP_CALL(be->synchronize(be));
    for (int q = 0; q < t; q++) { /* rank q's block [nb, vl] holds tokens q vl .. q vl + vl - 1 */
      long long cols = vocab - q * vl;
      cols = cols < 0 ? 0 : cols > vl ? vl : cols;
      for (int r = 0; r < nb; r++)
        memcpy(out + (size_t)(b0 + r) * vocab + (size_t)q * vl, g->host + ((size_t)q * nb + r) * vl,
               sizeof(float) * (size_t)cols);
    }
  }
  return 0;
}

int ptdp_generator_forward(ptdp_generator *g, const int32_t *tokens, int n, int all_rows, float *logits)
{
  PTDP_CHECK_INTERNAL(n > 0 && g->len + n <= g->cap, "%d tokens at position %d overflow the cache of %d", n,
                   g->len, g->cap);
  if (g->len > 0 && n > 1) { /* a filled cache takes one token at a time */
    for (int i = 0; i < n; i++) {
      float *row = logits && (all_rows || i == n - 1) ? logits + (all_rows ? (size_t)i * g->m->cfg.vocab : 0) : NULL;
      PTDP_CALL(ptdp_generator_forward(g, tokens + i, 1, 0, row));
    }
    return 0;
  }
  PTDP_CALL(embed(g, tokens, n));
  for (int l = 0; l < g->m->chunks[0].nlayers; l++) PTDP_CALL(layer_forward(g, l, n));
  g->len += n;
  if (!logits) return 0;
  return all_rows ? head(g, 0, n, logits) : head(g, n - 1, 1, logits);
}
