/* The pipeline driver: runs one iteration's schedule (ptdp/schedule.h) on this rank, moving
 * activations [Nl, h] forward and their gradients backward between neighbouring virtual
 * stages with nonblocking MPI.  Sends are nonblocking and complete before their buffer is
 * reused; each receive is posted one work item ahead and waited for when its data is needed,
 * and the time spent waiting is the measured pipeline bubble.  Every work item is recorded as an event for the statistics file. */
#ifndef PTDP_PIPELINE_H
#define PTDP_PIPELINE_H

#include "ptdp/gpt.h"
#include "ptdp/schedule.h"

/* Supplies micro-batch mb's tokens and targets [N] ((pos, sample) order) and the global index
 * of its first sample; with tokens == NULL only the index (stages that read no data). */
typedef int (*ptdp_batch_fn)(void *ctx, int mb, int32_t *tokens, int32_t *targets, long long *sample0);

typedef struct {
  double start, end; /* seconds since the iteration began */
  int kind;          /* PTDP_WORK_FORWARD / PTDP_WORK_BACKWARD */
  int microbatch, chunk;
  double wait;       /* of which blocked in receives */
} ptdp_event;

typedef struct {
  ptdp_gpt *model;
  ptdp_schedule sched;
  int m;
  int *slot_of;            /* [m v] slot of (microbatch, chunk) */
  int *last_backward;      /* [v] index in the schedule of each chunk's last backward */
  ptdp_comm_req *act_req;    /* [v max_in_flight] pending activation sends from each slot */
  ptdp_comm_req *grad_req;   /* [v max_in_flight] pending gradient sends */
  float **grad_send;       /* [v max_in_flight] gradient send buffers [Nl, h] */
  float *grad_recv[2];     /* [Nl, h] x 2: the current item's and the one posted ahead */
  int next_grad_buf;
  int *reserved;           /* [v max_in_flight] slots whose input a posted receive will fill */
  int32_t *tokens, *targets;
  ptdp_event *events;      /* 2 m v of the last iteration */
  int nevents;
  double wait_seconds;     /* blocked in receives, last iteration */
  double busy_seconds;     /* in forward/backward compute, last iteration */
  double loss_sum;         /* sum of micro-batch losses (last stage), last iteration */
} ptdp_pipeline;

int ptdp_pipeline_create(ptdp_pipeline *pl, ptdp_gpt *model, ptdp_schedule_kind kind, int m);
void ptdp_pipeline_destroy(ptdp_pipeline *pl);
/* One iteration: every micro-batch forward and backward through this rank's chunks;
 * gradients are accumulated (not synchronised).  loss_scale multiplies each micro-batch loss.
 * forward_only (evaluation): forwards only, in micro-batch order, activations released at once. */
int ptdp_pipeline_run(ptdp_pipeline *pl, ptdp_batch_fn batch, void *ctx, float loss_scale, int forward_only);

#endif
