/* The mixture of experts' router on the host: top-k routing, the token order by expert, the
 * load-balancing and z losses, and the backward of all of it.  See moe_internal.h. */
#include "moe_internal.h"

#include "ptdp/error.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void ptdp_moe_route_free(ptdp_moe_routing *r)
{
  free(r->idx);
  free(r->prob);
  free(r->prob0);
  free(r->row);
  free(r->tok);
  free(r->off);
  free(r->count);
  memset(r, 0, sizeof *r);
}

/* softmax of x[0..n) into y, and the log-sum-exp */
static double softmax(const float *x, int n, double *y)
{
  double mx = x[0], sum = 0;
  for (int i = 1; i < n; i++) mx = x[i] > mx ? x[i] : mx;
  for (int i = 0; i < n; i++) sum += y[i] = exp((double)x[i] - mx);
  for (int i = 0; i < n; i++) y[i] /= sum;
  return mx + log(sum);
}

static double sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }

/* The k largest of v[0..n) in decreasing order (torch.topk's; ties to the lower index). */
static void topk(const double *v, int n, int k, int *idx)
{
  for (int j = 0; j < k; j++) {
    int best = -1;
    for (int e = 0; e < n; e++) {
      int taken = 0;
      for (int i = 0; i < j; i++) taken |= idx[i] == e;
      if (!taken && (best < 0 || v[e] > v[best])) best = e;
    }
    idx[j] = best;
  }
}

/* The scores the load-balancing loss reads (Megatron's compute_routing_scores_for_aux_loss):
 * softmax over all E, or the sigmoids normalised to sum 1. */
static void aux_scores(const ptdp_moe *c, const float *l, int E, double *sa)
{
  if (c->score == PTDP_MOE_SOFTMAX) {
    softmax(l, E, sa);
    return;
  }
  double sum = 0;
  for (int e = 0; e < E; e++) sum += sa[e] = sigmoid(l[e]);
  for (int e = 0; e < E; e++) sa[e] /= sum + 1e-20;
}

int ptdp_moe_route(const ptdp_moe *c, const float *logits, int N, ptdp_moe_routing *r)
{
  const int E = c->num_experts, k = c->topk;
  memset(r, 0, sizeof *r);
  PTDP_CHECK_INTERNAL(N > 0 && E > 0 && k > 0 && k <= E && E <= PTDP_MOE_MAX_EXPERTS, "routing %d tokens to %d of %d experts",
                      N, k, E);
  r->N = N;
  r->E = E;
  r->k = k;
  PTDP_CALLOC(r->idx, (size_t)N * k, sizeof *r->idx);
  PTDP_CALLOC(r->prob, (size_t)N * k, sizeof *r->prob);
  PTDP_CALLOC(r->prob0, (size_t)N * k, sizeof *r->prob0);
  PTDP_CALLOC(r->row, (size_t)N * k, sizeof *r->row);
  PTDP_CALLOC(r->tok, (size_t)N * k, sizeof *r->tok);
  PTDP_CALLOC(r->off, (size_t)E + 1, sizeof *r->off);
  PTDP_CALLOC(r->count, (size_t)E, sizeof *r->count);
  double *s, *sa, *psum;
  PTDP_CALLOC(s, (size_t)E * 3, sizeof *s);
  sa = s + E;
  psum = s + 2 * E;
  double zsum = 0;
  for (int t = 0; t < N; t++) {
    const float *l = logits + (size_t)t * E;
    int *idx = r->idx + (size_t)t * k;
    double *p0 = r->prob0 + (size_t)t * k;
    const double lse = softmax(l, E, s); /* s: softmax over all experts */
    zsum += lse * lse;
    if (c->score == PTDP_MOE_SOFTMAX && c->pre_softmax) { /* softmax, then the top k of it */
      topk(s, E, k, idx);
      for (int j = 0; j < k; j++) p0[j] = s[idx[j]];
    } else if (c->score == PTDP_MOE_SOFTMAX) { /* the top k logits, then their softmax */
      for (int e = 0; e < E; e++) s[e] = l[e];
      topk(s, E, k, idx);
      double mx = s[idx[0]], sum = 0;
      for (int j = 0; j < k; j++) sum += p0[j] = exp(s[idx[j]] - mx);
      for (int j = 0; j < k; j++) p0[j] /= sum;
    } else { /* sigmoid: the top k of the sigmoids, normalised to sum 1 when k > 1 */
      for (int e = 0; e < E; e++) s[e] = sigmoid(l[e]);
      topk(s, E, k, idx);
      double sum = 0;
      for (int j = 0; j < k; j++) sum += p0[j] = s[idx[j]];
      if (k > 1)
        for (int j = 0; j < k; j++) p0[j] /= sum + 1e-20;
    }
    const double scale = c->topk_scaling > 0 ? c->topk_scaling : 1.0;
    for (int j = 0; j < k; j++) {
      r->prob[(size_t)t * k + j] = (float)(p0[j] * scale);
      r->count[idx[j]]++;
    }
    if (c->balance == PTDP_MOE_AUX_LOSS) {
      aux_scores(c, l, E, sa);
      for (int e = 0; e < E; e++) psum[e] += sa[e];
    }
  }
  /* the rows in expert order: expert by expert, each expert's tokens in token order (a stable
   * sort of the N k choices by expert, as Megatron's permute) */
  for (int e = 0; e < E; e++) r->off[e + 1] = r->off[e] + r->count[e];
  long long *next;
  PTDP_CALLOC(next, (size_t)E, sizeof *next);
  for (int e = 0; e < E; e++) next[e] = r->off[e];
  for (int t = 0; t < N; t++)
    for (int j = 0; j < k; j++) {
      const int e = r->idx[(size_t)t * k + j];
      const long long row = next[e]++;
      r->row[(size_t)t * k + j] = (int)row;
      r->tok[row] = t;
    }
  free(next);
  /* Megatron's switch_load_balancing_loss_func: E coeff / (k T^2) sum_e P_e c_e, with P_e the
   * aux scores summed over the micro-batch's T = N tokens and c_e the tokens routed to e among
   * them (the counts over the tensor-parallel group and the whole sequence: here every rank routes
   * every token of the micro-batch) */
  r->aux = 0;
  if (c->balance == PTDP_MOE_AUX_LOSS) {
    double acc = 0;
    for (int e = 0; e < E; e++) acc += psum[e] * (double)r->count[e];
    r->aux_c = (double)E * c->aux_coeff / ((double)k * (double)N * (double)N);
    r->aux = r->aux_c * acc;
  }
  r->z = c->z_coeff * zsum / N; /* z_loss_func: coeff mean_t logsumexp(l_t)^2 */
  free(s);
  return 0;
}

