/* Model FLOPs per iteration of GPT (Narayanan et al. 2021 eq. 3 without the recomputation pass):
 * 72 B s l h^2 (1 + s / (6 h) + V / (12 l h)), B the global batch, s the sequence, l the layers,
 * h the hidden size, V the padded vocabulary.  What ptdp-train's throughput, the run file and
 * ptdp-sim count; its own object, so that ptdp-sim links no trainer. */
#ifndef PTDP_FLOPS_H
#define PTDP_FLOPS_H

double ptdp_model_flops(long long B, long long s, long long l, long long h, long long V);

#endif
