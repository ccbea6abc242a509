/* Private to src/model: the mixture-of-experts MLP (moe.c) and its router (moe_route.c).
 *
 * Every expert is on every rank (expert-model-parallel-size 1).  The router runs on the host in
 * double from the fp32 logits the backend's GEMM makes; the tokens are permuted into one
 * contiguous block per expert, each expert's MLP is the backend's GEMMs over its block (split
 * over TP like the dense MLP: fc1 column-parallel, fc2 row-parallel), and the outputs are
 * weighted by the routing probabilities and summed back into token order on the host (dropless:
 * each expert takes every token routed to it). */
#ifndef PTDP_MOE_INTERNAL_H
#define PTDP_MOE_INTERNAL_H

#include "model_internal.h"

#define PTDP_MOE_MAX_EXPERTS 4096 /* num-experts' range */

/* One micro-batch's routing. */
typedef struct {
  int N, E, k;
  int *idx;          /* [N k] expert of token t's j-th choice (decreasing score) */
  double *prob0;     /* [N k] its probability before the top-k scaling factor */
  float *prob;       /* [N k] the weight of its output (scaled) */
  int *row;          /* [N k] its row in expert order */
  int *tok;          /* [N k] the token of each row in expert order */
  long long *off;    /* [E + 1] expert e's rows [off[e], off[e + 1]) */
  long long *count;  /* [E] tokens routed to each expert */
  double aux, aux_c; /* the load-balancing loss (coefficient included) and its factor E coeff / (k N^2) */
  double z;          /* the z-loss (coefficient included) */
} ptdp_moe_routing;

/* Route N tokens of fp32 logits [N, E]. */
int ptdp_moe_route(const ptdp_moe *c, const float *logits, int N, ptdp_moe_routing *r);
void ptdp_moe_route_free(ptdp_moe_routing *r);
/* dlogits [N, E] from the gradient of the weights dprob [N k] (the layer's), plus the gradients
 * of the load-balancing and z losses times loss_scale (the factor the head gives its own loss). */
int ptdp_moe_route_backward(const ptdp_moe *c, const float *logits, const ptdp_moe_routing *r, const double *dprob,
                            double loss_scale, float *dlogits);

/* The MLP of mixture layer `layer` (weights w): from in [N, h] (the gathered normalised rows) to
 * the partial sums over TP of its output in partial [N, h] (reduced by the caller, as the dense
 * fc2's; the experts' fc2 biases are in rank 0's part).  The activations go to a. */
int ptdp_moe_forward(ptdp_gpt *m, int layer, const ptdp_layer_params *w, const ptdp_layer_acts *a, const float *in,
                     float *partial);
/* Its backward: dT [N, h] the gradient of the reduced output (full rows), in [N, h] the same
 * input again; writes the partial sum over TP of the input gradient into din [N, h] and
 * accumulates the parameter gradients g. */
int ptdp_moe_backward(ptdp_gpt *m, int layer, const ptdp_layer_params *w, const ptdp_layer_params *g,
                      const ptdp_layer_acts *a, const float *dT, const float *in, float *din);

#endif
