/* Named events and timelines of sampled iterations: see include/ptdp/events.h. */
#include "ptdp/events.h"

#include "ptdp/error.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  char *name;
  double seconds, total_seconds; /* interval, since create */
  long long count, total_count;
  double t_begin; /* MPI_Wtime at begin */
  int open;       /* between begin and end */
} event;

/* One sampled iteration's records (a slot of the ring). */
typedef struct {
  long long iteration;
  ptdp_event_record *recs;
  int n, cap; /* cap kept across reuse: the ring's memory is n_sampled x the most records */
} timeline;

struct ptdp_events {
  event *ev;
  int nev, cap;
  /* last reduction: ms [n], max [n], min [n], all [nranks n], in one block */
  double *red;
  size_t red_cap;
  ptdp_events_summary last;
  /* the ring of the last n_sampled sampled iterations: slot (head + k) % n_sampled is the
   * k-th oldest of the nkept kept */
  timeline *ring;
  int n_sampled, head, nkept;
  timeline *cur; /* slot of the current iteration when sampled, else NULL */
  double t_iter; /* MPI_Wtime at ptdp_events_iteration_begin */
};

/* Out of memory for something grown with realloc (PTDP_ALLOC covers fresh allocations). */
#define CHECK_MEM(p, ...) \
  do { \
    if (!(p)) return PTDP_FAIL(PTDP_ERR_MEM, __VA_ARGS__); \
  } while (0)

/* The array p of *cap elements of size elem, grown (doubling, first allocation `first`) to hold
 * more than `used`: the new address, or NULL out of memory (p then unchanged, still owned). */
static void *grow(void *p, int *cap, int used, size_t elem, int first)
{
  if (used < *cap) return p;
  int ncap = *cap ? 2 * *cap : first;
  void *q = realloc(p, elem * (size_t)ncap);
  if (q) *cap = ncap;
  return q;
}

int ptdp_events_create(int n_sampled, ptdp_events **log)
{
  PTDP_CHECK(n_sampled >= 0, "events: %d sampled iterations to keep (must be >= 0)", n_sampled);
  timeline *ring;
  PTDP_CALLOC(ring, n_sampled, sizeof *ring); /* NULL for n_sampled = 0 */
  ptdp_events *l = calloc(1, sizeof *l);
  if (!l) free(ring);
  CHECK_MEM(l, "out of memory for the events log");
  l->ring = ring;
  l->n_sampled = n_sampled;
  l->t_iter = MPI_Wtime();
  *log = l;
  return 0;
}

void ptdp_events_destroy(ptdp_events **log)
{
  ptdp_events *l = *log;
  if (!l) return;
  for (int i = 0; i < l->nev; i++) free(l->ev[i].name);
  for (int i = 0; i < l->n_sampled; i++) free(l->ring[i].recs);
  free(l->ev);
  free(l->red);
  free(l->ring);
  free(l);
  *log = NULL;
}

/* ---- named timers ---- */

int ptdp_events_register(ptdp_events *log, const char *name, int *id)
{
  PTDP_CHECK_INTERNAL(name && name[0], "event registered without a name");
  for (int i = 0; i < log->nev; i++)
    if (strcmp(log->ev[i].name, name) == 0) {
      *id = i;
      return 0;
    }
  event *ev = grow(log->ev, &log->cap, log->nev, sizeof *ev, 16);
  CHECK_MEM(ev, "out of memory registering event '%s'", name);
  log->ev = ev;
  event *e = &log->ev[log->nev];
  memset(e, 0, sizeof *e);
  size_t len = strlen(name) + 1;
  PTDP_ALLOC(e->name, len);
  memcpy(e->name, name, len);
  *id = log->nev++;
  return 0;
}

int ptdp_events_count(const ptdp_events *log) { return log->nev; }

const char *ptdp_events_name(const ptdp_events *log, int id)
{
  return id >= 0 && id < log->nev ? log->ev[id].name : NULL;
}

#define CHECK_ID(log, id) \
  PTDP_CHECK_INTERNAL((id) >= 0 && (id) < (log)->nev, "unknown event id %d (%d registered)", (id), (log)->nev)

