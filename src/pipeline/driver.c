/* Pipeline driver: see include/ptdp/pipeline.h.
 *
 * Each work item's receive is posted while the previous item computes (one item of lookahead),
 * so messages arrive during compute; the time still spent waiting for them is the bubble.
 *
 * Whom an item receives from is ptdp_work_dependency, whom it sends to ptdp_work_consumer
 * (ptdp/schedule.h): forward (mb, k) receives from rank (k - 1) mod p, backward (mb, k) from
 * rank (k + 1) mod p, virtual stage k = chunk p + stage.  So activations always travel to the
 * next rank of the pipeline ring and gradients to the previous one: they are ring messages
 * (ptdp/comm.h) of direction +1 and -1.  Message tags name (micro-batch, sender's chunk,
 * direction); MPI's non-overtaking order between a pair of ranks keeps them matched even when
 * tags wrap.  On the NCCL transport ring messages are matched by posting order instead, per
 * (sender, direction): receives are posted in the order of this rank's list and sends in the
 * order of the sender's, and the two orders agree (ptdp_schedule_check_ring, run at set-up for
 * the run's schedule, and by test_schedule for every p <= 8, v <= 4, m <= 32).
 *
 * The model is asked only to compute and through its accessors (slot free or busy, input and
 * output buffers, loss, which chunk holds the embedding and the head); everything else comes
 * from the configuration. */
#include "ptdp/pipeline.h"

#include "ptdp/error.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

static int msg_tag(const ptdp_pipeline *pl, int mb, int chunk, ptdp_work_kind dir)
{
  return ((mb * pl->cfg.v + chunk) * 2 + (int)dir) % 30000;
}

/* The ring direction of a work item's messages: activations to the next rank, gradients to the
 * previous one. */
static int ring_dir(ptdp_work_kind kind) { return kind == PTDP_WORK_FORWARD ? 1 : -1; }

void ptdp_pipeline_config_from_model(const ptdp_gpt *model, ptdp_schedule_kind kind, int m, ptdp_pipeline_config *cfg)
{
  *cfg = (ptdp_pipeline_config){.kind = kind,
                                .m = m,
                                .p = model->p,
                                .stage = model->stage,
                                .v = model->nchunks,
                                .slots = ptdp_gpt_num_slots(model),
                                .msg_elems = (size_t)model->sh.Nl * model->cfg.hidden,
                                .dtype = model->cfg.dtype,
                                .batch_tokens = model->sh.N,
                                .pp = &model->grid->pp,
                                .be = model->be};
}

int ptdp_pipeline_create(ptdp_pipeline *pl, ptdp_gpt *model, ptdp_schedule_kind kind, int m)
{
  ptdp_pipeline_config cfg;
  ptdp_pipeline_config_from_model(model, kind, m, &cfg);
  PTDP_CALL(ptdp_pipeline_create_with(pl, model, &cfg));
  return 0;
}

/* Every stage's list, rebuilt here (the lists are a pure function), in the ring order that
 * matching by posting order needs (ptdp_schedule_check_ring): a schedule that broke it would
 * otherwise swap messages of equal size without a word. */
static int check_ring_order(const ptdp_pipeline_config *cfg)
{
  ptdp_schedule *st;
  PTDP_CALLOC(st, (size_t)cfg->p, sizeof *st);
  int err = 0, built = 0;
  for (; built < cfg->p && !err; built++) err = ptdp_schedule_build(cfg->kind, built, cfg->p, cfg->v, cfg->m, &st[built]);
  if (!err) err = ptdp_schedule_check_ring(st, cfg->p, cfg->v);
  for (int s = 0; s < built; s++) ptdp_schedule_free(&st[s]);
  free(st);
  PTDP_CALL(err);
  return PTDP_OK;
}

