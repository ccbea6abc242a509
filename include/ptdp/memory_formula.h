/* Activation bytes per transformer layer per micro-batch, by formula, to set beside what the
 * arena measures (ptdp/memory.h).
 *
 * Korthikanti et al. 2022 count 2-byte activations and 1-byte dropout masks (Table 2):
 *   no parallelism           s b h (34 + 5 a s / h)
 *   tensor parallel          s b h (10 + 24/t + 5 a s / (h t))
 *   + sequence parallel      s b h (34/t + 5 a s / (h t))
 *   selective recompute      drops the 5 a s / (h t) term
 *   full recompute           2 s b h (the layer input only)
 * ptdp stores the same tensors in its storage type (bytes: 2 in bf16/fp16, as the paper, 4 in
 * fp32), masks as 1 byte, plus LayerNorm mean and 1/std (4 fp32 numbers per token, which the paper
 * neglects).  In bf16/fp16 that is the paper's count plus 16 s b (16 s b / t with SP).
 * In fp32, with dropout on and f = 4h:
 *   ptdp                     s b h (18 + 48/t + 9 a s / (h t)) + 16 s b          (TP)
 *                            s b h (66/t + 9 a s / (h t)) + 16 s b / t           (TP + SP)
 * i.e. twice the paper's bytes for every 2-byte tensor, the same for every 1-byte mask
 * (18 = 2 x 8 + 2; 48 = 2 x 24; 9 = 2 x 4 + 1 for softmax output, dropout output, mask).
 * The general count below also follows ffn-hidden-size and drops the masks and the dropout
 * output when their dropout probability is 0; with SwiGLU fc1's output [gate | up] is 2 f / t
 * wide (the activation's output f / t as GELU's): E N f / t bytes more.  With the fused (flash) attention the softmax,
 * its dropout mask and output are never stored: the 5 a s / (h t) term goes, as under
 * selective recomputation (Korthikanti et al.'s formula without it), and ptdp adds the fp32
 * log-sum-exp of each query row, 4 b a s / t bytes. */
#ifndef PTDP_MEMORY_FORMULA_H
#define PTDP_MEMORY_FORMULA_H

#include "ptdp/layer_desc.h"

/* ptdp_layer_shape, one layer of one rank: ptdp/layer_desc.h. */

/* ptdp's bytes for one layer of a micro-batch (exactly what the arena allocates): the tensors the
 * layer's description (ptdp_layer_describe) keeps. */
double ptdp_layer_bytes_ptdp(const ptdp_layer_shape *l);
/* The paper's bytes (2-byte activations) for the same setting. */
double ptdp_layer_bytes_paper(const ptdp_layer_shape *l);

#endif
