/* Data-parallel gradient synchronisation: see include/ptdp/ddp.h. */
#include "ptdp/ddp.h"

#include "ptdp/error.h"

#include <stdlib.h>
#include <string.h>

void ptdp_ddp_shard(const ptdp_ddp *o, int b, ptdp_shard *s)
{
  const ptdp_grid *g = o->model->grid;
  ptdp_shard_of(&o->model->params.layout, b, o->distributed, g->dp.size, g->dp.rank, s);
}

static void reset_buckets(ptdp_ddp *o)
{
  const ptdp_grad_layout *L = &o->model->params.layout;
  for (int b = 0; b < L->nbuckets; b++) {
    o->remaining[b] = L->buckets[b].nparams;
    o->started[b] = 0;
    o->req[b] = PTDP_COMM_REQ_NULL;
  }
}

/* Start bucket b's data-parallel reduction (after summing its SP-partial gradients over TP). */
static int start_bucket(ptdp_ddp *o, int b)
{
  ptdp_gpt *m = o->model;
  ptdp_grid *g = m->grid;
  const ptdp_bucket_range *bk = &m->params.layout.buckets[b];
  for (int i = 0; i < m->params.n; i++) {
    const ptdp_param_info *p = &m->params.table[i];
    if (m->params.layout.bucket[i] == b && p->sp_partial)
      PTDP_CALL(ptdp_comm_allreduce_sum(&g->tp, ptdp_gpt_grad_data(m, i), (size_t)ptdp_param_local_elems(p),
                                        PTDP_TAG_GRAD));
  }
  o->started[b] = 1;
  if (g->dp.size == 1) return 0;
  if (o->distributed) {
    ptdp_shard s;
    ptdp_ddp_shard(o, b, &s);
    return ptdp_comm_ireduce_scatter(&g->dp, m->params.grad + bk->lo, o->grad_shard + s.state, (size_t)(s.hi - s.lo),
                                     PTDP_TAG_GRAD, &o->req[b]);
  }
  return ptdp_comm_iallreduce_sum(&g->dp, m->params.grad + bk->lo, (size_t)(bk->hi - bk->lo), PTDP_TAG_GRAD, &o->req[b]);
}

static int on_grads_ready(void *ctx, int param)
{
  ptdp_ddp *o = ctx;
  const ptdp_grad_layout *L = &o->model->params.layout;
  const int b = L->bucket[param];
  if (--o->remaining[b] == 0 && !L->buckets[b].late && !o->started[b]) PTDP_CALL(start_bucket(o, b));
  return 0;
}

int ptdp_ddp_create(ptdp_ddp *o, ptdp_gpt *model, int distributed_optimizer)
{
  memset(o, 0, sizeof *o);
  o->model = model;
  o->distributed = distributed_optimizer && model->grid->dp.size > 1;
  const int nb = model->params.layout.nbuckets > 0 ? model->params.layout.nbuckets : 1;
  PTDP_CALLOC(o->remaining, nb, sizeof *o->remaining);
  PTDP_CALLOC(o->started, nb, sizeof *o->started);
  PTDP_CALLOC(o->req, nb, sizeof *o->req);
  if (o->distributed) {
    o->grad_shard = ptdp_memory_find(&model->mem, PTDP_BUF_GRAD_SHARD, PTDP_PLAN_NONE, PTDP_PLAN_NONE, PTDP_PLAN_NONE, 0);
    PTDP_CHECK_INTERNAL(o->grad_shard, "the memory plan has no gradient shard buffer");
  }
  ptdp_gpt_on_grads_ready(model, on_grads_ready, o);
  reset_buckets(o);
  return 0;
}

void ptdp_ddp_destroy(ptdp_ddp *o)
{
  if (o->model) ptdp_gpt_on_grads_ready(o->model, NULL, NULL);
  free(o->remaining);
  free(o->started);
  free(o->req);
  memset(o, 0, sizeof *o);
}

int ptdp_ddp_sync(ptdp_ddp *o)
{
  ptdp_gpt *m = o->model;
  ptdp_grid *g = m->grid;
  const ptdp_grad_layout *L = &m->params.layout;
  /* the tied embedding: sum the first and last stage's copies, then its bucket (untied: two tensors) */
  const ptdp_gpt_param_ref *we = m->wte.index >= 0 ? &m->wte : &m->output; /* the copy, if tied */
  if (we->index >= 0 && m->p > 1 && g->emb.size > 1 && !m->cfg.arch.untie)
    PTDP_CALL(ptdp_comm_allreduce_sum(&g->emb, we->g, (size_t)ptdp_param_local_elems(&m->params.table[we->index]),
                                      PTDP_TAG_EMBED));
  for (int b = 0; b < L->nbuckets; b++)
    if (!o->started[b]) PTDP_CALL(start_bucket(o, b));
  double t0 = MPI_Wtime();
  for (int b = 0; b < L->nbuckets; b++) PTDP_CALL(ptdp_comm_wait(&g->dp, &o->req[b]));
  o->wait_seconds = MPI_Wtime() - t0;
  if (g->dp.size > 1)
    for (int b = 0; b < L->nbuckets; b++) {
      ptdp_shard s;
      ptdp_ddp_shard(o, b, &s);
      if (o->distributed)
        PTDP_CALL(m->be->copy(m->be, m->params.grad + s.lo, o->grad_shard + s.state, (size_t)(s.hi - s.lo) * sizeof(float)));
      PTDP_CALL(m->be->scale(m->be, m->params.grad + s.lo, 1.0f / (float)g->dp.size, (size_t)(s.hi - s.lo)));
    }
  reset_buckets(o);
  return 0;
}
