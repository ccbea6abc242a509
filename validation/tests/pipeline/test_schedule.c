/* Unit test of the pipeline schedules (ptdp_schedule_build), 1 rank, no communication.
 * For p in 1..8, v in 1..4, m in 1..32 and every schedule whose (p, v, m) is valid:
 *   - every (micro-batch, chunk) appears once forward and once backward, the forward first;
 *   - warmup w: GPipe m; 1F1B min(p - s - 1, m); interleaved min(2 (p - s - 1) + (v - 1) p, m v),
 *     and the list starts with w forwards followed by alternating F/B;
 *   - peak in flight: GPipe m, 1F1B min(p - s, m), interleaved min(w + 1, m v);
 *   - a discrete-event simulation of all p stages, each running its list in order, where
 *     F(mb, virtual stage k) waits for F(mb, k-1) and B(mb, k) for B(mb, k+1) (messages take
 *     no time), completes without deadlock, and with forward 1, backward 2 time units per chunk
 *     finishes at T = 3 m v + 3 (p - 1): bubble / ideal = (p-1)/m for GPipe and 1F1B and
 *     (p-1)/(v m) for interleaved (per-chunk times tf/v and tb/v, scaled by v to integers);
 *   - invalid (p, v, m, stage) give errors naming the problem;
 *   - the dependency rule (ptdp_work_dependency, ptdp_work_consumer): the worked examples of
 *     schedule.h item by item, and for p in 1..8, v in 1..4 every (stage, chunk, direction)
 *     against k -/+ 1, the consumer the converse of the dependency;
 *   - ring order (ptdp_schedule_check_ring, what lets NCCL carry the pipeline's messages, matched
 *     by posting order, not by tag: src/pipeline/driver.c, which also checks it at set-up): for
 *     every p > 1 combination above; shown to catch a mistake, two forwards swapped in one
 *     stage's list, with a message naming the first message out of order. */
#include "ptdp/error.h"
#include "ptdp/schedule.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../expect.h"

enum { TF = 1, TB = 2 }; /* per-chunk forward and backward time (units) */

static int imin(int a, int b) { return a < b ? a : b; }

/* Coverage, order, warmup and peak in flight of one stage's list. */
static void check_stage(const ptdp_schedule *s, const char *tag)
{
  int p = s->p, v = s->v, m = s->m, st = s->stage;
  int *fpos = malloc(sizeof(int) * m * v), *bpos = malloc(sizeof(int) * m * v);
  for (int i = 0; i < m * v; i++) fpos[i] = bpos[i] = -1;
  EXPECT(s->count == 2 * m * v, "%s: count %d", tag, s->count);
  int ok = 1;
  for (int i = 0; i < s->count; i++) {
    ptdp_work w = s->items[i];
    if (w.microbatch < 0 || w.microbatch >= m || w.chunk < 0 || w.chunk >= v) {
      ok = 0;
      continue;
    }
    int *pos = w.kind == PTDP_WORK_FORWARD ? fpos : bpos;
    if (pos[w.microbatch * v + w.chunk] >= 0) ok = 0; /* twice */
    pos[w.microbatch * v + w.chunk] = i;
  }
  for (int i = 0; i < m * v; i++) ok &= fpos[i] >= 0 && bpos[i] > fpos[i];
  EXPECT(ok, "%s: every (micro-batch, chunk) once forward then once backward", tag);

  int w;
  switch (s->kind) {
  case PTDP_SCHED_GPIPE: w = m; break;
  case PTDP_SCHED_1F1B: w = imin(p - st - 1, m); break;
  default: w = imin(2 * (p - st - 1) + (v - 1) * p, m * v); break;
  }
  EXPECT(s->n_warmup == w, "%s: warmup %d, expected %d", tag, s->n_warmup, w);
  /* shape: w forwards, then F B pairs, then backwards */
  ok = 1;
  for (int i = 0; i < s->count; i++) {
    ptdp_work_kind want;
    if (i < w) want = PTDP_WORK_FORWARD;
    else if (i < w + 2 * (m * v - w)) want = (i - w) % 2 == 0 ? PTDP_WORK_FORWARD : PTDP_WORK_BACKWARD;
    else want = PTDP_WORK_BACKWARD;
    ok &= s->items[i].kind == want;
  }
  EXPECT(ok, "%s: warmup / steady 1F1B / cooldown shape", tag);
  int peak = ptdp_schedule_max_in_flight(s), want_peak;
  switch (s->kind) {
  case PTDP_SCHED_GPIPE: want_peak = m; break;
  case PTDP_SCHED_1F1B: want_peak = imin(p - st, m); break;
  default: want_peak = imin(w + 1, m * v); break;
  }
  EXPECT(peak == want_peak, "%s: max in flight %d, expected %d", tag, peak, want_peak);
  free(fpos);
  free(bpos);
}

