// The element types of the CUDA kernels' (S) operands (ptdp/backend.h): float, __nv_bfloat16
// or __half, the backend's storage type.  Kernels are templates on it; they load an element as
// float (exact), compute in fp32 and store rounded to nearest even (CUDA's _rn conversions: the
// rounding of ptdp/half.h for every number; a NaN becomes the canonical 0x7fff).  Included by
// the .cu files only.
#ifndef PTDP_CUDA_ELEM_H
#define PTDP_CUDA_ELEM_H

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

__device__ __forceinline__ float ptdp_ld(float v) { return v; }
__device__ __forceinline__ float ptdp_ld(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float ptdp_ld(__half v) { return __half2float(v); }

__device__ __forceinline__ void ptdp_st(float *p, float v) { *p = v; }
__device__ __forceinline__ void ptdp_st(__nv_bfloat16 *p, float v) { *p = __float2bfloat16_rn(v); }
__device__ __forceinline__ void ptdp_st(__half *p, float v) { *p = __float2half_rn(v); }

// 16 bytes of elements of T, one load or store: the elementwise and row kernels move their bulk
// in these where the pointers allow (an element at a time, a bf16 warp moves 64 bytes per
// instruction, too little in flight to approach the memory's bandwidth; measured on an H200,
// validation/bench/README.md).  VEC<T> elements: 8 of a 16-bit type, 4 of fp32.
template <typename T> struct __align__(16) vec16 {
  T e[16 / sizeof(T)];
};
#define VEC(T) ((int)(16 / sizeof(T)))

// whether p can be read in vec16 units
static inline bool vec_aligned(const void *p) { return ((uintptr_t)p & 15u) == 0; }

// F<T>(args) for the storage type t (a ptdp_dtype): the host launcher of a kernel template.
// A launcher takes the kernel's instance as a function pointer (kernel = name<T>;
// kernel<<<...>>>), the one launch form the emulation's translator and nvcc both read.
#define PTDP_CUK_DISPATCH(t, F, ...)                                                                      \
  ((t) == PTDP_BF16 ? F<__nv_bfloat16>(__VA_ARGS__) : (t) == PTDP_F16 ? F<__half>(__VA_ARGS__)           \
                                                                      : F<float>(__VA_ARGS__))

#endif
