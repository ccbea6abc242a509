/* Vectorisable exponential for the CPU backend's hot loops (softmax, cross entropy, GELU).
 *
 * glibc's expf is a scalar call unless the build uses -ffast-math, so `omp simd` loops over it
 * run one element at a time.  This one is inlined and free of float branches, so GCC vectorises
 * it: exp(x) = 2^n exp(r), n = rint(x / ln 2), r = x - n ln 2 in [-ln2/2, ln2/2] (ln 2 split in
 * two parts so n ln 2 is exact), exp(r) by the Cephes degree-6 polynomial.  Relative error below
 * 1e-7 (about 1 ulp) on [-87, 88].  Outside, 2^n is clamped to [2^-126, 2^127]: exp of x < -87.3
 * is about 1e-38 instead of 0 (no subnormals, harmless in a sum of exponentials), and there is
 * no overflow to inf.  Valid for finite |x| < 2^22. */
#ifndef PTDP_CPU_MATH_H
#define PTDP_CPU_MATH_H

#include <stdint.h>

static inline float ptdp_cpu_expf(float x)
{
  /* round to nearest by adding and removing 1.5 2^23 */
  float n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  float r = x - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  /* integer clamps vectorise; float ones (fminf, ?:) do not without -ffast-math */
  int32_t ni = (int32_t)n;
  ni = ni < -126 ? -126 : ni;
  ni = ni > 127 ? 127 : ni;
  union {
    int32_t i;
    float f;
  } two_n = {.i = (ni + 127) << 23};
  return p * two_n.f;
}

#endif
