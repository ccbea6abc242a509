/* One iteration predicted (ptdp/sim.h): the layout, each stage's work items timed from the op
 * lists of layer.c, the pipeline replayed event by event, then the gradient reductions and the
 * optimizer; memory from the plan of ptdp-train. */
#include "ptdp/sim.h"

#include "ptdp/checked.h"
#include "ptdp/error.h"
#include "ptdp/flops.h"
#include "sim_internal.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Ranks beyond a CPU node's cores share them: the iteration is at least the node's work over its
 * cores (busy[p]: each stage's replayed work). */
void ptdp_sim_core_bound(const ptdp_sim_hw *hw, const double *busy, ptdp_sim_result *r)
{
  const double share = ptdp_sim_core_sharing(hw, r->world);
  r->cores_bound = 0;
  if (share <= 1) return;
  double work = 0;
  for (int s = 0; s < r->p; s++) work += busy[s] / r->p;
  work += r->comp[PTDP_SIM_OPTIMIZER] + r->comp[PTDP_SIM_DP] + r->hidden[PTDP_SIM_DP] + r->comp[PTDP_SIM_EMBEDDING_AR];
  r->cores_bound = work * share;
  if (r->cores_bound > r->iteration) r->iteration = r->cores_bound;
}

/* The layout from the keys; errors say what to change. */
static int layout(const ptdp_model_keys *a, const ptdp_sim_options *o, ptdp_sim_result *r, ptdp_schedule_kind *kind)
{
  r->t = (int)a->tensor_model_parallel_size;
  r->p = (int)a->pipeline_model_parallel_size;
  /* t and p are each at most 2^16, so t p can pass an int (65536 x 65536 wrapped to 0 and
   * was reported as a world size not divisible by t x p) */
  long long tp;
  PTDP_CHECK(!ptdp_mul_ll_max(a->tensor_model_parallel_size, a->pipeline_model_parallel_size, INT_MAX, &tp),
             "tensor-model-parallel-size x pipeline-model-parallel-size = %lld x %lld is more ranks than ptdp-sim "
             "models (at most %d)", a->tensor_model_parallel_size, a->pipeline_model_parallel_size, INT_MAX);
  r->world = o->world_size > 0 ? (int)o->world_size : (int)tp;
  PTDP_CALL(ptdp_model_keys_check(a, r->world)); /* the trainer's checks of the model and its layout */
  PTDP_CHECK(!(a->fp16 && a->bf16), "fp16 and bf16 are both set; choose one");
  r->d = (int)(r->world / tp);
  r->gbs = a->global_batch_size ? a->global_batch_size : a->micro_batch_size * r->d;
  r->m = (int)(r->gbs / (a->micro_batch_size * r->d));
  r->v = a->num_layers_per_virtual_pipeline_stage ? (int)(a->num_layers / r->p / a->num_layers_per_virtual_pipeline_stage) : 1;
  *kind = r->v > 1 ? PTDP_SCHED_INTERLEAVED : a->pipeline_schedule;
  if (r->p == 1) *kind = PTDP_SCHED_1F1B;
  PTDP_CALL(ptdp_schedule_validate(*kind, r->p, r->v, r->m));
  r->vocab_padded = ptdp_padded_vocab(a->vocab_size > 0 ? a->vocab_size : PTDP_SIM_DEFAULT_VOCAB,
                                      (int)a->make_vocab_size_divisible_by, r->t);
  return 0;
}

static double sum_fwd(const ptdp_sim_oplist *l, int selective_only)
{
  double s = 0;
  for (int i = 0; i < l->n; i++)
    if (!selective_only || l->op[i].selective) s += l->op[i].fwd;
  return s;
}
static double sum_bwd(const ptdp_sim_oplist *l)
{
  double s = 0;
  for (int i = 0; i < l->n; i++) s += l->op[i].bwd;
  return s;
}
/* Add an op list's time per component (forward, recomputed forward, backward) x times. */
static void tally(const ptdp_sim_oplist *l, double fwd_n, double rec_full_n, double rec_sel_n, double bwd_n, double *comp,
                  double *hidden)
{
  for (int i = 0; i < l->n; i++) {
    const ptdp_sim_op *op = &l->op[i];
    comp[op->comp] += op->fwd * (fwd_n + rec_full_n + (op->selective ? rec_sel_n : 0)) + op->bwd * bwd_n;
    hidden[op->comp] += op->hidden * bwd_n;
  }
}

/* Per stage: the durations of its work items, and its time per component. */
typedef struct {
  double p2p;  /* one message's exposed time */
  double *dur; /* [p n] */
  double *comp, *hidden, *recompute; /* [p x COMPONENTS], [p x COMPONENTS], [p] */
} stage_costs;

static int chunk_recomputed_layers(const ptdp_model_keys *a, int nl)
{
  int n = 0, g0, g1;
  for (int i = 0; i < nl; i++)
    n += ptdp_recompute_group(a->recompute_granularity, a->recompute_method, (int)a->recompute_num_layers, nl, i, &g0, &g1);
  return n;
}

/* Each stage's items: every micro-batch costs the same in a chunk, so a chunk's forward and
 * backward are timed (and tallied, x m) once, then laid on the schedule's order. */
static int stage_durations(const ptdp_model_keys *a, ptdp_schedule_kind kind, ptdp_sim_result *r, stage_costs *sc)
{
  const int p = r->p, v = r->v, m = r->m, n = 2 * m * v, nl = (int)(a->num_layers / p / v);
  const int nrec = chunk_recomputed_layers(a, nl), sel = a->recompute_granularity == PTDP_RECOMPUTE_SELECTIVE;
  const double Lf = sum_fwd(&r->layer, 0), Lb = sum_bwd(&r->layer), Ls = sum_fwd(&r->layer, 1);
  const double rec = nrec * Lf + (sel ? nl * Ls : 0);
  double fwd[PTDP_SIM_MAX_CHUNKS], bwd[PTDP_SIM_MAX_CHUNKS]; /* per chunk; checked below */
  PTDP_CHECK(v <= PTDP_SIM_MAX_CHUNKS, "more than %d model chunks per stage (v = %d) are not simulated",
             PTDP_SIM_MAX_CHUNKS, v);
  for (int s = 0; s < p; s++) {
    double *comp = sc->comp + s * PTDP_SIM_COMPONENTS, *hid = sc->hidden + s * PTDP_SIM_COMPONENTS;
    for (int c = 0; c < v; c++) {
      const int k = c * p + s, first = k == 0, last = k == p * v - 1;
      fwd[c] = nl * Lf + (first ? sum_fwd(&r->embedding, 0) : 0) + (last ? sum_fwd(&r->head, 0) : 0) + (last ? 0 : sc->p2p);
      bwd[c] = nl * Lb + rec + (first ? sum_bwd(&r->embedding) : 0) + (last ? sum_bwd(&r->head) : 0) + (first ? 0 : sc->p2p);
      tally(&r->layer, (double)nl * m, (double)nrec * m, sel ? (double)nl * m : 0, (double)nl * m, comp, hid);
      if (first) tally(&r->embedding, m, 0, 0, m, comp, hid);
      if (last) tally(&r->head, m, 0, 0, m, comp, hid);
      comp[PTDP_SIM_PP] += ((last ? 0 : 1) + (first ? 0 : 1)) * sc->p2p * m;
      sc->recompute[s] += rec * m;
    }
    if (s == 0 || s == p - 1) {
      r->stage_fwd[s == 0 ? 0 : 1] = fwd[0];
      r->stage_bwd[s == 0 ? 0 : 1] = bwd[0];
    }
    ptdp_schedule sch;
    PTDP_CALL(ptdp_schedule_build(kind, s, p, v, m, &sch));
    for (int i = 0; i < n; i++)
      sc->dur[(size_t)s * n + i] = sch.items[i].kind == PTDP_WORK_FORWARD ? fwd[sch.items[i].chunk] : bwd[sch.items[i].chunk];
    ptdp_schedule_free(&sch);
  }
  return 0;
}

/* One pipeline message [b s h]: the t ranks of a stage each send b s h / t over their own
 * NIC share and all-gather the rest over NVLink (scatter/gather, or sequence parallelism, whose
 * messages are already [s/t, b, h]), else each sends the whole [b s h].  Every rank of a node
 * sends at once, so a rank has nics-per-node / gpus-per-node adapters (collective.c). */
static double p2p_time(const ptdp_model_keys *a, const ptdp_sim_hw *hw, const ptdp_sim_options *o, const ptdp_sim_result *r)
{
  if (r->p == 1) return 0;
  const double e = a->fp16 || a->bf16 ? 2 : 4;
  const double bytes = (double)a->micro_batch_size * a->seq_length * a->hidden_size * e;
  const int stride = a->parallel_order == PTDP_ORDER_TP_DP_PP ? r->t * r->d : r->t;
  const ptdp_sim_group pair = ptdp_sim_group_of(hw, 2, stride);
  const int crosses = pair.k > 1;
  double bw = hw->intra_bandwidth, alpha = hw->intra_latency;
  if (crosses) {
    const double nic = hw->nics_per_node / hw->gpus_per_node * hw->inter_bandwidth;
    bw = nic < hw->intra_bandwidth ? nic : hw->intra_bandwidth;
    alpha = hw->inter_latency;
  }
  const int sp = a->sequence_parallel && r->t > 1;
  if (sp) return alpha + bytes / r->t / bw;
  if (o->scatter_gather && r->t > 1 && crosses) {
    const ptdp_sim_group tp = ptdp_sim_group_of(hw, r->t, 1);
    return alpha + bytes / r->t / bw +
           ptdp_sim_collective_time(hw, &tp, PTDP_SIM_COLL_ALLGATHER, o->allreduce, bytes, NULL);
  }
  return alpha + bytes / bw;
}

/* The replay of r's layout (ptdp_sim_run's, done again): for --out's /pipeline/events.  r's op
 * lists must be filled (ptdp_sim_run has run); r itself is not changed. */
int ptdp_sim_pipeline_replay(const ptdp_model_keys *a, const ptdp_sim_hw *hw, const ptdp_sim_options *o,
                             const ptdp_sim_result *r, ptdp_replay *rp)
{
  ptdp_schedule_kind kind;
  ptdp_sim_result *scratch = malloc(sizeof *scratch);
  if (!scratch) return PTDP_FAIL(PTDP_ERR_MEM, "out of memory");
  *scratch = *r;
  int err = layout(a, o, scratch, &kind);
  const int p = r->p, n = 2 * r->m * r->v;
  stage_costs sc = {.p2p = p2p_time(a, hw, o, r)};
  sc.dur = calloc((size_t)p * n, sizeof *sc.dur);
  sc.comp = calloc((size_t)p * PTDP_SIM_COMPONENTS, sizeof *sc.comp);
  sc.hidden = calloc((size_t)p * PTDP_SIM_COMPONENTS, sizeof *sc.hidden);
  sc.recompute = calloc((size_t)p, sizeof *sc.recompute);
  if (!err && !(sc.dur && sc.comp && sc.hidden && sc.recompute))
    err = PTDP_FAIL(PTDP_ERR_MEM, "out of memory");
  if (!err) err = stage_durations(a, kind, scratch, &sc);
  if (!err) err = ptdp_schedule_replay(kind, p, r->v, r->m, sc.dur, 0.0, rp);
  free(sc.dur);
  free(sc.comp);
  free(sc.hidden);
  free(sc.recompute);
  free(scratch);
  PTDP_CALL(err);
  return 0;
}

/* Stage s's times for its DP reduction (reduce.c): its end, its first item, and each chunk's
 * last backward item, from the replay. */
static void stage_times(const ptdp_replay *rp, const double *dur, int s, int n, int v, ptdp_sim_stage_times *st)
{
  const size_t o = (size_t)s * n;
  st->v = v;
  for (int i = 0; i < n; i++) st->end = rp->end[o + i] > st->end ? rp->end[o + i] : st->end;
  st->first_start = rp->start[o];
  st->first_fwd = dur[o];
  int found = 0;
  for (int i = n - 1; i >= 0 && found < v; i--) {
    const ptdp_work *w = &rp->sched[s].items[i];
    if (w->kind != PTDP_WORK_BACKWARD || st->bwd_end[w->chunk] > 0) continue;
    st->bwd_start[w->chunk] = rp->start[o + i];
    st->bwd_end[w->chunk] = rp->end[o + i];
    found++;
  }
}

int ptdp_sim_run(const ptdp_model_keys *a, const ptdp_sim_hw *hw, const ptdp_sim_options *o, ptdp_sim_result *r)
{
  memset(r, 0, sizeof *r);
  ptdp_schedule_kind kind;
  PTDP_CALL(layout(a, o, r, &kind));
  PTDP_CHECK(!(a->fp16 || a->bf16) || hw->peak_flops_16 > 0, "%s: the hardware file %s gives no peak-tflops-16",
             a->fp16 ? "fp16" : "bf16", hw->name);
  PTDP_CHECK(a->fp16 || a->bf16 || hw->peak_flops_32 > 0,
             "fp32: the hardware file %s gives no peak-tflops-32 (set bf16 or fp16 for a GPU)", hw->name);
  PTDP_CHECK(!ptdp_sim_flash(a, o) || o->fusion == PTDP_SIM_FUSION_CPU ||
               (hw->flash_efficiency_fwd > 0 && hw->flash_efficiency_bwd > 0),
             "flash attention: the hardware file %s gives no flash-attention-efficiency-forward and -backward "
             "(jobs/measure_gpu_hw.sh measures them; or set attention-backend unfused)", hw->name);
  PTDP_CALL(ptdp_sim_layer_ops(a, hw, o, &r->layer));
  PTDP_CALL(ptdp_sim_embedding_ops(a, hw, o, &r->embedding));
  PTDP_CALL(ptdp_sim_head_ops(a, hw, o, &r->head));
  const int p = r->p, n = 2 * r->m * r->v;
  stage_costs sc = {.p2p = p2p_time(a, hw, o, r)};
  double *params = NULL;
  ptdp_sim_stage_times *st = NULL;
  PTDP_CALLOC(sc.dur, (size_t)p * n, sizeof *sc.dur);
  PTDP_CALLOC(sc.comp, (size_t)p * PTDP_SIM_COMPONENTS, sizeof *sc.comp);
  PTDP_CALLOC(sc.hidden, (size_t)p * PTDP_SIM_COMPONENTS, sizeof *sc.hidden);
  PTDP_CALLOC(sc.recompute, (size_t)p, sizeof *sc.recompute);
  PTDP_CALLOC(params, (size_t)p, sizeof *params);
  PTDP_CALLOC(st, (size_t)p, sizeof *st);
  int err = stage_durations(a, kind, r, &sc);
  ptdp_replay rp = {0};
  if (!err) err = ptdp_schedule_replay(kind, p, r->v, r->m, sc.dur, 0.0, &rp);
  for (int s = 0; !err && s < p; s++) {
    stage_times(&rp, sc.dur, s, n, r->v, &st[s]);
    r->bubble = rp.idle[s] > r->bubble ? rp.idle[s] : r->bubble;
  }
  if (!err) {
    r->pipeline_time = rp.total;
    err = ptdp_sim_memory(a, hw, o, r, kind, params);
  }
  if (!err) {
    /* the components of the busiest stage (most compute) */
    int busiest = 0;
    for (int s = 1; s < p; s++) busiest = rp.busy[s] > rp.busy[busiest] ? s : busiest;
    memcpy(r->comp, sc.comp + busiest * PTDP_SIM_COMPONENTS, sizeof r->comp);
    memcpy(r->hidden, sc.hidden + busiest * PTDP_SIM_COMPONENTS, sizeof r->hidden);
    r->recompute = sc.recompute[busiest];
    err = ptdp_sim_reductions(a, hw, o, r, params, st);
    if (!err) ptdp_sim_core_bound(hw, rp.busy, r); /* ranks beyond a CPU node's cores */
  }
  ptdp_replay_destroy(&rp);
  free(sc.dur);
  free(sc.comp);
  free(sc.hidden);
  free(sc.recompute);
  free(params);
  free(st);
  PTDP_CALL(err);
  const long long L = a->num_layers, s = a->seq_length, h = a->hidden_size;
  const ptdp_model_shape shape = ptdp_sim_model_shape(a);
  r->model_flops = ptdp_model_flops(r->gbs, s, &shape, r->vocab_padded);
  r->tflops_per_gpu = r->model_flops / r->iteration / r->world / 1e12;
  const double peak = a->fp16 || a->bf16 ? hw->peak_flops_16 : hw->peak_flops_32;
  r->mfu = r->tflops_per_gpu * 1e12 / peak;
  /* training time: iterations T / (B s) at the simulated iteration; eq. 4 = 8 T P / (n X) with
   * X counted as eq. 3 counts (with the recomputation pass) and P from eq. 2 */
  const double T = o->train_tokens, hh = (double)h, V = (double)r->vocab_padded;
  r->train_days_sim = T / ((double)r->gbs * s) * r->iteration / 86400;
  const double P = 12.0 * L * hh * hh * (1 + 13 / (12 * hh) + (V + s) / (12.0 * L * hh));
  const double X = r->model_flops * 4.0 / 3.0 / r->iteration / r->world;
  r->train_days_eq4 = 8 * T * P / (r->world * X) / 86400;
  return 0;
}
