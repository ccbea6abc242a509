/* After the pipeline (ptdp/sim.h): the data-parallel gradient reduction, the tied embedding's
 * all-reduce, the optimizer step, and the distributed optimizer's parameter all-gather.
 *
 * The DP reduction, as Megatron runs it:
 *   - not overlapped (overlap-grad-reduce false, Megatron's default): one collective over the
 *     stage's whole gradient buffer once its last backward has ended, all of it exposed;
 *   - overlapped (overlap-grad-reduce; ptdp-train always): the buffer in buckets of
 *     ddp-bucket-size elements, per model chunk; a bucket's collective starts when its
 *     gradients are ready, which is during the chunk's last backward item (the replay's start
 *     and end; the chunk's buckets ready evenly through it, the last at its end), and the
 *     buckets go one after another on one communication stream.  What runs past the stage's
 *     last item is exposed; what ran during the backward is hidden, and still costs that
 *     backward the SMs it held (ptdp_sim_overlap_cost).  Each bucket pays its own latencies.
 *   - with the distributed optimizer: a reduce-scatter of the gradients (as above), the step on
 *     the 1/d shard, then an all-gather of the 16-bit parameters; with overlap-param-gather it
 *     runs bucket by bucket ahead of the next iteration's first forward on the stage, which
 *     needs bucket j when it reaches it ((j - 1) / nb of the way through the item) and starts
 *     when the stage's first input arrives (the replay's start of its first item): what the
 *     gather has not done by then is exposed.  The later chunks' buckets have the first
 *     chunk's forward to hide behind and are taken as hidden. */
#include "ptdp/error.h"
#include "sim_internal.h"

#include <math.h>

static double maxd(double x, double y) { return x > y ? x : y; }

/* Bytes the optimizer step moves per parameter held (Megatron's mixed-precision optimizer):
 *   fp16 (2021): copy the 16-bit gradients into fp32 main gradients (read 2, write 4), unscale
 *     and check for inf/NaN in place (read 4, write 4);
 *   the gradient norm (read 4), Adam's update (read p, g, m, v; write p, m, v: 28 in fp32),
 *   the fp32 master weights copied to the 16-bit model (read 4, write 2);
 *   zeroing the gradient buffer for the next iteration (write 2 or 4);
 *   before the DP all-reduce, the whole gradient buffer divided by d in place (read and write
 *   2 or 4), whatever d (Megatron's DistributedDataParallel.allreduce_gradients, d = 1 too).
 * fp32 (the CPU trainer): norm 4 + Adam 28 + zero 4.  With the distributed optimizer every step
 * but the zeroing runs on the rank's 1/d shard. */
static double optimizer_bytes(const ptdp_model_keys *a, int d)
{
  const int half = a->fp16 || a->bf16;
  const double zero = a->fp16 ? 2 : 4;
  const double shard = half ? (a->fp16 ? 6 + 8 : 0) + 4 + 28 + 6 : 4 + 28;
  const double scale = half ? 2 * zero : 0;
  return zero + scale + (a->use_distributed_optimizer ? shard / d : shard);
}

double ptdp_sim_bucket_finish(const ptdp_sim_hw *hw, const ptdp_sim_group *g, ptdp_sim_coll kind,
                              ptdp_sim_allreduce algo, double np, double bucket, double elem_bytes, int v,
                              const double *t0, const double *t1, double *busy)
{
  double free_at = -INFINITY, sum = 0;
  const double per_chunk = np / v;
  const int nb = (int)ceil(per_chunk / bucket);
  int order[PTDP_SIM_MAX_CHUNKS]; /* the chunks by when their last backward ends (the last chunk first) */
  for (int c = 0; c < v; c++) {
    int i = c;
    for (; i > 0 && t1[order[i - 1]] > t1[c]; i--) order[i] = order[i - 1];
    order[i] = c;
  }
  for (int k = 0; k < v; k++) {
    const int c = order[k];
    for (int j = 1; j <= nb; j++) {
      const double elems = j < nb ? bucket : per_chunk - (nb - 1) * bucket;
      const double ready = t0[c] + (t1[c] - t0[c]) * j / nb;
      const double cost = ptdp_sim_collective_time(hw, g, kind, algo, elems * elem_bytes, NULL);
      free_at = maxd(free_at, ready) + cost;
      sum += cost;
    }
  }
  if (busy) *busy = sum;
  return free_at;
}

double ptdp_sim_gather_exposed(const ptdp_sim_hw *hw, const ptdp_sim_group *g, double np, double bucket,
                               double elem_bytes, int v, double slack, double fwd, double *busy)
{
  const double per_chunk = np / v;
  const int nb = (int)ceil(per_chunk / bucket);
  double done = 0, exposed = 0;
  for (int j = 1; j <= nb; j++) {
    const double elems = j < nb ? bucket : per_chunk - (nb - 1) * bucket;
    done += ptdp_sim_collective_time(hw, g, PTDP_SIM_COLL_ALLGATHER, PTDP_SIM_ALLREDUCE_RING, elems * elem_bytes, NULL);
    exposed = maxd(exposed, done - slack - fwd * (j - 1) / nb);
  }
  if (busy) *busy = done * v; /* every chunk gathers as much */
  return exposed;
}