/* Simulate all stages; returns the finish time T, or -1 on deadlock. */
static long simulate(ptdp_schedule *st, int p, int v, int m)
{
  int P = p * v;
  long *ff = malloc(sizeof(long) * m * P), *fb = malloc(sizeof(long) * m * P);
  long *free_at = calloc((size_t)p, sizeof(long));
  int *next = calloc((size_t)p, sizeof(int));
  for (int i = 0; i < m * P; i++) ff[i] = fb[i] = -1;
  long T = 0;
  for (int progress = 1; progress;) {
    progress = 0;
    for (int s = 0; s < p; s++)
      while (next[s] < st[s].count) {
        ptdp_work w = st[s].items[next[s]];
        int k = w.chunk * p + s; /* virtual stage */
        long dep;
        if (w.kind == PTDP_WORK_FORWARD)
          dep = k == 0 ? 0 : ff[w.microbatch * P + k - 1];
        else {
          dep = k == P - 1 ? ff[w.microbatch * P + k] : fb[w.microbatch * P + k + 1];
          if (ff[w.microbatch * P + k] < 0) dep = -1; /* own forward first */
        }
        if (dep < 0) break; /* blocked: wait for another stage */
        long start = dep > free_at[s] ? dep : free_at[s];
        long end = start + (w.kind == PTDP_WORK_FORWARD ? TF : TB);
        (w.kind == PTDP_WORK_FORWARD ? ff : fb)[w.microbatch * P + k] = end;
        free_at[s] = end;
        if (end > T) T = end;
        next[s]++;
        progress = 1;
      }
  }
  for (int s = 0; s < p; s++)
    if (next[s] < st[s].count) T = -1;
  free(ff), free(fb), free(free_at), free(next);
  return T;
}

static void check_bad(ptdp_schedule_kind kind, int stage, int p, int v, int m, const char *needle)
{
  ptdp_schedule s;
  ptdp_error_clear();
  int rc = ptdp_schedule_build(kind, stage, p, v, m, &s);
  EXPECT(rc == PTDP_ERR_INPUT && s.items == NULL, "%s stage %d p %d v %d m %d should fail",
         ptdp_schedule_name(kind), stage, p, v, m);
  EXPECT(strstr(ptdp_error_message(), needle) != NULL, "message \"%s\" lacks \"%s\"", ptdp_error_message(),
         needle);
  ptdp_error_clear();
}

/* The worked examples in schedule.c's comment, item by item. */
static void check_examples(void)
{
  ptdp_schedule s;
  const char *want1 = "F0F1F2B0F3B1F4B2F5B3B4B5";
  char got[256] = "";
  ptdp_schedule_build(PTDP_SCHED_1F1B, 1, 4, 1, 6, &s);
  for (int i = 0; i < s.count; i++)
    sprintf(got + strlen(got), "%c%d", s.items[i].kind == PTDP_WORK_FORWARD ? 'F' : 'B', s.items[i].microbatch);
  EXPECT(strcmp(got, want1) == 0, "1f1b p 4 m 6 stage 1: %s, expected %s", got, want1);
  ptdp_schedule_free(&s);
  const char *want2 = "F0.0F1.0F0.1F1.1F2.0B0.1F3.0B1.1F2.1B0.0F3.1B1.0B2.1B3.1B2.0B3.0";
  got[0] = '\0';
  ptdp_schedule_build(PTDP_SCHED_INTERLEAVED, 0, 2, 2, 4, &s);
  for (int i = 0; i < s.count; i++)
    sprintf(got + strlen(got), "%c%d.%d", s.items[i].kind == PTDP_WORK_FORWARD ? 'F' : 'B', s.items[i].microbatch,
            s.items[i].chunk);
  EXPECT(strcmp(got, want2) == 0, "interleaved p 2 v 2 m 4 stage 0: %s, expected %s", got, want2);
  ptdp_schedule_free(&s);
}

/* One expected dependency (or consumer): from (stage, chunk, kind) to (want_stage, want_chunk),
 * want_stage -1 for none. */
typedef struct {
  int stage, chunk;
  ptdp_work_kind kind;
  int want_stage, want_chunk;
} dep_example;

