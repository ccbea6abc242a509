/* The race detector against a planted mutation of the backend's own kernels: the leading
 * __syncthreads() of block_sum (src/backend/cuda_device.h) removed in a copy made at build time
 * (local.mk, EMU_MUTATION) and compiled into the LayerNorm kernels (cuda_layernorm.cu).  Without
 * that barrier, lane 0 of each warp writes part[warp] for the second sum of a row while other
 * warps may still read part[] for the first: a write-after-read hazard that fiber scheduling
 * alone never shows as a wrong number.
 *   test_emu_racecheck          the real kernels: LayerNorm forward agrees with a double
 *                               reference and no hazard is reported;
 *   test_emu_racecheck_mutant   the mutated copy: the run must fail with a write-after-read
 *                               report that names cuda_device.h. */
#include <cuda_runtime.h>

#include "../../tests/expect.h"
#include "emu_test.h"
#include "cuda_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

unsigned long ptdp_emu_hook_calls(void);

int main(void)
{
  /* rows wider than ROW_WARP_H (4096) take a block each, 512 threads (row_threads): 16 warps share
   * part[]; narrower rows take a warp each and no block_sum */
  enum { ROWS = 6, H = 4160 };
  static float x[ROWS * H], w[H], b[H], y[ROWS * H], mean[ROWS], rstd[ROWS];
  srand(7);
  for (int i = 0; i < ROWS * H; i++) x[i] = (float)rand() / RAND_MAX * 4.0f - 2.0f;
  for (int i = 0; i < H; i++) w[i] = 0.5f + (float)rand() / RAND_MAX, b[i] = (float)rand() / RAND_MAX - 0.5f;
  float *dx, *dw, *db, *dy, *dm, *dr;
  CK(cudaMalloc((void **)&dx, sizeof x));
  CK(cudaMalloc((void **)&dw, sizeof w));
  CK(cudaMalloc((void **)&db, sizeof b));
  CK(cudaMalloc((void **)&dy, sizeof y));
  CK(cudaMalloc((void **)&dm, sizeof mean));
  CK(cudaMalloc((void **)&dr, sizeof rstd));
  CK(cudaMemcpy(dx, x, sizeof x, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dw, w, sizeof w, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(db, b, sizeof b, cudaMemcpyHostToDevice));
  /* the NULL stream runs at once in the emulation: a fault may come back from the launch */
  cudaError_t e = ptdp_cuk_layernorm_forward(0, PTDP_F32, dx, dw, db, dy, dm, dr, ROWS, H, 1e-5f);
  if (e == cudaSuccess) e = cudaMemcpy(y, dy, sizeof y, cudaMemcpyDeviceToHost);
#if defined(__SANITIZE_ADDRESS__)
  printf("SKIP: the kernels run without the access hooks (a --enable-sanitizers build): no race detector\n");
  return 77;
#endif
  EXPECT(ptdp_emu_hook_calls() > 0, "the kernels ran without the access hooks: no race detector");
#ifdef EMU_MUTANT
  EXPECT(e == cudaErrorLaunchFailure, "the mutated block_sum ran without a race report (%s)", cudaGetErrorName(e));
  printf("test_emu_racecheck_mutant: the detector %s the planted race\n", e == cudaErrorLaunchFailure ? "caught" : "MISSED");
#else
  EXPECT(e == cudaSuccess, "LayerNorm forward failed: %s", cudaGetErrorName(e));
  double worst = 0;
  for (int r = 0; r < ROWS; r++) {
    double m = 0, v = 0;
    for (int i = 0; i < H; i++) m += x[r * H + i];
    m /= H;
    for (int i = 0; i < H; i++) v += (x[r * H + i] - m) * (x[r * H + i] - m);
    double rs = 1.0 / sqrt(v / H + 1e-5);
    for (int i = 0; i < H; i++) {
      double ref = (x[r * H + i] - m) * rs * w[i] + b[i];
      worst = fmax(worst, fabs(y[r * H + i] - ref));
    }
  }
  /* fp32 output of O(1) values from double statistics: a few ulps */
  EXPECT(worst < 1e-5, "LayerNorm forward differs from the double reference by %g", worst);
  printf("test_emu_racecheck: LayerNorm forward, worst difference %.2e, no hazard reported\n", worst);
#endif
  printf("%d passed, %d failed\n", n_pass, n_fail);
  return n_fail ? 1 : 0;
}
