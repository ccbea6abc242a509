/* AdamW and clipping over the distributed module's shards: see include/ptdp/optimizer.h. */
#include "ptdp/optimizer.h"

#include "ptdp/error.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int ptdp_optimizer_create(ptdp_optimizer *o, const ptdp_optim_config *cfg, ptdp_gpt *model, ptdp_ddp *ddp,
                          ptdp_master *master)
{
  memset(o, 0, sizeof *o);
  o->cfg = *cfg;
  o->model = model;
  o->ddp = ddp;
  o->master = master;
  const int none = PTDP_PLAN_NONE;
  o->m = ptdp_memory_find(&model->mem, PTDP_BUF_ADAM_M, none, none, none, 0);
  o->v = ptdp_memory_find(&model->mem, PTDP_BUF_ADAM_V, none, none, none, 0);
  PTDP_CHECK_INTERNAL(o->m && o->v, "the memory plan has no optimizer state");
  o->state_bytes = 2 * (size_t)ptdp_shard_state_elems(&model->params.layout, ddp->distributed, model->grid->dp.size) *
                   sizeof(float);
  if (model->cfg.dtype != PTDP_F32) /* the master weights: sharded like the moments, or whole */
    o->state_bytes += master->sharded ? o->state_bytes / 2 : (size_t)model->params.layout.total * sizeof(float);
  ptdp_grad_scaler_none(&o->scaler);
  if (model->be->adamw_many && model->params.n > 0) {
    o->ranges = malloc((size_t)model->params.n * sizeof *o->ranges);
    if (!o->ranges) return PTDP_FAIL(PTDP_ERR_MEM, "the optimizer's table of %d tensors: out of memory", model->params.n);
  }
  return 0;
}

void ptdp_optimizer_destroy(ptdp_optimizer *o)
{
  free(o->ranges);
  memset(o, 0, sizeof *o);
}

/* The gradient ranges of shard s that this rank counts in the norm, appended to x, n from *k on
 * (room for nparams more); returns how many. */
static int counted_ranges(const ptdp_optimizer *o, const ptdp_shard *s, const float **x, size_t *n, int k)
{
  const ptdp_gpt *m = o->model;
  const int k0 = k;
  for (int i = 0; i < m->params.n; i++) {
    const ptdp_param_info *p = &m->params.table[i];
    if (p->tied_copy || (p->tp_replicated && m->tp_rank != 0)) continue;
    const long long off = m->params.layout.offset[i];
    long long a = off > s->lo ? off : s->lo, b = off + ptdp_param_local_elems(p);
    b = b < s->hi ? b : s->hi;
    if (b > a) x[k] = m->params.grad + a, n[k++] = (size_t)(b - a);
  }
  return k - k0;
}

/* This rank's sum of squares of the gradients over the shards of the nb buckets: each range's sum
 * in double, added up per shard, the shards' sums added in order (the same bits whether the
 * backend sums the ranges one by one or, with sumsq_many, with one wait for all). */
static int counted_sumsq(const ptdp_optimizer *o, int nb, double *ss)
{
  ptdp_backend *be = o->model->be;
  const size_t most = (size_t)nb * (size_t)o->model->params.n + 1;
  const float **x = malloc(most * sizeof *x);
  size_t *n = malloc(most * sizeof *n);
  int *per = malloc(((size_t)nb + 1) * sizeof *per);
  double *sq = malloc(most * sizeof *sq);
  int rc = x && n && per && sq ? PTDP_OK : PTDP_ERR_MEM;
  if (rc == PTDP_OK) {
    int k = 0;
    for (int b = 0; b < nb; b++) {
      ptdp_shard s;
      ptdp_ddp_shard(o->ddp, b, &s);
      per[b] = counted_ranges(o, &s, x, n, k);
      k += per[b];
    }
    if (be->sumsq_many) {
      rc = be->sumsq_many(be, x, n, k, sq);
    } else {
      for (int i = 0; i < k; i++) sq[i] = be->sumsq(be, x[i], n[i]);
    }
    *ss = 0;
    for (int b = 0, i = 0; rc == PTDP_OK && b < nb; b++) {
      double sum = 0;
      for (int j = 0; j < per[b]; j++) sum += sq[i++];
      *ss += sum;
    }
  }
  free(x);
  free(n);
  free(per);
  free(sq);
  if (rc == PTDP_ERR_MEM) PTDP_FAIL(PTDP_ERR_MEM, "the gradient norm's %zu ranges: out of memory", most);
  return rc;
}

/* AdamW on the parameters overlapping shard s, from the gradients times coeff (the clipping
 * factor, 1 for none); moments at s->state.  With the backend's adamw_many, one call for the
 * shard's tensors (the gradients left unscaled); else scale, then adamw per tensor: the same bits.
 * *copied: adamw_many also wrote the shard's 16-bit weights (the copy back, convert's bits), where
 * they are this rank's to convert (16-bit storage; the master sharded, or no DP all-gather of fp32
 * weights after the step). */
