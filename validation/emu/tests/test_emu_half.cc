/* The emulation's bf16 and fp16 types (include/cuda_bf16.h, include/cuda_fp16.h) against an
 * independent computation of IEEE rounding.
 *   half -> float: all 65536 patterns against the value from the fields, (-1)^s m 2^(e-25) or
 *     (1 + m/1024) 2^(e-15) (ldexp, exact), NaN patterns to NaN;
 *   half -> float -> half: all 65536 patterns back to themselves (NaN to the canonical 0x7fff);
 *   float -> half: every float near a rounding boundary (the midpoints between consecutive halves
 *     and their float neighbours, for all 63488 finite halves), the named edge cases (signed
 *     zeros, 2^-25 and its neighbours, 65504, 65519.996, 65520, the largest float, infinities,
 *     NaNs), and every 4099th float pattern, against round-half-even done in double: q = the
 *     half quantum at that magnitude, nearbyint(x / q) q (exact in double), infinity at 65520;
 *   bf16 likewise (quantum 2^(e-7), every 65536 pattern round trip, midpoints, overflow to
 *     infinity at the midpoint above the largest finite value) and _rz (truncation);
 *   C++ operators: arithmetic, compound assignment, comparisons and the intrinsics, against
 *     the reference's one rounding of the exact (double) result: the headers compute in float
 *     and round to 16 bits, which is one correct rounding for + - * / because float has more
 *     than 2p + 2 bits for p = 11 (half) and 8 (bf16) (the classic double-rounding bound).
 * The reference shares no code with the headers: it rounds in double with nearbyint (the
 * default rounding mode is to nearest even).  A planted mistake proves the comparison: the
 * reference with ties rounded away from zero must disagree on the midpoints. */
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "../../tests/expect.h"

#include <cfenv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <algorithm>

static float bits_float(uint32_t x)
{
  float f;
  memcpy(&f, &x, 4);
  return f;
}
static uint32_t float_bits(float f)
{
  uint32_t x;
  memcpy(&x, &f, 4);
  return x;
}

/* Round x to a binary format with `mant` stored mantissa bits, smallest normal exponent emin
 * and largest finite value maxv, to nearest with ties to even (or away, for the planted
 * mistake); returns the rounded value as a double (+-inf on overflow). */
static double ref_round(double x, int mant, int emin, double maxv, bool ties_away = false)
{
  if (x == 0 || std::isnan(x) || std::isinf(x)) return x;
  int e;
  std::frexp(std::fabs(x), &e); /* |x| = f 2^e, f in [0.5, 1): exponent of the leading bit e - 1 */
  const int lead = std::max(e - 1, emin);
  const double q = std::ldexp(1.0, lead - mant), r = x / q; /* exact: q is a power of two */
  double n = std::nearbyint(r);
  if (ties_away && std::fabs(r - std::trunc(r)) == 0.5) n = std::trunc(r) + (r > 0 ? 1 : -1);
  const double v = n * q;
  const double max_plus_half = maxv + std::ldexp(1.0, (int)std::floor(std::log2(maxv)) - mant - 1);
  if (std::fabs(x) >= max_plus_half) return x > 0 ? INFINITY : -INFINITY; /* ties at the top go to "even" inf */
  return v;
}
static double ref_half(double x, bool away = false) { return ref_round(x, 10, -14, 65504.0, away); }
static double ref_bf16(double x, bool away = false)
{
  return ref_round(x, 7, -126, std::ldexp(255.0 / 128.0, 127), away);
}

/* The half's value from its fields. */
static double half_fields(unsigned h)
{
  const int s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
  double v = e == 0    ? std::ldexp((double)m, -24)
             : e == 31 ? (m ? NAN : INFINITY)
                       : std::ldexp(1.0 + m / 1024.0, e - 15);
  return s ? -v : v;
}

/* Same value, or both NaN; a zero's sign must agree too. */
static bool same(double a, double b)
{
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return a == b && std::signbit(a) == std::signbit(b);
}

static void test_half_exhaustive()
{
  int bad_value = 0, bad_trip = 0;
  for (unsigned h = 0; h < 65536; h++) {
    const float f = __half2float(__ushort_as_half((unsigned short)h));
    if (!same(f, half_fields(h)) && bad_value++ < 5)
      EXPECT(0, "half %#06x -> %a, fields give %a", h, f, half_fields(h));
    const unsigned back = __half_as_ushort(__float2half(f));
    const unsigned want = std::isnan(half_fields(h)) ? 0x7fffu : h;
    if (back != want && bad_trip++ < 5) EXPECT(0, "half %#06x -> float -> %#06x", h, back);
  }
  EXPECT(bad_value == 0, "%d halves convert to the wrong float", bad_value);
  EXPECT(bad_trip == 0, "%d halves do not survive the round trip", bad_trip);
}

