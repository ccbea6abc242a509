/* Pipeline driver: see include/ptdp/pipeline.h.
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
  const int v = model->nchunks, slots = model->cfg.max_in_flight;
  PTDP_CALL(ptdp_schedule_build(kind, model->stage, model->p, v, m, &pl->sched));
  PTDP_CHECK_LOCAL(ptdp_schedule_max_in_flight(&pl->sched) <= slots,
                   "internal: the schedule holds %d micro-batches, the model has %d slots",
                   ptdp_schedule_max_in_flight(&pl->sched), slots);
  PTDP_CALLOC(pl->slot_of, (size_t)m * v, sizeof(int));
  PTDP_CALLOC(pl->last_backward, (size_t)v, sizeof(int));
  for (int i = 0; i < pl->sched.count; i++)
    if (pl->sched.items[i].kind == PTDP_WORK_BACKWARD) pl->last_backward[pl->sched.items[i].chunk] = i;
  PTDP_CALLOC(pl->act_req, (size_t)v * slots, sizeof(MPI_Request));
  PTDP_CALLOC(pl->grad_req, (size_t)v * slots, sizeof(MPI_Request));
  PTDP_CALLOC(pl->grad_send, (size_t)v * slots, sizeof(float *));
  for (int i = 0; i < v * slots; i++) pl->act_req[i] = pl->grad_req[i] = MPI_REQUEST_NULL;
  size_t nlh = (size_t)model->Nl * model->cfg.hidden;
  if (model->p > 1) {
    for (int i = 0; i < v * slots; i++)
      PTDP_CALL(ptdp_memory_alloc(&model->mem, model->be, (void **)&pl->grad_send[i], nlh * sizeof(float),
                                  "p2p_grad_send", -1, -1, PTDP_MEM_LAYER_NONE, 0));
    PTDP_CALL(ptdp_memory_alloc(&model->mem, model->be, (void **)&pl->grad_recv, nlh * sizeof(float), "p2p_grad_recv",
                                -1, -1, PTDP_MEM_LAYER_NONE, 0));
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
  free(pl->tokens);
  free(pl->targets);
  free(pl->events);
  memset(pl, 0, sizeof *pl);
}

static int free_slot(ptdp_pipeline *pl, int c, int *slot)
{
  ptdp_gpt *m = pl->model;
  for (int s = 0; s < m->cfg.max_in_flight; s++)
    if (!m->chunks[c].slots[s].busy) {
      *slot = s;
      return 0;
    }
  PTDP_CHECK_LOCAL(0, "internal: no free activation slot in chunk %d", c);
}

static int recv_blocking(ptdp_pipeline *pl, float *buf, int peer, int tag, double *wait)
{
  ptdp_gpt *m = pl->model;
  MPI_Request r;
  PTDP_CALL(ptdp_comm_irecv(&m->grid->pp, buf, (size_t)m->Nl * m->cfg.hidden, peer, tag, PTDP_TAG_P2P, &r));
  double t0 = MPI_Wtime();
  PTDP_CALL(ptdp_comm_wait(&m->grid->pp, &r));
  *wait += MPI_Wtime() - t0;
  return 0;
}

int ptdp_pipeline_run(ptdp_pipeline *pl, ptdp_batch_fn batch, void *ctx, float loss_scale, int forward_only)
{
  ptdp_gpt *m = pl->model;
  const int p = m->p, v = m->nchunks, slots = m->cfg.max_in_flight, pv = p * v;
  const size_t nlh = (size_t)m->Nl * m->cfg.hidden;
  ptdp_comm *pp = &m->grid->pp;
  double t_iter = MPI_Wtime();
  pl->wait_seconds = pl->busy_seconds = pl->loss_sum = 0;
  pl->nevents = 0;
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
    if (w.kind == PTDP_WORK_FORWARD) {
      int slot = 0;
      PTDP_CALL(free_slot(pl, c, &slot));
      pl->slot_of[mb * v + c] = slot;
      PTDP_CALL(ptdp_comm_wait(pp, &pl->act_req[c * slots + slot]));
      long long sample0 = 0;
      PTDP_CALL(batch(ctx, mb, pl->tokens, pl->targets, &sample0));
      if (k > 0)
        PTDP_CALL(recv_blocking(pl, ptdp_gpt_input(m, c, slot), (k - 1) % p, msg_tag(pl, mb, (k - 1) / p, 0), &ev->wait));
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
      if (k < pv - 1) {
        PTDP_CALL(recv_blocking(pl, pl->grad_recv, (k + 1) % p, msg_tag(pl, mb, (k + 1) / p, 1), &ev->wait));
        dout = pl->grad_recv;
      }
      float *dinput = NULL;
      m->grads_final = it == pl->last_backward[c]; /* gradients of the chunk are final after it */
      PTDP_CALL(ptdp_gpt_backward(m, c, slot, dout, loss_scale, &dinput));
      m->grads_final = 0;
      if (k > 0) {
        MPI_Request *rq = &pl->grad_req[c * slots + slot];
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