static void check_dep_examples(int p, int v, const dep_example *ex, int n, int consumer)
{
  for (int i = 0; i < n; i++) {
    const ptdp_work w = {.kind = ex[i].kind, .microbatch = 5, .chunk = ex[i].chunk};
    ptdp_work_dep d;
    int has = consumer ? ptdp_work_consumer(p, v, ex[i].stage, w, &d) : ptdp_work_dependency(p, v, ex[i].stage, w, &d);
    int want = ex[i].want_stage >= 0;
    EXPECT(has == want && (!want || (d.stage == ex[i].want_stage && d.chunk == ex[i].want_chunk &&
                                     d.microbatch == 5 && d.kind == ex[i].kind)),
           "p %d v %d: %s of %c at stage %d chunk %d is %d (stage %d chunk %d), want %d (stage %d chunk %d)", p, v,
           consumer ? "consumer" : "dependency", ex[i].kind == PTDP_WORK_FORWARD ? 'F' : 'B', ex[i].stage, ex[i].chunk,
           has, d.stage, d.chunk, want, ex[i].want_stage, ex[i].want_chunk);
  }
}

/* ptdp_work_dependency and ptdp_work_consumer: schedule.h's examples, then every case. */
static void check_dependency(void)
{
  const ptdp_work_kind F = PTDP_WORK_FORWARD, B = PTDP_WORK_BACKWARD;
  /* p = 2, v = 2: virtual stage k = 2 chunk + stage */
  const dep_example dep22[] = {
    {0, 0, F, -1, -1}, {0, 0, B, 1, 0}, /* k 0 */
    {1, 0, F, 0, 0},   {1, 0, B, 0, 1}, /* k 1 */
    {0, 1, F, 1, 0},   {0, 1, B, 1, 1}, /* k 2 */
    {1, 1, F, 0, 1},   {1, 1, B, -1, -1}, /* k 3 */
  };
  const dep_example con22[] = {
    {0, 0, F, 1, 0}, {0, 0, B, -1, -1}, {1, 0, F, 0, 1}, {1, 0, B, 0, 0},
    {0, 1, F, 1, 1}, {0, 1, B, 1, 0},   {1, 1, F, -1, -1}, {1, 1, B, 0, 1},
  };
  const dep_example dep41[] = {{2, 0, F, 1, 0}, {2, 0, B, 3, 0}, {3, 0, B, -1, -1}, {0, 0, F, -1, -1}, {0, 0, B, 1, 0}};
  check_dep_examples(2, 2, dep22, 8, 0);
  check_dep_examples(2, 2, con22, 8, 1);
  check_dep_examples(4, 1, dep41, 5, 0);
  int ok = 1, converse = 1, remote = 1;
  for (int p = 1; p <= 8; p++)
    for (int v = 1; v <= 4; v++)
      for (int st = 0; st < p; st++)
        for (int c = 0; c < v; c++)
          for (int kind = 0; kind < 2; kind++) {
            const ptdp_work w = {.kind = (ptdp_work_kind)kind, .microbatch = 3, .chunk = c};
            const int k = c * p + st, kd = kind == PTDP_WORK_FORWARD ? k - 1 : k + 1;
            const int kc = kind == PTDP_WORK_FORWARD ? k + 1 : k - 1;
            ptdp_work_dep d, e;
            int has = ptdp_work_dependency(p, v, st, w, &d);
            ok &= has == (kd >= 0 && kd < p * v) && has == ptdp_work_dependency(p, v, st, w, NULL);
            if (has) {
              ok &= d.stage == kd % p && d.chunk == kd / p && d.microbatch == 3 && (int)d.kind == kind;
              remote &= p == 1 || d.stage != st;
              /* the item w depends on sends to w */
              const ptdp_work dw = {.kind = d.kind, .microbatch = d.microbatch, .chunk = d.chunk};
              converse &= ptdp_work_consumer(p, v, d.stage, dw, &e) && e.stage == st && e.chunk == c;
            } else
              ok &= d.stage == -1 && d.chunk == -1;
            has = ptdp_work_consumer(p, v, st, w, &d);
            ok &= has == (kc >= 0 && kc < p * v) && (!has || (d.stage == kc % p && d.chunk == kc / p));
          }
  EXPECT(ok, "dependency or consumer differs from virtual stage k -/+ 1");
  EXPECT(converse, "the consumer of an item's dependency is not the item");
  EXPECT(remote, "with p > 1 a dependency is on the same stage");
}

