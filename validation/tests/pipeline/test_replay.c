/* ptdp_schedule_replay, 1 rank, no communication.
 *   - a hand-computed case: p = 2, m = 2, 1F1B, every item 1 unit, latency 0 and 0.5;
 *   - the timeline of every schedule, p in {2, 4, 8}, v up to 4, m from p to 32, with uniform
 *     and with random durations, latency 0 and 0.25: every item starts when both its stage is
 *     free (the previous item's end) and its dependency (ptdp_work_dependency) has ended plus the
 *     latency, and not later; end = start + duration; busy, idle and total follow from it;
 *   - with latency 0, idle and total are bit for bit those of the replay before the timeline
 *     (old_replay below, which keeps its own copy of the dependency rule);
 *   - uniform times (forward 1, backward 2 per micro-batch and stage, split evenly over v
 *     chunks): the bubble is Narayanan et al.'s (p-1)/m for GPipe and 1F1B and (p-1)/(v m) for
 *     interleaved, on every stage; a slow stage makes it larger; latency makes it larger;
 *   - invalid input gives an error and an empty result. */
#include "ptdp/error.h"
#include "ptdp/schedule.h"

#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../expect.h"

/* The replay as it was before it returned a timeline: totals only, messages taking no time. */
static void old_replay(ptdp_schedule_kind kind, int p, int v, int m, const double *durations, double *idle,
                       double *total)
{
  const int n = 2 * m * v, pv = p * v;
  ptdp_schedule *s = calloc((size_t)p, sizeof *s);
  double *fwd_end = malloc(sizeof(double) * m * pv), *bwd_end = malloc(sizeof(double) * m * pv);
  double *stage_time = calloc((size_t)p, sizeof(double)), *busy = calloc((size_t)p, sizeof(double));
  int *next = calloc((size_t)p, sizeof(int));
  for (int st = 0; st < p; st++) ptdp_schedule_build(kind, st, p, v, m, &s[st]);
  for (int i = 0; i < m * pv; i++) fwd_end[i] = bwd_end[i] = -1;
  for (int progress = 1; progress;) {
    progress = 0;
    for (int st = 0; st < p; st++)
      while (next[st] < n) {
        const ptdp_work w = s[st].items[next[st]];
        const int k = w.chunk * p + st;
        double dep = 0;
        if (w.kind == PTDP_WORK_FORWARD && k > 0) dep = fwd_end[w.microbatch * pv + k - 1];
        if (w.kind == PTDP_WORK_BACKWARD && k < pv - 1) dep = bwd_end[w.microbatch * pv + k + 1];
        if (dep < 0) break;
        double start = stage_time[st] > dep ? stage_time[st] : dep, d = durations[(size_t)st * n + next[st]];
        stage_time[st] = start + d;
        busy[st] += d;
        (w.kind == PTDP_WORK_FORWARD ? fwd_end : bwd_end)[w.microbatch * pv + k] = stage_time[st];
        next[st]++;
        progress = 1;
      }
  }
  double t = 0;
  for (int st = 0; st < p; st++) t = stage_time[st] > t ? stage_time[st] : t;
  for (int st = 0; st < p; st++) idle[st] = busy[st] > 0 ? (t - busy[st]) / busy[st] : 0;
  *total = t;
  for (int st = 0; st < p; st++) ptdp_schedule_free(&s[st]);
  free(s), free(fwd_end), free(bwd_end), free(stage_time), free(busy), free(next);
}

/* Index of work item (kind, mb, chunk) in a stage's list. */
static int find_item(const ptdp_schedule *s, ptdp_work_kind kind, int mb, int chunk)
{
  for (int i = 0; i < s->count; i++)
    if (s->items[i].kind == kind && s->items[i].microbatch == mb && s->items[i].chunk == chunk) return i;
  return -1;
}

/* Every item of r starts as soon as its stage is free and its dependency has ended (+ latency),
 * ends after its duration; busy, idle and total are what the timeline says. */
