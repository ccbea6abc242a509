/* The fused attention's two sets of kernels (src/backend/cuda_flash.cu: wmma and mma, chosen by
 * ptdp_cuk_flash_set_kernel) timed on GPU 0, for bench_flash_gpu.sh.
 *
 *   flash_gpu_bench B H S HD [REPS]      (bf16, causal, no dropout; REPS timed runs, default 20)
 *
 * Random inputs (qkv [N, 3 H HD] and dctx [N, H HD], N = S B, uniform in [-1, 1) as bf16), the
 * same for both sets.  Per set: 3 warm-up calls, then REPS forward calls and REPS backward calls
 * (each from the set's own ctx and lse), each between two CUDA events on the default stream; the
 * median.  TFLOP/s from the causal FLOPs: forward 4 B H S^2 HD / 2 (S = Q K^T and O = P V over
 * the lower triangle), backward 2.5 times that (five products, two recomputed).  Then the
 * difference between the sets' outputs (ctx, lse, dqkv): max |a - b| / max |a| over each tensor
 * (a: wmma's), as a check that both compute the same function on the GPU.  One line per set:
 *   set B H S HD fwd_ms bwd_ms fwd_tflops bwd_tflops
 * and one for the comparison:
 *   diff B H S HD ctx_rel lse_abs dqkv_rel
 * Exit 0; 77 no usable GPU; 1 a failed call or a non-finite output. */
#include "cuda_flash.h"
#include "cuda_internal.h"

