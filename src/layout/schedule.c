/* Pipeline schedules as a pure function (Narayanan et al. 2021, Sec. 2.2; Megatron-LM's
 * megatron/core/pipeline_parallel/schedules.py).
 *
 * Stage s of p runs v model chunks; chunk c is virtual stage c p + s of p v.  The list for one
 * stage holds 2 m v items: (F|B, micro-batch, chunk).
 *
 * GPipe (v = 1): F0 F1 ... F(m-1) B0 B1 ... B(m-1).  Peak in flight m.
 *
 * 1F1B, PipeDream-Flush (v = 1):
 *     warmup    w = min(p - s - 1, m) forwards  F0 .. F(w-1)
 *     steady    for i in 0 .. m-w-1:  F(w+i) B(i)
 *     cooldown  B(m-w) .. B(m-1)
 *   e.g. p = 4, m = 6, s = 1: F0 F1 | F2 B0 F3 B1 F4 B2 F5 B3 | B4 B5; peak in flight
 *   min(p - s, m) = 3.  With unit forward and 2-unit backward the bubble is (p-1)/m.
 *
 * Interleaved 1F1B (Megatron): the k-th forward (k in 0 .. m v - 1) of a stage is
 *     chunk      = (k / p) % v
 *     microbatch = (k / (p v)) p + k % p
 * i.e. groups of p micro-batches go through chunk 0, then chunk 1, ...; the k-th backward has
 * the same micro-batch and chunk v - 1 - (k / p) % v.  Warmup
 *     w = (p - s - 1) 2 + (v - 1) p, capped at m v (then every forward runs first),
 * then steady F(w+i) B(i), then cooldown; requires p > 1 and m % p == 0.
 *   e.g. p = 2, v = 2, m = 4, s = 0: w = 2 + 2 = 4;
 *     F(0,c0) F(1,c0) F(0,c1) F(1,c1) | F(2,c0) B(0,c1) F(3,c0) B(1,c1) F(2,c1) B(0,c0)
 *     F(3,c1) B(1,c0) | B(2,c1) B(3,c1) B(2,c0) B(3,c0)
 *   With per-chunk times 1/v and 2/v the bubble shrinks to (p-1)/(v m).
 * Older Megatron also sent every forward first when m == p; current Megatron (and ptdp) only
 * caps w at m v, which the dependency simulation of the unit test shows to be deadlock-free. */
#include "ptdp/schedule.h"

#include "ptdp/error.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

int ptdp_schedule_parse(const char *s)
{
  if (!s) return -1;
  if (strcmp(s, "gpipe") == 0) return PTDP_SCHED_GPIPE;
  if (strcmp(s, "1f1b") == 0) return PTDP_SCHED_1F1B;
  if (strcmp(s, "interleaved") == 0) return PTDP_SCHED_INTERLEAVED;
  return -1;
}

const char *ptdp_schedule_name(ptdp_schedule_kind k)
{
  switch (k) {
  case PTDP_SCHED_GPIPE: return "gpipe";
  case PTDP_SCHED_1F1B: return "1f1b";
  case PTDP_SCHED_INTERLEAVED: return "interleaved";
  }
  return "unknown";
}

int ptdp_schedule_validate(ptdp_schedule_kind kind, int p, int v, int m)
{
  PTDP_CHECK(kind == PTDP_SCHED_GPIPE || kind == PTDP_SCHED_1F1B || kind == PTDP_SCHED_INTERLEAVED,
             "schedule: unknown pipeline schedule %d (expected gpipe, 1f1b or interleaved)", (int)kind);
  const char *name = ptdp_schedule_name(kind);
  PTDP_CHECK(p >= 1, "schedule %s: pipeline-model-parallel-size p = %d must be at least 1", name, p);
  PTDP_CHECK(m >= 1, "schedule %s: number of micro-batches m = %d must be at least 1", name, m);
  PTDP_CHECK(v >= 1, "schedule %s: model chunks per stage v = %d must be at least 1", name, v);
  if (kind != PTDP_SCHED_INTERLEAVED)
    PTDP_CHECK(v == 1, "schedule %s: v = %d model chunks per stage needs the interleaved schedule", name, v);
  else {
    PTDP_CHECK(p > 1, "schedule interleaved: needs pipeline-model-parallel-size p > 1 (got p = %d)", p);
    PTDP_CHECK(m % p == 0,
               "schedule interleaved: number of micro-batches m = %d must be a multiple of "
               "pipeline-model-parallel-size p = %d",
               m, p);
  }
  /* 2 m v items must fit an int */
  PTDP_CHECK((long long)m * v <= 1 << 28, "schedule %s: m v = %d x %d is too large", name, m, v);
  return PTDP_OK;
}