/* The ring-order check catches a list that receives out of its sender's order. */
static void check_ring_plant(void)
{
  ptdp_schedule st[4];
  char msg[200] = "";
  for (int s = 0; s < 4; s++) EXPECT(ptdp_schedule_build(PTDP_SCHED_1F1B, s, 4, 1, 8, &st[s]) == 0, "build");
  EXPECT(ptdp_schedule_check_ring(st, 4, 1) == 0, "1f1b p 4 m 8: %s", ptdp_error_message());
  /* stage 1 warms up with F0 F1: swapped, it receives mb 1 first while stage 0 sends mb 0 first */
  ptdp_work t = st[1].items[0];
  st[1].items[0] = st[1].items[1];
  st[1].items[1] = t;
  ptdp_error_set_quiet(1);
  ptdp_error_clear();
  EXPECT(ptdp_schedule_check_ring(st, 4, 1) == PTDP_ERR_INTERNAL, "plant: two forwards swapped in stage 1's list not caught");
  snprintf(msg, sizeof msg, "%s", ptdp_error_message());
  ptdp_error_clear();
  ptdp_error_set_quiet(0);
  EXPECT(strstr(msg, "stage 0's forward message 0 is micro-batch 0 chunk 0, its neighbour's receive 0 is of micro-batch 1") != NULL,
         "plant: the message does not name the first message out of order: %s", msg);
  printf("plant caught: %s\n", msg);
  for (int s = 0; s < 4; s++) ptdp_schedule_free(&st[s]);
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  int combos = 0;
  for (int kind = 0; kind < 3; kind++)
    for (int p = 1; p <= 8; p++)
      for (int v = 1; v <= 4; v++)
        for (int m = 1; m <= 32; m++) {
          if (kind != PTDP_SCHED_INTERLEAVED && v > 1) continue;
          if (kind == PTDP_SCHED_INTERLEAVED && (p == 1 || m % p)) continue;
          ptdp_schedule st[8];
          char tag[96];
          int built = 1;
          for (int s = 0; s < p; s++) {
            snprintf(tag, sizeof tag, "%s p %d v %d m %d stage %d", ptdp_schedule_name(kind), p, v, m, s);
            int rc = ptdp_schedule_build(kind, s, p, v, m, &st[s]);
            EXPECT(rc == 0, "%s: build failed", tag);
            if (rc) built = 0;
            else check_stage(&st[s], tag);
          }
          if (built) {
            long T = simulate(st, p, v, m);
            snprintf(tag, sizeof tag, "%s p %d v %d m %d", ptdp_schedule_name(kind), p, v, m);
            EXPECT(T >= 0, "%s: deadlock in the dependency simulation", tag);
            /* ideal m v (tf + tb); bubble (p - 1)(tf + tb): (p-1)/m, or (p-1)/(v m) per-chunk */
            long ideal = (long)m * v * (TF + TB), bubble = (long)(p - 1) * (TF + TB);
            EXPECT(T == ideal + bubble, "%s: T %ld, expected %ld + %ld (bubble fraction %.4f, expected %.4f)", tag,
                   T, ideal, bubble, (double)(T - ideal) / ideal, (double)bubble / ideal);
            if (p > 1) EXPECT(ptdp_schedule_check_ring(st, p, v) == 0, "%s: %s", tag, ptdp_error_message());
            for (int s = 0; s < p; s++) ptdp_schedule_free(&st[s]);
          }
          combos++;
        }
  check_examples();
  check_dependency();
  check_ring_plant();
  ptdp_error_set_quiet(1);
  check_bad(PTDP_SCHED_INTERLEAVED, 0, 1, 2, 4, "needs pipeline-model-parallel-size p > 1");
  check_bad(PTDP_SCHED_INTERLEAVED, 0, 4, 2, 6, "m = 6 must be a multiple of pipeline-model-parallel-size p = 4");
  check_bad(PTDP_SCHED_INTERLEAVED, 0, 4, 0, 8, "v = 0");
  check_bad(PTDP_SCHED_1F1B, 0, 4, 1, 0, "m = 0");
  check_bad(PTDP_SCHED_GPIPE, 0, 0, 1, 4, "p = 0");
  check_bad(PTDP_SCHED_1F1B, 0, 4, 2, 8, "v = 2 model chunks per stage needs the interleaved schedule");
  check_bad(PTDP_SCHED_1F1B, 4, 4, 1, 8, "stage 4 outside 0 .. p-1 = 3");
  check_bad((ptdp_schedule_kind)7, 0, 4, 1, 8, "unknown pipeline schedule 7");
  ptdp_error_set_quiet(0);
  EXPECT(ptdp_schedule_parse("gpipe") == PTDP_SCHED_GPIPE && ptdp_schedule_parse("1f1b") == PTDP_SCHED_1F1B &&
             ptdp_schedule_parse("interleaved") == PTDP_SCHED_INTERLEAVED && ptdp_schedule_parse("1F1B") == -1 &&
             ptdp_schedule_parse(NULL) == -1,
         "parse");
  printf("test_schedule: %d (schedule, p, v, m) combinations\n", combos);
  int status = expect_summary("test_schedule");
  MPI_Finalize();
  return status;
}
