/* Named events (ptdp/events.h) on 2-4 ranks (the harness runs 3):
 *   registration is idempotent; add accumulates exact values; begin/end measures a known sleep
 *   (generous bounds) and nests; the reduction's ms per iteration, max, min and per-rank values
 *   against direct arithmetic, from one collective; the interval resets and the totals do not;
 *   the timer line equals the trainer's print_timers output for the same values (and a literal
 *   for known ones); ranks that registered differently are refused; the ring keeps exactly the
 *   last N sampled iterations and unsampled iterations store nothing; internal errors. */
#include "ptdp/events.h"
#include "ptdp/error.h"
#include "ptdp/schedule.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../expect.h"

/* The driver stores its work item's kind in the record as is. */
_Static_assert(PTDP_RECORD_FORWARD == (int)PTDP_WORK_FORWARD && PTDP_RECORD_BACKWARD == (int)PTDP_WORK_BACKWARD,
               "record kinds follow the schedule's work kinds");

/* The call fails with code and a message containing `what` (printing silenced).  Misuse of the
 * events API is a bug of the caller inside ptdp (PTDP_ERR_INTERNAL: EXPECT_FAILS); a bad count
 * from the user's keys is an input error. */
#define EXPECT_FAILS(call, what) EXPECT_FAILS_CODE(call, PTDP_ERR_INTERNAL, what)
#define EXPECT_FAILS_CODE(call, code, what)                                                               \
  do {                                                                                                    \
    ptdp_error_set_quiet(1);                                                                              \
    int rc_ = (call);                                                                                     \
    EXPECT(rc_ == (code) && strstr(ptdp_error_message(), what), "%s: rc %d, message '%s'", #call,         \
           rc_, ptdp_error_message());                                                                    \
    ptdp_error_clear();                                                                                   \
    ptdp_error_set_quiet(0);                                                                              \
    ptdp_error_set_collective(1);                                                                         \
  } while (0)

