/* The practical GEMM ceiling of a GPU: C = A B through cuBLASLt, n x n x n, column-major, no
 * transposes, in bf16 (fp32 accumulation: what a bf16 model's GEMMs can reach) and in fp32
 * (CUBLAS_COMPUTE_32F, no TF32: what the fp32 backend's can).
 *   gemm_gpu_bench [n=8192] [reps=20]
 * prints one line per type,
 *   gemm bf16 n=8192 reps=20 median_ms=... TFLOP/s=... max_err=... tol=...
 * Built and run by bench_gpu.sh, which reads TFLOP/s as the ceiling of its runs.
 *
 * Inputs are random, uniform in [-1, 1): constant or zero inputs overstate the ceiling (the
 * tensor cores draw less power on them and hold higher clocks; a bf16 product ran 13% faster on
 * zeros than on random data on an H200 of ours).  Each call is timed with its own pair of CUDA
 * events, after a warm-up; the figure is the median.  8192^2 operands (128 MiB in bf16) are
 * larger than any L2, so repeating the call on one input set measures memory and not the cache.
 *
 * The result is checked, so a ceiling is never a figure of a product that computed nothing: C is
 * poisoned with NaN before the first call, and SAMPLES entries are compared with a double
 * precision dot product of the same (rounded) inputs.  Bound, relative to sum_k |a_ik b_kj|:
 * n u_acc (the worst case of n fp32 additions, u_acc = 2^-24) + u_out (the output's rounding:
 * 2^-9 for bf16, 2^-24 for fp32).  A wrong layout or an unwritten entry misses it by an order
 * of magnitude: a random entry of C has size sqrt(n)/3 against sum |a b| ~ n/4.
 *
 * Exit status: 0 measured and checked; 1 a CUDA or cuBLAS error; 2 a result outside the bound;
 * 77 no usable GPU (bench_gpu.sh reports a SKIP with the runtime's reason). */
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SAMPLES 16

