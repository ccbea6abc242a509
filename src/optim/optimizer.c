/* AdamW, gradient synchronisation and clipping: see include/ptdp/optimizer.h. */
#include "ptdp/optimizer.h"

#include "ptdp/error.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

double ptdp_lr_at(const ptdp_optim_config *c, long long n)
{
  if (c->warmup > 0 && n <= c->warmup) return c->lr * (double)n / (double)c->warmup;
  if (c->decay_style == 0) return c->lr;
  if (n > c->decay_iters) return c->min_lr;
  double ratio = (double)(n - c->warmup) / (double)(c->decay_iters - c->warmup > 0 ? c->decay_iters - c->warmup : 1);
  double coeff = c->decay_style == 1 ? 1.0 - ratio : 0.5 * (cos(M_PI * ratio) + 1.0);
  return c->min_lr + coeff * (c->lr - c->min_lr);
}

int ptdp_optimizer_create(ptdp_optimizer *o, const ptdp_optim_config *cfg, ptdp_gpt *model)
{
  memset(o, 0, sizeof *o);
  o->cfg = *cfg;
  o->model = model;
  ptdp_comm *dp = &model->grid->dp;
  if (cfg->distributed && dp->size > 1) {
    /* equal contiguous shards of the flat buffer (its length, nalloc, is a multiple of d) */
    long long per = model->nalloc / dp->size;
    o->shard0 = per * dp->rank;
    o->shard1 = o->shard0 + per;
    PTDP_CALL(model->be->alloc(model->be, (void **)&o->buf, (size_t)per * sizeof(float)));
  } else {
    o->shard0 = 0;
    o->shard1 = model->nelem;
  }
  size_t ns = (size_t)(o->shard1 - o->shard0);
  PTDP_CALL(model->be->alloc(model->be, (void **)&o->m, ns * sizeof(float)));
  PTDP_CALL(model->be->alloc(model->be, (void **)&o->v, ns * sizeof(float)));
  o->state_bytes = 2 * ns * sizeof(float);
  return 0;
}

void ptdp_optimizer_destroy(ptdp_optimizer *o)
{
  if (o->model) {
    o->model->be->free(o->model->be, o->m);
    o->model->be->free(o->model->be, o->v);
    o->model->be->free(o->model->be, o->buf);
  }
  memset(o, 0, sizeof *o);
}

/* Steps 1 and 2: TP sums of SP-partial gradients, the tied embedding over its group. */
static int sync_model_parallel(ptdp_optimizer *o)
{
  ptdp_gpt *m = o->model;
  for (int i = 0; i < m->nparams; i++) {
    ptdp_param *p = &m->params[i];
    if (p->sp_partial) PTDP_CALL(ptdp_comm_allreduce_sum(&m->grid->tp, m->grad + p->offset, (size_t)(p->rows * p->cols), PTDP_TAG_GRAD));
  }
  if (m->p > 1 && m->grid->emb.size > 1) {
    int i = m->wte_index >= 0 ? m->wte_index : m->wte_copy_index;
    if (i >= 0) {
      ptdp_param *p = &m->params[i];
      PTDP_CALL(ptdp_comm_allreduce_sum(&m->grid->emb, m->grad + p->offset, (size_t)(p->rows * p->cols), PTDP_TAG_EMBED));
    }
  }
  return 0;
}

/* Sum of squares of the gradient elements in [lo, hi) that this rank counts. */
static double counted_sumsq(const ptdp_optimizer *o, long long lo, long long hi)
{
  const ptdp_gpt *m = o->model;
  double s = 0;
  for (int i = 0; i < m->nparams; i++) {
    const ptdp_param *p = &m->params[i];
    if (p->tied_copy) continue;
    if (p->tp_replicated && m->tp_rank != 0) continue;
    long long a = p->offset > lo ? p->offset : lo, b = p->offset + p->rows * p->cols;
    b = b < hi ? b : hi;
    if (b > a) s += m->be->sumsq(m->be, m->grad + a, (size_t)(b - a));
  }
  return s;
}

