/* The CUDA emulation's cuda_fp16.h (validation/emu): IEEE binary16 ("half") as CUDA spells it,
 * for host code and for kernels compiled by the host compiler (host and device code are the same
 * code here).  Written from NVIDIA's documentation, not copied.
 *
 * C: __half is a struct holding the 16 bits (field __x), with the conversions __float2half,
 * __float2half_rn (round to nearest even; beyond the largest finite value 65504 it rounds to
 * infinity, from 65520 up, as IEEE says; subnormals exact down to 2^-24), __half2float (exact),
 * __half_as_ushort and __ushort_as_half.  A NaN converts to CUDA's canonical NaN 0x7fff.
 * C++ adds what kernel code uses: construction from and conversion to float, arithmetic and
 * comparison operators on two __half (computed in float, rounded once to half), and __hadd,
 * __hmul, __hfma, ... .  As with nvcc, an expression mixing __half and float, such as h * 2.0f,
 * is ambiguous (either conversion would do): convert explicitly. */
#ifndef PTDP_EMU_CUDA_FP16_H
#define PTDP_EMU_CUDA_FP16_H

#include <stdint.h>
#include <string.h>

#define __CUDA_FP16_TYPES_EXIST__

/* ---- bit-level conversions (the definitions every other form calls) ---- */

/* float -> binary16, round to nearest, ties to even. */
static inline unsigned short ptdp_emu_float2half_bits(float f)
{
  uint32_t x;
  memcpy(&x, &f, sizeof x);
  const uint32_t sign = (x >> 16) & 0x8000u, a = x & 0x7fffffffu;
  if (a > 0x7f800000u) return 0x7fffu;             /* NaN */
  if (a >= 0x477ff000u) return (unsigned short)(sign | 0x7c00u); /* >= 65520 (65504 + half an ulp): inf */
  if (a >= 0x38800000u) {                          /* >= 2^-14: a normal half */
    const uint32_t r = a - 0x38000000u;            /* exponent rebiased from 127 to 15 */
    uint32_t h = r >> 13, rem = r & 0x1fffu;       /* 23 mantissa bits -> 10 */
    h += rem > 0x1000u || (rem == 0x1000u && (h & 1u)); /* a carry rolls into the exponent, as it should */
    return (unsigned short)(sign | h);
  }
  if (a < 0x33000000u) return (unsigned short)sign; /* below 2^-25: rounds to a signed zero */
  /* [2^-25, 2^-14): a subnormal half, in units of 2^-24: the float's significand shifted right */
  const uint32_t e = a >> 23, mant = (a & 0x7fffffu) | 0x800000u, shift = 126u - e; /* 14..24 */
  uint32_t h = mant >> shift;
  const uint32_t rem = mant & ((1u << shift) - 1u), halfway = 1u << (shift - 1u);
  h += rem > halfway || (rem == halfway && (h & 1u)); /* 0x3ff + 1 = 0x400 is 2^-14, correctly */
  return (unsigned short)(sign | h);
}

/* binary16 -> float: exact (every half is a float); NaN payloads kept. */
static inline float ptdp_emu_half2float_bits(unsigned short h)
{
  const uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  uint32_t x;
  if (e == 0x1fu)
    x = sign | 0x7f800000u | (m << 13);
  else if (e != 0)
    x = sign | ((e + 112u) << 23) | (m << 13);
  else {
    const float v = (float)m * 0x1p-24f; /* subnormal (or zero): m units of 2^-24, exact */
    return sign ? -v : v;
  }
  float f;
  memcpy(&f, &x, sizeof f);
  return f;
}

/* ---- the type ---- */

typedef struct __half_raw {
  unsigned short x;
} __half_raw;

#ifdef __cplusplus
struct __half {
  unsigned short __x;
  __half() = default;
  __half(float f) : __x(ptdp_emu_float2half_bits(f)) {}
  __half(const __half_raw &r) : __x(r.x) {}
  __half &operator=(float f) { __x = ptdp_emu_float2half_bits(f); return *this; }
  operator float() const { return ptdp_emu_half2float_bits(__x); }
  operator __half_raw() const { __half_raw r; r.x = __x; return r; }
};
#else
typedef struct __half {
  unsigned short __x;
} __half;
#endif

typedef struct __half2 {
  __half x, y;
} __half2;

static inline __half __ushort_as_half(unsigned short u) { __half h; h.__x = u; return h; }
static inline unsigned short __half_as_ushort(__half h) { return h.__x; }
static inline __half __float2half(float f) { return __ushort_as_half(ptdp_emu_float2half_bits(f)); }
static inline __half __float2half_rn(float f) { return __float2half(f); }
static inline float __half2float(__half h) { return ptdp_emu_half2float_bits(h.__x); }

#define CUDART_INF_FP16 __ushort_as_half((unsigned short)0x7c00u)
#define CUDART_NAN_FP16 __ushort_as_half((unsigned short)0x7fffu)
#define CUDART_MAX_NORMAL_FP16 __ushort_as_half((unsigned short)0x7bffu)
#define CUDART_MIN_DENORM_FP16 __ushort_as_half((unsigned short)0x0001u)
#define CUDART_ZERO_FP16 __ushort_as_half((unsigned short)0x0000u)
#define CUDART_ONE_FP16 __ushort_as_half((unsigned short)0x3c00u)

#ifdef __cplusplus
#include "emu_half_ops.h"
typedef __half half;
typedef __half2 half2;

PTDP_EMU_HALF_OPS(__half, __ushort_as_half, 0x7c00u) /* emu_half_ops.h */

/* Pairs (vectorised loads and stores of two halves). */
static inline __half2 __halves2half2(__half a, __half b) { __half2 r; r.x = a; r.y = b; return r; }
static inline __half2 __floats2half2_rn(float a, float b) { return __halves2half2(__half(a), __half(b)); }
static inline __half2 __float2half2_rn(float a) { return __floats2half2_rn(a, a); }
static inline float __low2float(__half2 v) { return (float)v.x; }
static inline float __high2float(__half2 v) { return (float)v.y; }
#endif

#endif
