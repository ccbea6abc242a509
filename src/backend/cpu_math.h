/* Vectorisable exponential for the CPU backend's hot loops (softmax, cross entropy, GELU).
 *
 * glibc's expf is a scalar call unless built with -ffast-math, so `omp simd` loops over it run
 * one element at a time.  This one is branch-free and inlined, so GCC vectorises it:
 * exp(x) = 2^n exp(r), n = round(x / ln 2), r = x - n ln 2 in [-ln2/2, ln2/2] (ln 2 split in two
 * for exactness), exp(r) by its degree-6 Taylor/Cephes polynomial; relative error below 2e-7
 * (2 ulp) on [-87, 88], 0 below -87.3 (where expf is subnormal), inputs clamped above at 88.3. */
#ifndef PTDP_CPU_MATH_H
#define PTDP_CPU_MATH_H

#include <stdint.h>
#include <string.h>


static inline float ptdp_cpu_expf(float x)
{
  const float lo = -87.3f, hi = 88.3f;
  float xc = x > hi ? hi : x;
  xc = xc < lo ? lo : xc;
  /* round to nearest by adding and removing 1.5 2^23 (|x / ln 2| < 2^22) */
  float n = (xc * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  float r = xc - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  int32_t e = ((int32_t)n + 127) << 23;
  float scale;
  memcpy(&scale, &e, sizeof scale);
  return x < lo ? 0.0f : p * scale;
}

#endif
