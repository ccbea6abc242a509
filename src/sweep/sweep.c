/* Every layout of a model on n devices, predicted with ptdp-sim (ptdp/sweep.h says what is
 * enumerated and what is dropped).  The loops run t, p (d = n / (t p)), the distributed
 * optimizer, sequence parallelism, micro-batch b (ascending), v; recomputation last, cheapest
 * first.  Two bounds keep the sweep fast without changing what it finds:
 *   - weights, gradients and optimizer state per GPU need at least
 *       (L/p) (4h^2 + 2hf)/t x (w + g + s/d')  bytes   (w, g: 2, 2 in 16-bit, else 4, 4; s: Adam's
 *     fp32 state, 12 B in 16-bit (with the fp32 master weights), else 8; d' = d with the
 *     distributed optimizer, else 1), the embedding left out; above the usable memory a (t, p,
 *     distributed optimizer) is dropped without simulating it;
 *   - activations grow with b (b times the in-flight micro-batches, min(p, m) b <= B/d): when no
 *     recomputation makes b fit, no larger b will. */
#include "ptdp/sweep.h"

#include "ptdp/error.h"
#include "ptdp/shape.h"
#include "ptdp/sim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
  const ptdp_model_keys *base;
  const ptdp_sim_hw *hw;
  const ptdp_sim_options *o;
  long long gbs;
  ptdp_sweep_result *res;
  ptdp_sim_result *r; /* scratch for one prediction */
} sweep_ctx;

double ptdp_sweep_state_bytes_lower(const ptdp_model_keys *a, int t, int p, int d, int distopt)
{
  /* a layer's matrices on one TP rank (biases and norms left out: a lower bound), from the rank
   * shape the model itself uses: linear_qkv [qkv, h], linear_proj [h, hl], the MLP's fc1 [fc1, h]
   * (fl rows, 2 fl with SwiGLU) and fc2 [h, fl] */
  const ptdp_model_shape m = ptdp_sim_model_shape(a);
  const ptdp_rank_shape r = ptdp_rank_shape_of(&m, 1, 1, t, 0);
  const double h = (double)r.h;
  double mlp = (double)r.fc1 + r.fl;
  if (r.E > 0) { /* a mixture's router and experts; the smaller of the two MLPs where layers may differ */
    const double moe = (double)r.E * (r.efc1 + r.efl) + r.E;
    mlp = moe < mlp ? moe : mlp;
  }
  const double params = (double)a->num_layers / p * h * ((double)r.qkv + r.hl + mlp);
  const int half = a->fp16 || a->bf16;
  const double per = (half ? 2 + 2 : 4 + 4) + (half ? 12.0 : 8.0) / (distopt ? d : 1);
  return params * per;
}

void ptdp_sweep_apply(const ptdp_model_keys *base, const ptdp_sweep_layout *L, long long gbs, ptdp_model_keys *a)
{
  *a = *base;
  a->tensor_model_parallel_size = L->t;
  a->pipeline_model_parallel_size = L->p;
  a->micro_batch_size = L->b;
  a->global_batch_size = gbs;
  a->num_layers_per_virtual_pipeline_stage = L->v > 1 ? base->num_layers / L->p / L->v : 0;
  a->sequence_parallel = L->sp;
  a->use_distributed_optimizer = L->distopt;
  a->recompute_granularity = L->recompute;
  a->recompute_method = PTDP_RECOMPUTE_BLOCK;
  a->recompute_num_layers = L->recompute == PTDP_RECOMPUTE_FULL ? L->recompute_layers : 1;
}

/* Predict L; 1 when it fits, 0 when not, -1 when the keys are refused (error cleared). */
static int predict(sweep_ctx *c, ptdp_sweep_layout *L)
{
  ptdp_model_keys a;
  ptdp_sweep_apply(c->base, L, c->gbs, &a);
  c->res->simulated++;
  if (ptdp_sim_run(&a, c->hw, c->o, c->r)) {
    ptdp_error_clear();
    return -1;
  }
  const ptdp_sim_result *r = c->r;
  L->d = r->d;
  L->v_layers = (int)a.num_layers_per_virtual_pipeline_stage;
  L->m = r->m;
  L->iteration = r->iteration;
  L->tflops_per_gpu = r->tflops_per_gpu;
  L->mfu = r->mfu;
  L->bubble = r->bubble;
  L->memory = r->mem_total;
  L->memory_usable = c->o->memory_margin * c->hw->memory_bytes;
  memcpy(L->comp, r->comp, sizeof L->comp);
  L->recompute_time = r->recompute;
  double busy = 0; /* the busiest stage's work (its recomputation is inside the components) */
  for (int k = 0; k < PTDP_SIM_COMPONENTS; k++)
    if (k != PTDP_SIM_DP && k != PTDP_SIM_OPTIMIZER && k != PTDP_SIM_EMBEDDING_AR) busy += r->comp[k];
  L->pipeline_idle = r->pipeline_time > busy ? r->pipeline_time - busy : 0;
  L->tp_crosses_nodes = L->t > c->hw->gpus_per_node;
  L->train_days_sim = r->train_days_sim;
  L->train_days_eq4 = r->train_days_eq4;
  L->range_lo = L->range_hi = NAN;
  return r->fits ? 1 : 0;
}

