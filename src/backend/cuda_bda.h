/* The dropout and the residual branch's end per element and per 16-byte unit, shared by the
 * kernels that write them (cuda_dropout.cu: dropout_fwd, bias_dropout_add; cuda_layernorm.cu: the
 * LayerNorm fusion; cuda_llama.cu: the RMSNorm fusion), so every one of them gives the same bits
 * and masks. */
#ifndef PTDP_CUDA_BDA_H
#define PTDP_CUDA_BDA_H

#include "cuda_elem.h"
#include "cuda_internal.h"
#include "cuda_rng.h"

#include <stdint.h>

// element (r, c): global row R = row0 + r of the [s, b] grid (pos R / b, sample sample0 + R % b),
// global column col0 + c; the CPU's key, so the mask is the CPU's bit for bit.  bda_row: row r's key
static __device__ __forceinline__ uint64_t bda_row(const ptdp_dropout_key &k, long long r)
{
  const long long R = k.row0 + r;
  return ptdp_cu_rng_row(k.seed, k.site, k.layer, (uint64_t)(k.sample0 + R % k.b), (uint64_t)(R / k.b));
}

// y = dropout(y + b) + r in one pass (ptdp_backend's bias_dropout_add): per element the fp32
// operations of bias_fwd, dropout_fwd and add_k in their order, each product and sum rounded on
// its own (__fadd_rn, __fmul_rn: no contraction into an FMA), so in fp32 the three kernels' bits;
// a 16-bit y is rounded once at the end where the three round after each.  The mask is
// dropout_fwd's (the same key, element by element).  b may be NULL (no bias), p 0 (no dropout,
// mask not touched).
template <typename T>
static __device__ __forceinline__ float bda_one(float v, const T *b, long long c, uint64_t rh,
                                                const ptdp_dropout_key &k, float keep_scale, uint8_t *keep)
{
  if (b) v = __fadd_rn(v, ptdp_ld(b[c]));
  if (k.p > 0.0f) {
    *keep = ptdp_cu_rng_uniform(ptdp_cu_rng_at(rh, (uint64_t)(k.col0 + c))) >= k.p;
    v = *keep ? __fmul_rn(v, keep_scale) : 0.0f;
  }
  return v;
}

// unit i (vec16 elements from e0 = i VEC(T)) of row r, columns c0 ..: y, mask written
template <typename T>
static __device__ __forceinline__ void bda_unit_vec(T *y, const T *b, uint8_t *mask, const T *res, size_t i,
                                                    long long r, long long c0, const ptdp_dropout_key &k,
                                                    float keep_scale)
{
  const uint64_t rh = k.p > 0.0f ? bda_row(k, r) : 0;
  vec16<T> a = ((vec16<T> *)y)[i];
  const vec16<T> q = ((const vec16<T> *)res)[i];
  uint8_t keep[VEC(T)];
  for (int j = 0; j < VEC(T); j++) {
    keep[j] = 1;
    const float v = bda_one(ptdp_ld(a.e[j]), b, c0 + j, rh, k, keep_scale, &keep[j]);
    ptdp_st(&a.e[j], __fadd_rn(v, ptdp_ld(q.e[j])));
  }
  ((vec16<T> *)y)[i] = a;
  if (k.p > 0.0f) {
    if (VEC(T) == 8) {
      uint64_t m8 = 0;
      for (int j = 0; j < 8; j++) m8 |= (uint64_t)keep[j] << (8 * j);
      ((uint64_t *)mask)[i] = m8;
    } else {
      uint32_t m4 = 0;
      for (int j = 0; j < 4; j++) m4 |= (uint32_t)keep[j] << (8 * j);
      ((uint32_t *)mask)[i] = m4;
    }
  }
}

#endif
