// The device helpers every kernel file of the CUDA backend shares (the .cu files include it, host
// C never does), written once here:
//   THREADS, grid_for, FOR_EACH    the launch of an element-wise kernel: blocks of THREADS
//                                  threads, a grid-stride loop over [0, n)
//   warp_sum, block_sum, block_max the reductions over a warp or a block (shuffles, then one
//                                  shared array of a float or double per warp)
//   row_threads                    the block of a block-per-row kernel (LayerNorm, RMSNorm)
//   ROW_WARP_H, WARP_ROWS,         rows up to ROW_WARP_H wide go a warp per row, WARP_ROWS rows
//   warp_row_blocks                a block (LayerNorm, RMSNorm and their fusions: a block per
//                                  short row spent its time in barriers, ncu on an H200)
//   type_of                        the ptdp_dtype of a storage type (a launcher template calling
//                                  another file's extern "C" launcher)
//   mp_load, mp_store              an element of a type chosen at run time (conversions, AdamW's
//                                  copy back to 16-bit weights)
// Everything is static or a static template: each kernel file compiles its own copy, so the
// emulation's planted copy of this header (validation/emu/local.mk: block_sum without its leading
// barrier) reaches exactly the file it is built into.
#ifndef PTDP_CUDA_DEVICE_H
#define PTDP_CUDA_DEVICE_H

#include "cuda_elem.h"
#include "cuda_internal.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#define THREADS 256

static inline unsigned grid_for(size_t n)
{
  size_t g = (n + THREADS - 1) / THREADS;
  return (unsigned)(g > 65535u * 32u ? 65535u * 32u : (g ? g : 1));
}

// grid-stride loop over [0, n)
#define FOR_EACH(i, n) for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < (n); i += (size_t)gridDim.x * blockDim.x)

// Sum of v over the warp; every lane gets the total.
template <typename T> static __device__ __forceinline__ T warp_sum(T v)
{
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// Sum of v over the block (blockDim.x a multiple of 32, <= 1024); every thread gets the total.
template <typename T> static __device__ T block_sum(T v)
{
  __shared__ T part[32];
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
  __syncthreads(); // part may still be read by a previous call
  if (lane == 0) part[warp] = v;
  __syncthreads();
  T t = 0;
  for (int w = 0; w < nw; w++) t += part[w];
  return t;
}

// Max of v over the block (as block_sum); every thread gets it.
static __device__ inline float block_max(float v)
{
  __shared__ float part[32];
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
  __syncthreads();
  if (lane == 0) part[warp] = v;
  __syncthreads();
  float t = -INFINITY;
  for (int w = 0; w < nw; w++) t = fmaxf(t, part[w]);
  return t;
}

// threads of a block-per-row kernel for rows of h
static inline int row_threads(int h) { return h >= 1024 ? 512 : h >= 256 ? 256 : 128; }

// Rows up to ROW_WARP_H wide (in 16-byte units where aligned): a warp per row, WARP_ROWS rows a
// block, sums through shuffles alone; wider rows, a block per row (row_threads).
#define ROW_WARP_H 4096
#define WARP_ROWS 8
// blocks of the warp-per-row kernels for rows rows
static inline unsigned warp_row_blocks(long long rows) { return (unsigned)((rows + WARP_ROWS - 1) / WARP_ROWS); }

// the ptdp_dtype of a storage type
static inline ptdp_dtype type_of(const float *) { return PTDP_F32; }
static inline ptdp_dtype type_of(const __nv_bfloat16 *) { return PTDP_BF16; }
static inline ptdp_dtype type_of(const __half *) { return PTDP_F16; }

// Element i of p of type t (a ptdp_dtype), ptdp/half.h's rules bit for bit: widening by bits,
// exact, so a NaN keeps its payload whatever the hardware's cvt does; narrowing by CUDA's
// round-to-nearest-even conversions (a NaN becomes 0x7fff, as there).
static __device__ inline float mp_load(const void *p, int t, size_t i)
{
  if (t == PTDP_F32) return ((const float *)p)[i];
  uint32_t x;
  const uint32_t u = ((const unsigned short *)p)[i];
  if (t == PTDP_BF16)
    x = u << 16;
  else {
    const uint32_t sign = (u & 0x8000u) << 16, e = (u >> 10) & 0x1fu, m = u & 0x3ffu;
    if (!e) return sign ? -(float)m * 0x1p-24f : (float)m * 0x1p-24f; // subnormal or zero, exact
    x = sign | (e == 0x1fu ? 0x7f800000u : (e + 112u) << 23) | (m << 13);
  }
  float f;
  memcpy(&f, &x, sizeof f);
  return f;
}

static __device__ inline void mp_store(void *p, int t, size_t i, float v)
{
  if (t == PTDP_F32) ((float *)p)[i] = v;
  else if (t == PTDP_BF16) ((unsigned short *)p)[i] = __bfloat16_as_ushort(__float2bfloat16_rn(v));
  else ((unsigned short *)p)[i] = __half_as_ushort(__float2half_rn(v));
}

#endif