static int adam_range(ptdp_optimizer *o, long long lo, long long hi, double lr)
{
  ptdp_gpt *m = o->model;
  const ptdp_optim_config *c = &o->cfg;
  for (int i = 0; i < m->nparams; i++) {
    const ptdp_param *p = &m->params[i];
    long long a = p->offset > lo ? p->offset : lo, b = p->offset + p->rows * p->cols;
    b = b < hi ? b : hi;
    if (b <= a) continue;
    PTDP_CALL(m->be->adamw(m->be, m->param + a, m->grad + a, o->m + (a - o->shard0), o->v + (a - o->shard0),
                           (size_t)(b - a), (float)lr, (float)c->beta1, (float)c->beta2, (float)c->eps,
                           p->no_decay ? 0.0f : (float)c->wd, o->step));
  }
  return 0;
}

int ptdp_optimizer_step(ptdp_optimizer *o, double lr, double *grad_norm)
{
  PTDP_CALL(ptdp_optimizer_sync(o));
  return ptdp_optimizer_update(o, lr, grad_norm);
}

int ptdp_optimizer_sync(ptdp_optimizer *o)
{
  ptdp_gpt *m = o->model;
  ptdp_grid *g = m->grid;
  const long long n = m->nelem;
  const int dist = o->cfg.distributed && g->dp.size > 1;
  PTDP_CALL(sync_model_parallel(o));
  /* step 3: data-parallel average */
  if (g->dp.size > 1) {
    if (dist) {
      long long per = o->shard1 - o->shard0;
      PTDP_CALL(ptdp_comm_reduce_scatter(&g->dp, m->grad, o->buf, (size_t)per, PTDP_TAG_GRAD));
      PTDP_CALL(m->be->copy(m->be, m->grad + o->shard0, o->buf, (size_t)per * sizeof(float)));
    } else {
      PTDP_CALL(ptdp_comm_allreduce_sum(&g->dp, m->grad, (size_t)n, PTDP_TAG_GRAD));
    }
    PTDP_CALL(m->be->scale(m->be, m->grad + o->shard0, 1.0f / (float)g->dp.size, (size_t)(o->shard1 - o->shard0)));
  }
  return 0;
}

int ptdp_optimizer_update(ptdp_optimizer *o, double lr, double *grad_norm)
{
  ptdp_gpt *m = o->model;
  ptdp_grid *g = m->grid;
  const int dist = o->cfg.distributed && g->dp.size > 1;
  /* global norm over TP x PP (and DP shards) */
  double ss = counted_sumsq(o, o->shard0, o->shard1);
  PTDP_CALL(ptdp_comm_allreduce_sum_f64(&g->mp, &ss, 1, PTDP_TAG_MISC));
  if (dist) PTDP_CALL(ptdp_comm_allreduce_sum_f64(&g->dp, &ss, 1, PTDP_TAG_MISC));
  double norm = sqrt(ss);
  *grad_norm = norm;
  PTDP_CHECK_LOCAL(isfinite(norm), "the gradient norm is not finite (%g)", norm);
  if (o->cfg.clip > 0) {
    double coeff = o->cfg.clip / (norm + 1e-6);
    if (coeff < 1.0) PTDP_CALL(m->be->scale(m->be, m->grad + o->shard0, (float)coeff, (size_t)(o->shard1 - o->shard0)));
  }
  o->step++;
  PTDP_CALL(adam_range(o, o->shard0, o->shard1, lr));
  if (dist) {
    /* every DP rank gathers the updated shards: parameters are whole again */
    long long per = o->shard1 - o->shard0;
    PTDP_CALL(m->be->copy(m->be, o->buf, m->param + o->shard0, (size_t)per * sizeof(float)));
    PTDP_CALL(ptdp_comm_allgather(&g->dp, o->buf, m->param, (size_t)per, PTDP_TAG_PARAM));
  }
  return 0;
}