int ptdp_pipeline_create_with(ptdp_pipeline *pl, ptdp_gpt *model, const ptdp_pipeline_config *cfg)
{
  memset(pl, 0, sizeof *pl);
  pl->cfg = *cfg;
  pl->model = model;
  const int v = cfg->v, slots = cfg->slots;
  PTDP_CALL(ptdp_schedule_build(cfg->kind, cfg->stage, cfg->p, v, cfg->m, &pl->sched));
  PTDP_CHECK_INTERNAL(slots == ptdp_gpt_num_slots(model),
                   "the pipeline has %d activation slots per chunk, the model %d", slots,
                   ptdp_gpt_num_slots(model));
  PTDP_CHECK_INTERNAL(ptdp_schedule_max_in_flight(&pl->sched) <= slots,
                   "the schedule holds %d micro-batches, the model has %d slots",
                   ptdp_schedule_max_in_flight(&pl->sched), slots);
  PTDP_CALLOC(pl->slot_of, (size_t)cfg->m * v, sizeof(int));
  PTDP_CALLOC(pl->last_backward, (size_t)v, sizeof(int));
  for (int i = 0; i < pl->sched.count; i++)
    if (pl->sched.items[i].kind == PTDP_WORK_BACKWARD) pl->last_backward[pl->sched.items[i].chunk] = i;
  PTDP_CALLOC(pl->act_req, (size_t)v * slots, sizeof(ptdp_comm_req));
  PTDP_CALLOC(pl->grad_req, (size_t)v * slots, sizeof(ptdp_comm_req));
  PTDP_CALLOC(pl->grad_send, (size_t)v * slots, sizeof(float *));
  PTDP_CALLOC(pl->reserved, (size_t)v * slots, sizeof(int));
  for (int i = 0; i < v * slots; i++) pl->act_req[i] = pl->grad_req[i] = PTDP_COMM_REQ_NULL;
  if (cfg->p > 1) { /* the planned p2p buffers (ptdp/plan.h) */
    const int none = PTDP_PLAN_NONE;
    for (int c = 0; c < v; c++)
      for (int s = 0; s < slots; s++)
        pl->grad_send[c * slots + s] = ptdp_memory_find(&model->mem, PTDP_BUF_P2P_GRAD_SEND, c, s, none, 0);
    for (int b = 0; b < 2; b++) pl->grad_recv[b] = ptdp_memory_find(&model->mem, PTDP_BUF_P2P_GRAD_RECV, none, none, none, b);
    for (int i = 0; i < v * slots; i++) PTDP_CHECK_INTERNAL(pl->grad_send[i], "p2p send buffer %d not planned", i);
    PTDP_CHECK_INTERNAL(pl->grad_recv[0] && pl->grad_recv[1], "p2p receive buffers not planned");
    PTDP_CALL(check_ring_order(cfg));
    PTDP_CALL(ptdp_comm_open_ring(cfg->pp));
  }
  PTDP_CALLOC(pl->tokens, cfg->batch_tokens, sizeof(int32_t));
  PTDP_CALLOC(pl->targets, cfg->batch_tokens, sizeof(int32_t));
  return 0;
}

void ptdp_pipeline_destroy(ptdp_pipeline *pl)
{
  ptdp_schedule_free(&pl->sched);
  free(pl->slot_of);
  free(pl->last_backward);
  free(pl->act_req);
  free(pl->grad_req);
  free(pl->grad_send); /* buffers belong to the model's memory records */
  free(pl->reserved);
  free(pl->tokens);
  free(pl->targets);
  memset(pl, 0, sizeof *pl);
}

/* A receive posted ahead of its work item: into a slot's input (forward) or one of the two
 * gradient buffers (backward). */
typedef struct {
  int item, slot, buf, valid;
  ptdp_comm_req req;
} posted_recv;

/* Whether item it waits for a message; *dep (if not NULL) the item that sends it. */
static int needs_recv(const ptdp_pipeline *pl, int it, ptdp_work_dep *dep)
{
  return ptdp_work_dependency(pl->cfg.p, pl->cfg.v, pl->cfg.stage, pl->sched.items[it], dep);
}

/* Whether w's output goes to another stage (the ring neighbour of its direction). */
static int sends(const ptdp_pipeline *pl, ptdp_work w)
{
  return ptdp_work_consumer(pl->cfg.p, pl->cfg.v, pl->cfg.stage, w, NULL);
}

/* A free slot of chunk c not reserved by a posted receive; -1 if none. */
static int find_slot(const ptdp_pipeline *pl, int c)
{
  const int slots = pl->cfg.slots;
  for (int s = 0; s < slots; s++)
    if (!ptdp_gpt_slot_busy(pl->model, c, s) && !pl->reserved[c * slots + s]) return s;
  return -1;
}