#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CK(x)                                                                                     \
  do {                                                                                            \
    cudaError_t e_ = (x);                                                                         \
    if (e_ != cudaSuccess) {                                                                      \
      fprintf(stderr, "flash_gpu_bench: %s: %s\n", #x, cudaGetErrorString(e_));                   \
      exit(1);                                                                                    \
    }                                                                                             \
  } while (0)

static uint16_t bf16_of(float f)
{
  uint32_t u;
  memcpy(&u, &f, 4);
  return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16); /* round to nearest even (finite f) */
}
static float float_of(uint16_t h)
{
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

static void *random_bf16(size_t n, uint32_t seed)
{
  uint16_t *h = malloc(n * 2);
  uint32_t x = seed;
  for (size_t i = 0; i < n; i++) {
    x = x * 1664525u + 1013904223u;
    h[i] = bf16_of((float)(x >> 8) / 8388608.0f - 1.0f);
  }
  void *d;
  CK(cudaMalloc(&d, n * 2));
  CK(cudaMemcpy(d, h, n * 2, cudaMemcpyHostToDevice));
  free(h);
  return d;
}

static int cmp_float(const void *a, const void *b)
{
  const float x = *(const float *)a, y = *(const float *)b;
  return (x > y) - (x < y);
}

/* One set's outputs, on the host (as floats). */
typedef struct {
  float *ctx, *lse, *dqkv;
} outputs;

static float *host_bf16(const void *d, size_t n)
{
  uint16_t *h = malloc(n * 2);
  float *f = malloc(n * sizeof *f);
  CK(cudaMemcpy(h, d, n * 2, cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < n; i++) f[i] = float_of(h[i]);
  free(h);
  return f;
}

/* max |a - b| / max |a| (b NaN or inf: inf) */
static double rel_diff(const float *a, const float *b, size_t n)
{
  double dmax = 0, amax = 0;
  for (size_t i = 0; i < n; i++) {
    const double d = fabs((double)a[i] - b[i]);
    dmax = d <= 1e300 ? fmax(dmax, d) : INFINITY;
    amax = fmax(amax, fabs((double)a[i]));
  }
  return amax > 0 ? dmax / amax : dmax;
}
static int all_finite(const float *x, size_t n)
{
  for (size_t i = 0; i < n; i++)
    if (!isfinite(x[i])) return 0;
  return 1;
}

int main(int argc, char **argv)
{
  if (argc < 5) {
    fprintf(stderr, "usage: flash_gpu_bench B H S HD [REPS]\n");
    return 2;
  }
  const int b = atoi(argv[1]), h = atoi(argv[2]), s = atoi(argv[3]), hd = atoi(argv[4]);
  const int reps = argc > 5 ? atoi(argv[5]) : 20;
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev < 1) {
    fprintf(stderr, "flash_gpu_bench: no usable GPU\n");
    return 77;
  }
  if (b < 1 || h < 1 || s < 1 || reps < 1 || reps > 1000) {
    fprintf(stderr, "flash_gpu_bench: bad shape or REPS (1..1000)\n");
    return 2;
  }
  ptdp_attn_desc d;
  memset(&d, 0, sizeof d);
  d.b = b, d.s = s, d.al = h, d.hd = hd;
  if (!ptdp_cuk_flash_supported(&d)) {
    fprintf(stderr, "flash_gpu_bench: hd %d not supported by the fused attention\n", hd);
    return 2;
  }
  const size_t N = (size_t)b * s, w = (size_t)h * hd, nqkv = N * 3 * w, nctx = N * w, nl = (size_t)b * h * s;
  void *qkv = random_bf16(nqkv, 12345u), *dctx = random_bf16(nctx, 777u), *ctx, *dqkv;
  float *lse, *drow;
  CK(cudaMalloc(&ctx, nctx * 2));
  CK(cudaMalloc(&dqkv, nqkv * 2));
  CK(cudaMalloc((void **)&lse, nl * 4));
  CK(cudaMalloc((void **)&drow, nl * 4));
  cudaEvent_t t0, t1;
  CK(cudaEventCreate(&t0));
  CK(cudaEventCreate(&t1));
  const double F = 4.0 * b * h * (double)s * s * hd / 2;
  static const ptdp_flash_kernel sets[2] = {PTDP_FLASH_KERNEL_WMMA, PTDP_FLASH_KERNEL_MMA};
  static const char *const names[2] = {"wmma", "mma"};
  outputs out[2];
  float *tf = malloc(reps * sizeof *tf), *tb = malloc(reps * sizeof *tb);
  for (int v = 0; v < 2; v++) {
    ptdp_cuk_flash_set_kernel(sets[v]);
    for (int i = 0; i < 3; i++) {
      CK(ptdp_cuk_flash_forward(0, PTDP_BF16, &d, qkv, ctx, lse));
      CK(ptdp_cuk_flash_backward(0, PTDP_BF16, &d, qkv, ctx, lse, dctx, dqkv, drow));
    }
    CK(cudaDeviceSynchronize());
    for (int r = 0; r < reps; r++) {
      CK(cudaEventRecord(t0, 0));
      CK(ptdp_cuk_flash_forward(0, PTDP_BF16, &d, qkv, ctx, lse));
      CK(cudaEventRecord(t1, 0));
      CK(cudaEventSynchronize(t1));
      CK(cudaEventElapsedTime(&tf[r], t0, t1));
    }
    for (int r = 0; r < reps; r++) {
      CK(cudaEventRecord(t0, 0));
      CK(ptdp_cuk_flash_backward(0, PTDP_BF16, &d, qkv, ctx, lse, dctx, dqkv, drow));
      CK(cudaEventRecord(t1, 0));
      CK(cudaEventSynchronize(t1));
      CK(cudaEventElapsedTime(&tb[r], t0, t1));
    }
    CK(cudaDeviceSynchronize());
    qsort(tf, reps, sizeof *tf, cmp_float);
    qsort(tb, reps, sizeof *tb, cmp_float);
    const double mf = tf[reps / 2], mb = tb[reps / 2];
    printf("%s %d %d %d %d %.4f %.4f %.1f %.1f\n", names[v], b, h, s, hd, mf, mb, F / (mf * 1e-3) / 1e12,
           2.5 * F / (mb * 1e-3) / 1e12);
    out[v].ctx = host_bf16(ctx, nctx), out[v].dqkv = host_bf16(dqkv, nqkv);
    out[v].lse = malloc(nl * 4);
    CK(cudaMemcpy(out[v].lse, lse, nl * 4, cudaMemcpyDeviceToHost));
    if (!all_finite(out[v].ctx, nctx) || !all_finite(out[v].lse, nl) || !all_finite(out[v].dqkv, nqkv)) {
      fprintf(stderr, "flash_gpu_bench: %s: a non-finite output\n", names[v]);
      return 1;
    }
  }
  double lse_abs = 0;
  for (size_t i = 0; i < nl; i++) lse_abs = fmax(lse_abs, fabs((double)out[0].lse[i] - out[1].lse[i]));
  printf("diff %d %d %d %d %.3e %.3e %.3e\n", b, h, s, hd, rel_diff(out[0].ctx, out[1].ctx, nctx), lse_abs,
         rel_diff(out[0].dqkv, out[1].dqkv, nqkv));
  ptdp_cuk_flash_set_kernel(PTDP_FLASH_KERNEL_ENV);
  return 0;
}
