/* Named events (after PETSc's PetscLogEvent and -log_view): timers registered once by name,
 * bracketed in the code, reduced over ranks every log interval; and the timelines of sampled
 * iterations (one record per pipeline work item or bracketed phase) for the run file and the
 * bubble replay.
 *
 * No global state: a ptdp_events handle is created, passed to whoever times something, and
 * destroyed with ptdp_events_destroy(&log), which sets it to NULL.
 *
 * Clock: MPI_Wtime (the clock the trainer and the pipeline driver already read), so a
 * begin/end pair measures exactly what a t1 - t0 pair around the same code measured before.
 *
 * Per event the log keeps the seconds and the count of the current log interval and the totals
 * since create.  A count is one begin/end pair or one ptdp_events_add.  ptdp_events_reduce
 * turns the interval into ms per iteration on this rank, the max and min over ranks and every
 * rank's value (one collective), and starts a new interval.
 *
 * Use, as the trainer will:
 *     ptdp_events *log;                         ptdp_events_create(4, &log);
 *     int fb;                                   ptdp_events_register(log, "forward-backward", &fb);
 *     ptdp_events_iteration_begin(log, it, it % 10 == 0);
 *     ptdp_events_begin(log, fb);  ... pipeline ...  ptdp_events_end(log, fb);
 *     ptdp_events_add(log, pp_wait, pipe.wait_seconds);          (measured by the comm layer)
 *     every log interval:  ptdp_events_reduce(log, &grid.world, n_iters, NULL);
 *                          ptdp_events_format(log, line, sizeof line); if (rank 0) fputs(line, stdout);
 *     ptdp_events_destroy(&log); */
#ifndef PTDP_EVENTS_H
#define PTDP_EVENTS_H

#include "ptdp/comm.h"

typedef struct ptdp_events ptdp_events;

/* n_sampled: how many sampled iterations' timelines to keep (the last n_sampled; 0 keeps none). */
int ptdp_events_create(int n_sampled, ptdp_events **log);
void ptdp_events_destroy(ptdp_events **log);

/* ---- named timers ---- */

/* The id of event `name`, registering it if new; registering a name again gives the same id.
 * Ids are 0, 1, 2, ... in registration order, the order of the report.  Every rank must
 * register the same events in the same order before ptdp_events_reduce (checked there). */
int ptdp_events_register(ptdp_events *log, const char *name, int *id);
int ptdp_events_count(const ptdp_events *log);                 /* events registered */
const char *ptdp_events_name(const ptdp_events *log, int id); /* NULL for an unknown id */

/* Bracket code: begin twice without an end, or end without a begin, is an internal error.
 * Different events may nest or overlap. */
int ptdp_events_begin(ptdp_events *log, int id);
int ptdp_events_end(ptdp_events *log, int id);
/* Add time measured elsewhere (e.g. seconds blocked in MPI waits that the comm layer counts). */
int ptdp_events_add(ptdp_events *log, int id, double seconds);

typedef struct {
  double seconds;       /* in the current log interval */
  long long count;      /* begin/end pairs and adds in the current log interval */
  double total_seconds; /* since create */
  long long total_count;
} ptdp_events_stats;
int ptdp_events_get(const ptdp_events *log, int id, ptdp_events_stats *st);

/* ---- reduction over ranks, once per log interval ---- */

/* The last reduction.  Arrays belong to the log: valid until the next reduce or destroy. */
typedef struct {
  int nevents;        /* events reduced, in registration order */
  int nranks;         /* ranks of the communicator reduced over */
  int iters;          /* iterations of the interval */
  const double *ms;   /* [nevents] ms per iteration on this rank: seconds / iters * 1e3 */
  const double *max;  /* [nevents] max over ranks of ms */
  const double *min;  /* [nevents] min over ranks of ms */
  const double *all;  /* [nranks][nevents] every rank's ms, rank r's event e at r * nevents + e
                         (on every rank, rank 0 included: the run file's per-rank time series) */
} ptdp_events_summary;

/* Collective on world: ms per iteration of the interval's seconds over iters iterations, with
 * max, min and every rank's values from ONE all-reduce of nranks x (nevents + 1) doubles (each
 * rank fills its own row, -inf elsewhere, so the max is a gather; the extra column checks that
 * the ranks registered the same events).  Then starts a new interval (seconds and counts 0;
 * totals kept; an event begun and not yet ended counts its time in the interval it ends in).
 * summary may be NULL (read it later with ptdp_events_last).  Cost: 8 g (n + 1) bytes all-reduced
 * on g ranks, e.g. 288 KB for 4096 ranks and 8 events, once per log interval. */
int ptdp_events_reduce(ptdp_events *log, ptdp_comm *world, int iters, ptdp_events_summary *summary);
/* The last reduction (nevents == 0 and NULL arrays before the first). */
void ptdp_events_last(const ptdp_events *log, ptdp_events_summary *summary);
/* The trainer's timer line of the last reduction, with its newline, e.g.
 *   "[timers] ms per iteration (max, min over ranks): forward-backward 12.3, 11.0 | pipeline-wait 0.4, 0.1 |\n"
 * Internal error if buf (n chars) is too small or nothing has been reduced yet. */
int ptdp_events_format(const ptdp_events *log, char *buf, size_t n);

/* ---- timelines of sampled iterations ---- */

/* Kinds of record: a pipeline work item (the values of PTDP_WORK_FORWARD and PTDP_WORK_BACKWARD
 * in ptdp/schedule.h, so the driver stores its work item's kind as is), or a named event. */
enum { PTDP_RECORD_FORWARD = 0, PTDP_RECORD_BACKWARD = 1, PTDP_RECORD_EVENT = 2 };

typedef struct {
  double start, end; /* seconds since ptdp_events_iteration_begin */
  double wait;       /* of which blocked waiting (receives, MPI waits) */
  int kind;          /* PTDP_RECORD_* */
  int microbatch;    /* work items: 0 .. m-1; -1 for an event record */
  int chunk;         /* work items: 0 .. v-1; -1 for an event record */
  int event;         /* PTDP_RECORD_EVENT: the registered id (name: ptdp_events_name); else -1 */
  double held_bytes; /* work items: activation bytes the rank holds after the item (else 0) */
} ptdp_event_record;

/* Start iteration `iteration` (the clock of its records starts now).  A sampled iteration takes
 * the ring's next slot, dropping the oldest of the n_sampled kept; an unsampled one records
 * nothing. */
int ptdp_events_iteration_begin(ptdp_events *log, long long iteration, int sampled);
/* Whether the current iteration is sampled (callers may skip building records when not). */
int ptdp_events_sampling(const ptdp_events *log);
/* Seconds since ptdp_events_iteration_begin (the start and end of records). */
double ptdp_events_elapsed(const ptdp_events *log);
/* Store a copy of *rec in the current sampled iteration (nothing if unsampled).  Memory grows
 * as needed and is kept for the slot's next use: at most n_sampled x records per iteration. */
int ptdp_events_record(ptdp_events *log, const ptdp_event_record *rec);

/* Sampled iterations kept (at most n_sampled), and the k-th of them, oldest first:
 * k = ptdp_events_timelines(log) - 1 is the latest (iteration may be NULL).  *recs stays valid
 * until that slot is reused (n_sampled sampled iterations later) or the log destroyed. */
int ptdp_events_timelines(const ptdp_events *log);
int ptdp_events_timeline(const ptdp_events *log, int k, long long *iteration, const ptdp_event_record **recs,
                         int *nrecs);

#endif