/* Post item it's receive; *posted = 0 when no slot is free yet (the caller tries later). */
static int post_recv(ptdp_pipeline *pl, int it, posted_recv *r, int *posted)
{
  const ptdp_work w = pl->sched.items[it];
  const int c = w.chunk, slots = pl->cfg.slots;
  ptdp_work_dep from;
  const int needed = needs_recv(pl, it, &from);
  assert(needed);
  (void)needed;
  *posted = 0;
  r->item = it;
  r->valid = 0;
  float *buf;
  if (w.kind == PTDP_WORK_FORWARD) {
    int s = find_slot(pl, c);
    if (s < 0) return 0;
    /* the slot's last activation send must be done before its forward reuses the output,
     * not before we receive into its input: different buffers */
    pl->reserved[c * slots + s] = 1;
    r->slot = s;
    buf = ptdp_gpt_input(pl->model, c, s);
  } else {
    r->buf = pl->next_grad_buf;
    pl->next_grad_buf ^= 1;
    buf = pl->grad_recv[r->buf];
  }
  /* from.stage is the ring neighbour of the direction: check_ring_order at set-up */
  PTDP_CALL(ptdp_comm_irecv_ring_t(pl->cfg.pp, buf, pl->cfg.msg_elems, pl->cfg.dtype, ring_dir(w.kind),
                                   msg_tag(pl, w.microbatch, from.chunk, w.kind), PTDP_TAG_P2P, &r->req));
  r->valid = 1;
  *posted = 1;
  return 0;
}

/* Item it's receive into *cur (posted ahead during the previous item, or now); then the next
 * item's (the next forward's when forward_only) into *ahead, so that it arrives while this
 * item computes. */
static int post_recvs(ptdp_pipeline *pl, int it, int forward_only, posted_recv *cur, posted_recv *ahead)
{
  const ptdp_work w = pl->sched.items[it];
  cur->valid = 0;
  if (needs_recv(pl, it, NULL)) {
    int posted = 1;
    if (ahead->valid && ahead->item == it) {
      *cur = *ahead;
      ahead->valid = 0;
    } else {
      PTDP_CALL(post_recv(pl, it, cur, &posted));
    }
    PTDP_CHECK_INTERNAL(posted, "no free activation slot for micro-batch %d of chunk %d", w.microbatch, w.chunk);
  }
  int nx = it + 1;
  while (forward_only && nx < pl->sched.count && pl->sched.items[nx].kind != PTDP_WORK_FORWARD) nx++;
  if (!ahead->valid && nx < pl->sched.count && needs_recv(pl, nx, NULL)) {
    int posted;
    PTDP_CALL(post_recv(pl, nx, ahead, &posted));
  }
  return 0;
}

/* Wait for the item's message; the time blocked is the bubble. */
static int wait_recv(ptdp_pipeline *pl, posted_recv *cur, ptdp_event_record *ev)
{
  double t0 = MPI_Wtime();
  PTDP_CALL(ptdp_comm_wait(pl->cfg.pp, &cur->req));
  ev->wait += MPI_Wtime() - t0;
  return 0;
}

/* Forward of micro-batch w.microbatch through chunk w.chunk, into the slot its receive reserved
 * (or a free one); its output goes on to the next virtual stage. */
static int run_forward(ptdp_pipeline *pl, ptdp_work w, posted_recv *cur, ptdp_batch_fn batch, void *ctx, int forward_only,
                       ptdp_event_record *ev)
{
  ptdp_gpt *m = pl->model;
  ptdp_comm *pp = pl->cfg.pp;
  const int c = w.chunk, mb = w.microbatch, slots = pl->cfg.slots;
  int slot = cur->valid ? cur->slot : find_slot(pl, c);
  PTDP_CHECK_INTERNAL(slot >= 0, "no free activation slot in chunk %d", c);
  pl->reserved[c * slots + slot] = 0;
  pl->slot_of[mb * pl->cfg.v + c] = slot;
  PTDP_CALL(ptdp_comm_wait(pp, &pl->act_req[c * slots + slot]));
  const int emb = ptdp_gpt_chunk_has_embedding(m, c), head = ptdp_gpt_chunk_has_head(m, c);
  long long sample0 = 0;
  /* only the chunks with the embedding or the loss read data (Megatron: first and last stage);
   * every chunk needs the micro-batch's first global sample, the key of its dropout masks */
  const int reads = emb || head;
  PTDP_CALL(batch(ctx, mb, reads ? pl->tokens : NULL, reads ? pl->targets : NULL, &sample0));
  if (cur->valid) PTDP_CALL(wait_recv(pl, cur, ev));
  PTDP_CALL(ptdp_gpt_forward(m, c, slot, emb ? pl->tokens : NULL, head ? pl->targets : NULL, sample0));
  if (sends(pl, w))
    PTDP_CALL(ptdp_comm_isend_ring_t(pp, ptdp_gpt_output(m, c, slot), pl->cfg.msg_elems, pl->cfg.dtype, ring_dir(w.kind),
                                     msg_tag(pl, mb, c, w.kind), PTDP_TAG_P2P, &pl->act_req[c * slots + slot]));
  if (forward_only) {
    PTDP_CALL(ptdp_comm_wait(pp, &pl->act_req[c * slots + slot]));
    ptdp_gpt_release(m, c, slot);
  }
  return 0;
}