/* The k-th forward (backward) of an interleaved stage: micro-batch and chunk. */
static ptdp_work interleaved_item(int k, int p, int v, ptdp_work_kind kind)
{
  ptdp_work w;
  int c = (k / p) % v;
  w.kind = kind;
  w.microbatch = (k / (p * v)) * p + k % p;
  w.chunk = kind == PTDP_WORK_FORWARD ? c : v - 1 - c;
  return w;
}

int ptdp_schedule_build(ptdp_schedule_kind kind, int stage, int p, int v, int m, ptdp_schedule *s)
{
  memset(s, 0, sizeof *s);
  PTDP_CALL(ptdp_schedule_validate(kind, p, v, m));
  PTDP_CHECK(stage >= 0 && stage < p, "schedule %s: stage %d outside 0 .. p-1 = %d", ptdp_schedule_name(kind),
             stage, p - 1);
  int total = m * v, w;
  switch (kind) {
  case PTDP_SCHED_GPIPE: w = m; break;
  case PTDP_SCHED_1F1B: w = p - stage - 1 < m ? p - stage - 1 : m; break;
  default:
    w = (p - stage - 1) * 2 + (v - 1) * p;
    if (w > total) w = total;
    break;
  }
  s->kind = kind;
  s->stage = stage;
  s->p = p;
  s->v = v;
  s->m = m;
  s->n_warmup = w;
  s->count = 2 * total;
  PTDP_ALLOC(s->items, sizeof(ptdp_work) * (size_t)s->count);
  /* Order of the k-th forward / backward; for v = 1 every formula reduces to (k, chunk 0). */
  int n = 0;
  for (int k = 0; k < w; k++) s->items[n++] = interleaved_item(k, p, v, PTDP_WORK_FORWARD);
  for (int i = 0; i < total - w; i++) {
    s->items[n++] = interleaved_item(w + i, p, v, PTDP_WORK_FORWARD);
    s->items[n++] = interleaved_item(i, p, v, PTDP_WORK_BACKWARD);
  }
  for (int k = total - w; k < total; k++) s->items[n++] = interleaved_item(k, p, v, PTDP_WORK_BACKWARD);
  return PTDP_OK;
}

void ptdp_schedule_free(ptdp_schedule *s)
{
  free(s->items);
  s->items = NULL;
  s->count = 0;
}

