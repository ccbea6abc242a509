/* Activation recomputation choices (Korthikanti et al. 2022), shared by the model
 * (ptdp_gpt_config) and the inputs (recompute-granularity, recompute-method).
 *   NONE       every activation of the backward pass is stored
 *   FULL       a recomputed group of layers keeps only its input [s, b, h] and reruns its
 *              forward before its backward
 *   SELECTIVE  only the attention core (the 5 a s / (h t) term of the activation memory) is rerun
 * With FULL, the method picks the layers, with k = recompute-num-layers: UNIFORM recomputes every
 * layer, in groups of k consecutive layers of a model chunk; BLOCK recomputes the first k layers
 * of each model chunk, one at a time, and stores the rest.
 * The values are the positions of the choices in their option's "a|b|c" list. */
#ifndef PTDP_RECOMPUTE_H
#define PTDP_RECOMPUTE_H

typedef enum { PTDP_RECOMPUTE_NONE = 0, PTDP_RECOMPUTE_FULL = 1, PTDP_RECOMPUTE_SELECTIVE = 2 } ptdp_recompute;
typedef enum { PTDP_RECOMPUTE_UNIFORM = 0, PTDP_RECOMPUTE_BLOCK = 1 } ptdp_recompute_method;

#endif
