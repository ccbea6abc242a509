/* Replaying a pipeline schedule: given every stage's work items (ptdp_schedule_build) and how
 * long each took to compute, when would each start if every stage had its own processor and
 * each message took a fixed latency?  Each stage runs its items in order; an item starts when
 * its stage is free and the item it depends on (ptdp_work_dependency) has ended, plus the
 * latency.  With latency 0 the result is the pipeline bubble the schedule implies for those
 * compute times, free of what the machine adds (a rank waiting for a CPU it shares with other
 * ranks).  The per-item timeline is the core of a simulator. */
#include "ptdp/schedule.h"

#include "ptdp/error.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void ptdp_replay_destroy(ptdp_replay *r)
{
  if (r->sched)
    for (int st = 0; st < r->p; st++) ptdp_schedule_free(&r->sched[st]);
  free(r->sched);
  free(r->start);
  free(r->end);
  free(r->busy);
  free(r->idle);
  memset(r, 0, sizeof *r);
}

/* The result's arrays and every stage's list; on failure *r is left empty. */
static int replay_create(ptdp_schedule_kind kind, int p, int v, int m, ptdp_replay *r)
{
  r->p = p;
  r->n = 2 * m * v;
  const size_t pn = (size_t)p * r->n;
  r->sched = calloc((size_t)p, sizeof *r->sched);
  r->start = malloc(pn * sizeof(double));
  r->end = malloc(pn * sizeof(double));
  r->busy = calloc((size_t)p, sizeof(double));
  r->idle = calloc((size_t)p, sizeof(double));
  if (!r->sched || !r->start || !r->end || !r->busy || !r->idle) {
    ptdp_replay_destroy(r);
    return PTDP_FAIL(PTDP_ERR_MEM,
                           "out of memory replaying %d stages of %zu work items", p, pn / (size_t)p);
  }
  for (int st = 0; st < p; st++) {
    int err = ptdp_schedule_build(kind, st, p, v, m, &r->sched[st]);
    if (err) {
      ptdp_replay_destroy(r);
      return ptdp_error_trace(err, __FILE__, __LINE__, __func__);
    }
  }
  return PTDP_OK;
}

/* Run every stage as far as its dependencies allow, sweep after sweep, until all items are
 * placed or no stage can move (a deadlock: a schedule bug).  pos[((s 2 + kind) m + mb) v + c]
 * is the index in stage s's list of item (kind, mb, chunk c); next[s] the first not placed. */
static int replay_run(ptdp_replay *r, int v, int m, const double *durations, double latency, const int *pos, int *next)
{
  const int p = r->p, n = r->n;
  long long left = (long long)p * n;
  int progress = 1;
  while (left > 0 && progress) {
    progress = 0;
    for (int st = 0; st < p; st++)
      for (; next[st] < n; next[st]++, left--, progress = 1) {
        const int i = next[st];
        const ptdp_work w = r->sched[st].items[i];
        double ready = 0, d = durations[(size_t)st * n + i];
        ptdp_work_dep dep;
        if (ptdp_work_dependency(p, v, st, w, &dep)) {
          const int j = pos[(((size_t)dep.stage * 2 + dep.kind) * m + dep.microbatch) * v + dep.chunk];
          if (j >= next[dep.stage]) break; /* its input is not ready: another stage must go first */
          ready = r->end[(size_t)dep.stage * n + j] + (dep.stage != st ? latency : 0.0);
        }
        const double free_at = i > 0 ? r->end[(size_t)st * n + i - 1] : 0.0;
        r->start[(size_t)st * n + i] = free_at > ready ? free_at : ready;
        r->end[(size_t)st * n + i] = r->start[(size_t)st * n + i] + d;
        r->busy[st] += d;
      }
  }
  if (left > 0)
    return PTDP_FAIL(PTDP_ERR_INTERNAL, "schedule replay deadlocked");
  return PTDP_OK;
}

int ptdp_schedule_replay(ptdp_schedule_kind kind, int p, int v, int m, const double *durations, double latency,
                         ptdp_replay *r)
{
  memset(r, 0, sizeof *r);
  PTDP_CALL(ptdp_schedule_validate(kind, p, v, m));
  PTDP_CHECK(latency >= 0 && isfinite(latency), "schedule replay: message latency %g must be finite and >= 0",
             latency);
  PTDP_CALL(replay_create(kind, p, v, m, r));
  const int n = r->n;
  int *pos = malloc(sizeof(int) * (size_t)p * n), *next = calloc((size_t)p, sizeof(int));
  int err = PTDP_OK;
  if (!pos || !next)
    err = PTDP_FAIL(PTDP_ERR_MEM, "out of memory indexing %d stages of %d work items",
                          p, n);
  for (int st = 0; !err && st < p; st++)
    for (int i = 0; i < n; i++) {
      const ptdp_work w = r->sched[st].items[i];
      pos[(((size_t)st * 2 + w.kind) * m + w.microbatch) * v + w.chunk] = i;
    }
  if (!err) err = replay_run(r, v, m, durations, latency, pos, next);
  free(pos);
  free(next);
  if (err) {
    ptdp_replay_destroy(r);
    return ptdp_error_trace(err, __FILE__, __LINE__, __func__);
  }
  for (int st = 0; st < p; st++) {
    const double last = n > 0 ? r->end[(size_t)st * n + n - 1] : 0.0;
    r->total = last > r->total ? last : r->total;
  }
  for (int st = 0; st < p; st++) r->idle[st] = r->busy[st] > 0 ? (r->total - r->busy[st]) / r->busy[st] : 0;
  return PTDP_OK;
}
