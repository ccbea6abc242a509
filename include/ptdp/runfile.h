/* The run file: one HDF5 file per run holding everything ptdp-train measures (metrics, evaluations,
 * timers and communication per rank and log interval, activation memory per rank and layer,
 * pipeline timelines of sampled iterations), readable while the run goes.
 *
 * World rank 0 writes it with HDF5's serial driver in SWMR mode (single writer, multiple readers;
 * parallel HDF5 cannot do SWMR); what other ranks measured reaches it by MPI.  Every dataset
 * that grows is chunked and extendible and is flushed at every log interval, so a reader sees
 * whole intervals and a run killed at any moment leaves every flushed interval readable.  A
 * resumed run (load found a checkpoint) appends to the file, with a new row in /jobs.  Layout:
 * ptdp-runfile(5).
 *
 * Every function is collective over the run's world (run->grid->world) unless it says otherwise; errors are
 * every rank's (rank 0's verdict is broadcast where only it touches the file). */
#ifndef PTDP_RUNFILE_H
#define PTDP_RUNFILE_H

#include "ptdp/events.h"
#include "ptdp/gpt.h"
#include "ptdp/grid.h"
#include "ptdp/options.h"

#define PTDP_RUNFILE_FORMAT 1

typedef struct ptdp_runfile ptdp_runfile;

/* What the run file records of a training run, filled by the trainer: the file reads nothing
 * else.  keys, run_file and save are read by ptdp_runfile_open only; the other pointers must stay
 * valid until ptdp_runfile_close. */
typedef struct {
  const ptdp_options *keys;     /* every input key over its value: /config's attributes */
  const char *run_file, *save;  /* keys run-file and save: where the file goes */
  const ptdp_grid *grid;        /* the layout, this rank's place, the groups and their counters */
  const ptdp_gpt *model;        /* chunks, parameters, memory plan and records */
  const ptdp_events *events;    /* the timers' names, the sampled iterations' timelines */
  const char *schedule;         /* the pipeline schedule's name */
  int work_items;               /* the schedule's work items per iteration on a rank */
  int micro_batches;            /* per iteration per data-parallel rank (m) */
  long long num_layers, hidden, seq, micro_batch; /* the model's keys */
  long long global_batch, vocab; /* samples per iteration; the real vocabulary */
  int use_distributed_optimizer;
  char recompute[16];           /* recompute-granularity as its key's text */
  double model_flops;           /* per iteration (ptdp_model_flops) */
  double peak_flops;            /* of one rank's device (peak-tflops x 1e12; 0: unknown) */
  double optimizer_bytes;       /* this rank's optimizer state */
  long long first_iteration;    /* iterations completed when this launch opens the file */
} ptdp_runfile_run;

/* One Megatron log line's numbers. */
typedef struct {
  long long iteration, consumed_samples, skipped, nan_iterations;
  double lm_loss, learning_rate, grad_norm, loss_scale, ms_per_iteration, tokens_per_second, tflops_per_rank, mfu;
} ptdp_runfile_metrics;

/* Resolve the file's path (run-file, else SAVE/run.h5 with save, else ptdp-run.h5 in the working
 * directory, numbered -1, -2, ... rather than overwrite another run's), then create it, or with
 * appending (a resumed run) open it to append; *rf NULL when run-file = none.  rf keeps run. */
int ptdp_runfile_open(ptdp_runfile **rf, const ptdp_runfile_run *run, int appending);
/* The path in use (rank 0; "" elsewhere). */
const char *ptdp_runfile_path(const ptdp_runfile *rf);
/* A log interval: metrics (rank 0's values), every rank's timers (the summary of the interval,
 * ptdp_events_reduce) and communication counters (read before they are reset). */
int ptdp_runfile_interval(ptdp_runfile *rf, const ptdp_runfile_metrics *row, const ptdp_events_summary *timers);
/* An evaluation (rank 0's values; no communication). */
int ptdp_runfile_eval(ptdp_runfile *rf, long long iteration, double loss);
/* Every rank's memory: activation bytes per layer and tensor, weights, gradients, optimizer. */
int ptdp_runfile_memory(ptdp_runfile *rf);
/* The newest sampled iteration's pipeline events and memory timeline, every rank's, with the
 * measured and replayed bubble. */
int ptdp_runfile_sample(ptdp_runfile *rf, double replayed_bubble);
/* Record the end of this launch and close (NULL-safe). */
int ptdp_runfile_close(ptdp_runfile **rf);

#endif
