/* Host conversions between fp32 and the 16-bit types of mixed precision (bfloat16, IEEE
 * binary16), bit for bit as every backend's convert operation (ptdp/backend.h) must give them.
 * Inline, so that loops over arrays vectorise (the CPU backend's convert).
 *
 * Narrowing rounds to nearest, ties to even, on the exact float value:
 *   bf16  keeps a float's sign and exponent and 7 mantissa bits; float subnormals round like any
 *         other value; past the largest finite bf16 (0x7f7f) the rounding carries into infinity;
 *   fp16  5 exponent bits, 10 mantissa bits: values from 65520 (65504, the largest half, plus
 *         half an ulp) up become infinity; below 2^-14 the result is a subnormal half (units of
 *         2^-24), below 2^-25 a signed zero, and 2^-25 itself (a tie) rounds to zero;
 *   a NaN becomes the canonical NaN 0x7fff (what CUDA's __float2half_rn and
 *   __float2bfloat16_rn give), its sign and payload dropped.
 * Widening is exact (every bf16 and fp16 value is a float); a NaN keeps its sign and payload.
 * Between bf16 and fp16 the value goes through fp32 (exact), so it is rounded once. */
#ifndef PTDP_HALF_H
#define PTDP_HALF_H

#include "ptdp/dtype.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline uint32_t ptdp_half_bits_of(float f)
{
  uint32_t x;
  memcpy(&x, &f, sizeof x);
  return x;
}

static inline float ptdp_half_float_of(uint32_t x)
{
  float f;
  memcpy(&f, &x, sizeof f);
  return f;
}

/* Keep the top 16 bits, rounded: adding 0x7fff plus the kept part's last bit carries into bit 16
 * exactly when the dropped 16 bits are past the half-way point, or at it with an odd kept part. */
static inline uint16_t ptdp_float_to_bf16(float f)
{
  const uint32_t x = ptdp_half_bits_of(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return 0x7fffu; /* NaN */
  return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

/* Drop the low `shift` bits of m (1..31), rounding to nearest even. */
static inline uint32_t ptdp_half_round_shift(uint32_t m, uint32_t shift)
{
  const uint32_t kept = m >> shift, rem = m & ((1u << shift) - 1u), half = 1u << (shift - 1u);
  return kept + (rem > half || (rem == half && (kept & 1u)));
}

static inline uint16_t ptdp_float_to_f16(float f)
{
  const uint32_t x = ptdp_half_bits_of(f), sign = (x >> 16) & 0x8000u, a = x & 0x7fffffffu;
  if (a > 0x7f800000u) return 0x7fffu;                         /* NaN */
  if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);     /* >= 65520: infinity */
  if (a >= 0x38800000u)                                        /* >= 2^-14: normal; exponent rebiased */
    return (uint16_t)(sign | ptdp_half_round_shift(a - 0x38000000u, 13)); /* (127 -> 15); a carry is right */
  if (a < 0x33000000u) return (uint16_t)sign;                  /* < 2^-25: zero */
  /* [2^-25, 2^-14): a subnormal half, the float's significand in units of 2^-24 */
  const uint32_t e = a >> 23, m = (a & 0x7fffffu) | 0x800000u;
  return (uint16_t)(sign | ptdp_half_round_shift(m, 126u - e)); /* shift 14..24; 0x400 is 2^-14, right */
}

static inline float ptdp_bf16_to_float(uint16_t b) { return ptdp_half_float_of((uint32_t)b << 16); }

static inline float ptdp_f16_to_float(uint16_t h)
{
  const uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0x1fu) return ptdp_half_float_of(sign | 0x7f800000u | (m << 13)); /* inf, NaN (payload kept) */
  if (e) return ptdp_half_float_of(sign | ((e + 112u) << 23) | (m << 13));
  const float v = (float)m * 0x1p-24f; /* subnormal or zero: exact */
  return sign ? -v : v;
}

/* Element i of an array of type t, as a float (exact), and a float stored into one (rounded). */
float ptdp_half_load(const void *p, ptdp_dtype t, size_t i);
void ptdp_half_store(void *p, ptdp_dtype t, size_t i, float v);

#endif