static void test_bf16_exhaustive()
{
  int bad = 0;
  for (unsigned b = 0; b < 65536; b++) {
    const float f = __bfloat162float(__ushort_as_bfloat16((unsigned short)b));
    const float want = bits_float(b << 16);
    const unsigned back = __bfloat16_as_ushort(__float2bfloat16(f));
    const bool nan = std::isnan(want);
    if ((!same(f, want) || back != (nan ? 0x7fffu : b)) && bad++ < 5)
      EXPECT(0, "bf16 %#06x -> %a -> %#06x", b, f, back);
  }
  EXPECT(bad == 0, "%d bf16 patterns fail the round trip", bad);
}

/* float -> half (and bf16) of one float against the reference; counts mismatches. */
static int check_float(float x, int *bad)
{
  const double h = __half2float(__float2half_rn(x)), hr = ref_half(x);
  const double b = __bfloat162float(__float2bfloat16_rn(x)), br = ref_bf16(x);
  const double z = __bfloat162float(__float2bfloat16_rz(x)); /* truncation: the high 16 bits */
  const double zr = std::isnan(x) ? NAN : (double)bits_float(float_bits(x) & 0xffff0000u);
  if (!same(h, hr) && (*bad)++ < 8) EXPECT(0, "__float2half(%a) = %a, want %a", x, h, hr);
  if (!same(b, br) && (*bad)++ < 8) EXPECT(0, "__float2bfloat16(%a) = %a, want %a", x, b, br);
  if (!same(z, zr) && (*bad)++ < 8) EXPECT(0, "__float2bfloat16_rz(%a) = %a, want %a", x, z, zr);
  return 0;
}

/* Floats at every half's upper midpoint, one float ulp either side, and the half itself. */
static void test_boundaries()
{
  int bad = 0, n = 0;
  for (unsigned h = 0; h < 0x7c00; h++) {
    const double lo = half_fields(h), hi = half_fields(h + 1);   /* h + 1 = 0x7c00 is inf */
    const double mid = std::isinf(hi) ? 65520.0 : (lo + hi) / 2; /* exact in float */
    const float fm = (float)mid;
    for (float x : {fm, std::nextafter(fm, 0.0f), std::nextafter(fm, INFINITY), (float)lo})
      for (float s : {1.0f, -1.0f}) check_float(s * x, &bad), n++;
  }
  for (unsigned b = 0; b < 0x7f80; b += 1) { /* bf16 midpoints: bit 15 set, below and above */
    const uint32_t mid = (b << 16) | 0x8000u;
    for (uint32_t x : {mid, mid - 1, mid + 1})
      check_float(bits_float(x), &bad), check_float(-bits_float(x), &bad), n += 2;
  }
  EXPECT(bad == 0, "%d of %d boundary floats round wrongly", bad, n);
}

static void test_edges_and_sweep()
{
  int bad = 0;
  const float edges[] = {0.0f,
                         -0.0f,
                         0x1p-25f,
                         std::nextafter(0x1p-25f, 1.0f),
                         std::nextafter(0x1p-25f, 0.0f),
                         0x1p-24f,
                         0x1.8p-24f,
                         0x1.8p-25f,
                         0x1p-14f,
                         std::nextafter(0x1p-14f, 0.0f),
                         0x1.ff8p-15f,
                         65504.0f,
                         65519.996f,
                         65520.0f,
                         std::nextafter(65520.0f, 0.0f),
                         3.4028235e38f,
                         0x1.fffffep127f,
                         INFINITY,
                         -INFINITY,
                         NAN,
                         bits_float(0x7f800001u),
                         bits_float(0xffc00000u),
                         1e-45f,
                         1.17549435e-38f,
                         0x1.fep127f,
                         0x1.ff0000p127f,
                         0x1.ff8000p127f,
                         0x1.ff7ffep127f};
  for (float x : edges) check_float(x, &bad), check_float(-x, &bad);
  for (uint64_t u = 0; u < (1ull << 32); u += 4099) check_float(bits_float((uint32_t)u), &bad);
  EXPECT(bad == 0, "%d edge or sweep floats round wrongly", bad);
  /* named values, spelled out */
  EXPECT(__half_as_ushort(__float2half(65520.0f)) == 0x7c00u, "65520 must round to inf");
  EXPECT(__half_as_ushort(__float2half(65519.0f)) == 0x7bffu, "65519 must round to 65504");
  EXPECT(__half_as_ushort(__float2half(0x1p-25f)) == 0x0000u, "2^-25 ties to even zero");
  EXPECT(__half_as_ushort(__float2half(0x1.8p-24f)) == 0x0002u, "1.5 2^-24 ties to even 2 2^-24");
  EXPECT(__half_as_ushort(__float2half(-NAN)) == 0x7fffu, "NaN is the canonical 0x7fff");
  EXPECT(__bfloat16_as_ushort(__float2bfloat16(3.4028235e38f)) == 0x7f80u, "FLT_MAX rounds to bf16 inf");
  EXPECT(__bfloat16_as_ushort(__float2bfloat16(bits_float(0x7f800001u))) == 0x7fffu, "a low-payload NaN stays NaN");
  EXPECT(__bfloat16_as_ushort(__float2bfloat16_rz(bits_float(0x7f800001u))) == 0x7fffu, "rz keeps NaN too");
}

