/* Activation recomputation (Korthikanti et al. 2022): which layers keep what.
 *   full       layers in a recompute group keep only the group's input; the backward pass runs
 *              the group's forward again (method uniform: groups of recompute-num-layers
 *              consecutive layers of a chunk; block: the first recompute-num-layers layers of each
 *              chunk, each on its own);
 *   selective  every layer keeps all but the attention core (QK^T, softmax, dropout, attention
 *              over V), recomputed from the stored QKV. */
#ifndef PTDP_RECOMPUTE_H
#define PTDP_RECOMPUTE_H

typedef enum { PTDP_RECOMPUTE_NONE = 0, PTDP_RECOMPUTE_FULL = 1, PTDP_RECOMPUTE_SELECTIVE = 2 } ptdp_recompute;
typedef enum { PTDP_RECOMPUTE_UNIFORM = 0, PTDP_RECOMPUTE_BLOCK = 1 } ptdp_recompute_method;

/* Layer i of a chunk of nlayers: returns 1 when it is recomputed as part of the group [g0, g1)
 * (recomputed together from the stored input of g0), else 0 with [g0, g1) = [i, i + 1).
 * Worked example: full, uniform, k = 2, nlayers = 5: layer 3 is in [2, 4), layer 4 in [4, 5). */
static inline int ptdp_recompute_group(ptdp_recompute r, ptdp_recompute_method method, int k, int nlayers, int i,
                                       int *g0, int *g1)
{
  *g0 = i;
  *g1 = i + 1;
  if (r != PTDP_RECOMPUTE_FULL) return 0;
  if (method == PTDP_RECOMPUTE_UNIFORM) {
    *g0 = i / k * k;
    *g1 = *g0 + k < nlayers ? *g0 + k : nlayers;
    return 1;
  }
  return i < k;
}

/* Layer activation sets the recomputation scratch holds: a whole group (full, uniform), one layer
 * (full, block), the attention core of one layer (selective), none. */
static inline int ptdp_recompute_scratch_layers(ptdp_recompute r, ptdp_recompute_method method, int k, int nlayers)
{
  if (r == PTDP_RECOMPUTE_FULL) return method == PTDP_RECOMPUTE_UNIFORM ? (k < nlayers ? k : nlayers) : 1;
  return r == PTDP_RECOMPUTE_SELECTIVE ? 1 : 0;
}

#endif