int ptdp_schedule_check_ring(const ptdp_schedule *st, int p, int v)
{
  const int n = st[0].count; /* 2 m v on every stage */
  /* sent[(s * 2 + dir) * n + i]: the i-th message stage s sends in direction dir (0: forward, to
   * s + 1; 1: backward, to s - 1), as mb * v + sender's chunk; recv the same, by sender */
  int *sent = malloc(sizeof(int) * 2 * (size_t)p * n), *recv = malloc(sizeof(int) * 2 * (size_t)p * n);
  int *ns = calloc((size_t)2 * p, sizeof(int)), *nr = calloc((size_t)2 * p, sizeof(int));
  int err = 0;
  if (!sent || !recv || !ns || !nr) err = PTDP_FAIL(PTDP_ERR_MEM, "out of memory checking the pipeline's ring order");
  static const char *const dirs[2] = {"forward", "backward"};
  for (int s = 0; s < p && !err; s++)
    for (int i = 0; i < st[s].count && !err; i++) {
      const ptdp_work w = st[s].items[i];
      const int dir = w.kind == PTDP_WORK_FORWARD ? 0 : 1, step = dir ? -1 : 1;
      ptdp_work_dep d;
      if (ptdp_work_consumer(p, v, s, w, &d)) {
        if (d.stage != ((s + step) % p + p) % p)
          err = PTDP_FAIL(PTDP_ERR_INTERNAL, "pipeline ring order: stage %d sends the %s of micro-batch %d chunk %d to stage %d, not its neighbour",
                          s, dirs[dir], w.microbatch, w.chunk, d.stage);
        const int k = s * 2 + dir;
        sent[(size_t)k * n + ns[k]++] = w.microbatch * v + w.chunk;
      }
      if (!err && ptdp_work_dependency(p, v, s, w, &d)) {
        if (d.stage != ((s - step) % p + p) % p)
          err = PTDP_FAIL(PTDP_ERR_INTERNAL, "pipeline ring order: stage %d receives the %s of micro-batch %d from stage %d, not its neighbour",
                          s, dirs[dir], w.microbatch, d.stage);
        const int k = d.stage * 2 + dir;
        recv[(size_t)k * n + nr[k]++] = d.microbatch * v + d.chunk;
      }
    }
  for (int k = 0; k < 2 * p && !err; k++) {
    if (ns[k] != nr[k])
      err = PTDP_FAIL(PTDP_ERR_INTERNAL, "pipeline ring order: stage %d sends %d %s messages, its neighbour receives %d",
                      k / 2, ns[k], dirs[k % 2], nr[k]);
    for (int i = 0; i < ns[k] && !err; i++) {
      const int a = sent[(size_t)k * n + i], b = recv[(size_t)k * n + i];
      if (a != b)
        err = PTDP_FAIL(PTDP_ERR_INTERNAL,
                        "pipeline ring order: stage %d's %s message %d is micro-batch %d chunk %d, its neighbour's receive %d "
                        "is of micro-batch %d chunk %d",
                        k / 2, dirs[k % 2], i, a / v, a % v, i, b / v, b % v);
    }
  }
  free(sent), free(recv), free(ns), free(nr);
  return err;
}

int ptdp_schedule_max_in_flight(const ptdp_schedule *s)
{
  int cur = 0, peak = 0;
  for (int i = 0; i < s->count; i++) {
    cur += s->items[i].kind == PTDP_WORK_FORWARD ? 1 : -1;
    if (cur > peak) peak = cur;
  }
  return peak;
}

/* The (stage, chunk) holding virtual stage k + delta, where k = w.chunk p + stage; 0 when
 * k + delta falls outside 0 .. p v - 1. */
static int virtual_neighbour(int p, int v, int stage, ptdp_work w, int delta, ptdp_work_dep *out)
{
  assert(p >= 1 && v >= 1 && stage >= 0 && stage < p && w.chunk >= 0 && w.chunk < v);
  const int k = w.chunk * p + stage + delta, inside = k >= 0 && k < p * v;
  if (out) {
    out->stage = inside ? k % p : -1;
    out->chunk = inside ? k / p : -1;
    out->microbatch = w.microbatch;
    out->kind = w.kind;
  }
  return inside;
}

/* Activations flow to the next virtual stage, their gradients to the previous one. */
static int flow(ptdp_work_kind kind) { return kind == PTDP_WORK_FORWARD ? 1 : -1; }

int ptdp_work_dependency(int p, int v, int stage, ptdp_work w, ptdp_work_dep *dep)
{
  return virtual_neighbour(p, v, stage, w, -flow(w.kind), dep);
}

int ptdp_work_consumer(int p, int v, int stage, ptdp_work w, ptdp_work_dep *dep)
{
  return virtual_neighbour(p, v, stage, w, flow(w.kind), dep);
}
