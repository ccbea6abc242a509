/* Unit test of the fp32 <-> bf16 / fp16 conversions (ptdp/half.h), against a reference of its
 * own: a 16-bit pattern's value from its fields by ldexp in double, and float -> 16 bits as
 * the nearest such value (ties to the even pattern) found by bisection over the patterns.
 *   every one of the 65536 patterns of each type: its float is the reference value (a NaN:
 *     sign and payload kept), and the float converts back to the same pattern (a NaN: 0x7fff);
 *   every rounding midpoint between consecutive patterns (both signs, subnormals, 0 and the
 *     smallest subnormal, and the largest finite value and the next power of two, where the
 *     rounding goes to infinity: 65520 for fp16) rounds to the even one, and the floats next to
 *     it on either side to the nearer one;
 *   2^20 random float bit patterns (every exponent: subnormal floats, overflow, inf, NaN) give
 *     the reference's pattern;
 *   the array helpers (ptdp_half_load / ptdp_half_store) and ptdp_dtype_size for each type. */
#include "ptdp/backend.h" /* ptdp_dtype_size */
#include "ptdp/half.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../expect.h"

/* A 16-bit format: exponent bits, mantissa bits, bias, and its conversions under test. */
typedef struct {
  const char *name;
  int ebits, mbits, bias;
  uint16_t (*narrow)(float);
  float (*widen)(uint16_t);
} format;

static const format formats[] = {
    {"bf16", 8, 7, 127, ptdp_float_to_bf16, ptdp_bf16_to_float},
    {"fp16", 5, 10, 15, ptdp_float_to_f16, ptdp_f16_to_float},
};

static uint32_t bits_of(float f)
{
  uint32_t x;
  memcpy(&x, &f, sizeof x);
  return x;
}

static unsigned emax(const format *f) { return (1u << f->ebits) - 1u; }
static uint16_t inf_pattern(const format *f) { return (uint16_t)(emax(f) << f->mbits); }
static int is_nan_pattern(const format *f, unsigned u) { return (u & 0x7fffu) > inf_pattern(f); }

/* The value of non-negative pattern u (its sign bit ignored); the infinity pattern stands for
 * the power of two past the largest finite value (where rounding to infinity starts). */
static double magnitude(const format *f, unsigned u)
{
  const unsigned e = (u & 0x7fffu) >> f->mbits, m = u & ((1u << f->mbits) - 1u);
  if (e == 0) return ldexp((double)m, 1 - f->bias - f->mbits);
  return ldexp(1.0 + ldexp((double)m, -f->mbits), (int)e - f->bias);
}

/* The reference rounding of a float: the nearest pattern, ties to the even one. */
static uint16_t ref_narrow(const format *f, float x)
{
  if (isnan(x)) return 0x7fffu;
  const uint16_t sign = signbit(x) ? 0x8000u : 0;
  const double a = fabs((double)x);
  const unsigned top = inf_pattern(f); /* patterns [0, top] increase with their magnitude */
  if (a >= magnitude(f, top)) return sign | top;
  unsigned lo = 0, hi = top; /* magnitude(lo) <= a < magnitude(hi) */
  while (hi - lo > 1) {
    const unsigned mid = (lo + hi) / 2;
    if (magnitude(f, mid) <= a) lo = mid;
    else hi = mid;
  }
  const double dlo = a - magnitude(f, lo), dhi = magnitude(f, hi) - a;
  const unsigned u = dlo < dhi ? lo : dhi < dlo ? hi : (lo & 1u) ? hi : lo;
  return (uint16_t)(sign | u);
}

static void check_patterns(const format *f)
{
  int bad = 0;
  for (unsigned u = 0; u < 65536u; u++) {
    const float x = f->widen((uint16_t)u);
    const uint32_t sign = (uint32_t)(u & 0x8000u) << 16;
    int ok;
    if (is_nan_pattern(f, u)) {
      const uint32_t payload = (uint32_t)(u & ((1u << f->mbits) - 1u)) << (23 - f->mbits);
      ok = isnan(x) && bits_of(x) == (sign | 0x7f800000u | payload) && f->narrow(x) == 0x7fffu;
    } else {
      const double v = (u & 0x7fffu) == inf_pattern(f) ? INFINITY : magnitude(f, u);
      ok = (double)fabsf(x) == v && !!signbit(x) == !!sign && f->narrow(x) == u;
    }
    if (!ok) bad++;
    EXPECT(ok, "%s pattern 0x%04x: float %a (bits 0x%08x), back 0x%04x", f->name, u, (double)x, bits_of(x),
           f->narrow(x));
  }
  printf("%s: 65536 patterns to float and back, %d wrong\n", f->name, bad);
}