int ptdp_sim_overlaps_grad_reduce(const ptdp_sim_options *o)
{
  return o->overlap_grad_reduce || o->fusion != PTDP_SIM_FUSION_MEGATRON;
}

/* One stage's DP reduction: exposed and hidden time after its last item; gathered: the
 * distributed optimizer's parameter all-gather's exposed time (after the step). */
static void dp_reduce(const ptdp_model_keys *a, const ptdp_sim_hw *hw, const ptdp_sim_options *o, const ptdp_sim_group *dg,
                      double np, const ptdp_sim_stage_times *st, double *exposed, double *hidden, double *gathered)
{
  const int half = a->fp16 || a->bf16, distopt = a->use_distributed_optimizer;
  const double e = half ? 2 : 4, gb = a->fp16 ? 2 : 4, bucket = (double)a->ddp_bucket_size;
  const ptdp_sim_coll kind = distopt ? PTDP_SIM_COLL_REDUCE_SCATTER : PTDP_SIM_COLL_ALLREDUCE;
  *exposed = *hidden = *gathered = 0;
  if (dg->n <= 1 || np <= 0) return;
  if (ptdp_sim_overlaps_grad_reduce(o)) {
    double busy = 0;
    const double fin = ptdp_sim_bucket_finish(hw, dg, kind, o->allreduce, np, bucket, gb, st->v, st->bwd_start,
                                              st->bwd_end, &busy);
    *exposed = maxd(0, fin - st->end);
    *hidden = maxd(0, busy - *exposed);
    /* the hidden part still costs the backward it hides behind the SMs it holds */
    *exposed += ptdp_sim_overlap_cost(hw, *hidden);
  } else {
    *exposed = ptdp_sim_collective_time(hw, dg, kind, o->allreduce, np * gb, NULL);
  }
  if (!distopt) return;
  if (o->overlap_param_gather) {
    double busy = 0;
    *gathered = ptdp_sim_gather_exposed(hw, dg, np, bucket, e, st->v, st->first_start, st->first_fwd, &busy);
    *gathered += ptdp_sim_overlap_cost(hw, maxd(0, busy - *gathered));
  } else {
    *gathered = ptdp_sim_collective_time(hw, dg, PTDP_SIM_COLL_ALLGATHER, o->allreduce, np * e, NULL);
  }
}

int ptdp_sim_reductions(const ptdp_model_keys *a, const ptdp_sim_hw *hw, const ptdp_sim_options *o, ptdp_sim_result *r,
                        const double *params, const ptdp_sim_stage_times *st)
{
  const int p = r->p, d = r->d, tp_dp_pp = a->parallel_order == PTDP_ORDER_TP_DP_PP;
  const double gb = a->fp16 ? 2 : 4;
  const ptdp_sim_group dg = ptdp_sim_group_of(hw, d, tp_dp_pp ? r->t : r->t * r->p);
  const ptdp_sim_group eg = ptdp_sim_group_of(hw, 2, (p - 1) * (tp_dp_pp ? r->t * d : r->t));
  r->iteration = 0;
  for (int s = 0; s < p; s++) {
    const double np = params[s];
    double dp = 0, hidden = 0, gather = 0, emb = 0;
    dp_reduce(a, hw, o, &dg, np, &st[s], &dp, &hidden, &gather);
    /* the tied word embedding's two copies (first and last stage) keep their gradients equal;
     * untied (untie-embeddings-and-output-weights) there is nothing to tie */
    if (p > 1 && (s == 0 || s == p - 1) && !a->untie_embeddings_and_output_weights) {
      const double bytes = (double)r->vocab_padded / r->t * a->hidden_size * gb;
      emb = ptdp_sim_collective_time(hw, &eg, PTDP_SIM_COLL_ALLREDUCE, o->allreduce, bytes, NULL);
    }
    const double opt = (o->fusion == PTDP_SIM_FUSION_CPU
                          ? ptdp_sim_cpu_optimizer_time(hw, a->use_distributed_optimizer ? np / d : np)
                          : ptdp_sim_membound_time(hw, np * optimizer_bytes(a, d)));
    const double total = st[s].end + dp + gather + emb + opt;
    if (total > r->iteration) {
      r->iteration = total;
      r->comp[PTDP_SIM_DP] = dp + gather; /* the hidden part beside it */
      r->hidden[PTDP_SIM_DP] = hidden;
      r->comp[PTDP_SIM_EMBEDDING_AR] = emb;
      r->comp[PTDP_SIM_OPTIMIZER] = opt;
    }
  }
  return 0;
}
