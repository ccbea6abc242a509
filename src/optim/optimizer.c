/* AdamW, gradient synchronisation and clipping: see include/ptdp/optimizer.h.
 *
 * Data-parallel reduction overlaps the backward pass: the model reports (grads_ready) when a
 * parameter's gradient is final, i.e. after its last micro-batch's backward; when every
 * parameter of a bucket is final the bucket's reduction starts as a nonblocking collective
 * (all-reduce, or reduce-scatter with the distributed optimizer) while the backward pass goes
 * on.  ptdp_optimizer_sync waits for them.  The embedding bucket is reduced last, after the
 * two copies of the tied embedding have been summed over the embedding group.
 *
 * Distributed optimizer (ZeRO-1, as Megatron): each bucket [lo, hi) is split into d equal
 * shards; DP rank r owns [lo + r len/d, lo + (r+1) len/d) of every bucket, keeps Adam moments
 * only for those elements (state / d), updates them, then the parameters of each bucket are
 * all-gathered. */
#include "ptdp/optimizer.h"

#include "ptdp/error.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

double ptdp_lr_at(const ptdp_optim_config *c, long long n)
{
  if (c->warmup > 0 && n <= c->warmup) return c->lr * (double)n / (double)c->warmup;
  if (c->decay_style == PTDP_LR_CONSTANT) return c->lr;
  if (n > c->decay_iters) return c->min_lr;
  double ratio = (double)(n - c->warmup) / (double)(c->decay_iters - c->warmup > 0 ? c->decay_iters - c->warmup : 1);
  double coeff = c->decay_style == PTDP_LR_LINEAR ? 1.0 - ratio : 0.5 * (cos(M_PI * ratio) + 1.0);
  return c->min_lr + coeff * (c->lr - c->min_lr);
}

static int dist_on(const ptdp_optimizer *o) { return o->cfg.distributed && o->model->grid->dp.size > 1; }

/* This rank's shard of bucket b: [*lo, *hi) of the flat buffers; *state its offset in m, v. */
static void shard_of(const ptdp_optimizer *o, int b, long long *lo, long long *hi, long long *state)
{
  const ptdp_gpt *m = o->model;
  const ptdp_bucket *bk = &m->buckets[b];
  if (!dist_on(o)) {
    *lo = bk->lo;
    *hi = bk->hi;
    *state = bk->lo;
    return;
  }
  const int d = m->grid->dp.size, r = m->grid->dp.rank;
  long long per = (bk->hi - bk->lo) / d, before = 0;
  for (int k = 0; k < b; k++) before += (m->buckets[k].hi - m->buckets[k].lo) / d;
  *lo = bk->lo + r * per;
  *hi = *lo + per;
  *state = before;
}

static void reset_buckets(ptdp_gpt *m)
{
  for (int b = 0; b < m->nbuckets; b++) {
    m->buckets[b].remaining = m->buckets[b].nparams;
    m->buckets[b].started = 0;
    m->buckets[b].req = PTDP_COMM_REQ_NULL;
  }
}

/* Start bucket b's data-parallel reduction (after summing its SP-partial gradients over TP). */
static int start_bucket(ptdp_optimizer *o, int b)
{
  ptdp_gpt *m = o->model;
  ptdp_grid *g = m->grid;
  ptdp_bucket *bk = &m->buckets[b];
  for (int i = 0; i < m->nparams; i++) {
    const ptdp_param *p = &m->params[i];
    if (p->bucket == b && p->sp_partial)
      PTDP_CALL(ptdp_comm_allreduce_sum(&g->tp, m->grad + p->offset, (size_t)(p->rows * p->cols), PTDP_TAG_GRAD));
  }
  bk->started = 1;
  if (g->dp.size == 1) return 0;
  if (dist_on(o)) {
    long long lo, hi, st;
    shard_of(o, b, &lo, &hi, &st);
    return ptdp_comm_ireduce_scatter(&g->dp, m->grad + bk->lo, o->buf + st, (size_t)(hi - lo), PTDP_TAG_GRAD, &bk->req);
  }
  return ptdp_comm_iallreduce_sum(&g->dp, m->grad + bk->lo, (size_t)(bk->hi - bk->lo), PTDP_TAG_GRAD, &bk->req);
}

static int on_grads_ready(void *ctx, int first, int count)
{
  ptdp_optimizer *o = ctx;
  ptdp_gpt *m = o->model;
  for (int i = first; i < first + count; i++) {
    ptdp_bucket *bk = &m->buckets[m->params[i].bucket];
    if (--bk->remaining == 0 && !bk->late && !bk->started) PTDP_CALL(start_bucket(o, m->params[i].bucket));
  }
  return 0;
}

int ptdp_optimizer_create(ptdp_optimizer *o, const ptdp_optim_config *cfg, ptdp_gpt *model)
{
  memset(o, 0, sizeof *o);
  o->cfg = *cfg;
  o->model = model;
  const int d = dist_on(o) ? model->grid->dp.size : 1;
  size_t ns = (size_t)(model->nalloc / d);
  PTDP_CALL(model->be->alloc(model->be, (void **)&o->m, ns * sizeof(float)));
  PTDP_CALL(model->be->alloc(model->be, (void **)&o->v, ns * sizeof(float)));
  if (dist_on(o)) PTDP_CALL(model->be->alloc(model->be, (void **)&o->buf, ns * sizeof(float)));
  o->state_bytes = 2 * ns * sizeof(float);
  model->grads_ready = on_grads_ready;
  model->grads_ready_ctx = o;
  reset_buckets(model);
  return 0;
}