/* The reference must be able to fail: ties away from zero disagree with the conversion on
 * the midpoints (1 + 2^-11 is the midpoint between 1 and the next half). */
static void test_planted()
{
  const float mid = 1.0f + 0x1p-11f;
  EXPECT(ref_half(mid, true) != __half2float(__float2half(mid)), "ties-away reference agrees: the check is blind");
  EXPECT(ref_half(mid) == __half2float(__float2half(mid)), "ties-even reference disagrees on 1 + 2^-11");
  const float bmid = 1.0f + 0x1p-8f;
  EXPECT(ref_bf16(bmid, true) != __bfloat162float(__float2bfloat16(bmid)), "bf16 ties-away reference agrees");
}

/* C++ operators and intrinsics: computed in float, rounded once (the reference's rounding). */
template <class T> static void test_ops(const char *name, double (*round)(double, bool))
{
  const float xs[] = {1.5f, -2.25f, 0.1f, 3.0f, 1000.5f, -0.007f};
  int bad = 0;
  for (float xa : xs)
    for (float xb : xs) {
      const T a = xa, b = xb; /* implicit construction: rounded */
      const float fa = (float)a, fb = (float)b;
      const double da = fa, db = fb; /* exact sums and products of two 16-bit values; the quotient rounded */
      const double want[4] = {round(da + db, false), round(da - db, false), round(da * db, false),
                              round(da / db, false)};
      const T got[4] = {a + b, a - b, a * b, a / b};
      for (int i = 0; i < 4; i++)
        if (!same((float)got[i], want[i]) && bad++ < 4)
          EXPECT(0, "%s op %d on %g, %g: %g, want %g", name, i, fa, fb, (float)got[i], want[i]);
      T c = a;
      c += b;
      c *= b;
      c -= a;
      c /= b;
      double w = round(da + db, false);
      w = round(w * db, false), w = round(w - da, false), w = round(w / db, false);
      if (!same((float)c, w) && bad++ < 4)
        EXPECT(0, "%s compound assignments on %g, %g: %g, want %g", name, fa, fb, (float)c, w);
      const bool cmp_ok = (a < b) == (fa < fb) && (a <= b) == (fa <= fb) && (a > b) == (fa > fb) &&
                          (a >= b) == (fa >= fb) && (a == b) == (fa == fb) && (a != b) == (fa != fb);
      if (!cmp_ok && bad++ < 4) EXPECT(0, "%s comparisons of %g and %g", name, fa, fb);
      if (!same((float)__hfma(a, b, a), round((double)fa * fb + fa, false)) && bad++ < 4)
        EXPECT(0, "%s __hfma(%g, %g, %g)", name, fa, fb, fa);
      if (!same((float)(-a), -fa) || !same((float)__habs(a), std::fabs(fa))) bad++;
    }
  EXPECT(bad == 0, "%s: %d operator results wrong", name, bad);
}

int main()
{
  if (std::fegetround() != FE_TONEAREST) std::fesetround(FE_TONEAREST); /* the reference's nearbyint */
  test_half_exhaustive();
  test_bf16_exhaustive();
  test_boundaries();
  test_edges_and_sweep();
  test_planted();
  test_ops<__half>("__half", ref_half);
  test_ops<__nv_bfloat16>("__nv_bfloat16", ref_bf16);
  EXPECT(__hisnan(CUDART_NAN_FP16) && __hisinf(CUDART_INF_FP16) && __hisnan(CUDART_NAN_BF16) &&
             __hisinf(CUDART_INF_BF16),
         "NaN and inf constants");
  EXPECT(sizeof(__half) == 2 && sizeof(__nv_bfloat16) == 2 && sizeof(__half2) == 4 && sizeof(__nv_bfloat162) == 4,
         "storage sizes");
  printf("test_emu_half: %d passed, %d failed\n", n_pass, n_fail);
  return n_fail ? 1 : 0;
}
