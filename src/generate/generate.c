/* The generator's buffers, and the generation loop: prefill the prompt, then one token per step
 * (see include/ptdp/generate.h; the forward pass is in infer.c, sampling in sample.c). */
#include "ptdp/generate.h"

#include "ptdp/error.h"

#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#define LOGIT_ROWS PTDP_GENERATE_LOGIT_ROWS

static int dalloc(ptdp_generator *g, void **p, size_t bytes)
{
  ptdp_backend *be = g->m->be;
  PTDP_CALL(be->alloc(be, p, bytes > 0 ? bytes : sizeof(float)));
  g->device_bytes += (double)bytes;
  return 0;
}

/* Positions 0 .. cap-1 (the position table's rows) and the "no target" ids of the softmax. */
static int fill_constants(ptdp_generator *g)
{
  ptdp_backend *be = g->m->be;
  const int n = g->cap > g->m->sh.al ? g->cap : g->m->sh.al;
  int32_t *h;
  PTDP_ALLOC(h, sizeof(int32_t) * (size_t)n);
  for (int i = 0; i < g->cap; i++) h[i] = i;
  int err = be->to_device(be, g->positions, h, sizeof(int32_t) * (size_t)g->cap);
  for (int i = 0; i < g->m->sh.al; i++) h[i] = -1;
  if (!err) err = be->to_device(be, g->notarget, h, sizeof(int32_t) * (size_t)g->m->sh.al);
  free(h);
  return err;
}

int ptdp_generator_create(ptdp_generator *g, ptdp_gpt *m, int capacity)
{
  memset(g, 0, sizeof *g);
  g->m = m;
  PTDP_CHECK_INTERNAL(m->p == 1 && m->nchunks == 1 && m->chunks[0].has_embedding && m->chunks[0].has_head,
                   "generation needs the whole model on one pipeline stage (p = 1, one chunk)");
  PTDP_CHECK_INTERNAL(!m->cfg.sequence_parallel, "generation runs without sequence parallelism");
  PTDP_CHECK(capacity > 0 && capacity <= m->cfg.max_pos,
             "%d positions do not fit the position table of max-position-embeddings %d", capacity, m->cfg.max_pos);
  g->cap = capacity;
  const int L = m->chunks[0].nlayers, h = m->cfg.hidden, hl = m->sh.hl, fl = m->sh.fl, al = m->sh.al, t = m->t;
  const size_t c = (size_t)capacity, f = sizeof(float);
  PTDP_CALLOC(g->kc, L > 0 ? L : 1, sizeof *g->kc);
  PTDP_CALLOC(g->vc, L > 0 ? L : 1, sizeof *g->vc);
  const size_t kv = (size_t)m->sh.gl * m->sh.hd; /* a row of keys: one head per key/value group */
  for (int l = 0; l < L; l++) {
    PTDP_CALL(dalloc(g, (void **)&g->kc[l], c * kv * f));
    PTDP_CALL(dalloc(g, (void **)&g->vc[l], c * kv * f));
  }
  PTDP_CALL(dalloc(g, (void **)&g->x, c * h * f));
  PTDP_CALL(dalloc(g, (void **)&g->x2, c * h * f));
  PTDP_CALL(dalloc(g, (void **)&g->y, c * h * f));
  PTDP_CALL(dalloc(g, (void **)&g->ln, c * h * f));
  PTDP_CALL(dalloc(g, (void **)&g->mean, c * f));
  PTDP_CALL(dalloc(g, (void **)&g->rstd, c * f));
  PTDP_CALL(dalloc(g, (void **)&g->qkv, c * (size_t)m->sh.qkv * f));
  PTDP_CALL(dalloc(g, (void **)&g->ctx, c * hl * f));
  PTDP_CALL(dalloc(g, (void **)&g->fc, c * (size_t)m->sh.fc1 * f)); /* [gate | up] with SwiGLU */
  PTDP_CALL(dalloc(g, (void **)&g->act, c * fl * f));
  PTDP_CALL(dalloc(g, (void **)&g->scores, (size_t)al * c * f));
  PTDP_CALL(dalloc(g, (void **)&g->stats, (size_t)3 * al * f));
  PTDP_CALL(dalloc(g, (void **)&g->tokens, c * sizeof(int32_t)));
  PTDP_CALL(dalloc(g, (void **)&g->positions, c * sizeof(int32_t)));
  PTDP_CALL(dalloc(g, (void **)&g->notarget, (size_t)al * sizeof(int32_t)));
  PTDP_CALL(dalloc(g, (void **)&g->logits, (size_t)LOGIT_ROWS * m->sh.vl * f));
  PTDP_CALL(dalloc(g, (void **)&g->gathered, (size_t)t * LOGIT_ROWS * m->sh.vl * f));
  PTDP_ALLOC(g->host, (size_t)t * LOGIT_ROWS * m->sh.vl * f);
  return fill_constants(g);
}

