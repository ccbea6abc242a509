/* The run file: one HDF5 file per run holding everything ptdp-train measures (metrics, evaluations,
 * timers and communication per rank and log interval, activation memory per rank and layer,
 * pipeline timelines of sampled iterations), readable while the run goes.
 *
 * World rank 0 writes it with HDF5's serial driver in SWMR mode (single writer, multiple readers;
 * parallel HDF5 cannot do SWMR); what other ranks measured reaches it by MPI.  Every dataset
 * that grows is chunked and extendible and is flushed at every log interval, so a reader sees
 * whole intervals and a run killed at any moment leaves every flushed interval readable.  A
 * resumed run (load found a checkpoint) appends to the file, with a new row in /jobs.  Layout:
 * README, "The run file".
 *
 * Every function is collective over the trainer's world unless it says otherwise; errors are
 * every rank's (rank 0's verdict is broadcast where only it touches the file). */
#ifndef PTDP_RUNFILE_H
#define PTDP_RUNFILE_H

#include "ptdp/trainer.h"

#define PTDP_RUNFILE_FORMAT 1

typedef struct ptdp_runfile ptdp_runfile;

/* One Megatron log line's numbers. */
typedef struct {
  long long iteration, consumed_samples, skipped, nan_iterations;
  double lm_loss, learning_rate, grad_norm, loss_scale, ms_per_iteration, tokens_per_second, tflops_per_rank, mfu;
} ptdp_runfile_metrics;

/* Resolve the file's path (run-file, else SAVE/run.h5 with save, else ptdp-run.h5 in the working
 * directory, numbered -1, -2, ... rather than overwrite another run's), then create it, or with
 * appending (a resumed run) open it to append; *rf NULL when run-file = none. */
int ptdp_runfile_open(ptdp_runfile **rf, ptdp_trainer *tr, int appending);
/* The path in use (rank 0; "" elsewhere). */
const char *ptdp_runfile_path(const ptdp_runfile *rf);
/* A log interval: metrics (rank 0's values), every rank's timers (the summary of the interval,
 * ptdp_events_reduce) and communication counters (read before they are reset). */
int ptdp_runfile_interval(ptdp_runfile *rf, ptdp_trainer *tr, const ptdp_runfile_metrics *row,
                          const ptdp_events_summary *timers);
/* An evaluation (rank 0's values; no communication). */
int ptdp_runfile_eval(ptdp_runfile *rf, long long iteration, double loss);
/* Every rank's memory: activation bytes per layer and tensor, weights, gradients, optimizer. */
int ptdp_runfile_memory(ptdp_runfile *rf, ptdp_trainer *tr);
/* The newest sampled iteration's pipeline events and memory timeline, every rank's, with the
 * measured and replayed bubble. */
int ptdp_runfile_sample(ptdp_runfile *rf, ptdp_trainer *tr, double replayed_bubble);
/* Record the end of this launch and close (NULL-safe). */
int ptdp_runfile_close(ptdp_runfile **rf);

#endif
