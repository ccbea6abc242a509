/* The mixture-of-experts MLP of a layer, every expert on every rank: see moe_internal.h.
 *
 *   in [N, h] ─ router GEMM ─ logits [N, E] ─ top k (host) ─ permute rows by expert ─
 *     per expert e: fc1 (col-par) ─ GeLU / SwiGLU ─ fc2 (row-par) ─ y_e [n_e, h] (partial over TP)
 *   ─ unpermute: out[t] = sum_j p_tj (y[row_tj] + b2_e) ─ partial [N, h] (the caller's g)
 *
 * Shapes per TP rank: router weight [E, h] (replicated), expert fc1 [efc1, h], fc2 [h, efl],
 * n_e rows for expert e (sum_e n_e = N k).  The backward's probability gradient
 * dp_tj = dT[t] . (y_full[row_tj] + b2_e) is a sum over TP of the partial outputs' dot products
 * (all-reduced, N k numbers); the router's gradients then are whole on every rank, so the
 * router's part of the input gradient is added on TP rank 0 only before the reduction. */
#include "moe_internal.h"

#include "ptdp/error.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static float *ex(const ptdp_layer_params *w, int e, int q) { return w->experts ? w->experts[4 * e + q] : NULL; }

/* The layer's routing from its logits on the device. */
static int route_of(ptdp_gpt *m, const float *dlogits, float *host, ptdp_moe_routing *r)
{
  const int N = (int)m->sh.N, E = m->sh.E;
  PTDP_CALL(m->be->to_host(m->be, host, dlogits, sizeof(float) * (size_t)N * E));
  return ptdp_moe_route(&m->cfg.arch.moe, host, N, r);
}

/* rows[i] = src[tok[i]] for the N k rows in expert order (host) */
static void permute(const float *src, const ptdp_moe_routing *r, int h, float *rows)
{
  const long long Nk = (long long)r->N * r->k;
  for (long long i = 0; i < Nk; i++) memcpy(rows + (size_t)i * h, src + (size_t)r->tok[i] * h, sizeof(float) * (size_t)h);
}

static int forward_in(ptdp_gpt *m, const ptdp_layer_params *w, const ptdp_layer_acts *a, const float *in, float *partial,
                      float *host, ptdp_moe_routing *r)
{
  ptdp_backend *be = m->be;
  const int h = m->cfg.hidden, E = m->sh.E, k = m->sh.k, efl = m->sh.efl, f1 = m->sh.efc1;
  const long long N = m->sh.N, Nk = m->sh.Nk;
  float *hin = host, *rows = host + (size_t)N * h, *lg = rows + (size_t)Nk * h; /* [N,h] [Nk,h] [N,E] */
  PTDP_CALL(be->gemm(be, 0, 1, (int)N, E, h, 1.0f, in, h, w->router_w, h, 0.0f, a->moe_logits, E)); /* [N, E] */
  PTDP_CALL(route_of(m, a->moe_logits, lg, r));
  if (!m->recomputing) m->moe_losses += r->aux + r->z;
  /* the tokens in expert order */
  PTDP_CALL(be->to_host(be, hin, in, sizeof(float) * (size_t)N * h));
  permute(hin, r, h, rows);
  float *x = m->work.moe_rows_a;
  PTDP_CALL(be->to_device(be, x, rows, sizeof(float) * (size_t)Nk * h));
  for (int e = 0; e < E; e++) { /* each expert's MLP over its block of rows */
    const long long r0 = r->off[e];
    const int n = (int)(r->off[e + 1] - r0);
    if (n == 0) continue;
    float *fc1 = a->moe_fc1 + (size_t)r0 * f1, *act = a->moe_act + (size_t)r0 * efl;
    PTDP_CALL(be->gemm(be, 0, 1, n, f1, h, 1.0f, x + (size_t)r0 * h, h, ex(w, e, 0), h, 0.0f, fc1, f1));
    if (ex(w, e, 1)) PTDP_CALL(be->bias_forward(be, fc1, ex(w, e, 1), n, f1));
    if (m->cfg.arch.swiglu) PTDP_CALL(be->swiglu_forward(be, fc1, act, n, efl));
    else PTDP_CALL(be->gelu_forward(be, fc1, act, (size_t)n * efl));
    PTDP_CALL(be->gemm(be, 0, 1, n, h, efl, 1.0f, act, efl, ex(w, e, 2), efl, 0.0f, a->moe_y + (size_t)r0 * h, h));
  }
  /* unpermute: out[t] = sum_j p_tj (y[row_tj] + b2_e), the biases in TP rank 0's part */
  PTDP_CALL(be->to_host(be, rows, a->moe_y, sizeof(float) * (size_t)Nk * h));
  float *b2 = lg; /* [E, h] after the logits are read */
  const int bias = m->tp_rank == 0 && ex(w, 0, 3);
  for (int e = 0; bias && e < E; e++) PTDP_CALL(be->to_host(be, b2 + (size_t)e * h, ex(w, e, 3), sizeof(float) * (size_t)h));
  for (long long t = 0; t < N; t++) {
    float *o = hin + (size_t)t * h;
    for (int c = 0; c < h; c++) o[c] = 0;
    for (int j = 0; j < k; j++) {
      const float p = r->prob[t * k + j];
      const float *y = rows + (size_t)r->row[t * k + j] * h, *b = b2 + (size_t)r->idx[t * k + j] * h;
      for (int c = 0; c < h; c++) o[c] += p * (y[c] + (bias ? b[c] : 0.0f));
    }
  }
  return be->to_device(be, partial, hin, sizeof(float) * (size_t)N * h);
}

