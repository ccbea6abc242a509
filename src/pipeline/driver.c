/* Pipeline driver: see include/ptdp/pipeline.h.
 *
 * Each work item's receive is posted while the previous item computes (one item of lookahead),
 * so messages arrive during compute; the time still spent waiting for them is the bubble.
 *
 * Virtual stage k = chunk p + stage.  Forward of (mb, k) needs the output of (mb, k - 1) from
 * rank (k - 1) mod p of the PP group; backward of (mb, k) needs the input gradient of
 * (mb, k + 1) from rank (k + 1) mod p.  Message tags name (micro-batch, sender's chunk,
 * direction); MPI's non-overtaking order between a pair of ranks keeps them matched even
 * when tags wrap. */
#include "ptdp/pipeline.h"

#include "ptdp/error.h"

#include <stdlib.h>
#include <string.h>

static int msg_tag(const ptdp_pipeline *pl, int mb, int chunk, int dir)
{
  return ((mb * pl->model->nchunks + chunk) * 2 + dir) % 30000;
}

int ptdp_pipeline_create(ptdp_pipeline *pl, ptdp_gpt *model, ptdp_schedule_kind kind, int m)
{
  memset(pl, 0, sizeof *pl);
  pl->model = model;
  pl->m = m;
  const int v = model->nchunks, slots = ptdp_gpt_num_slots(model);
  PTDP_CALL(ptdp_schedule_build(kind, model->stage, model->p, v, m, &pl->sched));
  PTDP_CHECK_LOCAL(ptdp_schedule_max_in_flight(&pl->sched) <= slots,
                   "internal: the schedule holds %d micro-batches, the model has %d slots",
                   ptdp_schedule_max_in_flight(&pl->sched), slots);
  PTDP_CALLOC(pl->slot_of, (size_t)m * v, sizeof(int));
  PTDP_CALLOC(pl->last_backward, (size_t)v, sizeof(int));
  for (int i = 0; i < pl->sched.count; i++)
    if (pl->sched.items[i].kind == PTDP_WORK_BACKWARD) pl->last_backward[pl->sched.items[i].chunk] = i;
  PTDP_CALLOC(pl->act_req, (size_t)v * slots, sizeof(ptdp_comm_req));
  PTDP_CALLOC(pl->grad_req, (size_t)v * slots, sizeof(ptdp_comm_req));
  PTDP_CALLOC(pl->grad_send, (size_t)v * slots, sizeof(float *));
  PTDP_CALLOC(pl->reserved, (size_t)v * slots, sizeof(int));
  for (int i = 0; i < v * slots; i++) pl->act_req[i] = pl->grad_req[i] = PTDP_COMM_REQ_NULL;
  if (model->p > 1) { /* the planned p2p buffers */
    const int none = PTDP_PLAN_NONE;
    for (int c = 0; c < v; c++)
      for (int s = 0; s < slots; s++)
        pl->grad_send[c * slots + s] = ptdp_memory_find(&model->mem, PTDP_BUF_P2P_GRAD_SEND, c, s, none, 0);
    for (int b = 0; b < 2; b++) pl->grad_recv[b] = ptdp_memory_find(&model->mem, PTDP_BUF_P2P_GRAD_RECV, none, none, none, b);
    for (int i = 0; i < v * slots; i++) PTDP_CHECK_LOCAL(pl->grad_send[i], "internal: p2p send buffer %d not planned", i);
    PTDP_CHECK_LOCAL(pl->grad_recv[0] && pl->grad_recv[1], "internal: p2p receive buffers not planned");
  }
  PTDP_CALLOC(pl->tokens, model->N, sizeof(int32_t));
  PTDP_CALLOC(pl->targets, model->N, sizeof(int32_t));
  PTDP_CALLOC(pl->events, (size_t)pl->sched.count, sizeof(ptdp_event));
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
  free(pl->events);
  memset(pl, 0, sizeof *pl);
}

/* A receive posted ahead of its work item: into a slot's input (forward) or one of the two
 * gradient buffers (backward). */