/* Backward of the same; item it is the chunk's last backward when its gradients become final.
 * The input gradient goes back to the previous virtual stage from a send buffer of the slot's
 * own (the model's *dinput is valid only until its next call). */
static int run_backward(ptdp_pipeline *pl, int it, ptdp_work w, posted_recv *cur, float loss_scale, ptdp_event_record *ev)
{
  ptdp_gpt *m = pl->model;
  ptdp_comm *pp = pl->cfg.pp;
  const int c = w.chunk, mb = w.microbatch, slots = pl->cfg.slots;
  const int slot = pl->slot_of[mb * pl->cfg.v + c];
  const float *dout = NULL;
  if (cur->valid) {
    PTDP_CALL(wait_recv(pl, cur, ev));
    dout = pl->grad_recv[cur->buf];
  }
  float *dinput = NULL;
  PTDP_CALL(ptdp_gpt_backward(m, c, slot, dout, loss_scale, it == pl->last_backward[c], &dinput));
  if (sends(pl, w)) {
    ptdp_comm_req *rq = &pl->grad_req[c * slots + slot];
    PTDP_CALL(ptdp_comm_wait(pp, rq));
    float *buf = pl->grad_send[c * slots + slot];
    PTDP_CALL(pl->cfg.be->copy(pl->cfg.be, buf, dinput, pl->cfg.msg_elems * ptdp_dtype_size(pl->cfg.dtype)));
    PTDP_CALL(ptdp_comm_isend_ring_t(pp, buf, pl->cfg.msg_elems, pl->cfg.dtype, ring_dir(w.kind), msg_tag(pl, mb, c, w.kind),
                                     PTDP_TAG_P2P, rq));
  }
  return 0;
}

int ptdp_pipeline_run(ptdp_pipeline *pl, ptdp_batch_fn batch, void *ctx, float loss_scale, int forward_only)
{
  const int nreq = pl->cfg.v * pl->cfg.slots;
  /* records' times count from the log's iteration start (else from now) */
  double t_iter = MPI_Wtime() - (pl->log ? ptdp_events_elapsed(pl->log) : 0.0);
  pl->wait_seconds = pl->busy_seconds = pl->forward_seconds = pl->backward_seconds = pl->loss_sum = 0;
  posted_recv cur = {.valid = 0}, ahead = {.valid = 0};
  ptdp_gpt_drop_losses(pl->model); /* any a failed run left */
  for (int it = 0; it < pl->sched.count; it++) {
    const ptdp_work w = pl->sched.items[it];
    if (forward_only && w.kind != PTDP_WORK_FORWARD) continue;
    ptdp_event_record rec = {.kind = (int)w.kind, .microbatch = w.microbatch, .chunk = w.chunk, .event = -1};
    ptdp_event_record *ev = &rec;
    ev->start = MPI_Wtime() - t_iter;
    PTDP_CALL(post_recvs(pl, it, forward_only, &cur, &ahead));
    if (w.kind == PTDP_WORK_FORWARD) PTDP_CALL(run_forward(pl, w, &cur, batch, ctx, forward_only, ev));
    else PTDP_CALL(run_backward(pl, it, w, &cur, loss_scale, ev));
    ev->end = MPI_Wtime() - t_iter;
    pl->wait_seconds += ev->wait;
    pl->busy_seconds += ev->end - ev->start - ev->wait;
    *(w.kind == PTDP_WORK_FORWARD ? &pl->forward_seconds : &pl->backward_seconds) += ev->end - ev->start - ev->wait;
    ev->held_bytes = (double)pl->model->mem.busy_bytes; /* activations held once the item is done */
    if (pl->log) PTDP_CALL(ptdp_events_record(pl->log, ev));
  }
  if (pl->cfg.p > 1) {
    PTDP_CALL(ptdp_comm_waitall(pl->cfg.pp, nreq, pl->act_req));
    PTDP_CALL(ptdp_comm_waitall(pl->cfg.pp, nreq, pl->grad_req));
  }
  /* the losses, left on the device by each head forward, read once here */
  return ptdp_gpt_take_losses(pl->model, &pl->loss_sum, NULL);
}
