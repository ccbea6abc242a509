/* Replaying a pipeline schedule: given every stage's work items (ptdp_schedule_build) and how
 * long each took to compute, when would each start if messages took no time and every stage had
 * its own processor?  Forward (mb, k) waits for forward (mb, k - 1), backward (mb, k) for
 * backward (mb, k + 1), and each stage runs its items in order.  The result is the pipeline
 * bubble the schedule implies for those compute times, free of what the machine adds (a rank
 * waiting for a CPU it shares with other ranks).  It is also the core of a simulator. */
#include "ptdp/schedule.h"

#include "ptdp/error.h"

#include <stdlib.h>
#include <string.h>

int ptdp_schedule_replay(ptdp_schedule_kind kind, int p, int v, int m, const double *durations, double *idle,
                         double *total)
{
  const int n = 2 * m * v;
  ptdp_schedule *s;
  double *fwd_end, *bwd_end, *stage_time, *busy;
  int *next;
  PTDP_CALLOC(s, p, sizeof *s);
  PTDP_CALLOC(fwd_end, (size_t)m * p * v, sizeof(double));
  PTDP_CALLOC(bwd_end, (size_t)m * p * v, sizeof(double));
  PTDP_CALLOC(stage_time, p, sizeof(double));
  PTDP_CALLOC(busy, p, sizeof(double));
  PTDP_CALLOC(next, p, sizeof(int));
  int err = 0;
  for (int st = 0; st < p && !err; st++) err = ptdp_schedule_build(kind, st, p, v, m, &s[st]);
  for (int i = 0; i < m * p * v; i++) fwd_end[i] = bwd_end[i] = -1;
  int left = p * n, progress = 1;
  while (!err && left > 0 && progress) {
    progress = 0;
    for (int st = 0; st < p; st++) {
      while (next[st] < n) {
        const ptdp_work w = s[st].items[next[st]];
        const int k = w.chunk * p + st, pv = p * v;
        double dep = 0;
        if (w.kind == PTDP_WORK_FORWARD && k > 0) dep = fwd_end[w.microbatch * pv + k - 1];
        if (w.kind == PTDP_WORK_BACKWARD && k < pv - 1) dep = bwd_end[w.microbatch * pv + k + 1];
        if (dep < 0) break; /* its input is not ready: another stage must go first */
        double start = stage_time[st] > dep ? stage_time[st] : dep, d = durations[(size_t)st * n + next[st]];
        stage_time[st] = start + d;
        busy[st] += d;
        (w.kind == PTDP_WORK_FORWARD ? fwd_end : bwd_end)[w.microbatch * pv + k] = stage_time[st];
        next[st]++;
        left--;
        progress = 1;
      }
    }
  }
  if (!err && left > 0)
    err = ptdp_error_push(PTDP_ERR_INPUT, __FILE__, __LINE__, __func__, "internal: schedule replay deadlocked");
  double t = 0;
  for (int st = 0; st < p; st++) t = stage_time[st] > t ? stage_time[st] : t;
  for (int st = 0; !err && st < p; st++) idle[st] = busy[st] > 0 ? (t - busy[st]) / busy[st] : 0;
  if (total) *total = t;
  for (int st = 0; st < p; st++) ptdp_schedule_free(&s[st]);
  free(s);
  free(fwd_end);
  free(bwd_end);
  free(stage_time);
  free(busy);
  free(next);
  return err;
}