void ptdp_optimizer_destroy(ptdp_optimizer *o)
{
  if (o->model) {
    o->model->grads_ready = NULL;
    o->model->be->free(o->model->be, o->m);
    o->model->be->free(o->model->be, o->v);
    o->model->be->free(o->model->be, o->buf);
  }
  memset(o, 0, sizeof *o);
}

int ptdp_optimizer_sync(ptdp_optimizer *o)
{
  ptdp_gpt *m = o->model;
  ptdp_grid *g = m->grid;
  /* the tied embedding: sum the first and last stage's copies, then its bucket */
  int we = m->wte_index >= 0 ? m->wte_index : m->wte_copy_index;
  if (we >= 0 && m->p > 1 && g->emb.size > 1) {
    const ptdp_param *p = &m->params[we];
    PTDP_CALL(ptdp_comm_allreduce_sum(&g->emb, m->grad + p->offset, (size_t)(p->rows * p->cols), PTDP_TAG_EMBED));
  }
  for (int b = 0; b < m->nbuckets; b++)
    if (!m->buckets[b].started) PTDP_CALL(start_bucket(o, b));
  double t0 = MPI_Wtime();
  for (int b = 0; b < m->nbuckets; b++) PTDP_CALL(ptdp_comm_wait(&g->dp, &m->buckets[b].req));
  o->wait_seconds = MPI_Wtime() - t0;
  if (g->dp.size > 1)
    for (int b = 0; b < m->nbuckets; b++) {
      long long lo, hi, st;
      shard_of(o, b, &lo, &hi, &st);
      if (dist_on(o)) PTDP_CALL(m->be->copy(m->be, m->grad + lo, o->buf + st, (size_t)(hi - lo) * sizeof(float)));
      PTDP_CALL(m->be->scale(m->be, m->grad + lo, 1.0f / (float)g->dp.size, (size_t)(hi - lo)));
    }
  reset_buckets(m);
  return 0;
}

/* Sum of squares of the gradient elements in [lo, hi) that this rank counts: TP-replicated
 * tensors on TP rank 0 only, the last stage's embedding copy never. */
static double counted_sumsq(const ptdp_optimizer *o, long long lo, long long hi)
{
  const ptdp_gpt *m = o->model;
  double s = 0;
  for (int i = 0; i < m->nparams; i++) {
    const ptdp_param *p = &m->params[i];
    if (p->tied_copy || (p->tp_replicated && m->tp_rank != 0)) continue;
    long long a = p->offset > lo ? p->offset : lo, b = p->offset + p->rows * p->cols;
    b = b < hi ? b : hi;
    if (b > a) s += m->be->sumsq(m->be, m->grad + a, (size_t)(b - a));
  }
  return s;
}

static int adam_range(ptdp_optimizer *o, long long lo, long long hi, long long state, double lr)
{
  ptdp_gpt *m = o->model;
  const ptdp_optim_config *c = &o->cfg;
  for (int i = 0; i < m->nparams; i++) {
    const ptdp_param *p = &m->params[i];
    long long a = p->offset > lo ? p->offset : lo, b = p->offset + p->rows * p->cols;
    b = b < hi ? b : hi;
    if (b <= a) continue;
    PTDP_CALL(m->be->adamw(m->be, m->param + a, m->grad + a, o->m + state + (a - lo), o->v + state + (a - lo),
                           (size_t)(b - a), (float)lr, (float)c->beta1, (float)c->beta2, (float)c->eps,
                           p->no_decay ? 0.0f : (float)c->wd, o->step));
  }
  return 0;
}

int ptdp_optimizer_update(ptdp_optimizer *o, double lr, double *grad_norm)
{
  ptdp_gpt *m = o->model;
  ptdp_grid *g = m->grid;
  double ss = 0;
  for (int b = 0; b < m->nbuckets; b++) {
    long long lo, hi, st;
    shard_of(o, b, &lo, &hi, &st);
    ss += counted_sumsq(o, lo, hi);
  }
  PTDP_CALL(ptdp_comm_allreduce_sum_f64(&g->mp, &ss, 1, PTDP_TAG_MISC));
  if (dist_on(o)) PTDP_CALL(ptdp_comm_allreduce_sum_f64(&g->dp, &ss, 1, PTDP_TAG_MISC));
  double norm = sqrt(ss);
  *grad_norm = norm;
  PTDP_CHECK_LOCAL(isfinite(norm), "the gradient norm is not finite (%g)", norm);
  float coeff = 1.0f;
  if (o->cfg.clip > 0 && o->cfg.clip / (norm + 1e-6) < 1.0) coeff = (float)(o->cfg.clip / (norm + 1e-6));
  o->step++;
  for (int b = 0; b < m->nbuckets; b++) {
    long long lo, hi, st;
    shard_of(o, b, &lo, &hi, &st);
    if (coeff < 1.0f) PTDP_CALL(m->be->scale(m->be, m->grad + lo, coeff, (size_t)(hi - lo)));
    PTDP_CALL(adam_range(o, lo, hi, st, lr));
    if (dist_on(o)) /* in place: this rank's shard sits at its block of the bucket */
      PTDP_CALL(ptdp_comm_allgather(&g->dp, m->param + lo, m->param + m->buckets[b].lo, (size_t)(hi - lo), PTDP_TAG_PARAM));
  }
  return 0;
}

int ptdp_optimizer_step(ptdp_optimizer *o, double lr, double *grad_norm)
{
  PTDP_CALL(ptdp_optimizer_sync(o));
  return ptdp_optimizer_update(o, lr, grad_norm);
}