static void check_midpoints(const format *f)
{
  int bad = 0, n = 0;
  for (unsigned u = 0; u < inf_pattern(f); u++) {
    const double mid = (magnitude(f, u) + magnitude(f, u + 1)) / 2;
    const float m = (float)mid; /* exact: one bit more than the format's mantissa */
    EXPECT((double)m == mid, "%s midpoint above 0x%04x not a float", f->name, u);
    const float below = nextafterf(m, 0), above = nextafterf(m, INFINITY);
    const unsigned even = (u & 1u) ? u + 1 : u;
    for (unsigned s = 0; s <= 0x8000u; s += 0x8000u) {
      const float sg = s ? -1.0f : 1.0f;
      const uint16_t got[3] = {f->narrow(sg * below), f->narrow(sg * m), f->narrow(sg * above)};
      const int ok = got[0] == (s | u) && got[1] == (s | even) && got[2] == (s | (u + 1));
      bad += !ok;
      n++;
      EXPECT(ok, "%s midpoint %a (sign %u): below 0x%04x, at 0x%04x, above 0x%04x; want 0x%04x 0x%04x 0x%04x",
             f->name, mid, s, got[0], got[1], got[2], s | u, s | even, s | (u + 1));
    }
  }
  printf("%s: %d midpoints and their neighbours, %d wrong\n", f->name, n, bad);
}

static void check_random(const format *f)
{
  uint64_t z = 0x9e3779b97f4a7c15u;
  int bad = 0;
  for (int i = 0; i < 1 << 20; i++) {
    z = z * 6364136223846793005u + 1442695040888963407u; /* Knuth's LCG: the top 32 bits */
    const uint32_t b = (uint32_t)(z >> 32);
    float x;
    memcpy(&x, &b, sizeof x);
    const uint16_t got = f->narrow(x), want = ref_narrow(f, x);
    bad += got != want;
    EXPECT(got == want, "%s of float %a (bits 0x%08x): 0x%04x, reference 0x%04x", f->name, (double)x, b, got, want);
  }
  const float edge[] = {65504.0f, 65519.996f, 65520.0f, 65536.0f, 3.4028235e38f, INFINITY, -INFINITY, 0x1p-149f,
                        0x1p-25f, 0x1.000002p-25f, 0x1p-24f, 0x1.ffcp-15f, 0x1.ffep-15f, -0.0f, 0x1.fep127f};
  for (size_t i = 0; i < sizeof edge / sizeof edge[0]; i++) {
    const uint16_t got = f->narrow(edge[i]), want = ref_narrow(f, edge[i]);
    bad += got != want;
    EXPECT(got == want, "%s of float %a: 0x%04x, reference 0x%04x", f->name, (double)edge[i], got, want);
  }
  printf("%s: 2^20 random floats and %zu edge values, %d wrong\n", f->name, sizeof edge / sizeof edge[0], bad);
}

/* The array helpers dispatch on the type: each element as the scalar functions give it. */
static void check_arrays(void)
{
  const float v[4] = {1.0f / 3, -65519.0f, 0x1.8p-20f, NAN};
  float f32[4];
  uint16_t h[4];
  for (int i = 0; i < 4; i++) {
    ptdp_half_store(f32, PTDP_F32, (size_t)i, v[i]);
    EXPECT(bits_of(ptdp_half_load(f32, PTDP_F32, (size_t)i)) == bits_of(v[i]), "f32 element %d", i);
    ptdp_half_store(h, PTDP_BF16, (size_t)i, v[i]);
    EXPECT(h[i] == ptdp_float_to_bf16(v[i]) &&
               bits_of(ptdp_half_load(h, PTDP_BF16, (size_t)i)) == bits_of(ptdp_bf16_to_float(h[i])),
           "bf16 element %d", i);
    ptdp_half_store(h, PTDP_F16, (size_t)i, v[i]);
    EXPECT(h[i] == ptdp_float_to_f16(v[i]) &&
               bits_of(ptdp_half_load(h, PTDP_F16, (size_t)i)) == bits_of(ptdp_f16_to_float(h[i])),
           "fp16 element %d", i);
  }
  EXPECT(ptdp_dtype_size(PTDP_F32) == 4 && ptdp_dtype_size(PTDP_BF16) == 2 && ptdp_dtype_size(PTDP_F16) == 2,
         "ptdp_dtype_size: 4, 2, 2");
}

int main(void)
{
  for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++) {
    check_patterns(&formats[i]);
    check_midpoints(&formats[i]);
    check_random(&formats[i]);
  }
  check_arrays();
  return expect_summary("test_half");
}
