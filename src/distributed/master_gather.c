/* The distributed optimizer's all-gathers over the data-parallel group: the updated weights
 * after a step, the 16-bit weights from sharded masters, the fp32 weights whole.  See
 * include/ptdp/master.h. */
#include "ptdp/master.h"

#include "ptdp/error.h"

int ptdp_master_allgather_bucket(ptdp_comm *dp, const ptdp_grad_layout *L, int bucket, float *base)
{
  ptdp_shard s;
  ptdp_shard_of(L, bucket, 1, dp->size, dp->rank, &s);
  return ptdp_comm_allgather(dp, base + s.lo, base + L->buckets[bucket].lo, (size_t)(s.hi - s.lo), PTDP_TAG_PARAM);
}

int ptdp_master_gather_shard(ptdp_master *w, int bucket)
{
  ptdp_gpt *m = w->model;
  ptdp_shard s;
  ptdp_master_shard(w, bucket, &s);
  const ptdp_bucket_range *bk = &m->params.layout.buckets[bucket];
  char *wt = m->params.wt;
  return ptdp_comm_allgather_t(&m->grid->dp, wt + (size_t)s.lo * m->es, wt + (size_t)bk->lo * m->es,
                               (size_t)(s.hi - s.lo), m->cfg.dtype, PTDP_TAG_PARAM);
}

int ptdp_master_sync_shard(ptdp_master *w, int bucket)
{
  ptdp_gpt *m = w->model;
  PTDP_CHECK_INTERNAL(w->sharded, "ptdp_master_sync_shard on whole master weights");
  ptdp_shard s;
  ptdp_master_shard(w, bucket, &s);
  char *wt = m->params.wt;
  PTDP_CALL(m->be->convert(m->be, wt + (size_t)s.lo * m->es, m->cfg.dtype, w->shards + s.state, PTDP_F32,
                           (size_t)(s.hi - s.lo)));
  return ptdp_master_gather_shard(w, bucket);
}

int ptdp_master_sync_all(ptdp_master *w)
{
  ptdp_gpt *m = w->model;
  if (!w->sharded) return ptdp_gpt_sync_weights(m, 0, m->params.layout.total);
  for (int b = 0; b < m->params.layout.nbuckets; b++) PTDP_CALL(ptdp_master_sync_shard(w, b));
  return 0;
}

int ptdp_master_step_done(ptdp_master *w, int bucket, int copied)
{
  ptdp_gpt *m = w->model;
  const ptdp_bucket_range *bk = &m->params.layout.buckets[bucket];
  if (w->sharded) /* the 16-bit weights of the shard, all-gathered (Megatron's way) */
    return copied ? ptdp_master_gather_shard(w, bucket) : ptdp_master_sync_shard(w, bucket);
  if (w->distributed) { /* in place: this rank's shard sits at its block of the bucket */
    PTDP_CALL(ptdp_master_allgather_bucket(&m->grid->dp, &m->params.layout, bucket, m->params.fp32));
    return ptdp_gpt_sync_weights(m, bk->lo, bk->hi);
  }
  return copied ? 0 : ptdp_gpt_sync_weights(m, bk->lo, bk->hi); /* the shard is the whole bucket */
}

int ptdp_master_gather(ptdp_master *w, float *flat)
{
  ptdp_gpt *m = w->model;
  const ptdp_grad_layout *L = &m->params.layout;
  if (!w->sharded) return m->be->copy(m->be, flat, m->params.fp32, (size_t)L->total * sizeof(float));
  for (int b = 0; b < L->nbuckets; b++) {
    ptdp_shard s;
    ptdp_master_shard(w, b, &s);
    PTDP_CALL(m->be->copy(m->be, flat + s.lo, w->shards + s.state, (size_t)(s.hi - s.lo) * sizeof(float)));
    PTDP_CALL(ptdp_master_allgather_bucket(&m->grid->dp, L, b, flat));
  }
  return 0;
}
