/* The ends of the model: vocab-parallel embedding (first virtual stage) and final LayerNorm,
 * output layer tied to the word embedding, vocab-parallel cross entropy (last virtual stage).
 *
 * Cross entropy never gathers the logits [N, V]: each TP rank holds [N, V/t] and three
 * reductions over TP make the loss: the row max (MAX), then the sum of exp(l - max) and the
 * target's logit (SUM, one call on 2N floats).  loss_r = log(sumexp) + max - target logit.
 * The forward pass leaves softmax - onehot in the logits buffer; the backward pass scales the
 * products that read it.  Passes over the logits: where the backend has them, xent_stats_local
 * takes each slice's max and the sum against it in one read (the sum rescaled to the global max
 * between the two reductions), and at t = 1 xent_fused does all of it in one; else three.
 *
 * Padding of the vocabulary (to a multiple of make-vocab-size-divisible-by x t) is excluded:
 * logits are computed only for the real tokens of this rank's slice (vv <= V/t columns), so
 * the loss does not depend on t.  Megatron includes the padding in the softmax; a run that pads
 * differently then computes a slightly different function. */
#include "model_internal.h"

#include "ptdp/error.h"
#include "ptdp/half.h"
#include "ptdp/rng.h"

#include <math.h>
#include <stdlib.h>

#define EMBED_DROPOUT_LAYER 0xffffu

/* The output layer of the head chunk: its own tensor (untied, or the last stage's copy of the tied
 * embedding), else the word embedding of the same chunk. */
const ptdp_gpt_param_ref *ptdp_gpt_output_layer(const ptdp_gpt *m)
{
  return m->output.index >= 0 ? &m->output : &m->wte;
}

int ptdp_embedding_forward(ptdp_gpt *m, ptdp_chunk_slot *sl, float *out)
{
  ptdp_backend *be = m->be;
  const int h = m->cfg.hidden, Nl = m->sh.Nl;
  float *E = m->work.full_a; /* [N, h]: rows of this rank's vocabulary slice, zero elsewhere */
  PTDP_CALL(be->embedding_forward(be, m->wte.w, sl->tokens, m->sh.v0, m->sh.vl, E, m->sh.N, h));
  PTDP_CALL(ptdp_tp_reduce(m, E, out, h, PTDP_TAG_EMBED)); /* [Nl, h] */
  if (m->wpe.index >= 0) { /* learned absolute positions (rotary ones act inside attention) */
    float *P = m->work.shard_c;
    PTDP_CALL(be->embedding_forward(be, m->wpe.w, m->work.pos, 0, m->cfg.max_pos, P, Nl, h));
    PTDP_CALL(be->add(be, out, P, (size_t)Nl * h));
  }
  ptdp_dropout_key k = {.seed = m->cfg.seed, .site = PTDP_RNG_EMBED_DROP, .layer = EMBED_DROPOUT_LAYER,
                        .sample0 = sl->sample0, .row0 = m->sh.row0, .b = m->cfg.micro_batch, .p = m->cfg.hidden_dropout};
  return be->dropout_forward(be, out, sl->emb_mask, Nl, h, &k);
}

int ptdp_embedding_backward(ptdp_gpt *m, ptdp_chunk_slot *sl, float *dx)
{
  ptdp_backend *be = m->be;
  const int h = m->cfg.hidden, Nl = m->sh.Nl;
  PTDP_CALL(be->dropout_backward(be, dx, sl->emb_mask, (size_t)Nl * h, m->cfg.hidden_dropout));
  if (m->wpe.index >= 0)
    PTDP_CALL(be->embedding_backward(be, dx, m->work.pos, 0, m->cfg.max_pos, m->wpe.g, Nl, h));
  const float *dE = dx;
  if (m->cfg.sequence_parallel) {
    PTDP_CALL(ptdp_tp_gather(m, dx, m->work.full_a, h, PTDP_TAG_EMBED));
    dE = m->work.full_a;
  }
  return be->embedding_backward(be, dE, sl->tokens, m->sh.v0, m->sh.vl, m->wte.g, m->sh.N, h);
}

void ptdp_gpt_capture_logits(ptdp_gpt *m, float *host) { m->hooks.debug_logits = host; }