typedef struct {
  int item, slot, buf, valid;
  ptdp_comm_req req;
} posted_recv;

static int needs_recv(const ptdp_pipeline *pl, int it)
{
  const ptdp_gpt *m = pl->model;
  const ptdp_work w = pl->sched.items[it];
  const int k = w.chunk * m->p + m->stage;
  return w.kind == PTDP_WORK_FORWARD ? k > 0 : k < m->p * m->nchunks - 1;
}

/* A free slot of chunk c not reserved by a posted receive; -1 if none. */
static int find_slot(const ptdp_pipeline *pl, int c)
{
  const ptdp_gpt *m = pl->model;
  for (int s = 0; s < ptdp_gpt_num_slots(m); s++)
    if (!m->chunks[c].slots[s].busy && !pl->reserved[c * ptdp_gpt_num_slots(m) + s]) return s;
  return -1;
}

/* Post item it's receive; *posted = 0 when no slot is free yet (the caller tries later). */
static int post_recv(ptdp_pipeline *pl, int it, posted_recv *r, int *posted)
{
  ptdp_gpt *m = pl->model;
  const ptdp_work w = pl->sched.items[it];
  const int c = w.chunk, p = m->p, k = c * p + m->stage, slots = ptdp_gpt_num_slots(m);
  const size_t nlh = (size_t)m->Nl * m->cfg.hidden;
  *posted = 0;
  r->item = it;
  r->valid = 0;
  if (w.kind == PTDP_WORK_FORWARD) {
    int s = find_slot(pl, c);
    if (s < 0) return 0;
    /* the slot's last activation send must be done before its forward reuses the output,
     * not before we receive into its input: different buffers */
    pl->reserved[c * slots + s] = 1;
    r->slot = s;
    PTDP_CALL(ptdp_comm_irecv(&m->grid->pp, ptdp_gpt_input(m, c, s), nlh, (k - 1) % p, msg_tag(pl, w.microbatch, (k - 1) / p, 0),
                              PTDP_TAG_P2P, &r->req));
  } else {
    r->buf = pl->next_grad_buf;
    pl->next_grad_buf ^= 1;
    PTDP_CALL(ptdp_comm_irecv(&m->grid->pp, pl->grad_recv[r->buf], nlh, (k + 1) % p,
                              msg_tag(pl, w.microbatch, (k + 1) / p, 1), PTDP_TAG_P2P, &r->req));
  }
  r->valid = 1;
  *posted = 1;
  return 0;
}