/* The trainer's print_timers (src/train/trainer.c at b791947), printing into buf. */
static void old_timer_line(const char **names, const double *timer, int n, int iters, char *buf, size_t len)
{
  double mx[16], mn[16];
  for (int i = 0; i < n; i++) {
    mx[i] = timer[i] / iters * 1e3;
    mn[i] = -mx[i];
  }
  MPI_Allreduce(MPI_IN_PLACE, mx, n, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  MPI_Allreduce(MPI_IN_PLACE, mn, n, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  size_t u = (size_t)snprintf(buf, len, "[timers] ms per iteration (max, min over ranks):");
  for (int i = 0; i < n; i++) u += (size_t)snprintf(buf + u, len - u, " %s %.1f, %.1f |", names[i], mx[i], -mn[i]);
  snprintf(buf + u, len - u, "\n");
}

static void check_timers(void)
{
  ptdp_events *log = NULL;
  EXPECT(ptdp_events_create(2, &log) == 0 && log, "create");
  int fb = -1, pw = -1, again = -1, sl = -1, in = -1;
  EXPECT(ptdp_events_register(log, "forward-backward", &fb) == 0 && fb == 0, "first id 0: %d", fb);
  EXPECT(ptdp_events_register(log, "pipeline-wait", &pw) == 0 && pw == 1, "second id 1: %d", pw);
  EXPECT(ptdp_events_register(log, "forward-backward", &again) == 0 && again == fb, "same name, same id: %d", again);
  EXPECT(ptdp_events_count(log) == 2, "2 registered: %d", ptdp_events_count(log));
  EXPECT(strcmp(ptdp_events_name(log, pw), "pipeline-wait") == 0 && !ptdp_events_name(log, 2) &&
             !ptdp_events_name(log, -1),
         "names");

  /* add: exact binary fractions, so the sums are exact */
  ptdp_events_stats st;
  EXPECT(ptdp_events_add(log, pw, 0.25) == 0 && ptdp_events_add(log, pw, 0.5) == 0, "add");
  EXPECT(ptdp_events_get(log, pw, &st) == 0 && st.seconds == 0.75 && st.count == 2 && st.total_seconds == 0.75 &&
             st.total_count == 2,
         "add sums: %g s, %lld", st.seconds, st.count);

  /* begin/end around a 20 ms sleep, with another event nested inside */
  EXPECT(ptdp_events_register(log, "sleep", &sl) == 0 && ptdp_events_register(log, "inner", &in) == 0, "register");
  struct timespec ts = {0, 20 * 1000 * 1000};
  EXPECT(ptdp_events_begin(log, sl) == 0 && ptdp_events_begin(log, in) == 0, "begin nested");
  nanosleep(&ts, NULL);
  EXPECT(ptdp_events_end(log, in) == 0, "end inner");
  EXPECT(ptdp_events_end(log, sl) == 0, "end outer");
  ptdp_events_stats so, si;
  ptdp_events_get(log, sl, &so);
  ptdp_events_get(log, in, &si);
  EXPECT(so.count == 1 && so.seconds >= 0.015 && so.seconds < 5.0, "slept 20 ms: %g s", so.seconds);
  EXPECT(si.count == 1 && si.seconds >= 0.015 && si.seconds <= so.seconds, "inner %g <= outer %g", si.seconds,
         so.seconds);

  /* internal errors */
  EXPECT_FAILS(ptdp_events_begin(log, 4), "unknown event id 4");
  EXPECT_FAILS(ptdp_events_end(log, -1), "unknown event id -1");
  EXPECT_FAILS(ptdp_events_add(log, 7, 1.0), "unknown event id 7");
  EXPECT_FAILS(ptdp_events_get(log, 4, &st), "unknown event id 4");
  EXPECT_FAILS(ptdp_events_end(log, fb), "'forward-backward' ended without a begin");
  EXPECT(ptdp_events_begin(log, fb) == 0, "begin");
  EXPECT_FAILS(ptdp_events_begin(log, fb), "'forward-backward' begun twice");
  EXPECT(ptdp_events_end(log, fb) == 0, "end after the refused begin");
  EXPECT_FAILS(ptdp_events_register(log, "", &again), "without a name");
  char line[256];
  EXPECT_FAILS(ptdp_events_format(log, line, sizeof line), "before any reduction");
  ptdp_events_destroy(&log);
  EXPECT(log == NULL, "destroy sets NULL");
  ptdp_events_destroy(&log); /* no-op */
}

/* Rank q's seconds for event e over `iters` iterations: rank-dependent, rising in q for even e,
 * falling for odd e, so max and min come from different ranks. */
static double seconds_of(int q, int g, int e) { return 0.001 * (e + 1) * (e % 2 ? g - q : q + 1) + 0.0003 * q; }

static void check_reduce(ptdp_comm *world)
{
  const int g = world->size, r = world->rank, iters = 3;
  const char *names[] = {"forward-backward", "pipeline-wait", "tp-comm", "dp-wait", "grads-sync", "optimizer"};
  enum { N = 6 };
  ptdp_events *log;
  EXPECT(ptdp_events_create(0, &log) == 0, "create");
  int id[N];
  double old[N];
  for (int e = 0; e < N; e++) {
    EXPECT(ptdp_events_register(log, names[e], &id[e]) == 0 && id[e] == e, "register %s", names[e]);
    old[e] = seconds_of(r, g, e);
    ptdp_events_add(log, id[e], old[e]);
  }
  ptdp_events_summary s;
  ptdp_events_last(log, &s);
  EXPECT(s.nevents == 0 && !s.max, "nothing reduced yet");
  ptdp_comm_reset_stats(world);
  EXPECT(ptdp_events_reduce(log, world, iters, &s) == 0, "reduce");
  EXPECT(world->stats.calls[PTDP_TAG_MISC] == 1, "one collective: %lld", world->stats.calls[PTDP_TAG_MISC]);
  EXPECT(s.nevents == N && s.nranks == g && s.iters == iters, "summary sizes");
  for (int e = 0; e < N; e++) {
    double want_max = -1, want_min = 1e300;
    for (int q = 0; q < g; q++) {
      double x = seconds_of(q, g, e) / iters * 1e3; /* the trainer's expression: bit-identical */
      want_max = x > want_max ? x : want_max;
      want_min = x < want_min ? x : want_min;
      EXPECT(s.all[q * N + e] == x, "all[%d][%s] = %.17g, expected %.17g", q, names[e], s.all[q * N + e], x);
    }
    EXPECT(s.ms[e] == seconds_of(r, g, e) / iters * 1e3, "ms of %s on this rank", names[e]);
    EXPECT(s.max[e] == want_max && s.min[e] == want_min, "%s: max %.17g min %.17g, expected %.17g %.17g", names[e],
           s.max[e], s.min[e], want_max, want_min);
  }
  EXPECT(s.max[0] == seconds_of(g - 1, g, 0) / iters * 1e3, "even event: max on the last rank");
  EXPECT(s.max[1] == seconds_of(0, g, 1) / iters * 1e3, "odd event: max on rank 0");

  /* the line equals print_timers' for the same values */
  char line[512], want[512];
  EXPECT(ptdp_events_format(log, line, sizeof line) == 0, "format");
  old_timer_line(names, old, N, iters, want, sizeof want);
  EXPECT(strcmp(line, want) == 0, "line\n  '%s'\nexpected\n  '%s'", line, want);
  EXPECT_FAILS(ptdp_events_format(log, line, 40), "needs more than the 40 chars");

  /* a new interval; totals kept */
  ptdp_events_stats st;
  EXPECT(ptdp_events_get(log, id[2], &st) == 0 && st.seconds == 0 && st.count == 0 && st.total_seconds == old[2] &&
             st.total_count == 1,
         "interval reset, totals kept");

  /* known values: rank 0 12.3 and 0.4 ms, the others 11.0 and 0.1 ms, over 2 iterations */
  ptdp_events *two;
  int a, b;
  ptdp_events_create(0, &two);
  ptdp_events_register(two, "forward-backward", &a);
  ptdp_events_register(two, "pipeline-wait", &b);
  ptdp_events_add(two, a, r == 0 ? 0.0246 : 0.0220);
  ptdp_events_add(two, b, r == 0 ? 0.0008 : 0.0002);
  EXPECT(ptdp_events_reduce(two, world, 2, NULL) == 0 && ptdp_events_format(two, line, sizeof line) == 0, "known");
  EXPECT(strcmp(line, "[timers] ms per iteration (max, min over ranks): forward-backward 12.3, 11.0 |"
                      " pipeline-wait 0.4, 0.1 |\n") == 0,
         "known line '%s'", line);
  ptdp_events_summary last;
  ptdp_events_last(two, &last);
  EXPECT(last.nevents == 2 && last.all[0] == 0.0246 / 2 * 1e3 && last.all[1 * 2 + 1] == 0.0002 / 2 * 1e3,
         "gathered values of ranks 0 and 1");
  ptdp_events_destroy(&two);

  /* ranks that registered differently are refused, on every rank alike */
  ptdp_events *bad;
  ptdp_events_create(0, &bad);
  ptdp_events_register(bad, r == 0 ? "dp-wait" : "tp-comm", &a);
  ptdp_events_register(bad, r == 0 ? "tp-comm" : "dp-wait", &b);
  EXPECT_FAILS(ptdp_events_reduce(bad, world, 1, NULL), "ranks registered different events");
  EXPECT_FAILS(ptdp_events_reduce(bad, world, 0, NULL), "over 0 iterations");
  ptdp_events_destroy(&bad);
  ptdp_events_destroy(&log);
}

/* Iteration it records it + 1 work items, and iteration 6 200 (past the first allocation). */
static int nrec_of(long long it) { return it == 6 ? 200 : (int)it + 1; }

static void record_iteration(ptdp_events *log, long long it, int sampled, int ev)
{
  EXPECT(ptdp_events_iteration_begin(log, it, sampled) == 0, "iteration_begin");
  EXPECT(ptdp_events_elapsed(log) >= 0 && ptdp_events_elapsed(log) < 5, "elapsed");
  for (int j = 0; j < nrec_of(it); j++) {
    ptdp_event_record rec = {.start = j, .end = j + 0.5, .wait = 0.25, .kind = j % 2, .microbatch = j,
                             .chunk = (int)it, .event = -1};
    EXPECT(ptdp_events_record(log, &rec) == 0, "record");
  }
  ptdp_event_record rec = {.start = 0, .end = 1, .kind = PTDP_RECORD_EVENT, .microbatch = -1, .chunk = -1, .event = ev};
  EXPECT(ptdp_events_record(log, &rec) == 0, "event record");
}

static void check_timelines(void)
{
  enum { KEEP = 3 };
  ptdp_events *log;
  int ev;
  EXPECT(ptdp_events_create(KEEP, &log) == 0, "create");
  ptdp_events_register(log, "optimizer", &ev);
  EXPECT(ptdp_events_timelines(log) == 0 && !ptdp_events_sampling(log), "none yet");
  /* iterations 0..9, the even ones sampled: 0, 2, 4, 6, 8; the last 3 are 4, 6, 8 */
  for (long long it = 0; it < 10; it++) {
    int sampled = it % 2 == 0, before = ptdp_events_timelines(log);
    record_iteration(log, it, sampled, ev);
    EXPECT(ptdp_events_sampling(log) == sampled, "sampling %lld", it);
    int kept = ptdp_events_timelines(log);
    EXPECT(sampled ? kept == (before < KEEP ? before + 1 : KEEP) : kept == before, "iteration %lld: %d kept", it, kept);
    if (!sampled && kept) { /* an unsampled iteration added nothing to the latest */
      long long last;
      const ptdp_event_record *r;
      int n;
      ptdp_events_timeline(log, kept - 1, &last, &r, &n);
      EXPECT(last == it - 1 && n == nrec_of(it - 1) + 1, "unsampled %lld stored nothing (%d records)", it, n);
    }
  }
  EXPECT(ptdp_events_timelines(log) == KEEP, "exactly the last %d", KEEP);
  for (int k = 0; k < KEEP; k++) {
    long long it;
    const ptdp_event_record *r;
    int n, ok = 1;
    EXPECT(ptdp_events_timeline(log, k, &it, &r, &n) == 0, "timeline %d", k);
    EXPECT(it == 4 + 2 * k && n == nrec_of(it) + 1, "timeline %d: iteration %lld, %d records", k, it, n);
    for (int j = 0; j + 1 < n; j++)
      ok &= r[j].start == j && r[j].end == j + 0.5 && r[j].wait == 0.25 && r[j].kind == j % 2 && r[j].microbatch == j &&
            r[j].chunk == it && r[j].event == -1;
    ok &= r[n - 1].kind == PTDP_RECORD_EVENT && r[n - 1].event == ev &&
          strcmp(ptdp_events_name(log, r[n - 1].event), "optimizer") == 0;
    EXPECT(ok, "records of iteration %lld", it);
  }
  const ptdp_event_record *r;
  int n;
  EXPECT_FAILS(ptdp_events_timeline(log, KEEP, NULL, &r, &n), "timeline 3 asked for, 3 kept");
  EXPECT(ptdp_events_iteration_begin(log, 10, 1) == 0, "sampled");
  ptdp_event_record bad = {.kind = PTDP_RECORD_EVENT, .event = 9};
  EXPECT_FAILS(ptdp_events_record(log, &bad), "unknown event id 9");
  bad.kind = 5;
  EXPECT_FAILS(ptdp_events_record(log, &bad), "unknown kind 5");
  ptdp_events_destroy(&log);

  /* keep none: sampled iterations store nothing either */
  EXPECT(ptdp_events_create(0, &log) == 0, "create 0");
  record_iteration(log, 0, 1, 0);
  EXPECT(ptdp_events_timelines(log) == 0 && !ptdp_events_sampling(log), "kept none");
  ptdp_events_destroy(&log);
  EXPECT_FAILS_CODE(ptdp_events_create(-1, &log), PTDP_ERR_INPUT, "-1 sampled iterations");
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  int world;
  MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  if (world < 2) {
    if (wrank == 0) printf("test_events: needs 2 or more ranks (max and min over ranks), skipped\n");
    MPI_Finalize();
    return 77;
  }
  ptdp_error_set_collective(1);
  ptdp_comm w;
  EXPECT(ptdp_comm_wrap(&w, MPI_COMM_WORLD, PTDP_GROUP_WORLD) == 0, "wrap world");
  check_timers();
  check_reduce(&w);
  check_timelines();
  ptdp_comm_free(&w);
  int status = expect_summary_all("test_events");
  MPI_Finalize();
  return status;
}
