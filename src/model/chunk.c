/* Forward and backward of one micro-batch through one model chunk, with activation
 * recomputation (Korthikanti et al. 2022):
 *   full       layers in a recompute group keep only the group's input; the backward pass runs
 *              the group's forward again into scratch, then its backward
 *   selective  every layer keeps all but the attention core (QK^T, softmax, dropout, attention
 *              over V), which the backward pass recomputes from the stored QKV
 * Dropout masks of a recomputation equal the originals: they are keyed by global indices. */
#include "model_internal.h"

#include "ptdp/error.h"

#include <string.h>

static int ready_one(ptdp_gpt *m, const ptdp_gpt_param_ref *r) { return ptdp_gpt_grads_ready(m, r->index, r->index + 1); }

/* The activation set layer i of chunk c uses for this slot: stored buffers, or scratch. */
static ptdp_layer_acts resolve(ptdp_gpt *m, int c, int slot, int i)
{
  ptdp_chunk_slot *sl = &m->chunks[c].slots[slot];
  ptdp_layer_acts a;
  int g0, g1;
  if (ptdp_gpt_recompute_group(m, c, i, &g0, &g1)) {
    a = m->work.recomp[i - g0];
    if (i == g0) a.x = sl->layers[i].x;
    return a;
  }
  a = sl->layers[i];
  if (m->cfg.recompute == PTDP_RECOMPUTE_SELECTIVE) { /* the attention core comes from the scratch */
#define CORE_FROM_SCRATCH(kind, type, field, name, part, elems, unit, when)                                \
    if (PART_##part == PART_CORE) a.field = m->work.recomp[0].field;
    enum { PART_IN, PART_CORE, PART_REST };
    PTDP_LAYER_ACTIVATIONS(CORE_FROM_SCRATCH)
#undef CORE_FROM_SCRATCH
  }
  return a;
}

static float *layer_output(ptdp_gpt *m, int c, int slot, int i)
{
  if (i + 1 < m->chunks[c].nlayers) return resolve(m, c, slot, i + 1).x;
  return m->chunks[c].slots[slot].out;
}

int ptdp_gpt_forward(ptdp_gpt *m, int c, int slot, const int32_t *tokens, const int32_t *targets, long long sample0)
{
  ptdp_chunk *ch = &m->chunks[c];
  ptdp_chunk_slot *sl = &ch->slots[slot];
  PTDP_CHECK_INTERNAL(!sl->busy, "activation slot %d of chunk %d is already in use", slot, c);
  sl->busy = 1;
  sl->sample0 = sample0;
  ptdp_memory_slot_busy(&m->mem, c, slot, 1);
  if (ch->has_embedding) {
    PTDP_CALL(m->be->to_device(m->be, sl->tokens, tokens, sizeof(int32_t) * (size_t)m->sh.N));
    PTDP_CALL(ptdp_embedding_forward(m, sl, ch->nlayers ? resolve(m, c, slot, 0).x : sl->out));
  }
  if (ch->has_head) PTDP_CALL(m->be->to_device(m->be, sl->targets, targets, sizeof(int32_t) * (size_t)m->sh.N));
  for (int i = 0; i < ch->nlayers; i++) {
    ptdp_layer_acts a = resolve(m, c, slot, i);
    PTDP_CALL(ptdp_layer_forward(m, c, i, &a, layer_output(m, c, slot, i), sample0));
  }
  if (ch->has_head) PTDP_CALL(ptdp_head_forward(m, sl));
  return 0;
}

static int gpt_backward(ptdp_gpt *m, int c, int slot, const float *dout, float loss_scale, float **dinput);

/* Run the forward pass of layers [g0, g1) again from the stored input of g0. */
static int recompute_group(ptdp_gpt *m, int c, int slot, int g0, int g1)
{
  for (int j = g0; j < g1; j++) {
    ptdp_layer_acts a = resolve(m, c, slot, j);
    float *out = j + 1 < g1 ? resolve(m, c, slot, j + 1).x : m->work.shard_c; /* last output unused */
    PTDP_CALL(ptdp_layer_forward(m, c, j, &a, out, m->chunks[c].slots[slot].sample0));
  }
  return 0;
}

int ptdp_gpt_backward(ptdp_gpt *m, int c, int slot, const float *dout, float loss_scale, int last, float **dinput)
{
  m->hooks.grads_final = last;
  m->loss_scale = loss_scale;
  int err = gpt_backward(m, c, slot, dout, loss_scale, dinput);
  m->hooks.grads_final = 0;
  return err;
}

static int gpt_backward(ptdp_gpt *m, int c, int slot, const float *dout, float loss_scale, float **dinput)
{
  ptdp_chunk *ch = &m->chunks[c];
  ptdp_chunk_slot *sl = &ch->slots[slot];
  ptdp_backend *be = m->be;
  PTDP_CHECK_INTERNAL(sl->busy, "backward of chunk %d slot %d before its forward", c, slot);
  float *dcur = m->work.grad_a, *dnext = m->work.grad_b;
  const size_t nlh = (size_t)m->sh.Nl * m->cfg.hidden;
  if (ch->has_head) {
    PTDP_CALL(ptdp_head_backward(m, sl, loss_scale, dcur));
    PTDP_CALL(ready_one(m, &m->lnf_w));
    PTDP_CALL(ready_one(m, &m->lnf_b));
    PTDP_CALL(ready_one(m, &m->output));
  } else
    PTDP_CALL(be->copy(be, dcur, dout, nlh * m->es));
  for (int i = ch->nlayers - 1; i >= 0; i--) {
    int g0, g1;
    if (ptdp_gpt_recompute_group(m, c, i, &g0, &g1)) {
      if (i == g1 - 1) {
        m->recomputing = 1;
        int err = recompute_group(m, c, slot, g0, g1);
        m->recomputing = 0;
        PTDP_CALL(err);
      }
    }
    ptdp_layer_acts a = resolve(m, c, slot, i);
    if (m->cfg.recompute == PTDP_RECOMPUTE_SELECTIVE && !m->cfg.flash_attention) { /* flash keeps its lse */
      ptdp_attn_desc d = ptdp_layer_attn_desc(m, ch->layer0 + i, sl->sample0);
      /* the context it writes again is not needed: it goes to scratch */
      PTDP_CALL(be->attention_forward(be, &d, a.qkv, a.probs, a.attn_mask, a.probs_drop, m->work.dctx));
    }
    PTDP_CALL(ptdp_layer_backward(m, c, i, &a, dcur, dnext, sl->sample0));
    PTDP_CALL(ptdp_gpt_grads_ready(m, ch->layers[i].param_first, ch->layers[i].param_end));
    float *t = dcur;
    dcur = dnext;
    dnext = t;
  }
  if (ch->has_embedding) {
    PTDP_CALL(ptdp_embedding_backward(m, sl, dcur));
    PTDP_CALL(ready_one(m, &m->wte));
    PTDP_CALL(ready_one(m, &m->wpe));
  }
  *dinput = dcur;
  sl->busy = 0;
  ptdp_memory_slot_busy(&m->mem, c, slot, 0);
  return 0;
}

void ptdp_gpt_release(ptdp_gpt *m, int c, int slot)
{
  ptdp_chunk_slot *sl = &m->chunks[c].slots[slot];
  if (!sl->busy) return;
  sl->busy = 0;
  ptdp_memory_slot_busy(&m->mem, c, slot, 0);
}

double ptdp_gpt_take_moe_losses(ptdp_gpt *m)
{
  const double l = m->moe_losses;
  m->moe_losses = 0;
  return l;
}

int ptdp_gpt_num_slots(const ptdp_gpt *m) { return m->plan.slots; }
int ptdp_gpt_slot_busy(const ptdp_gpt *m, int c, int slot) { return m->chunks[c].slots[slot].busy; }
int ptdp_gpt_chunk_has_embedding(const ptdp_gpt *m, int c) { return m->chunks[c].has_embedding; }
int ptdp_gpt_chunk_has_head(const ptdp_gpt *m, int c) { return m->chunks[c].has_head; }
float *ptdp_gpt_input(ptdp_gpt *m, int c, int slot) { return m->chunks[c].slots[slot].layers[0].x; }
float *ptdp_gpt_output(ptdp_gpt *m, int c, int slot) { return m->chunks[c].slots[slot].out; }
