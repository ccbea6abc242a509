/* Gradient check: every parameter tensor's gradient against central finite differences of the
 * loss, on a tiny model with dropout on (masks are fixed functions of global indices, so the
 * loss is a deterministic, differentiable function of the parameters).
 *
 * Two checks per tensor W with gradient g:
 *  1. directional: D(u) = (L(W + eps u) - L(W - eps u)) / (2 eps) against g.u for u = g/|g| and
 *     for a random unit u.  The step moves the loss by eps |g| >> the float32 rounding of L.
 *  2. elementwise, on the two largest |g_i| of the tensor.
 * Tolerance |fd - an| <= rtol |an| + atol with rtol = 2e-2 and atol = 4 u L / (2 eps): the loss
 * is evaluated in float32 (unit roundoff u = 6e-8, a few roundings accumulated, hence 4), so a
 * difference quotient cannot resolve less than that; the O(eps^2) truncation error with
 * eps = 1e-2 and O(1) third derivatives is ~1e-4 relative, far inside rtol.
 *
 *   test_gradcheck [none|full|selective [swiglu|moe|moe_pre|moe_sigmoid [swiglu]]]
 *     recomputation; swiglu: the SwiGLU MLP (fc1's [gate; up] and the activation's backward);
 *     moe: layer 1's MLP a mixture of 4 experts, top 2 (softmax of the top-k logits; moe_pre:
 *     pre-softmax, scaled by 1.5; moe_sigmoid: sigmoid scores), with the load-balancing loss
 *     (coefficient 0.1) and the z-loss (0.02) in the loss, whose gradients are checked with the
 *     router's; a further swiglu gives the experts SwiGLU.  The routing is a step function of the
 *     weights: the steps below are small enough that no token changes experts on this model. */
#include "ptdp/backend.h"
#include "ptdp/error.h"
#include "ptdp/gpt.h"
#include "ptdp/grid.h"
#include "ptdp/rng.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../expect.h"

