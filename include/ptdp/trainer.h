/* The training run of ptdp-train: set-up from ptdp_args, the iteration loop, Megatron-format
 * log lines, evaluation, and the optional debug dump. */
#ifndef PTDP_TRAINER_H
#define PTDP_TRAINER_H

#include "ptdp/args.h"
#include "ptdp/backend.h"
#include "ptdp/batch.h"
#include "ptdp/ddp.h"
#include "ptdp/events.h"
#include "ptdp/flops.h"
#include "ptdp/gpt.h"
#include "ptdp/grid.h"
#include "ptdp/master.h"
#include "ptdp/optimizer.h"
#include "ptdp/pipeline.h"

/* Sampled iterations whose pipeline timelines are kept (the last of every log interval). */
enum { PTDP_TRAINER_KEEP_TIMELINES = 4 };

typedef struct {
  ptdp_args args;
  ptdp_grid grid;
  ptdp_backend *be;
  ptdp_gpt model;
  ptdp_ddp ddp;
  ptdp_master master;     /* the fp32 weights the optimizer updates (sharded by the distributed optimizer) */
  ptdp_optimizer opt;
  ptdp_pipeline pipe;
  ptdp_batch_source *data;
  long long vocab;        /* real vocabulary */
  long long gbs;          /* global batch size */
  int m;                  /* micro-batches per iteration per DP rank */
  long long iteration;    /* completed iterations */
  long long consumed;     /* samples consumed */
  long long consumed_valid; /* validation samples consumed by evaluations (Megatron's consumed_valid_samples) */
  int split;              /* split being fed (train or valid) */
  long long batch_first;  /* first global sample of the batch being fed */
  int32_t *scratch;       /* s + 1 tokens */
  struct ptdp_dump *dump; /* debug-dump state, or NULL */
  /* named timers (PETSc's -log_view, Megatron's timers), reported per log interval as max and
   * min over ranks; and the pipeline timelines of sampled iterations */
  ptdp_events *events;
  struct { int fwd_bwd, forward, backward, pp_wait, tp_comm, dp_wait, grads_sync, optimizer, data, checkpoint; } ev;
  long long saved_iteration; /* iteration of the last checkpoint saved or loaded (-1: none) */
  int resumed;              /* loaded a checkpoint to continue (not finetune) */
  int sampled;              /* the last iteration's timeline was recorded */
  int skipped;              /* the last iteration's update was skipped (inf/NaN gradients: loss scaling) */
  struct ptdp_runfile *runfile; /* NULL: run-file = none */
  /* the mixture of experts: its load-balancing and z losses (summed over the layers, mean over
   * the micro-batches of the global batch) of the iterations since the last log line */
  double moe_loss_sum;
  int moe_loss_iters;
} ptdp_trainer;

/* Set up the run; the backend named by a->backend is created with bopt (threads, ranks on the
 * node; NULL: defaults). */
int ptdp_trainer_setup(ptdp_trainer *tr, const ptdp_args *a, const ptdp_backend_options *bopt);
int ptdp_trainer_run(ptdp_trainer *tr);
/* One training iteration; loss is the global mean over the batch. */
int ptdp_trainer_step(ptdp_trainer *tr, double *loss, double *grad_norm, double *lr);
/* Mean validation loss over eval-iters global batches. */
int ptdp_trainer_evaluate(ptdp_trainer *tr, double *loss);
void ptdp_trainer_destroy(ptdp_trainer *tr);

/* Checkpoints (src/train/checkpointing.c). */
/* With exit-signal-handler: catch exit-signal (it only sets a flag). */
int ptdp_trainer_install_signal(const ptdp_trainer *tr);
/* With load: load the checkpoint its tracker names (none yet: a notice, and a fresh start). */
int ptdp_trainer_resume(ptdp_trainer *tr);
/* Save a checkpoint of the current iteration into save. */
int ptdp_trainer_save(ptdp_trainer *tr);
/* After an iteration: save at save-interval; *stop = 1 when exit-interval, exit-duration-in-mins
 * (counted from t_start, MPI_Wtime) or the exit signal ends the run (after a save, with save). */
int ptdp_trainer_after_iteration(ptdp_trainer *tr, double t_start, int *stop);

#endif