static void check_timeline(const ptdp_replay *r, int v, const double *d, double latency, const char *tag)
{
  const int p = r->p, n = r->n;
  int asap = 1, after_prev = 1, after_dep = 1, ends = 1, sums = 1;
  double total = 0;
  for (int st = 0; st < p; st++) {
    double busy = 0;
    for (int i = 0; i < n; i++) {
      const size_t at = (size_t)st * n + i;
      const double prev_end = i > 0 ? r->end[at - 1] : 0.0;
      double ready = 0;
      ptdp_work_dep dep;
      if (ptdp_work_dependency(p, v, st, r->sched[st].items[i], &dep)) {
        int j = find_item(&r->sched[dep.stage], dep.kind, dep.microbatch, dep.chunk);
        ready = r->end[(size_t)dep.stage * n + j] + latency;
        after_dep &= r->start[at] >= ready;
      }
      after_prev &= r->start[at] >= prev_end;
      asap &= r->start[at] == (prev_end > ready ? prev_end : ready);
      ends &= r->end[at] == r->start[at] + d[at];
      busy += d[at];
    }
    total = r->end[(size_t)st * n + n - 1] > total ? r->end[(size_t)st * n + n - 1] : total;
    sums &= r->busy[st] == busy && r->idle[st] == (r->total - busy) / busy;
  }
  EXPECT(after_prev, "%s: an item starts before its stage's previous item ended", tag);
  EXPECT(after_dep, "%s: an item starts before its dependency ended (+ latency)", tag);
  EXPECT(asap, "%s: an item starts later than its stage and its dependency allow", tag);
  EXPECT(ends, "%s: end != start + duration", tag);
  EXPECT(sums && r->total == total, "%s: busy, idle or total disagree with the timeline", tag);
}

/* p = 2, m = 2, 1F1B, every item 1 unit.  Stage 0 runs F0 F1 B0 B1 (warmup 1), stage 1 runs
 * F0 B0 F1 B1 (warmup 0).  Latency 0:
 *   stage 0: F0 [0,1]  F1 [1,2]  B0 waits for stage 1's B0 [3,4]  B1 waits for its B1 [5,6]
 *   stage 1: F0 [1,2]  B0 [2,3]  F1 [3,4] (stage busy until 3)      B1 [4,5]
 * total 6, busy 4: idle (6 - 4) / 4 = 0.5 = (p-1)/m (forward = backward here).  Latency 0.5:
 *   stage 0: F0 [0,1]  F1 [1,2]  B0 [4,5] (3.5 + 0.5)  B1 [6,7] (5.5 + 0.5)
 *   stage 1: F0 [1.5,2.5]  B0 [2.5,3.5]  F1 [3.5,4.5]  B1 [4.5,5.5]
 * total 7, idle 0.75. */
static void check_hand(void)
{
  const double want_start[2][2][4] = {{{0, 1, 3, 5}, {1, 2, 3, 4}}, {{0, 1, 4, 6}, {1.5, 2.5, 3.5, 4.5}}};
  const double want_total[2] = {6, 7}, latency[2] = {0, 0.5};
  double d[8];
  for (int i = 0; i < 8; i++) d[i] = 1;
  for (int l = 0; l < 2; l++) {
    ptdp_replay r;
    int rc = ptdp_schedule_replay(PTDP_SCHED_1F1B, 2, 1, 2, d, latency[l], &r);
    EXPECT(rc == 0 && r.p == 2 && r.n == 4, "hand case latency %g: replay failed", latency[l]);
    if (rc) continue;
    for (int st = 0; st < 2; st++)
      for (int i = 0; i < 4; i++) {
        EXPECT(r.start[st * 4 + i] == want_start[l][st][i], "hand case latency %g: stage %d item %d starts at %g, want %g",
               latency[l], st, i, r.start[st * 4 + i], want_start[l][st][i]);
        EXPECT(r.end[st * 4 + i] == want_start[l][st][i] + 1, "hand case latency %g: stage %d item %d ends at %g",
               latency[l], st, i, r.end[st * 4 + i]);
      }
    EXPECT(r.total == want_total[l], "hand case latency %g: total %g, want %g", latency[l], r.total, want_total[l]);
    for (int st = 0; st < 2; st++)
      EXPECT(r.idle[st] == (want_total[l] - 4) / 4, "hand case latency %g: stage %d idle %g", latency[l], st, r.idle[st]);
    /* the lists replayed are the schedule's */
    EXPECT(r.sched[0].items[2].kind == PTDP_WORK_BACKWARD && r.sched[0].items[2].microbatch == 0 &&
               r.sched[1].items[2].kind == PTDP_WORK_FORWARD && r.sched[1].items[2].microbatch == 1,
           "hand case: replayed lists are not F0 F1 B0 B1 / F0 B0 F1 B1");
    ptdp_replay_destroy(&r);
    EXPECT(r.start == NULL && r.sched == NULL && r.p == 0, "destroy leaves an empty result");
  }
}

/* Deterministic durations in [0.5, 1.5) ms (forward) and twice that (backward). */
static double noise(unsigned long long *state)
{
  *state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
  return 0.5 + (double)(*state >> 11) / 9007199254740992.0;
}

/* One (kind, p, v, m): uniform times, then random times; the timeline, the old totals, the
 * bubble formula, a slow stage and latency. */