static int record(sweep_ctx *c, const ptdp_sweep_layout *L)
{
  ptdp_sweep_result *res = c->res;
  if (res->n == res->cap) {
    const int cap = res->cap ? 2 * res->cap : 256;
    ptdp_sweep_layout *grown = realloc(res->layouts, (size_t)cap * sizeof *grown);
    if (!grown) return PTDP_FAIL(PTDP_ERR_MEM, "out of memory for %d layouts", cap);
    res->layouts = grown;
    res->cap = cap;
  }
  res->layouts[res->n++] = *L;
  return 0;
}

/* One (t, p, d, b, v, sp, distopt): no recomputation if it fits, else selective and the least
 * full recomputation that fit.  *fit: whether any did; *valid: whether ptdp-train takes the keys. */
static int recompute_variants(sweep_ctx *c, ptdp_sweep_layout L, int *fit, int *valid)
{
  *fit = 0;
  L.recompute = PTDP_RECOMPUTE_NONE;
  int f = predict(c, &L);
  *valid = f >= 0;
  if (f < 0) return 0;
  if (f) {
    *fit = 1;
    return record(c, &L);
  }
  const double m0 = L.memory;
  L.recompute = PTDP_RECOMPUTE_SELECTIVE;
  if (predict(c, &L) == 1) {
    *fit = 1;
    PTDP_CALL(record(c, &L));
  }
  /* full, block method: the fewest layers N of each chunk that fit.  Memory falls about
   * linearly in N (each recomputed layer keeps only its input), so N is first guessed between
   * none (N = 0, memory M0) and all nl layers (M1), then stepped to the smallest that fits:
   * two or three predictions instead of a bisection's log2(nl) + 1. */
  const double usable = c->o->memory_margin * c->hw->memory_bytes;
  const int nl = (int)(c->base->num_layers / L.p / L.v);
  L.recompute = PTDP_RECOMPUTE_FULL;
  L.recompute_layers = nl;
  if (predict(c, &L) != 1) {
    c->res->dropped_memory++;
    return 0;
  }
  ptdp_sweep_layout best = L;
  const double m1 = L.memory;
  int n = m0 > m1 ? (int)ceil(nl * (m0 - usable) / (m0 - m1)) : nl;
  n = n < 1 ? 1 : n > nl ? nl : n;
  int lo = 0, hi = nl; /* lo does not fit (or is none), hi fits */
  while (hi - lo > 1) {
    L.recompute_layers = n;
    if (predict(c, &L) == 1) {
      hi = n;
      best = L;
      n = n - 1;
    } else {
      lo = n;
      n = n + 1;
    }
    if (n <= lo || n >= hi) n = (lo + hi) / 2; /* the guess was off: bisect what is left */
  }
  *fit = 1;
  return record(c, &best);
}

/* The micro-batch sizes and chunk counts of one (t, p, distopt, sp). */
static int sweep_batches(sweep_ctx *c, ptdp_sweep_layout L)
{
  const long long per_replica = c->gbs / L.d, lps = c->base->num_layers / L.p;
  for (long long b = 1; b <= per_replica; b++) {
    if (per_replica % b) continue;
    L.b = (int)b;
    const long long m = per_replica / b;
    int any = 0;
    for (long long v = 1; v <= lps && v <= 64; v++) {
      if (lps % v || (v > 1 && (L.p == 1 || m % L.p))) continue;
      L.v = (int)v;
      int fit, valid;
      PTDP_CALL(recompute_variants(c, L, &fit, &valid));
      c->res->candidates += valid;
      any |= fit;
    }
    if (!any) break; /* activations only grow with b */
  }
  return 0;
}

static int cmp_time(const void *x, const void *y)
{
  const ptdp_sweep_layout *a = x, *b = y;
  return (a->iteration > b->iteration) - (a->iteration < b->iteration);
}

