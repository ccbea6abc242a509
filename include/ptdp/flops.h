/* Model FLOPs per iteration (Narayanan et al. 2021 eq. 3 without the recomputation pass),
 * generalised to the architecture and read from the layer's description (ptdp/layer_desc.h: its
 * GEMMs and attention core at t = 1): per layer and token the forward multiplies
 *   QKV          h (a + 2 g) hd          (g key/value groups: a without grouped-query attention)
 *   attention    2 s a hd                (scores and their product with V, the whole square)
 *   projection   a hd h
 *   MLP          2 h f, SwiGLU 3 h f
 * and the logits h V once per token, 2 FLOPs per multiply-add, 3 times for forward and backward.
 * With a hd = h, g = a and f = 4h this is 72 B s l h^2 (1 + s / (6 h) + V / (12 l h)), B the
 * global batch, s the sequence, l the layers, V the padded vocabulary.  What ptdp-train's
 * throughput, the run file and ptdp-sim count; its own object, so that ptdp-sim links no trainer. */
#ifndef PTDP_FLOPS_H
#define PTDP_FLOPS_H

#include "ptdp/layer_desc.h"
#include "ptdp/params.h"

double ptdp_model_flops(long long B, long long s, const ptdp_model_shape *m, long long V);
/* The same for the layer description d (one micro-batch of s-token sequences at t = 1). */
double ptdp_model_flops_of(long long B, long long s, const ptdp_model_shape *m, long long V, const ptdp_layer_desc *d);

#endif