/* Host floats: [N, h], [N k, h], 2 x [max(N, h), E], [N k, h], and N k doubles. */
static size_t host_floats(const ptdp_gpt *m)
{
  const size_t N = (size_t)m->sh.N, h = (size_t)m->cfg.hidden, E = (size_t)m->sh.E, Nk = (size_t)m->sh.Nk;
  return N * h + 2 * Nk * h + 2 * (N > h ? N : h) * E + 2 * Nk + 2;
}

int ptdp_moe_forward(ptdp_gpt *m, int layer, const ptdp_layer_params *w, const ptdp_layer_acts *a, const float *in,
                     float *partial)
{
  PTDP_CHECK(a->moe_logits && m->es == sizeof(float),
             "layer %d: the mixture of experts runs in fp32 training only (not in generation) for now", layer);
  float *host;
  PTDP_ALLOC(host, sizeof(float) * host_floats(m));
  ptdp_moe_routing r = {0};
  int err = forward_in(m, w, a, in, partial, host, &r);
  ptdp_moe_route_free(&r);
  free(host);
  return err;
}

static int backward_in(ptdp_gpt *m, const ptdp_layer_params *w, const ptdp_layer_params *g, const ptdp_layer_acts *a,
                       const float *dT, const float *in, float *din, float *host, ptdp_moe_routing *r)
{
  ptdp_backend *be = m->be;
  const int h = m->cfg.hidden, E = m->sh.E, k = m->sh.k, efl = m->sh.efl, f1 = m->sh.efc1;
  const long long N = m->sh.N, Nk = m->sh.Nk;
  float *hd = host, *rows = hd + (size_t)N * h, *lg = rows + (size_t)Nk * h;
  const size_t NE = (size_t)(N > h ? N : h) * E;
  float *y = lg + NE, *dlg = y + (size_t)Nk * h;
  double *dp = (double *)(((uintptr_t)(dlg + NE) + 7) & ~(uintptr_t)7); /* [N k] */
  PTDP_CALL(route_of(m, a->moe_logits, lg, r));
  /* the probabilities' gradient, partial over TP: dT[t] . (y[row] + b2_e on rank 0) */
  PTDP_CALL(be->to_host(be, hd, dT, sizeof(float) * (size_t)N * h));
  PTDP_CALL(be->to_host(be, y, a->moe_y, sizeof(float) * (size_t)Nk * h));
  const int bias = m->tp_rank == 0 && ex(w, 0, 3);
  float *b2 = dlg; /* [E, h], read before dlogits are written */
  for (int e = 0; bias && e < E; e++) PTDP_CALL(be->to_host(be, b2 + (size_t)e * h, ex(w, e, 3), sizeof(float) * (size_t)h));
  float *dpf = m->work.moe_router + (size_t)N * E; /* [N k] on the device for the all-reduce */
  float *dph = rows;
  for (long long t = 0; t < N; t++)
    for (int j = 0; j < k; j++) {
      const float *d = hd + (size_t)t * h, *yy = y + (size_t)r->row[t * k + j] * h, *b = b2 + (size_t)r->idx[t * k + j] * h;
      double acc = 0;
      for (int c = 0; c < h; c++) acc += (double)d[c] * ((double)yy[c] + (bias ? b[c] : 0.0));
      dph[t * k + j] = (float)acc;
    }
  if (m->t > 1) {
    PTDP_CALL(be->to_device(be, dpf, dph, sizeof(float) * (size_t)N * k));
    PTDP_CALL(ptdp_comm_allreduce_sum_t(&m->grid->tp, dpf, (size_t)N * k, m->cfg.dtype, PTDP_TAG_LAYER));
    PTDP_CALL(be->to_host(be, dph, dpf, sizeof(float) * (size_t)N * k));
  }
  for (long long i = 0; i < N * k; i++) dp[i] = dph[i];
  /* the experts' output gradient in expert order: dY[row_tj] = p_tj dT[t] */
  for (long long t = 0; t < N; t++)
    for (int j = 0; j < k; j++) {
      const float p = r->prob[t * k + j], *d = hd + (size_t)t * h;
      float *o = rows + (size_t)r->row[t * k + j] * h;
      for (int c = 0; c < h; c++) o[c] = p * d[c];
    }
  float *dY = m->work.moe_rows_b, *x = m->work.moe_rows_a, *dfc = m->work.moe_dfc;
  PTDP_CALL(be->to_device(be, dY, rows, sizeof(float) * (size_t)Nk * h));
  PTDP_CALL(be->to_host(be, hd, in, sizeof(float) * (size_t)N * h)); /* the input again, in expert order */
  permute(hd, r, h, rows);
  PTDP_CALL(be->to_device(be, x, rows, sizeof(float) * (size_t)Nk * h));
  for (int e = 0; e < E; e++) {
    const long long r0 = r->off[e];
    const int n = (int)(r->off[e + 1] - r0);
    if (n == 0) continue;
    const float *fc1 = a->moe_fc1 + (size_t)r0 * f1, *act = a->moe_act + (size_t)r0 * efl;
    float *dYe = dY + (size_t)r0 * h, *xe = x + (size_t)r0 * h;
    if (ex(g, e, 3)) PTDP_CALL(be->bias_backward(be, dYe, ex(g, e, 3), n, h));
    PTDP_CALL(ptdp_backend_gemm_wgrad(be, 1, 0, h, efl, n, 1.0f, dYe, h, act, efl, ex(g, e, 2), efl)); /* dW2 += dY^T act */
    float *dact = m->cfg.arch.swiglu ? dfc + (size_t)n * f1 : dfc;
    PTDP_CALL(be->gemm(be, 0, 0, n, efl, h, 1.0f, dYe, h, ex(w, e, 2), efl, 0.0f, dact, efl));
    if (m->cfg.arch.swiglu) PTDP_CALL(be->swiglu_backward(be, fc1, dact, dfc, n, efl));
    else PTDP_CALL(be->gelu_backward(be, fc1, dfc, dfc, (size_t)n * efl));
    if (ex(g, e, 1)) PTDP_CALL(be->bias_backward(be, dfc, ex(g, e, 1), n, f1));
    PTDP_CALL(ptdp_backend_gemm_wgrad(be, 1, 0, f1, h, n, 1.0f, dfc, f1, xe, h, ex(g, e, 0), h)); /* dW1 += dF^T x */
    PTDP_CALL(be->gemm(be, 0, 0, n, h, f1, 1.0f, dfc, f1, ex(w, e, 0), h, 0.0f, xe, h)); /* dx_e over x_e */
  }
  /* unpermute the input gradient: din[t] = sum_j dx[row_tj] */
  PTDP_CALL(be->to_host(be, rows, x, sizeof(float) * (size_t)Nk * h));
  for (long long t = 0; t < N; t++) {
    float *o = hd + (size_t)t * h;
    for (int c = 0; c < h; c++) o[c] = 0;
    for (int j = 0; j < k; j++) {
      const float *d = rows + (size_t)r->row[t * k + j] * h;
      for (int c = 0; c < h; c++) o[c] += d[c];
    }
  }
  PTDP_CALL(be->to_device(be, din, hd, sizeof(float) * (size_t)N * h));
  /* the router: dlogits whole on every rank; dW_r += dlogits^T in, and rank 0 adds dlogits W_r */
  PTDP_CALL(ptdp_moe_route_backward(&m->cfg.arch.moe, lg, r, dp, m->loss_scale, dlg));
  float *dl = m->work.moe_router;
  PTDP_CALL(be->to_device(be, dl, dlg, sizeof(float) * (size_t)N * E));
  PTDP_CALL(ptdp_backend_gemm_wgrad(be, 1, 0, E, h, (int)N, 1.0f, dl, E, in, h, g->router_w, h));
  if (m->tp_rank == 0) PTDP_CALL(be->gemm(be, 0, 0, (int)N, h, E, 1.0f, dl, E, w->router_w, h, 1.0f, din, h));
  return 0;
}

int ptdp_moe_backward(ptdp_gpt *m, int layer, const ptdp_layer_params *w, const ptdp_layer_params *g,
                      const ptdp_layer_acts *a, const float *dT, const float *in, float *din)
{
  float *host;
  PTDP_ALLOC(host, sizeof(float) * host_floats(m));
  ptdp_moe_routing r = {0};
  int err = backward_in(m, w, g, a, dT, in, din, host, &r);
  ptdp_moe_route_free(&r);
  free(host);
  return err;
}