int ptdp_events_begin(ptdp_events *log, int id)
{
  CHECK_ID(log, id);
  event *e = &log->ev[id];
  PTDP_CHECK_INTERNAL(!e->open, "event '%s' begun twice without an end", e->name);
  e->open = 1;
  e->t_begin = MPI_Wtime();
  return 0;
}

int ptdp_events_end(ptdp_events *log, int id)
{
  double t = MPI_Wtime();
  CHECK_ID(log, id);
  event *e = &log->ev[id];
  PTDP_CHECK_INTERNAL(e->open, "event '%s' ended without a begin", e->name);
  e->open = 0;
  /* the same t1 - t0 the trainer added to its timers, added to both sums */
  double dt = t - e->t_begin;
  e->seconds += dt;
  e->total_seconds += dt;
  e->count++;
  e->total_count++;
  return 0;
}

int ptdp_events_add(ptdp_events *log, int id, double seconds)
{
  CHECK_ID(log, id);
  event *e = &log->ev[id];
  PTDP_CHECK_INTERNAL(isfinite(seconds), "%g seconds added to event '%s'", seconds, e->name);
  e->seconds += seconds;
  e->total_seconds += seconds;
  e->count++;
  e->total_count++;
  return 0;
}

int ptdp_events_get(const ptdp_events *log, int id, ptdp_events_stats *st)
{
  CHECK_ID(log, id);
  const event *e = &log->ev[id];
  *st = (ptdp_events_stats){e->seconds, e->count, e->total_seconds, e->total_count};
  return 0;
}

/* ---- reduction over ranks ---- */

/* FNV-1a over the names in order, cut to 52 bits so that a double holds it exactly: equal on
 * every rank exactly when the ranks registered the same events in the same order (but for
 * hash collisions, which a test of the bookkeeping can afford). */
static double registration_signature(const ptdp_events *log)
{
  uint64_t h = 14695981039346656037ULL;
  for (int i = 0; i < log->nev; i++) {
    for (const unsigned char *c = (const unsigned char *)log->ev[i].name; *c; c++) h = (h ^ *c) * 1099511628211ULL;
    h = (h ^ 0x1fu) * 1099511628211ULL; /* separator: "ab","c" differs from "a","bc" */
  }
  return (double)(h >> 12);
}

/* Room for the last reduction's arrays: ms, max, min [n] and all [g n].  Growing them forgets
 * the last reduction (its arrays may have moved), so a reduce that then fails leaves none. */
static int reserve_summary(ptdp_events *log, int n, int g)
{
  size_t need = (size_t)n * (3 + (size_t)g);
  if (need > log->red_cap) {
    double *r = realloc(log->red, sizeof *r * need);
    CHECK_MEM(r, "out of memory for the events reduction (%zu doubles)", need);
    log->red = r;
    log->red_cap = need;
    log->last = (ptdp_events_summary){0};
  }
  return 0;
}

int ptdp_events_reduce(ptdp_events *log, ptdp_comm *world, int iters, ptdp_events_summary *summary)
{
  PTDP_CHECK_INTERNAL(iters > 0, "events reduced over %d iterations", iters);
  PTDP_CHECK_INTERNAL(world->size > 0, "events reduced over a group this rank is not in");
  const int n = log->nev, g = world->size, r = world->rank, row = n + 1;
  PTDP_CALL(reserve_summary(log, n, g));
  /* buf [g][n + 1]: this rank's ms and signature in row r, -inf elsewhere; max over ranks of
   * x and -inf is x exactly, so one all-reduce max is an all-gather of doubles (the comm layer
   * gathers only floats, which would round the times) */
  double *buf;
  PTDP_ALLOC(buf, sizeof *buf * (size_t)g * row);
  for (size_t i = 0; i < (size_t)g * row; i++) buf[i] = -INFINITY;
  for (int e = 0; e < n; e++) buf[(size_t)r * row + e] = log->ev[e].seconds / iters * 1e3;
  buf[(size_t)r * row + n] = registration_signature(log);
  int err = ptdp_comm_allreduce_max_f64(world, buf, (size_t)g * row, PTDP_TAG_MISC);
  int same = 1;
  for (int q = 0; !err && q < g; q++) same &= buf[(size_t)q * row + n] == buf[(size_t)r * row + n];
  double *ms = log->red, *mx = ms + n, *mn = mx + n, *all = mn + n;
  for (int e = 0; !err && same && e < n; e++) {
    ms[e] = mx[e] = mn[e] = buf[(size_t)r * row + e];
    for (int q = 0; q < g; q++) {
      double x = buf[(size_t)q * row + e];
      all[(size_t)q * n + e] = x;
      mx[e] = x > mx[e] ? x : mx[e];
      mn[e] = x < mn[e] ? x : mn[e];
    }
  }
  free(buf);
  PTDP_CALL(err);
  /* every rank sees the same gathered signatures, so all agree on this check */
  PTDP_CHECK_INTERNAL(same, "ranks registered different events (check the order of ptdp_events_register)");
  log->last = (ptdp_events_summary){n, g, iters, ms, mx, mn, all};
  for (int e = 0; e < n; e++) {
    log->ev[e].seconds = 0;
    log->ev[e].count = 0;
  }
  if (summary) *summary = log->last;
  return 0;
}