int ptdp_pipeline_run(ptdp_pipeline *pl, ptdp_batch_fn batch, void *ctx, float loss_scale, int forward_only)
{
  ptdp_gpt *m = pl->model;
  const int p = m->p, v = m->nchunks, slots = ptdp_gpt_num_slots(m), pv = p * v;
  const size_t nlh = (size_t)m->Nl * m->cfg.hidden;
  ptdp_comm *pp = &m->grid->pp;
  double t_iter = MPI_Wtime();
  pl->wait_seconds = pl->busy_seconds = pl->loss_sum = 0;
  pl->nevents = 0;
  posted_recv cur = {.valid = 0}, ahead = {.valid = 0};
  for (int it = 0; it < pl->sched.count; it++) {
    const ptdp_work w = pl->sched.items[it];
    if (forward_only && w.kind != PTDP_WORK_FORWARD) continue;
    const int c = w.chunk, mb = w.microbatch, k = c * p + m->stage;
    ptdp_chunk *ch = &m->chunks[c];
    ptdp_event *ev = &pl->events[pl->nevents++];
    ev->kind = w.kind;
    ev->microbatch = mb;
    ev->chunk = c;
    ev->wait = 0;
    ev->start = MPI_Wtime() - t_iter;
    /* this item's receive: posted ahead during the previous item, or now */
    cur.valid = 0;
    if (needs_recv(pl, it)) {
      int posted = 1;
      if (ahead.valid && ahead.item == it) {
        cur = ahead;
        ahead.valid = 0;
      } else {
        PTDP_CALL(post_recv(pl, it, &cur, &posted));
      }
      PTDP_CHECK_LOCAL(posted, "internal: no free activation slot for micro-batch %d of chunk %d", mb, c);
    }
    /* post the next item's receive now, so that it arrives while this item computes */
    int nx = it + 1;
    while (forward_only && nx < pl->sched.count && pl->sched.items[nx].kind != PTDP_WORK_FORWARD) nx++;
    if (!ahead.valid && nx < pl->sched.count && needs_recv(pl, nx)) {
      int posted;
      PTDP_CALL(post_recv(pl, nx, &ahead, &posted));
    }
    if (w.kind == PTDP_WORK_FORWARD) {
      int slot = cur.valid ? cur.slot : find_slot(pl, c);
      PTDP_CHECK_LOCAL(slot >= 0, "internal: no free activation slot in chunk %d", c);
      pl->reserved[c * slots + slot] = 0;
      pl->slot_of[mb * v + c] = slot;
      PTDP_CALL(ptdp_comm_wait(pp, &pl->act_req[c * slots + slot]));
      long long sample0 = 0;
      /* only the chunks with the embedding or the loss read data (Megatron: first and last stage);
       * every chunk needs the micro-batch's first global sample, the key of its dropout masks */
      int reads = ch->has_embedding || ch->has_head;
      PTDP_CALL(batch(ctx, mb, reads ? pl->tokens : NULL, reads ? pl->targets : NULL, &sample0));
      if (cur.valid) {
        double t0 = MPI_Wtime();
        PTDP_CALL(ptdp_comm_wait(pp, &cur.req));
        ev->wait += MPI_Wtime() - t0;
      }
      PTDP_CALL(ptdp_gpt_forward(m, c, slot, ch->has_embedding ? pl->tokens : NULL, ch->has_head ? pl->targets : NULL,
                                 sample0));
      if (k < pv - 1)
        PTDP_CALL(ptdp_comm_isend(pp, ptdp_gpt_output(m, c, slot), nlh, (k + 1) % p, msg_tag(pl, mb, c, 0), PTDP_TAG_P2P,
                                  &pl->act_req[c * slots + slot]));
      if (ch->has_head) pl->loss_sum += ch->slots[slot].loss;
      if (forward_only) {
        PTDP_CALL(ptdp_comm_wait(pp, &pl->act_req[c * slots + slot]));
        ptdp_gpt_release(m, c, slot);
      }
    } else {
      const int slot = pl->slot_of[mb * v + c];
      const float *dout = NULL;
      if (cur.valid) {
        double t0 = MPI_Wtime();
        PTDP_CALL(ptdp_comm_wait(pp, &cur.req));
        ev->wait += MPI_Wtime() - t0;
        dout = pl->grad_recv[cur.buf];
      }
      float *dinput = NULL;
      /* gradients of the chunk are final after its last backward */
      PTDP_CALL(ptdp_gpt_backward(m, c, slot, dout, loss_scale, it == pl->last_backward[c], &dinput));
      if (k > 0) {
        ptdp_comm_req *rq = &pl->grad_req[c * slots + slot];
        PTDP_CALL(ptdp_comm_wait(pp, rq));
        float *buf = pl->grad_send[c * slots + slot];
        PTDP_CALL(m->be->copy(m->be, buf, dinput, nlh * sizeof(float)));
        PTDP_CALL(ptdp_comm_isend(pp, buf, nlh, (k - 1) % p, msg_tag(pl, mb, c, 1), PTDP_TAG_P2P, rq));
      }
    }
    ev->end = MPI_Wtime() - t_iter;
    pl->wait_seconds += ev->wait;
    pl->busy_seconds += ev->end - ev->start - ev->wait;
  }
  if (p > 1) {
    PTDP_CALL(ptdp_comm_waitall(pp, v * slots, pl->act_req));
    PTDP_CALL(ptdp_comm_waitall(pp, v * slots, pl->grad_req));
  }
  return 0;
}