#define CUDA_CK(x)                                                                                  \
  do {                                                                                              \
    cudaError_t e_ = (x);                                                                           \
    if (e_ != cudaSuccess) {                                                                        \
      fprintf(stderr, "gemm_gpu_bench: %s: %s (line %d)\n", #x, cudaGetErrorString(e_), __LINE__); \
      exit(1);                                                                                      \
    }                                                                                               \
  } while (0)

#define LT_CK(x)                                                                                        \
  do {                                                                                                  \
    cublasStatus_t s_ = (x);                                                                            \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                                                  \
      fprintf(stderr, "gemm_gpu_bench: %s: %s (line %d)\n", #x, cublasLtGetStatusString(s_), __LINE__); \
      exit(1);                                                                                          \
    }                                                                                                   \
  } while (0)

static void *xmalloc(size_t bytes)
{
  void *p = malloc(bytes);
  if (!p) {
    fprintf(stderr, "gemm_gpu_bench: out of host memory (%zu bytes)\n", bytes);
    exit(1);
  }
  return p;
}

/* splitmix64: a fixed seed, so every run multiplies the same matrices */
static uint64_t mix(uint64_t *s)
{
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static void fill_uniform(float *x, size_t count, uint64_t seed)
{
  for (size_t i = 0; i < count; i++) x[i] = (float)((double)(mix(&seed) >> 11) * 0x1p-52 - 1.0);
}

/* float -> bf16 bits, round to nearest even (inputs are finite) */
static uint16_t to_bf16(float f)
{
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}

static float from_bf16(uint16_t h)
{
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* The operand as the device will see it: bf16 rounds x in place (so the host reference uses the
 * same values) and fills dev_bits; fp32 copies. */
static void *device_operand(float *x, size_t count, cudaDataType_t t)
{
  size_t es = t == CUDA_R_32F ? 4 : 2;
  void *d;
  CUDA_CK(cudaMalloc(&d, count * es));
  if (t == CUDA_R_32F) {
    CUDA_CK(cudaMemcpy(d, x, count * es, cudaMemcpyHostToDevice));
    return d;
  }
  uint16_t *h = xmalloc(count * es);
  for (size_t i = 0; i < count; i++) {
    h[i] = to_bf16(x[i]);
    x[i] = from_bf16(h[i]);
  }
  CUDA_CK(cudaMemcpy(d, h, count * es, cudaMemcpyHostToDevice));
  free(h);
  return d;
}

typedef struct {
  cublasLtMatmulDesc_t op;
  cublasLtMatrixLayout_t layout; /* one n x n column-major layout serves A, B and C */
  cublasLtMatmulAlgo_t algo;
} plan;

/* 0 and a plan, or 1 when cuBLASLt has no algorithm for this type on this GPU */
static int make_plan(cublasLtHandle_t lt, cudaDataType_t t, int n, size_t wbytes, plan *p)
{
  LT_CK(cublasLtMatmulDescCreate(&p->op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  LT_CK(cublasLtMatrixLayoutCreate(&p->layout, t, n, n, n));
  cublasLtMatmulPreference_t pref;
  LT_CK(cublasLtMatmulPreferenceCreate(&pref));
  LT_CK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wbytes,
                                             sizeof wbytes));
  cublasLtMatmulHeuristicResult_t res;
  int found = 0;
  LT_CK(cublasLtMatmulAlgoGetHeuristic(lt, p->op, p->layout, p->layout, p->layout, p->layout, pref, 1, &res,
                                       &found));
  LT_CK(cublasLtMatmulPreferenceDestroy(pref));
  if (found) p->algo = res.algo;
  return !found;
}

static int cmp_float(const void *a, const void *b)
{
  float x = *(const float *)a, y = *(const float *)b;
  return (x > y) - (x < y);
}

/* median milliseconds of `reps` calls, each between its own two events, after 3 warm-up calls */
static double time_calls(cublasLtHandle_t lt, const plan *p, const void *A, const void *B, void *C, void *work,
                         size_t wbytes, int reps)
{
  const float alpha = 1.0f, beta = 0.0f;
  cudaEvent_t *ev = xmalloc((size_t)(reps + 1) * sizeof *ev);
  float *ms = xmalloc((size_t)reps * sizeof *ms);
  for (int i = 0; i <= reps; i++) CUDA_CK(cudaEventCreate(&ev[i]));
  for (int i = 0; i < 3 + reps; i++) {
    if (i >= 3) CUDA_CK(cudaEventRecord(ev[i - 3], 0));
    LT_CK(cublasLtMatmul(lt, p->op, &alpha, A, p->layout, B, p->layout, &beta, C, p->layout, C, p->layout, &p->algo,
                         work, wbytes, 0));
  }
  CUDA_CK(cudaEventRecord(ev[reps], 0));
  CUDA_CK(cudaEventSynchronize(ev[reps]));
  for (int i = 0; i < reps; i++) CUDA_CK(cudaEventElapsedTime(&ms[i], ev[i], ev[i + 1]));
  qsort(ms, (size_t)reps, sizeof *ms, cmp_float);
  double med = reps % 2 ? ms[reps / 2] : 0.5 * (ms[reps / 2 - 1] + ms[reps / 2]);
  for (int i = 0; i <= reps; i++) CUDA_CK(cudaEventDestroy(ev[i]));
  free(ev);
  free(ms);
  return med;
}

/* largest |C - A B| / sum_k |a b| over SAMPLES entries (NaN if any entry is NaN) */
static double sample_error(const float *a, const float *b, const void *C, cudaDataType_t t, int n)
{
  uint64_t seed = 99;
  double worst = 0;
  for (int s = 0; s < SAMPLES; s++) {
    size_t i = mix(&seed) % (size_t)n, j = mix(&seed) % (size_t)n;
    double ref = 0, mag = 0;
    for (size_t k = 0; k < (size_t)n; k++) {
      double p = (double)a[i + k * n] * b[k + j * n];
      ref += p;
      mag += fabs(p);
    }
    size_t at = i + j * (size_t)n;
    float c;
    if (t == CUDA_R_32F)
      CUDA_CK(cudaMemcpy(&c, (const float *)C + at, sizeof c, cudaMemcpyDeviceToHost));
    else {
      uint16_t h;
      CUDA_CK(cudaMemcpy(&h, (const uint16_t *)C + at, sizeof h, cudaMemcpyDeviceToHost));
      c = from_bf16(h);
    }
    double e = fabs((double)c - ref) / mag;
    if (isnan(e) || isnan(worst)) worst = NAN; /* a NaN sticks, wherever it is among the samples */
    else if (e > worst) worst = e;
  }
  return worst;
}

/* measure and check one type; returns 0, or 2 when the check fails */
static int bench(cublasLtHandle_t lt, cudaDataType_t t, const char *name, int n, int reps, void *work,
                 size_t wbytes)
{
  size_t count = (size_t)n * n, es = t == CUDA_R_32F ? 4 : 2;
  float *a = xmalloc(count * sizeof *a), *b = xmalloc(count * sizeof *b);
  fill_uniform(a, count, 1);
  fill_uniform(b, count, 2);
  void *A = device_operand(a, count, t), *B = device_operand(b, count, t), *C;
  CUDA_CK(cudaMalloc(&C, count * es));
  CUDA_CK(cudaMemset(C, 0xff, count * es)); /* NaN in both types: an unwritten entry fails the check */
  plan p;
  int rc = 0;
  if (make_plan(lt, t, n, wbytes, &p)) {
    printf("gemm %s n=%d no cuBLASLt algorithm\n", name, n);
    rc = 2;
  } else {
    double ms = time_calls(lt, &p, A, B, C, work, wbytes, reps);
    double err = sample_error(a, b, C, t, n);
    double tol = n * 0x1p-24 + (t == CUDA_R_32F ? 0x1p-24 : 0x1p-9);
    printf("gemm %s n=%d reps=%d median_ms=%.3f TFLOP/s=%.1f max_err=%.2e tol=%.2e%s\n", name, n, reps, ms,
           2.0 * n * (double)n * n / (ms * 1e-3) / 1e12, err, tol, err <= tol ? "" : " CHECK FAILED");
    rc = err <= tol ? 0 : 2;
  }
  LT_CK(cublasLtMatrixLayoutDestroy(p.layout));
  LT_CK(cublasLtMatmulDescDestroy(p.op));
  CUDA_CK(cudaFree(A));
  CUDA_CK(cudaFree(B));
  CUDA_CK(cudaFree(C));
  free(a);
  free(b);
  return rc;
}

int main(int argc, char **argv)
{
  int n = argc > 1 ? atoi(argv[1]) : 8192, reps = argc > 2 ? atoi(argv[2]) : 20;
  if (argc > 3 || n < 16 || n > 65536 || reps < 1 || reps > 10000) {
    fprintf(stderr, "usage: gemm_gpu_bench [n=8192, 16..65536] [reps=20, 1..10000]\n");
    return 1;
  }
  int ndev = 0;
  cudaError_t e = cudaGetDeviceCount(&ndev);
  if (e != cudaSuccess || ndev == 0) {
    printf("gemm_gpu_bench: no usable GPU (%s)\n", e != cudaSuccess ? cudaGetErrorString(e) : "no device");
    return 77;
  }
  struct cudaDeviceProp prop;
  CUDA_CK(cudaGetDeviceProperties(&prop, 0));
  printf("gpu %s, cc %d.%d, %d SMs, %.0f GiB\n", prop.name, prop.major, prop.minor, prop.multiProcessorCount,
         prop.totalGlobalMem / 1073741824.0);
  cublasLtHandle_t lt;
  LT_CK(cublasLtCreate(&lt));
  size_t wbytes = 32u << 20;
  void *work;
  CUDA_CK(cudaMalloc(&work, wbytes));
  int rc = bench(lt, CUDA_R_16BF, "bf16", n, reps, work, wbytes);
  int rc32 = bench(lt, CUDA_R_32F, "fp32", n, reps, work, wbytes);
  CUDA_CK(cudaFree(work));
  LT_CK(cublasLtDestroy(lt));
  return rc ? rc : rc32;
}