void ptdp_generator_destroy(ptdp_generator *g)
{
  if (!g->m) return;
  ptdp_backend *be = g->m->be;
  for (int l = 0; l < g->m->chunks[0].nlayers; l++) {
    if (g->kc && g->kc[l]) be->free(be, g->kc[l]);
    if (g->vc && g->vc[l]) be->free(be, g->vc[l]);
  }
  float *bufs[] = {g->x, g->x2, g->y, g->ln, g->mean, g->rstd, g->qkv, g->ctx, g->fc, g->act, g->probs,
                   g->scores, g->stats, g->logits, g->gathered};
  for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
    if (bufs[i]) be->free(be, bufs[i]);
  int32_t *ibufs[] = {g->tokens, g->positions, g->notarget};
  for (size_t i = 0; i < sizeof ibufs / sizeof ibufs[0]; i++)
    if (ibufs[i]) be->free(be, ibufs[i]);
  free(g->kc);
  free(g->vc);
  free(g->host);
  memset(g, 0, sizeof *g);
}

void ptdp_generator_reset(ptdp_generator *g) { g->len = 0; }

/* The logits after the sequence seq[0 .. n): with the cache, only the tokens it lacks go
 * through the model; without, the whole sequence again from an empty cache. */
static int next_logits(ptdp_generator *g, const int32_t *seq, int n, int kv_cache, float *logits)
{
  if (!kv_cache) ptdp_generator_reset(g);
  return ptdp_generator_forward(g, seq + g->len, n - g->len, 0, logits);
}

int ptdp_generate(ptdp_generator *g, const ptdp_sampling *s, const int32_t *prompt, int np, int max_new, int32_t eod,
                  int kv_cache, int32_t *out, ptdp_generate_stats *st)
{
  memset(st, 0, sizeof *st);
  PTDP_CHECK(np > 0, "the prompt is empty");
  PTDP_CHECK(max_new >= 0 && np + max_new - 1 <= g->cap,
             "the prompt (%d tokens) and %d new tokens do not fit the generator's %d positions", np, max_new, g->cap);
  const long long vocab = g->m->cfg.vocab;
  int32_t *seq;
  float *logits;
  PTDP_ALLOC(seq, sizeof(int32_t) * (size_t)(np + max_new));
  logits = malloc(sizeof(float) * (size_t)vocab);
  if (!logits) {
    free(seq);
    return PTDP_FAIL(PTDP_ERR_MEM, "out of memory for %lld logits", vocab);
  }
  memcpy(seq, prompt, sizeof(int32_t) * (size_t)np);
  ptdp_generator_reset(g);
  int err = 0, n = np;
  double t0 = MPI_Wtime();
  for (int i = 0; i < max_new && !err; i++) {
    int32_t tok = -1;
    err = next_logits(g, seq, n, kv_cache, logits);
    if (!err) err = ptdp_sample(s, i, logits, (int)vocab, &tok);
    double t1 = MPI_Wtime();
    if (i == 0) st->prefill_seconds = t1 - t0;
    else st->decode_seconds += t1 - t0;
    t0 = t1;
    if (err) break;
    if (tok == eod) {
      st->stopped = 1;
      break;
    }
    out[st->generated++] = tok;
    seq[n++] = tok;
  }
  free(seq);
  free(logits);
  return err;
}
