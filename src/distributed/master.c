/* The distributed optimizer's fp32 weights, their shards and their initialisation: see
 * include/ptdp/master.h.  The collectives are in master_gather.c. */
#include "ptdp/master.h"

#include "ptdp/error.h"

#include <stdlib.h>
#include <string.h>

int ptdp_master_create(ptdp_master *w, ptdp_gpt *model, int distributed_optimizer)
{
  memset(w, 0, sizeof *w);
  w->model = model;
  w->distributed = distributed_optimizer && model->grid->dp.size > 1;
  w->sharded = ptdp_plan_master_sharded(&model->plan.cfg); /* the plan sized master_params so */
  PTDP_CHECK_INTERNAL(!w->sharded || w->distributed, "sharded master weights without the distributed optimizer");
  if (w->sharded) {
    const int none = PTDP_PLAN_NONE;
    w->shards = ptdp_memory_find(&model->mem, PTDP_BUF_MASTER_PARAMS, none, none, none, 0);
    PTDP_CHECK_INTERNAL(w->shards, "the memory plan has no master weights");
  } else {
    PTDP_CHECK_INTERNAL(model->params.fp32, "the model has no fp32 weights");
  }
  return 0;
}

void ptdp_master_destroy(ptdp_master *w) { memset(w, 0, sizeof *w); }

void ptdp_master_shard(const ptdp_master *w, int bucket, ptdp_shard *s)
{
  const ptdp_gpt *m = w->model;
  ptdp_shard_of(&m->params.layout, bucket, 1, m->grid->dp.size, m->grid->dp.rank, s);
}

float *ptdp_master_element(const ptdp_master *w, int i, long long k)
{
  const ptdp_gpt *m = w->model;
  const long long flat = m->params.layout.offset[i] + k;
  if (!w->sharded) return m->params.fp32 + flat;
  ptdp_shard s;
  ptdp_master_shard(w, m->params.layout.bucket[i], &s);
  return w->shards + s.state + (flat - s.lo);
}

/* Parameter i's initial values (host, fp32) into this rank's master shards: the pieces of it
 * inside each shard of its bucket that this rank owns. */
static int init_shard(ptdp_master *w, int i, const float *host)
{
  const ptdp_gpt *m = w->model;
  ptdp_shard s;
  ptdp_master_shard(w, m->params.layout.bucket[i], &s);
  const long long off = m->params.layout.offset[i], n = ptdp_param_local_elems(&m->params.table[i]);
  const long long a = off > s.lo ? off : s.lo, b = off + n < s.hi ? off + n : s.hi;
  if (b <= a) return 0;
  return m->be->to_device(m->be, w->shards + s.state + (a - s.lo), host + (a - off), (size_t)(b - a) * sizeof(float));
}

int ptdp_master_init(ptdp_master *w)
{
  ptdp_gpt *m = w->model;
  if (!w->sharded) return ptdp_gpt_init_params(m);
  /* each rank sets its master shards; the weights come from them */
  float *host;
  PTDP_ALLOC(host, (size_t)ptdp_gpt_max_param_elems(m) * sizeof(float));
  int err = 0;
  for (int i = 0; i < m->params.n && !err; i++) {
    ptdp_gpt_init_values(m, i, host);
    err = init_shard(w, i, host);
  }
  free(host);
  return err ? err : ptdp_master_sync_all(w);
}