void ptdp_events_last(const ptdp_events *log, ptdp_events_summary *summary) { *summary = log->last; }

int ptdp_events_format(const ptdp_events *log, char *buf, size_t n)
{
  const ptdp_events_summary *s = &log->last;
  PTDP_CHECK_INTERNAL(s->iters > 0, "timer line asked for before any reduction");
  PTDP_CHECK_INTERNAL(n > 0, "no room for the timer line");
  /* the trainer's print_timers, field for field */
  size_t used = (size_t)snprintf(buf, n, "[timers] ms per iteration (max, min over ranks):");
  for (int e = 0; e < s->nevents && used < n; e++)
    used += (size_t)snprintf(buf + used, n - used, " %s %.1f, %.1f |", log->ev[e].name, s->max[e], s->min[e]);
  if (used < n) used += (size_t)snprintf(buf + used, n - used, "\n");
  PTDP_CHECK_INTERNAL(used < n, "the timer line needs more than the %zu chars given", n);
  return 0;
}

/* ---- timelines of sampled iterations ---- */

int ptdp_events_iteration_begin(ptdp_events *log, long long iteration, int sampled)
{
  log->cur = NULL;
  if (sampled && log->n_sampled > 0) {
    /* the next slot: after the kept ones while the ring fills, then the oldest */
    int slot = (log->head + log->nkept) % log->n_sampled;
    if (log->nkept == log->n_sampled)
      log->head = (log->head + 1) % log->n_sampled;
    else
      log->nkept++;
    log->cur = &log->ring[slot];
    log->cur->iteration = iteration;
    log->cur->n = 0;
  }
  log->t_iter = MPI_Wtime();
  return 0;
}

int ptdp_events_sampling(const ptdp_events *log) { return log->cur != NULL; }

double ptdp_events_elapsed(const ptdp_events *log) { return MPI_Wtime() - log->t_iter; }

int ptdp_events_record(ptdp_events *log, const ptdp_event_record *rec)
{
  timeline *tl = log->cur;
  if (!tl) return 0; /* unsampled: nothing, cheaply */
  if (rec->kind == PTDP_RECORD_EVENT)
    CHECK_ID(log, rec->event);
  else
    PTDP_CHECK_INTERNAL(rec->kind == PTDP_RECORD_FORWARD || rec->kind == PTDP_RECORD_BACKWARD,
                     "record of unknown kind %d", rec->kind);
  ptdp_event_record *recs = grow(tl->recs, &tl->cap, tl->n, sizeof *recs, 64);
  CHECK_MEM(recs, "out of memory for %d records of iteration %lld", tl->n + 1, tl->iteration);
  tl->recs = recs;
  tl->recs[tl->n++] = *rec;
  return 0;
}

int ptdp_events_timelines(const ptdp_events *log) { return log->nkept; }

int ptdp_events_timeline(const ptdp_events *log, int k, long long *iteration, const ptdp_event_record **recs,
                         int *nrecs)
{
  PTDP_CHECK_INTERNAL(k >= 0 && k < log->nkept, "timeline %d asked for, %d kept", k, log->nkept);
  const timeline *tl = &log->ring[(log->head + k) % log->n_sampled];
  if (iteration) *iteration = tl->iteration;
  *recs = tl->recs;
  *nrecs = tl->n;
  return 0;
}
