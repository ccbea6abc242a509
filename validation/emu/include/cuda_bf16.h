/* The CUDA emulation's cuda_bf16.h (validation/emu): bfloat16 (the top 16 bits of a float:
 * 8 exponent bits, 7 mantissa bits) as CUDA spells it, for host code and for kernels compiled
 * by the host compiler (host and device code are the same code here).  Written from NVIDIA's
 * documentation, not copied.
 *
 * C: __nv_bfloat16 is a struct holding the 16 bits (field __x), with the conversions
 * __float2bfloat16 and __float2bfloat16_rn (round to nearest even: overflow past the largest
 * finite value rounds to infinity, float subnormals round like any other value),
 * __float2bfloat16_rz (toward zero), __bfloat162float (exact), __bfloat16_as_ushort and
 * __ushort_as_bfloat16.  A NaN converts to CUDA's canonical NaN 0x7fff.
 * C++ adds what kernel code uses: construction from and conversion to float, arithmetic and
 * comparison operators on two __nv_bfloat16 (computed in float, rounded once), and __hadd,
 * __hmul, __hfma, ... overloaded as in CUDA.  As with nvcc, b * 2.0f is ambiguous (either
 * conversion would do): convert explicitly. */
#ifndef PTDP_EMU_CUDA_BF16_H
#define PTDP_EMU_CUDA_BF16_H

#include <stdint.h>
#include <string.h>

#define __CUDA_BF16_TYPES_EXIST__

/* ---- bit-level conversions (the definitions every other form calls) ---- */

/* float -> bfloat16, round to nearest even: add just under half of the dropped part, plus the
 * kept lowest bit (ties go to even), and truncate; a carry rolls into the exponent (and from the
 * largest finite value into infinity), which is the correct rounding. */
static inline unsigned short ptdp_emu_float2bfloat16_bits(float f)
{
  uint32_t x;
  memcpy(&x, &f, sizeof x);
  if ((x & 0x7fffffffu) > 0x7f800000u) return 0x7fffu; /* NaN */
  x += 0x7fffu + ((x >> 16) & 1u);
  return (unsigned short)(x >> 16);
}

static inline unsigned short ptdp_emu_float2bfloat16_rz_bits(float f)
{
  uint32_t x;
  memcpy(&x, &f, sizeof x);
  if ((x & 0x7fffffffu) > 0x7f800000u) return 0x7fffu; /* a NaN whose payload is all below bit 16 stays NaN */
  return (unsigned short)(x >> 16);
}

/* bfloat16 -> float: exact. */
static inline float ptdp_emu_bfloat162float_bits(unsigned short b)
{
  const uint32_t x = (uint32_t)b << 16;
  float f;
  memcpy(&f, &x, sizeof f);
  return f;
}

/* ---- the type ---- */

typedef struct __nv_bfloat16_raw {
  unsigned short x;
} __nv_bfloat16_raw;

#ifdef __cplusplus
struct __nv_bfloat16 {
  unsigned short __x;
  __nv_bfloat16() = default;
  __nv_bfloat16(float f) : __x(ptdp_emu_float2bfloat16_bits(f)) {}
  __nv_bfloat16(const __nv_bfloat16_raw &r) : __x(r.x) {}
  __nv_bfloat16 &operator=(float f) { __x = ptdp_emu_float2bfloat16_bits(f); return *this; }
  operator float() const { return ptdp_emu_bfloat162float_bits(__x); }
  operator __nv_bfloat16_raw() const { __nv_bfloat16_raw r; r.x = __x; return r; }
};
#else
typedef struct __nv_bfloat16 {
  unsigned short __x;
} __nv_bfloat16;
#endif

typedef struct __nv_bfloat162 {
  __nv_bfloat16 x, y;
} __nv_bfloat162;

static inline __nv_bfloat16 __ushort_as_bfloat16(unsigned short u) { __nv_bfloat16 b; b.__x = u; return b; }
static inline unsigned short __bfloat16_as_ushort(__nv_bfloat16 b) { return b.__x; }
static inline __nv_bfloat16 __float2bfloat16(float f) { return __ushort_as_bfloat16(ptdp_emu_float2bfloat16_bits(f)); }
static inline __nv_bfloat16 __float2bfloat16_rn(float f) { return __float2bfloat16(f); }
static inline __nv_bfloat16 __float2bfloat16_rz(float f)
{
  return __ushort_as_bfloat16(ptdp_emu_float2bfloat16_rz_bits(f));
}
static inline float __bfloat162float(__nv_bfloat16 b) { return ptdp_emu_bfloat162float_bits(b.__x); }

#define CUDART_INF_BF16 __ushort_as_bfloat16((unsigned short)0x7f80u)
#define CUDART_NAN_BF16 __ushort_as_bfloat16((unsigned short)0x7fffu)
#define CUDART_MAX_NORMAL_BF16 __ushort_as_bfloat16((unsigned short)0x7f7fu)
#define CUDART_MIN_DENORM_BF16 __ushort_as_bfloat16((unsigned short)0x0001u)
#define CUDART_ZERO_BF16 __ushort_as_bfloat16((unsigned short)0x0000u)
#define CUDART_ONE_BF16 __ushort_as_bfloat16((unsigned short)0x3f80u)

#ifdef __cplusplus
#include "emu_half_ops.h"
typedef __nv_bfloat16 nv_bfloat16;
typedef __nv_bfloat162 nv_bfloat162;

PTDP_EMU_HALF_OPS(__nv_bfloat16, __ushort_as_bfloat16, 0x7f80u) /* emu_half_ops.h */

/* Pairs (vectorised loads and stores of two bfloat16). */
static inline __nv_bfloat162 __halves2bfloat162(__nv_bfloat16 a, __nv_bfloat16 b)
{
  __nv_bfloat162 r;
  r.x = a;
  r.y = b;
  return r;
}
static inline __nv_bfloat162 __floats2bfloat162_rn(float a, float b)
{
  return __halves2bfloat162(__nv_bfloat16(a), __nv_bfloat16(b));
}
static inline __nv_bfloat162 __float2bfloat162_rn(float a) { return __floats2bfloat162_rn(a, a); }
static inline float __low2float(__nv_bfloat162 v) { return (float)v.x; }
static inline float __high2float(__nv_bfloat162 v) { return (float)v.y; }
#endif

#endif