static void check_case(ptdp_schedule_kind kind, int p, int v, int m, unsigned long long *seed)
{
  const int n = 2 * m * v;
  char tag[96];
  double *d = malloc(sizeof(double) * (size_t)n * p), idle_old[8], total_old;
  for (int pass = 0; pass < 2; pass++) {
    for (int st = 0; st < p; st++) {
      ptdp_schedule s;
      ptdp_schedule_build(kind, st, p, v, m, &s);
      for (int i = 0; i < n; i++)
        d[st * n + i] = (s.items[i].kind == PTDP_WORK_FORWARD ? 1.0 : 2.0) / v * (pass ? 1e-3 * noise(seed) : 1.0);
      ptdp_schedule_free(&s);
    }
    snprintf(tag, sizeof tag, "%s p=%d v=%d m=%d %s", ptdp_schedule_name(kind), p, v, m, pass ? "random" : "uniform");
    ptdp_replay r, rl;
    if (ptdp_schedule_replay(kind, p, v, m, d, 0.0, &r)) {
      EXPECT(0, "%s: replay failed", tag);
      continue;
    }
    check_timeline(&r, v, d, 0.0, tag);
    old_replay(kind, p, v, m, d, idle_old, &total_old);
    int same = r.total == total_old;
    for (int st = 0; st < p; st++) same &= r.idle[st] == idle_old[st];
    EXPECT(same, "%s: idle or total differ from the replay without timeline", tag);
    const double want = (double)(p - 1) / ((double)v * m);
    for (int st = 0; !pass && st < p; st++)
      EXPECT(fabs(r.idle[st] - want) <= 1e-12, "%s stage %d: replayed bubble %.6f, want %.6f", tag, st, r.idle[st], want);
    /* a message latency: every stage after the first waits longer */
    const double lat = pass ? 0.25e-3 : 0.25;
    if (ptdp_schedule_replay(kind, p, v, m, d, lat, &rl) == 0) {
      check_timeline(&rl, v, d, lat, tag);
      EXPECT(rl.total > r.total && rl.idle[p - 1] > r.idle[p - 1], "%s: latency %g did not lengthen the iteration", tag,
             lat);
      ptdp_replay_destroy(&rl);
    } else
      EXPECT(0, "%s: replay with latency failed", tag);
    /* one slow stage: everyone else waits more */
    for (int i = 0; i < n; i++) d[i] *= 2;
    double idle_slow[8], total_slow;
    old_replay(kind, p, v, m, d, idle_slow, &total_slow);
    if (ptdp_schedule_replay(kind, p, v, m, d, 0.0, &rl) == 0) {
      EXPECT(rl.idle[p - 1] > r.idle[p - 1], "%s: a slow first stage did not add to the last stage's bubble", tag);
      EXPECT(rl.total == total_slow && rl.idle[0] == idle_slow[0], "%s slow stage: differs from the old replay", tag);
      ptdp_replay_destroy(&rl);
    } else
      EXPECT(0, "%s: replay with a slow stage failed", tag);
    ptdp_replay_destroy(&r);
  }
  free(d);
}

static void check_bad(void)
{
  double d[8] = {1, 1, 1, 1, 1, 1, 1, 1};
  ptdp_replay r;
  ptdp_error_set_quiet(1);
  ptdp_error_clear();
  EXPECT(ptdp_schedule_replay(PTDP_SCHED_1F1B, 0, 1, 2, d, 0.0, &r) == PTDP_ERR_INPUT && r.start == NULL,
         "p = 0 should fail with an empty result");
  ptdp_error_clear();
  EXPECT(ptdp_schedule_replay(PTDP_SCHED_1F1B, 2, 1, 2, d, -1.0, &r) == PTDP_ERR_INPUT && r.start == NULL &&
             strstr(ptdp_error_message(), "latency") != NULL,
         "a negative latency should fail naming it");
  ptdp_error_clear();
  ptdp_error_set_quiet(0);
  ptdp_replay_destroy(&r); /* harmless on an empty result */
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  unsigned long long seed = 12345;
  int cases = 0;
  check_hand();
  for (int kind = 0; kind < 3; kind++)
    for (int p = 2; p <= 8; p *= 2)
      for (int v = 1; v <= (kind == PTDP_SCHED_INTERLEAVED ? 4 : 1); v++)
        for (int m = p; m <= 32; m *= 2) {
          if (kind == PTDP_SCHED_INTERLEAVED && v == 1) continue;
          check_case((ptdp_schedule_kind)kind, p, v, m, &seed);
          cases++;
        }
  check_bad();
  printf("test_replay: %d (schedule, p, v, m) cases\n", cases);
  int status = expect_summary("test_replay");
  MPI_Finalize();
  return status;
}
