/* The counter-based RNG of include/ptdp/rng.h (src/core/rng.c) as inline functions that nvcc
 * compiles for the device, so a GPU dropout mask is the CPU's bit for bit: the same SplitMix64
 * finaliser per key field, the same 24-bit uniform.  The host compiles this header too, and
 * validation/tests/backend/test_cuda_host checks it against rng.c on many keys, so the two
 * copies cannot drift apart unnoticed. */
#ifndef PTDP_CUDA_RNG_H
#define PTDP_CUDA_RNG_H

#include <stdint.h>

#ifdef __CUDACC__
#define PTDP_HD static __host__ __device__ __forceinline__
#else
#define PTDP_HD static inline
#endif

PTDP_HD uint64_t ptdp_cu_rng_mix(uint64_t z)
{
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/* (seed, site, layer, sample, row): one mix per field, as ptdp_rng_row */
PTDP_HD uint64_t ptdp_cu_rng_row(uint64_t seed, uint32_t site, uint32_t layer, uint64_t sample, uint64_t row)
{
  uint64_t h = ptdp_cu_rng_mix(seed ^ ((uint64_t)site << 56));
  h = ptdp_cu_rng_mix(h ^ layer);
  h = ptdp_cu_rng_mix(h ^ sample);
  return ptdp_cu_rng_mix(h ^ row);
}

PTDP_HD uint64_t ptdp_cu_rng_at(uint64_t row_hash, uint64_t col)
{
  return ptdp_cu_rng_mix(row_hash ^ (col * 0xd1b54a32d192ed03ULL));
}

/* top 24 bits, exactly representable, so the comparison with p is the CPU's */
PTDP_HD float ptdp_cu_rng_uniform(uint64_t h) { return (float)(h >> 40) * (1.0f / 16777216.0f); }

#endif
