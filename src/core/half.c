/* fp32 <-> bf16 / fp16 on the host, by bit manipulation: see include/ptdp/half.h for the rules.
 * Used by mixed precision (issue 20 section 3), not yet by the model. */
#include "ptdp/half.h"

#include <string.h>

size_t ptdp_dtype_size(ptdp_dtype t)
{
  switch (t) {
  case PTDP_F32: return 4;
  case PTDP_BF16:
  case PTDP_F16: return 2;
  }
  return 0;
}

const char *ptdp_dtype_name(ptdp_dtype t)
{
  switch (t) {
  case PTDP_F32: return "fp32";
  case PTDP_BF16: return "bf16";
  case PTDP_F16: return "fp16";
  }
  return "(unknown type)";
}

static uint32_t bits_of(float f)
{
  uint32_t x;
  memcpy(&x, &f, sizeof x);
  return x;
}

static float float_of(uint32_t x)
{
  float f;
  memcpy(&f, &x, sizeof f);
  return f;
}

/* Keep the top 16 bits, rounded: adding 0x7fff plus the kept part's last bit carries into bit 16
 * exactly when the dropped 16 bits are past the half-way point, or at it with an odd kept part. */
uint16_t ptdp_float_to_bf16(float f)
{
  const uint32_t x = bits_of(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return 0x7fffu; /* NaN */
  return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

/* Drop the low `shift` bits of m (1..31), rounding to nearest even. */
static uint32_t round_shift(uint32_t m, uint32_t shift)
{
  const uint32_t kept = m >> shift, rem = m & ((1u << shift) - 1u), half = 1u << (shift - 1u);
  return kept + (rem > half || (rem == half && (kept & 1u)));
}

uint16_t ptdp_float_to_f16(float f)
{
  const uint32_t x = bits_of(f), sign = (x >> 16) & 0x8000u, a = x & 0x7fffffffu;
  if (a > 0x7f800000u) return 0x7fffu;                         /* NaN */
  if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);     /* >= 65520: infinity */
  if (a >= 0x38800000u)                                        /* >= 2^-14: normal; exponent rebiased */
    return (uint16_t)(sign | round_shift(a - 0x38000000u, 13)); /* (127 -> 15); a carry is right */
  if (a < 0x33000000u) return (uint16_t)sign;                  /* < 2^-25: zero */
  /* [2^-25, 2^-14): a subnormal half, the float's significand in units of 2^-24 */
  const uint32_t e = a >> 23, m = (a & 0x7fffffu) | 0x800000u;
  return (uint16_t)(sign | round_shift(m, 126u - e)); /* shift 14..24; 0x400 is 2^-14, right */
}

float ptdp_bf16_to_float(uint16_t b) { return float_of((uint32_t)b << 16); }

float ptdp_f16_to_float(uint16_t h)
{
  const uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0x1fu) return float_of(sign | 0x7f800000u | (m << 13)); /* inf, NaN (payload kept) */
  if (e) return float_of(sign | ((e + 112u) << 23) | (m << 13));
  const float v = (float)m * 0x1p-24f; /* subnormal or zero: exact */
  return sign ? -v : v;
}

float ptdp_half_load(const void *p, ptdp_dtype t, size_t i)
{
  switch (t) {
  case PTDP_BF16: return ptdp_bf16_to_float(((const uint16_t *)p)[i]);
  case PTDP_F16: return ptdp_f16_to_float(((const uint16_t *)p)[i]);
  default: return ((const float *)p)[i];
  }
}

void ptdp_half_store(void *p, ptdp_dtype t, size_t i, float v)
{
  switch (t) {
  case PTDP_BF16: ((uint16_t *)p)[i] = ptdp_float_to_bf16(v); break;
  case PTDP_F16: ((uint16_t *)p)[i] = ptdp_float_to_f16(v); break;
  default: ((float *)p)[i] = v; break;
  }
}
