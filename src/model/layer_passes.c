/* The layer's passes that depend on the family (LayerNorm or RMSNorm) and on which fused
 * operations the backend offers, chosen once when the model is created (ptdp_layer_passes_choose)
 * rather than tested on every call.  Each choice computes the same numbers: a fused pass is the
 * backend's one-kernel version of the sequence it replaces (the conformance suite holds them to
 * the same bits). */
#include "model_internal.h"

#include "ptdp/error.h"

/* ---- the normalisation over rows of h ---- */

static int layernorm_fwd(ptdp_gpt *m, const float *x, const float *w, const float *b, float *y, float *mean, float *rstd,
                         long long rows)
{
  return m->be->layernorm_forward(m->be, x, w, b, y, mean, rstd, rows, m->cfg.hidden, m->cfg.eps);
}
static int rmsnorm_fwd(ptdp_gpt *m, const float *x, const float *w, const float *b, float *y, float *mean, float *rstd,
                       long long rows)
{
  return m->be->rmsnorm_forward(m->be, x, w, y, rstd, rows, m->cfg.hidden, m->cfg.eps);
}
static int layernorm_bwd(ptdp_gpt *m, const float *dy, const float *x, const float *w, const float *mean,
                         const float *rstd, float *dx, float *dw, float *db, long long rows)
{
  return m->be->layernorm_backward(m->be, dy, x, w, mean, rstd, dx, dw, db, rows, m->cfg.hidden);
}
static int rmsnorm_bwd(ptdp_gpt *m, const float *dy, const float *x, const float *w, const float *mean,
                       const float *rstd, float *dx, float *dw, float *db, long long rows)
{
  return m->be->rmsnorm_backward(m->be, dy, x, w, rstd, dx, dw, rows, m->cfg.hidden);
}

/* ---- the backward's residual joins: dx = norm'(dy) + res ---- */

static int layernorm_bwd_add_fused(ptdp_gpt *m, const float *dy, const float *x, const float *w, const float *mean,
                                   const float *rstd, float *dx, float *dw, float *db, long long rows, const float *res)
{
  return m->be->layernorm_backward_add(m->be, dy, x, w, mean, rstd, dx, dw, db, rows, m->cfg.hidden, res);
}
static int rmsnorm_bwd_add_fused(ptdp_gpt *m, const float *dy, const float *x, const float *w, const float *mean,
                                 const float *rstd, float *dx, float *dw, float *db, long long rows, const float *res)
{
  return m->be->rmsnorm_backward_add(m->be, dy, x, w, rstd, dx, dw, rows, m->cfg.hidden, res);
}
static int norm_bwd_then_add(ptdp_gpt *m, const float *dy, const float *x, const float *w, const float *mean,
                             const float *rstd, float *dx, float *dw, float *db, long long rows, const float *res)
{
  PTDP_CALL(m->passes.norm_backward(m, dy, x, w, mean, rstd, dx, dw, db, rows));
  return m->be->add(m->be, dx, res, (size_t)rows * m->cfg.hidden);
}

/* ---- the residual branch's end: y = dropout(y + b) + res ---- */

static int bda_fused(ptdp_gpt *m, float *y, const float *b, uint8_t *mask, const ptdp_dropout_key *k, const float *res,
                     long long rows)
{
  return m->be->bias_dropout_add(m->be, y, b, mask, k, res, rows, m->cfg.hidden);
}
static int bda_apart(ptdp_gpt *m, float *y, const float *b, uint8_t *mask, const ptdp_dropout_key *k, const float *res,
                     long long rows)
{
  ptdp_backend *be = m->be;
  const int h = m->cfg.hidden;
  if (b) PTDP_CALL(be->bias_forward(be, y, b, rows, h));
  PTDP_CALL(be->dropout_forward(be, y, mask, rows, h, k));
  return be->add(be, y, res, (size_t)rows * h);
}

/* ---- the same, then the next normalisation of y (the attention block's end into norm 2) ---- */

static int bda_layernorm_fused(ptdp_gpt *m, float *y, const float *b, uint8_t *mask, const ptdp_dropout_key *k,
                               const float *res, long long rows, const float *nw, const float *nb, float *out,
                               float *mean, float *rstd)
{
  return m->be->bias_dropout_add_layernorm(m->be, y, b, mask, k, res, rows, m->cfg.hidden, nw, nb, out, mean, rstd,
                                           m->cfg.eps);
}
static int bda_rmsnorm_fused(ptdp_gpt *m, float *y, const float *b, uint8_t *mask, const ptdp_dropout_key *k,
                             const float *res, long long rows, const float *nw, const float *nb, float *out,
                             float *mean, float *rstd)
{
  return m->be->bias_dropout_add_rmsnorm(m->be, y, b, mask, k, res, rows, m->cfg.hidden, nw, out, rstd, m->cfg.eps);
}
static int bda_then_norm(ptdp_gpt *m, float *y, const float *b, uint8_t *mask, const ptdp_dropout_key *k,
                         const float *res, long long rows, const float *nw, const float *nb, float *out, float *mean,
                         float *rstd)
{
  PTDP_CALL(m->passes.residual(m, y, b, mask, k, res, rows));
  return m->passes.norm_forward(m, y, nw, nb, out, mean, rstd, rows);
}

/* ---- dst = the dropout's backward of src (src kept: the residual's gradient reads it again) ---- */

static int dropout_bwd_to_fused(ptdp_gpt *m, float *dst, const float *src, const uint8_t *mask, size_t n)
{
  return m->be->dropout_backward_to(m->be, dst, src, mask, n, m->cfg.hidden_dropout);
}
static int dropout_bwd_to_copy(ptdp_gpt *m, float *dst, const float *src, const uint8_t *mask, size_t n)
{
  PTDP_CALL(m->be->copy(m->be, dst, src, n * m->es));
  return m->be->dropout_backward(m->be, dst, mask, n, m->cfg.hidden_dropout);
}

void ptdp_layer_passes_choose(const ptdp_backend *be, ptdp_norm_type norm, ptdp_layer_passes *p)
{
  const int rms = norm == PTDP_NORM_RMSNORM;
  p->norm_forward = rms ? rmsnorm_fwd : layernorm_fwd;
  p->norm_backward = rms ? rmsnorm_bwd : layernorm_bwd;
  if (!rms && be->layernorm_backward_add) p->norm_backward_add = layernorm_bwd_add_fused;
  else if (rms && be->rmsnorm_backward_add) p->norm_backward_add = rmsnorm_bwd_add_fused;
  else p->norm_backward_add = norm_bwd_then_add;
  p->residual = be->bias_dropout_add ? bda_fused : bda_apart;
  if (!rms && be->bias_dropout_add_layernorm) p->residual_norm = bda_layernorm_fused;
  else if (rms && be->bias_dropout_add_rmsnorm) p->residual_norm = bda_rmsnorm_fused;
  else p->residual_norm = bda_then_norm;
  p->dropout_backward_to = be->dropout_backward_to ? dropout_bwd_to_fused : dropout_bwd_to_copy;
}

int ptdp_gpt_norm_forward(ptdp_gpt *m, const float *x, const float *w, const float *b, float *y, float *mean, float *rstd,
                          long long rows)
{
  return m->passes.norm_forward(m, x, w, b, y, mean, rstd, rows);
}

int ptdp_gpt_norm_backward(ptdp_gpt *m, const float *dy, const float *x, const float *w, const float *mean,
                           const float *rstd, float *dx, float *dw, float *db, long long rows)
{
  return m->passes.norm_backward(m, dy, x, w, mean, rstd, dx, dw, db, rows);
}