/* The logits to m->hooks.debug_logits (host fp32), widened from the storage type; then clears it. */
static int copy_debug_logits(ptdp_gpt *m, const float *logits, size_t n)
{
  ptdp_backend *be = m->be;
  void *host = m->hooks.debug_logits;
  if (m->es != sizeof(float)) PTDP_ALLOC(host, n * m->es > 0 ? n * m->es : 1);
  int err = be->to_host(be, host, logits, n * m->es);
  if (!err) err = be->synchronize(be);
  for (size_t i = 0; !err && host != m->hooks.debug_logits && i < n; i++)
    m->hooks.debug_logits[i] = ptdp_half_load(host, m->cfg.dtype, i);
  if (host != m->hooks.debug_logits) free(host);
  m->hooks.debug_logits = NULL;
  return err;
}

static int check_loss(const ptdp_gpt *m, double loss, long long sample0)
{
  PTDP_CHECK_LOCAL(isfinite(loss), "the loss is not finite (%g) at micro-batch starting at sample %lld%s%s%s", loss,
                   sample0, m->nonfinite_weight[0] ? " (the checkpoint loaded holds a weight that is not finite: " : "",
                   m->nonfinite_weight, m->nonfinite_weight[0] ? ")" : "");
  return 0;
}

/* The pending losses to the host (one copy, one wait), checked and added in forward order. */
static int read_pending(ptdp_gpt *m)
{
  ptdp_backend *be = m->be;
  const int n = m->loss_pending;
  if (n == 0) return 0;
  m->loss_pending = 0;
  PTDP_CALL(be->to_host(be, m->host_losses, m->work.losses, sizeof(float) * (size_t)n));
  PTDP_CALL(be->synchronize(be));
  for (int i = 0; i < n; i++) {
    PTDP_CALL(check_loss(m, m->host_losses[i], m->loss_sample0[i]));
    m->loss_sum += m->host_losses[i];
  }
  return 0;
}

/* The micro-batch's mean loss from the reduced statistics: left on the device by xent_loss (read
 * at the run's end, or here when its slots are full), else computed on the host from a copy of
 * the statistics [3 N], which waits for the device. */
static int record_loss(ptdp_gpt *m, const ptdp_chunk_slot *sl, const float *mx, const float *se, const float *tg)
{
  ptdp_backend *be = m->be;
  const int N = m->sh.N;
  m->loss_count++;
  if (be->xent_loss) {
    if (m->loss_pending == m->loss_cap) PTDP_CALL(read_pending(m));
    PTDP_CALL(be->xent_loss(be, mx, se, tg, N, m->work.losses + m->loss_pending));
    m->loss_sample0[m->loss_pending++] = sl->sample0;
    return 0;
  }
  float *hx = m->host_xent;
  PTDP_CALL(be->to_host(be, hx, mx, sizeof(float) * 3 * (size_t)N));
  PTDP_CALL(be->synchronize(be));
  double loss = 0;
  for (int r = 0; r < N; r++) loss += log((double)hx[N + r]) + hx[r] - hx[2 * N + r];
  const float l = (float)(loss / N);
  PTDP_CALL(check_loss(m, l, sl->sample0));
  m->loss_sum += l;
  return 0;
}

int ptdp_gpt_take_losses(ptdp_gpt *m, double *sum, int *count)
{
  const int err = read_pending(m);
  *sum = err ? 0.0 : m->loss_sum;
  if (count) *count = err ? 0 : m->loss_count;
  ptdp_gpt_drop_losses(m);
  return err;
}

void ptdp_gpt_drop_losses(ptdp_gpt *m)
{
  m->loss_sum = 0;
  m->loss_count = m->loss_pending = 0;
}