int ptdp_sweep_run(const ptdp_model_keys *base, const ptdp_sim_hw *hw, const ptdp_sim_options *o, long long gbs,
                   ptdp_sweep_result *res)
{
  memset(res, 0, sizeof *res);
  const long long n = o->world_size;
  PTDP_CHECK(n >= 1, "world-size %lld: give the number of devices to sweep (--world-size N)", n);
  if (!gbs) gbs = base->global_batch_size;
  PTDP_CHECK(gbs >= 1, "global-batch-size %lld: give the global batch (--global-batch-size B)", gbs);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  sweep_ctx c = {.base = base, .hw = hw, .o = o, .gbs = gbs, .res = res};
  PTDP_CALLOC(c.r, 1, sizeof *c.r);
  const double usable = o->memory_margin * hw->memory_bytes;
  ptdp_error_set_quiet(1); /* layouts ptdp-train refuses are skipped, not reported */
  int err = 0;
  for (long long t = 1; !err && t <= n; t++) {
    if (n % t || base->num_attention_heads % t) continue;
    for (long long p = 1; !err && p <= n / t; p++) {
      if ((n / t) % p || base->num_layers % p) continue;
      const long long d = n / (t * p);
      if (gbs % d) continue;
      for (int distopt = 0; !err && distopt <= (d > 1); distopt++) {
        if (ptdp_sweep_state_bytes_lower(base, (int)t, (int)p, (int)d, distopt) > usable) {
          res->bounded++;
          continue;
        }
        for (int sp = 0; !err && sp <= (t > 1); sp++) {
          ptdp_sweep_layout L = {.t = (int)t, .p = (int)p, .d = (int)d, .sp = sp, .distopt = distopt};
          err = sweep_batches(&c, L);
        }
      }
    }
  }
  ptdp_error_set_quiet(0);
  free(c.r);
  PTDP_CALL(err);
  if (res->n > 0) qsort(res->layouts, (size_t)res->n, sizeof *res->layouts, cmp_time); /* none: layouts is NULL */
  clock_gettime(CLOCK_MONOTONIC, &t1);
  res->seconds = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
  return 0;
}

int ptdp_sweep_ranges(const ptdp_model_keys *base, const ptdp_sim_hw *hw, const ptdp_sim_options *o, long long gbs,
                      ptdp_sweep_result *res, int k)
{
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  if (!gbs) gbs = base->global_batch_size;
  const int n = k + 1 < res->n ? k + 1 : res->n;
  ptdp_sim_result *r = calloc(1, sizeof *r);
  ptdp_sim_range *ranges = n > res->ranged ? realloc(res->ranges, (size_t)n * sizeof *ranges) : res->ranges;
  if (ranges) res->ranges = ranges;
  int err = r && (ranges || n <= 0) ? 0 : PTDP_FAIL(PTDP_ERR_MEM, "out of memory");
  for (int i = res->ranged; !err && i < n; i++) {
    ptdp_sweep_layout *L = &res->layouts[i];
    ptdp_model_keys a;
    ptdp_sweep_apply(base, L, gbs, &a);
    err = ptdp_sim_run(&a, hw, o, r);
    if (!err) err = ptdp_sim_range_run(&a, hw, o, r);
    if (!err) {
      L->range_lo = r->range.lo;
      L->range_hi = r->range.hi;
      res->ranges[i] = r->range;
      res->ranged = i + 1;
    }
  }
  free(r);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  res->range_seconds += (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
  PTDP_CALL(err);
  return 0;
}

/* Value key's change of the iteration at its band's low and high ends in r (0, 0 if not banded there). */
static void change_of(const ptdp_sim_range *r, double t, int key, double *lo, double *hi)
{
  *lo = *hi = 0;
  for (int j = 0; j < r->n; j++)
    if (r->v[j].key == key) {
      *lo = r->v[j].at_lo - t;
      *hi = r->v[j].at_hi - t;
      return;
    }
}

void ptdp_sweep_difference(double ta, const ptdp_sim_range *ra, double tb, const ptdp_sim_range *rb, double *lo,
                           double *hi)
{
  double up2 = 0, down2 = 0;
  for (int key = 0; key < PTDP_SIM_HW_KEYS; key++) {
    double alo, ahi, blo, bhi;
    change_of(ra, ta, key, &alo, &ahi);
    change_of(rb, tb, key, &blo, &bhi);
    const double dlo = blo - alo, dhi = bhi - ahi; /* the difference's change, value key at each end */
    const double u = fmax(0, fmax(dlo, dhi)), d = fmax(0, fmax(-dlo, -dhi));
    up2 += u * u;
    down2 += d * d;
  }
  *lo = tb - ta - sqrt(down2);
  *hi = tb - ta + sqrt(up2);
}

int ptdp_sweep_inseparable(const ptdp_sweep_result *res, int i)
{
  if (i < 0 || i + 1 >= res->ranged || !res->ranges) return 0;
  double lo, hi;
  ptdp_sweep_difference(res->layouts[i].iteration, &res->ranges[i], res->layouts[i + 1].iteration, &res->ranges[i + 1],
                        &lo, &hi);
  return lo <= 0;
}

void ptdp_sweep_free(ptdp_sweep_result *res)
{
  free(res->layouts);
  free(res->ranges);
  memset(res, 0, sizeof *res);
}