int ptdp_moe_route_backward(const ptdp_moe *c, const float *logits, const ptdp_moe_routing *r, const double *dprob,
                            double loss_scale, float *dlogits)
{
  const int E = r->E, k = r->k, N = r->N;
  PTDP_CHECK_INTERNAL(N > 0 && E > 0 && k > 0 && k <= E && E <= PTDP_MOE_MAX_EXPERTS, "routing %d tokens to %d of %d experts",
                      N, k, E);
  const double scale = c->topk_scaling > 0 ? c->topk_scaling : 1.0;
  double *s, *g, *dq;
  PTDP_CALLOC(s, (size_t)E * 3, sizeof *s);
  g = s + E;
  dq = s + 2 * E;
  for (int t = 0; t < N; t++) {
    const float *l = logits + (size_t)t * E;
    const int *idx = r->idx + (size_t)t * k;
    const double *p0 = r->prob0 + (size_t)t * k;
    double dl[PTDP_MOE_MAX_EXPERTS];
    for (int e = 0; e < E; e++) dl[e] = 0;
    /* the routing probabilities p = scale p0 */
    double dp0[PTDP_MOE_MAX_EXPERTS], dot = 0;
    for (int j = 0; j < k; j++) dp0[j] = dprob[(size_t)t * k + j] * scale;
    if (c->score == PTDP_MOE_SOFTMAX && c->pre_softmax) { /* p0_j = softmax(l)[idx_j] */
      softmax(l, E, s);
      for (int e = 0; e < E; e++) g[e] = 0;
      for (int j = 0; j < k; j++) g[idx[j]] = dp0[j];
      for (int e = 0; e < E; e++) dot += s[e] * g[e];
      for (int e = 0; e < E; e++) dl[e] += s[e] * (g[e] - dot);
    } else if (c->score == PTDP_MOE_SOFTMAX) { /* p0 = softmax(l[idx]) */
      for (int j = 0; j < k; j++) dot += p0[j] * dp0[j];
      for (int j = 0; j < k; j++) dl[idx[j]] += p0[j] * (dp0[j] - dot);
    } else { /* q = sigmoid(l[idx]), p0 = q / (sum q + eps) (k > 1) */
      double q[PTDP_MOE_MAX_EXPERTS], sum = 0;
      for (int j = 0; j < k; j++) sum += q[j] = sigmoid(l[idx[j]]);
      if (k > 1) {
        const double den = sum + 1e-20;
        for (int j = 0; j < k; j++) dot += dp0[j] * q[j];
        for (int j = 0; j < k; j++) dq[j] = dp0[j] / den - dot / (den * den);
      } else
        for (int j = 0; j < k; j++) dq[j] = dp0[j];
      for (int j = 0; j < k; j++) dl[idx[j]] += dq[j] * q[j] * (1 - q[j]);
    }
    /* the load-balancing loss: d/dsa[t, e] = aux_c c_e (the counts are constants) */
    if (c->balance == PTDP_MOE_AUX_LOSS && r->aux_c != 0) {
      for (int e = 0; e < E; e++) g[e] = r->aux_c * (double)r->count[e] * loss_scale;
      if (c->score == PTDP_MOE_SOFTMAX) {
        softmax(l, E, s);
        double d = 0;
        for (int e = 0; e < E; e++) d += s[e] * g[e];
        for (int e = 0; e < E; e++) dl[e] += s[e] * (g[e] - d);
      } else { /* sa = sigma / (sum sigma + eps) */
        double sum = 0, d = 0;
        for (int e = 0; e < E; e++) sum += s[e] = sigmoid(l[e]);
        const double den = sum + 1e-20;
        for (int e = 0; e < E; e++) d += g[e] * s[e];
        for (int e = 0; e < E; e++) dl[e] += (g[e] / den - d / (den * den)) * s[e] * (1 - s[e]);
      }
    }
    /* the z-loss: coeff / N lse^2, d/dl = 2 coeff / N lse softmax(l) */
    if (c->z_coeff != 0) {
      const double lse = softmax(l, E, s);
      const double f = 2.0 * c->z_coeff / N * lse * loss_scale;
      for (int e = 0; e < E; e++) dl[e] += f * s[e];
    }
    for (int e = 0; e < E; e++) dlogits[(size_t)t * E + e] = (float)dl[e];
  }
  free(s);
  return 0;
}