int ptdp_head_forward(ptdp_gpt *m, ptdp_chunk_slot *sl)
{
  ptdp_backend *be = m->be;
  const int h = m->cfg.hidden, N = m->sh.N, Nl = m->sh.Nl, vl = ptdp_gpt_vocab_columns(m);
  PTDP_CALL(ptdp_gpt_norm_forward(m, sl->out, m->lnf_w.w, m->lnf_b.w, sl->lnf_out, sl->lnf_mean, sl->lnf_rstd, Nl));
  const float *G = sl->lnf_out;
  if (m->cfg.sequence_parallel) {
    PTDP_CALL(ptdp_tp_gather(m, sl->lnf_out, m->work.full_a, h, PTDP_TAG_EMBED));
    G = m->work.full_a;
  }
  PTDP_CALL(be->gemm(be, 0, 1, N, vl, h, 1.0f, G, h, ptdp_gpt_output_layer(m)->w, h, 0.0f, sl->logits, vl > 0 ? vl : 1)); /* [N, vv] */
  if (m->hooks.debug_logits) PTDP_CALL(copy_debug_logits(m, sl->logits, (size_t)N * vl));
  float *mx = m->work.xent, *se = mx + N, *tg = mx + 2 * N;
  if (m->t == 1 && be->xent_fused) { /* no reductions between the passes: one call */
    PTDP_CALL(be->xent_fused(be, sl->logits, sl->targets, m->sh.v0, N, vl, mx, se, tg, 1.0f));
    return record_loss(m, sl, mx, se, tg);
  }
  if (m->t > 1 && be->xent_stats_local && be->xent_rescale) { /* one read for the statistics */
    float *lmax = mx + 3 * N;
    PTDP_CALL(be->xent_stats_local(be, sl->logits, sl->targets, m->sh.v0, N, vl, lmax, se, tg));
    PTDP_CALL(be->copy(be, mx, lmax, sizeof(float) * (size_t)N));
    PTDP_CALL(ptdp_comm_allreduce_max(&m->grid->tp, mx, (size_t)N, PTDP_TAG_LOSS));
    PTDP_CALL(be->xent_rescale(be, se, lmax, mx, N));
  } else {
    PTDP_CALL(be->xent_stats(be, sl->logits, sl->targets, m->sh.v0, N, vl, mx, tg));
    PTDP_CALL(ptdp_comm_allreduce_max(&m->grid->tp, mx, (size_t)N, PTDP_TAG_LOSS));
    PTDP_CALL(be->xent_sumexp(be, sl->logits, mx, N, vl, se));
  }
  PTDP_CALL(ptdp_comm_allreduce_sum(&m->grid->tp, se, (size_t)2 * N, PTDP_TAG_LOSS)); /* sum-exp and target logit */
  PTDP_CALL(record_loss(m, sl, mx, se, tg));
  return be->xent_grad(be, sl->logits, sl->targets, m->sh.v0, mx, se, N, vl, 1.0f); /* softmax - onehot */
}

int ptdp_head_backward(ptdp_gpt *m, ptdp_chunk_slot *sl, float loss_scale, float *dx)
{
  ptdp_backend *be = m->be;
  const int h = m->cfg.hidden, N = m->sh.N, Nl = m->sh.Nl, vl = ptdp_gpt_vocab_columns(m);
  /* d loss / d logits = (softmax - onehot) loss_scale / N: the factor rides on the products */
  const float k = loss_scale / (float)N;
  const float *G = sl->lnf_out;
  if (m->cfg.sequence_parallel) {
    PTDP_CALL(ptdp_tp_gather(m, sl->lnf_out, m->work.full_a, h, PTDP_TAG_EMBED));
    G = m->work.full_a;
  }
  PTDP_CALL(ptdp_backend_gemm_wgrad(be, 1, 0, vl, h, N, k, sl->logits, vl > 0 ? vl : 1, G, h, ptdp_gpt_output_layer(m)->g, h));
  float *dG = m->work.full_b;
  PTDP_CALL(be->gemm(be, 0, 0, N, h, vl, k, sl->logits, vl > 0 ? vl : 1, ptdp_gpt_output_layer(m)->w, h, 0.0f, dG, h));
  float *dln = m->work.shard_c;
  PTDP_CALL(ptdp_tp_reduce(m, dG, dln, h, PTDP_TAG_EMBED));
  return ptdp_gpt_norm_backward(m, dln, sl->out, m->lnf_w.w, sl->lnf_mean, sl->lnf_rstd, dx, m->lnf_w.g, m->lnf_b.g,
                                Nl);
}
