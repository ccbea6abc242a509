/* The pipeline driver: runs one iteration's schedule (ptdp/schedule.h) on this rank, moving
 * activations [Nl, h] forward and their gradients backward between neighbouring virtual
 * stages with the communication layer's nonblocking point-to-point messages (ptdp/comm.h).
 * Sends complete before their buffer is reused; each receive is posted one work item ahead and
 * waited for when its data is needed, and the time spent waiting is the measured pipeline
 * bubble.  Who receives from whom is ptdp_work_dependency (ptdp/schedule.h).  The work items of
 * sampled iterations are recorded in a named-events log (ptdp/events.h) when one is set. */
#ifndef PTDP_PIPELINE_H
#define PTDP_PIPELINE_H

#include "ptdp/events.h"
#include "ptdp/gpt.h"
#include "ptdp/schedule.h"

/* Supplies micro-batch mb's tokens and targets [N] ((pos, sample) order) and the global index
 * of its first sample; with tokens == NULL only the index (stages that read no data). */
typedef int (*ptdp_batch_fn)(void *ctx, int mb, int32_t *tokens, int32_t *targets, long long *sample0);

/* Where this rank sits in the pipeline and what it sends, given explicitly: the driver reads
 * nothing of the model's layout, and calls the model only to compute (ptdp_gpt_forward /
 * _backward) and through the accessors ptdp/gpt.h offers the driver. */
typedef struct {
  ptdp_schedule_kind kind;
  int m;            /* micro-batches per iteration */
  int p, stage, v;  /* pipeline stages, this rank's stage, model chunks per stage */
  int slots;        /* activation slots per chunk (ptdp_gpt_num_slots): at least the schedule's peak */
  size_t msg_elems; /* elements per message: an activation or its gradient, [Nl, h] */
  ptdp_dtype dtype; /* their type: the model's storage type */
  int batch_tokens; /* N = s b: tokens (and targets) of a micro-batch */
  ptdp_comm *pp;    /* the pipeline-parallel group: its rank r runs stage r */
  ptdp_backend *be; /* the model's: copies gradients into send buffers, allocates them */
} ptdp_pipeline_config;

typedef struct {
  ptdp_pipeline_config cfg;
  ptdp_gpt *model;         /* computes the work items */
  ptdp_schedule sched;
  int *slot_of;            /* [m v] slot of (microbatch, chunk) */
  int *last_backward;      /* [v] index in the schedule of each chunk's last backward */
  ptdp_comm_req *act_req;  /* [v slots] pending activation sends from each slot */
  ptdp_comm_req *grad_req; /* [v slots] pending gradient sends */
  float **grad_send;       /* [v slots] gradient send buffers [Nl, h] */
  float *grad_recv[2];     /* [Nl, h] x 2: the current item's and the one posted ahead */
  int next_grad_buf;
  int *reserved;           /* [v slots] slots whose input a posted receive will fill */
  int32_t *tokens, *targets;
  ptdp_events *log;        /* if set, every work item of a sampled iteration is recorded there
                              (ptdp_events_record: start, end, kind, micro-batch, chunk, wait) */
  double wait_seconds;     /* blocked in receives, last iteration */
  double busy_seconds;     /* in forward/backward compute, last iteration */
  double forward_seconds, backward_seconds; /* busy_seconds split by kind of work item */
  double loss_sum;         /* sum of micro-batch losses (last stage), last iteration */
} ptdp_pipeline;

/* The configuration of model's own place in the pipeline (its stage, chunks, slots, message
 * size, PP communicator and backend) for kind and m micro-batches. */
void ptdp_pipeline_config_from_model(const ptdp_gpt *model, ptdp_schedule_kind kind, int m, ptdp_pipeline_config *cfg);
/* A driver for cfg that runs the work items on model (whose p2p buffers it records in
 * model->mem).  cfg->slots must be the model's slots per chunk. */
int ptdp_pipeline_create_with(ptdp_pipeline *pl, ptdp_gpt *model, const ptdp_pipeline_config *cfg);
/* The same, configured by ptdp_pipeline_config_from_model. */
int ptdp_pipeline_create(ptdp_pipeline *pl, ptdp_gpt *model, ptdp_schedule_kind kind, int m);
void ptdp_pipeline_destroy(ptdp_pipeline *pl);
/* One iteration: every micro-batch forward and backward through this rank's chunks;
 * gradients are accumulated (not synchronised).  loss_scale multiplies each micro-batch loss.
 * forward_only (evaluation): forwards only, in micro-batch order, activations released at once. */
int ptdp_pipeline_run(ptdp_pipeline *pl, ptdp_batch_fn batch, void *ctx, float loss_scale, int forward_only);

#endif