static int adam_shard(ptdp_optimizer *o, const ptdp_shard *s, double lr, float coeff, int *copied)
{
  ptdp_gpt *m = o->model;
  const ptdp_optim_config *c = &o->cfg;
  const int many = m->be->adamw_many && o->ranges;
  const int copy16 = many && m->params.wt != (void *)m->params.fp32 && (o->master->sharded || !o->ddp->distributed);
  int k = 0;
  *copied = copy16;
  if (!many && coeff < 1.0f) PTDP_CALL(m->be->scale(m->be, m->params.grad + s->lo, coeff, (size_t)(s->hi - s->lo)));
  for (int i = 0; i < m->params.n; i++) {
    const ptdp_param_info *p = &m->params.table[i];
    const long long off = m->params.layout.offset[i];
    long long a = off > s->lo ? off : s->lo, b = off + ptdp_param_local_elems(p);
    b = b < s->hi ? b : s->hi;
    if (b <= a) continue;
    const long long st = s->state + (a - s->lo);
    float *w = o->master->sharded ? o->master->shards + st : m->params.fp32 + a; /* fp32: the weights, else their master */
    const float wd = p->weight_decay ? (float)c->wd : 0.0f;
    if (many) {
      const ptdp_adamw_range r = {w, m->params.grad + a, o->m + st, o->v + st, (size_t)(b - a), wd,
                                  copy16 ? (char *)m->params.wt + (size_t)a * m->es : NULL};
      o->ranges[k++] = r;
    } else {
      PTDP_CALL(m->be->adamw(m->be, w, m->params.grad + a, o->m + st, o->v + st, (size_t)(b - a), (float)lr,
                             (float)c->beta1, (float)c->beta2, (float)c->eps, wd, o->step));
    }
  }
  if (many && k > 0)
    PTDP_CALL(m->be->adamw_many(m->be, o->ranges, k, m->cfg.dtype, coeff < 1.0f ? coeff : 1.0f, (float)lr,
                                (float)c->beta1, (float)c->beta2, (float)c->eps, o->step));
  return 0;
}

/* Multiply this rank's gradient shards by 1 / scale and tell whether any rank saw inf or NaN
 * (over the model-parallel and the data-parallel groups). */
static int unscale_and_check(ptdp_optimizer *o, int *found)
{
  ptdp_gpt *m = o->model;
  ptdp_grid *g = m->grid;
  const float inv = (float)(1.0 / o->scaler.scale);
  double any = 0;
  for (int b = 0; b < m->params.layout.nbuckets; b++) {
    ptdp_shard s;
    ptdp_ddp_shard(o->ddp, b, &s);
    int f = 0;
    PTDP_CALL(m->be->unscale_check(m->be, m->params.grad + s.lo, (size_t)(s.hi - s.lo), inv, &f));
    any = f ? 1 : any;
  }
  /* over DP too, also where the replicas hold the same reduced gradients: one double buys the
   * certainty that every replica skips the same steps (an inf written after the reduction, as
   * debug-inject-inf does, reaches one replica only) */
  PTDP_CALL(ptdp_comm_allreduce_max_f64(&g->mp, &any, 1, PTDP_TAG_MISC));
  PTDP_CALL(ptdp_comm_allreduce_max_f64(&g->dp, &any, 1, PTDP_TAG_MISC));
  *found = any > 0;
  return 0;
}

int ptdp_optimizer_update(ptdp_optimizer *o, double lr, double *grad_norm, int *skipped)
{
  ptdp_gpt *m = o->model;
  ptdp_grid *g = m->grid;
  const int nb = m->params.layout.nbuckets;
  *skipped = 0;
  if (ptdp_grad_scaler_active(&o->scaler)) {
    int found = 0;
    PTDP_CALL(unscale_and_check(o, &found));
    ptdp_grad_scaler_update(&o->scaler, found);
    if (found) {
      *skipped = 1;
      *grad_norm = 0.0 / 0.0;
      return 0;
    }
  }
  double ss = 0;
  PTDP_CALL(counted_sumsq(o, nb, &ss));
  PTDP_CALL(ptdp_comm_allreduce_sum_f64(&g->mp, &ss, 1, PTDP_TAG_MISC));
  if (o->ddp->distributed) PTDP_CALL(ptdp_comm_allreduce_sum_f64(&g->dp, &ss, 1, PTDP_TAG_MISC));
  double norm = sqrt(ss);
  *grad_norm = norm;
  PTDP_CHECK_LOCAL(isfinite(norm), "the gradient norm is not finite (%g)", norm);
  float coeff = 1.0f;
  if (o->cfg.clip > 0 && o->cfg.clip / (norm + 1e-6) < 1.0) coeff = (float)(o->cfg.clip / (norm + 1e-6));
  o->step++;
  for (int b = 0; b < nb; b++) {
    ptdp_shard s;
    ptdp_ddp_shard(o->ddp, b, &s);
    int copied = 0;
    PTDP_CALL(adam_shard(o, &s, lr, coeff, &copied));
    PTDP_CALL(ptdp_master_step_done(o->master, b, copied)); /* every replica's weights of the bucket */
  }
  return 0;
}