static double loss_at(ptdp_gpt *m, const int32_t *tok, const int32_t *tgt)
{
  if (ptdp_gpt_forward(m, 0, 0, tok, tgt, 0)) exit(2);
  ptdp_gpt_release(m, 0, 0);
  double l;
  if (ptdp_gpt_take_losses(m, &l, NULL)) exit(2);
  return l + ptdp_gpt_take_moe_losses(m); /* the mixture's losses are part of the training loss */
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  ptdp_grid grid;
  ptdp_backend *be;
  if (ptdp_grid_create(MPI_COMM_WORLD, 1, 1, PTDP_ORDER_TP_DP_PP, &grid) || ptdp_backend_create("cpu", NULL, &be))
    return 2;
  ptdp_gpt_config c = {.num_layers = 2, .hidden = 16, .heads = 2, .ffn = 32, .seq = 8, .max_pos = 10, .micro_batch = 2,
                       .vocab = 37, .vocab_divisible_by = 8, .eps = 1e-5f, .hidden_dropout = 0.1f,
                       .attn_dropout = 0.1f, .init_std = 0.2f, .seed = 7, .chunks = 1, .schedule = PTDP_SCHED_1F1B,
                       .m = 1, .dp_size = 1};
  const char *rc = argc > 1 ? argv[1] : "none";
  c.recompute = !strcmp(rc, "full") ? PTDP_RECOMPUTE_FULL : !strcmp(rc, "selective") ? PTDP_RECOMPUTE_SELECTIVE : PTDP_RECOMPUTE_NONE;
  c.recompute_num_layers = 1;
  const char *mlp = argc > 2 ? argv[2] : "";
  c.arch.swiglu = !strcmp(mlp, "swiglu") || (argc > 3 && !strcmp(argv[3], "swiglu"));
  if (!strncmp(mlp, "moe", 3)) {
    c.arch.moe = (ptdp_moe){.num_experts = 4, .topk = 2, .ffn = 24, .balance = PTDP_MOE_AUX_LOSS, .aux_coeff = 0.1,
                            .z_coeff = 0.02};
    c.arch.moe.layer[1] = 1;
    c.arch.moe.pre_softmax = !strcmp(mlp, "moe_pre");
    c.arch.moe.topk_scaling = !strcmp(mlp, "moe_pre") ? 1.5 : 0;
    c.arch.moe.score = !strcmp(mlp, "moe_sigmoid") ? PTDP_MOE_SIGMOID : PTDP_MOE_SOFTMAX;
  }
  ptdp_gpt m;
  if (ptdp_gpt_create(&m, &c, be, &grid) || ptdp_gpt_init_params(&m)) return 2;
  /* LayerNorm weights and biases start at 1 and 0: move them so their gradients are generic */
  for (int i = 0; i < m.params.n; i++)
    if (!m.params.table[i].weight_decay)
      for (long long k = 0; k < ptdp_param_local_elems(&m.params.table[i]); k++)
        ptdp_gpt_param_data(&m, i)[k] += 0.1f * (float)ptdp_rng_normal(ptdp_rng_row(3, 9, (uint32_t)i, 0, (uint64_t)k));
  const int N = c.seq * c.micro_batch;
  int32_t tok[64], tgt[64];
  for (int r = 0; r < N; r++) {
    tok[r] = (int32_t)(ptdp_rng_mix(100 + r) % 37);
    tgt[r] = (int32_t)(ptdp_rng_mix(200 + r) % 37);
  }
  memset(m.params.grad, 0, sizeof(float) * (size_t)m.params.layout.total);
  double L0;
  if (ptdp_gpt_forward(&m, 0, 0, tok, tgt, 0) || ptdp_gpt_take_losses(&m, &L0, NULL)) return 2;
  const double moe_loss = ptdp_gpt_take_moe_losses(&m);
  L0 += moe_loss;
  float *dinput;
  if (ptdp_gpt_backward(&m, 0, 0, NULL, 1.0f, 1, &dinput)) return 2;

  /* the mixture: a smaller step, so that no token's top k changes (the loss jumps where one does) */
  const double eps = c.arch.moe.num_experts ? 1e-3 : 1e-2, rtol = 2e-2, atol = 4 * 6e-8 * fabs(L0) / (2 * eps);
  printf("gradcheck (recompute %s%s%s%s): loss %.6f (the mixture's %.6f), atol %.2e, rtol %.0e\n", rc,
         c.arch.swiglu ? ", SwiGLU" : "", c.arch.moe.num_experts ? ", mixture of experts " : "",
         c.arch.moe.num_experts ? mlp : "", L0, moe_loss, atol, rtol);
  for (int i = 0; i < m.params.n; i++) {
    const ptdp_param_info *p = &m.params.table[i];
    long long n = ptdp_param_local_elems(p);
    float *w = ptdp_gpt_param_data(&m, i), *g = ptdp_gpt_grad_data(&m, i);
    float *w0 = malloc(sizeof(float) * (size_t)n), *u = malloc(sizeof(float) * (size_t)n);
    memcpy(w0, w, sizeof(float) * (size_t)n);
    double gn = 0;
    for (long long k = 0; k < n; k++) gn += (double)g[k] * g[k];
    gn = sqrt(gn);
    for (int dir = 0; dir < 2; dir++) {
      double un = 0, an = 0;
      for (long long k = 0; k < n; k++) {
        u[k] = dir == 0 ? (gn > 0 ? (float)(g[k] / gn) : 0.0f) : (float)ptdp_rng_normal(ptdp_rng_row(5, 1, (uint32_t)i, 0, (uint64_t)k));
        un += (double)u[k] * u[k];
      }
      un = sqrt(un);
      if (un == 0) continue;
      for (long long k = 0; k < n; k++) {
        u[k] = (float)(u[k] / un);
        an += (double)g[k] * u[k];
      }
      for (long long k = 0; k < n; k++) w[k] = w0[k] + (float)eps * u[k];
      double lp = loss_at(&m, tok, tgt);
      for (long long k = 0; k < n; k++) w[k] = w0[k] - (float)eps * u[k];
      double lm = loss_at(&m, tok, tgt);
      memcpy(w, w0, sizeof(float) * (size_t)n);
      double fd = (lp - lm) / (2 * eps);
      int ok = fabs(fd - an) <= rtol * fabs(an) + atol;
      EXPECT(ok, "%s, %s direction: finite difference %+.6e, analytic %+.6e", p->name, dir ? "random" : "grad",
             fd, an);
      if (!ok || dir == 0)
        printf("  %-52s %-6s fd %+.6e analytic %+.6e %s\n", p->name, dir ? "random" : "grad", fd, an, ok ? "ok" : "FAIL");
    }
    /* the two largest entries */
    for (int pick = 0; pick < 2 && n > 0; pick++) {
      long long best = 0;
      for (long long k = 0; k < n; k++)
        if (fabsf(g[k]) > fabsf(g[best]) && (pick == 0 || fabsf(g[k]) < fabsf(u[0]))) best = k;
      if (pick == 0) u[0] = g[best];
      float keep = w[best];
      w[best] = keep + (float)eps;
      double lp = loss_at(&m, tok, tgt);
      w[best] = keep - (float)eps;
      double lm = loss_at(&m, tok, tgt);
      w[best] = keep;
      double fd = (lp - lm) / (2 * eps), an = g[best];
      EXPECT(fabs(fd - an) <= rtol * fabs(an) + atol, "%s, element %lld: finite difference %+.6e, analytic %+.6e",
             p->name, best, fd, an);
    }
    free(w0);
    free(u);
  }
  int status = expect_summary("test_gradcheck");
  ptdp_gpt_destroy(&m);
  ptdp_backend_destroy(&be);
  ptdp_grid_destroy(&grid);
  MPI_Finalize();
  return status;
}
