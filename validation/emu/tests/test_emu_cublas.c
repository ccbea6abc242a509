/* The emulated cuBLAS and cuBLASLt (emu_cublas.cc) against a naive reference, and the status
 * codes of their argument checks.
 *   products: every entry point (cublasSgemm, cublasSgemmStridedBatched, cublasGemmEx,
 *     cublasGemmStridedBatchedEx, cublasLtMatmul) on random inputs (never zero, magnitudes in
 *     [0.25, 1]), every transpose combination, leading dimensions above the rows, strided
 *     batches with gaps and a broadcast operand (stride 0), fp32, bf16 and fp16 data, C read
 *     (beta != 0) and not read (beta 0 over NaN), C == D and C != D, every emulated epilogue;
 *     what a call must not touch (the rows between m and ld, the gaps between batch entries)
 *     keeps its NaN poison or old values.  Scalars and descriptors are changed or destroyed
 *     right after each call, before the stream drains: the queued work must use their values at
 *     call time.
 *   reference: a triple loop in double on the very values the device holds (inputs already
 *     rounded to bf16/fp16 when uploaded, so input rounding is not an error here; the
 *     conversions themselves are tested exhaustively by test_emu_half).  Tolerance: fp32
 *     accumulation, (k + 3) 2^-24 (sum |alpha a b| + |beta c|) (the classic bound for a dot
 *     product plus the two scalings), then one rounding to the output type, u |D| with u =
 *     2^-24, 2^-8 (bf16), 2^-11 (fp16), and 2^-25 absolute for fp16's subnormals; epilogues
 *     propagate it (GELU's slope is at most 1.13) and add the fp32 evaluation error of the
 *     activation, 8 2^-24 (1 + |x|) for GELU, 16 2^-24 (1 + x^2) |T| for its derivative.  A
 *     planted mistake (the reference with A's transpose flipped, a result nudged by 4 x its
 *     tolerance) must fail the comparison.
 *   argument checks: the documented status of each bad argument (sizes, leading dimensions,
 *     transposes, null scalars, types, handles, descriptor attributes, layouts in conflict,
 *     epilogue pointers and aux ld, workspace below the algorithm's need, pointers less aligned
 *     than the heuristic was told).
 *   faults: an operand that runs past its allocation (A short by one element, the last batch
 *     entry of B, D of cuBLASLt, a bias in host memory, a workspace too small) is reported when
 *     the stream drains, naming the call and the operand, and the device error is sticky (a
 *     later GEMM returns CUBLAS_STATUS_EXECUTION_FAILED); each runs in a forked child. */
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "../../tests/expect.h"
#include "emu_test.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* A call that must return `want` (evaluated once). */
#define STATUS(x, want)                                                                                                \
  do {                                                                                                                 \
    cublasStatus_t s_ = (x);                                                                                           \
    EXPECT(s_ == (want), "%s returned %s, want %s", #x, cublasGetStatusName(s_), #want);                               \
  } while (0)
#define OK(x) STATUS(x, CUBLAS_STATUS_SUCCESS)

#define U32 0x1p-24
static cudaStream_t stream;

/* ---- inputs: random, never zero ---- */

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static float rnd(void)
{
  rng ^= rng >> 12, rng ^= rng << 25, rng ^= rng >> 27;
  const uint64_t r = rng * 0x2545f4914f6cdd1dull;
  const float mag = 0.25f + 0.75f * (float)((r >> 40) & 0xffffff) / 16777216.0f;
  return (r >> 20) & 1 ? -mag : mag;
}

/* ---- typed device buffers with a host copy of their values (as floats) ---- */

typedef struct {
  int type;
  size_t n;
  void *d;
  float *h;
} Buf;

static size_t esize(int t) { return t == CUDA_R_32F ? 4 : 2; }

static float to_type(int t, float v) /* the value t holds for v */
{
  return t == CUDA_R_32F ? v : t == CUDA_R_16F ? __half2float(__float2half(v)) : __bfloat162float(__float2bfloat16(v));
}

static void push(Buf *b)
{
  unsigned char *raw = malloc(b->n * esize(b->type));
  for (size_t i = 0; i < b->n; i++) {
    if (b->type == CUDA_R_32F)
      memcpy(raw + 4 * i, &b->h[i], 4);
    else {
      unsigned short u = b->type == CUDA_R_16F ? __half_as_ushort(__float2half(b->h[i]))
                                               : __bfloat16_as_ushort(__float2bfloat16(b->h[i]));
      memcpy(raw + 2 * i, &u, 2);
    }
  }
  CK(cudaMemcpy(b->d, raw, b->n * esize(b->type), cudaMemcpyHostToDevice));
  free(raw);
}

static void pull(Buf *b) /* a blocking copy: drains the streams first */
{
  unsigned char *raw = malloc(b->n * esize(b->type));
  CK(cudaMemcpy(raw, b->d, b->n * esize(b->type), cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < b->n; i++) {
    unsigned short u;
    if (b->type == CUDA_R_32F)
      memcpy(&b->h[i], raw + 4 * i, 4);
    else
      memcpy(&u, raw + 2 * i, 2), b->h[i] = b->type == CUDA_R_16F ? __half2float(__ushort_as_half(u))
                                                                  : __bfloat162float(__ushort_as_bfloat16(u));
  }
  free(raw);
}

/* n values of type t: random (scale x rnd()) or all `fill` (NaN: poison). */
static Buf buf_new(int t, size_t n, int random, float fill)
{
  Buf b = {t, n, NULL, malloc(n * sizeof(float))};
  CK(cudaMalloc(&b.d, n * esize(t)));
  for (size_t i = 0; i < n; i++) b.h[i] = to_type(t, random ? fill * rnd() : fill);
  push(&b);
  return b;
}

static void buf_free(Buf *b)
{
  CK(cudaFree(b->d));
  free(b->h);
}

static float *copy_floats(const Buf *b)
{
  float *c = malloc(b->n * sizeof(float));
  memcpy(c, b->h, b->n * sizeof(float));
  return c;
}

static int same_float(float a, float b) { return (isnan(a) && isnan(b)) || a == b; }

/* ---- the reference ---- */

typedef struct {
  int ta, tb, m, n, k, batch;
  int lda, ldb, ldc, ldd;
  long long sa, sb, sc, sd; /* batch strides, elements */
  float alpha, beta;
} Gemm;

static double op_at(const float *X, int ld, int trans, long long i, long long p)
{
  return trans ? X[p + i * ld] : X[i + p * ld];
}

/* T = alpha op(A) op(B) + beta C of batch entry e in double, and the bound of its fp32 error. */
static void reference(const Gemm *g, int e, const float *A, const float *B, const float *C, double *T, double *err)
{
  const float *a = A + e * g->sa, *b = B + e * g->sb;
  for (int j = 0; j < g->n; j++)
    for (int i = 0; i < g->m; i++) {
      double s = 0, sabs = 0;
      for (int p = 0; p < g->k; p++) {
        const double v = op_at(a, g->lda, g->ta, i, p) * op_at(b, g->ldb, g->tb, p, j);
        s += v, sabs += fabs(v);
      }
      const double c = g->beta != 0 ? g->beta * (double)C[e * g->sc + i + (long long)j * g->ldc] : 0;
      T[i + j * g->m] = g->alpha * s + c;
      err[i + j * g->m] = (g->k + 3) * U32 * (fabs(g->alpha) * sabs + fabs(c));
    }
}

static double unit(int t) { return t == CUDA_R_32F ? U32 : t == CUDA_R_16F ? 0x1p-11 : 0x1p-8; }
static double tol_out(int t, double want, double err) /* err, then one rounding to t */
{
  return err + unit(t) * (fabs(want) + err) + (t == CUDA_R_16F ? 0x1p-25 : 0);
}

/* Positions of a strided matrix, batch by batch (1 inside, 0 outside). */
static char *region(size_t n, int rows, int cols, int ld, long long stride, int batch)
{
  char *in = calloc(n, 1);
  for (int e = 0; e < batch; e++)
    for (int j = 0; j < cols; j++)
      for (int i = 0; i < rows; i++) in[e * stride + i + (long long)j * ld] = 1;
  return in;
}

/* D (values read back) against the reference, and outside the matrices D unchanged from D0.
 * Returns the number of mismatches; nudge >= 0 adds 4 tolerances to that element first.
 * quiet: the planted mistakes, whose mismatches are expected, print nothing. */
static int quiet;
static int compare(const Gemm *g, int out_type, const float *A, const float *B, const float *C0, const float *D,
                   const float *D0, size_t dn, long long nudge)
{
  double *T = malloc(sizeof(double) * g->m * g->n), *err = malloc(sizeof(double) * g->m * g->n);
  char *in = region(dn, g->m, g->n, g->ldd, g->sd, g->batch);
  int bad = 0;
  for (int e = 0; e < g->batch; e++) {
    reference(g, e, A, B, C0, T, err);
    for (int j = 0; j < g->n; j++)
      for (int i = 0; i < g->m; i++) {
        const long long at = e * g->sd + i + (long long)j * g->ldd;
        const double want = T[i + j * g->m], tol = tol_out(out_type, want, err[i + j * g->m]);
        const double got = D[at] + (at == nudge ? 4 * tol : 0);
        if (!(fabs(got - want) <= tol) && bad++ < 3 && !quiet)
          fprintf(stderr, "  D[%d](%d, %d) = %.9g, want %.9g (tolerance %.3g)\n", e, i, j, got, want, tol);
      }
  }
  for (size_t i = 0; i < dn; i++)
    if (!in[i] && !same_float(D[i], D0[i]) && bad++ < 3 && !quiet)
      fprintf(stderr, "  D[%zu] outside the matrices changed: %g, was %g\n", i, D[i], D0[i]);
  free(T), free(err), free(in);
  return bad;
}

/* Sizes of an operand's buffer: rows x cols with ld, batch entries stride apart. */
static size_t extent(int cols, int ld, long long stride, int batch)
{
  const long long n = (batch - 1) * stride + (long long)ld * cols;
  return n > 0 ? (size_t)n : 1;
}

/* A problem's shapes: leading dimensions above the rows, batch strides with gaps (or 0 for a
 * broadcast A). */
static Gemm shape(int ta, int tb, int m, int n, int k, int batch, float alpha, float beta, int broadcast_a)
{
  Gemm g = {ta, tb, m, n, k, batch, 0, 0, 0, 0, 0, 0, 0, 0, alpha, beta};
  g.lda = (ta ? k : m) + 3, g.ldb = (tb ? n : k) + 2, g.ldc = g.ldd = m + 5;
  if (batch > 1) {
    g.sa = broadcast_a ? 0 : (long long)g.lda * (ta ? m : k) + 7;
    g.sb = (long long)g.ldb * (tb ? k : n) + 11;
    g.sc = g.sd = (long long)g.ldc * n + 13;
  }
  return g;
}

/* ================================ cuBLAS ================================ */

enum { SGEMM, SGEMM_BATCHED, GEMM_EX, GEMM_EX_BATCHED };

/* One cuBLAS product through `api`, checked against the reference. */
static void blas_case(cublasHandle_t h, int api, const Gemm *g, int ab, int ct, int alias_planted)
{
  const int acols = g->ta ? g->m : g->k, bcols = g->tb ? g->k : g->n;
  Buf A = buf_new(ab, extent(acols, g->lda, g->sa, g->batch), 1, 1.0f);
  Buf B = buf_new(ab, extent(bcols, g->ldb, g->sb, g->batch), 1, 1.0f);
  Buf C = buf_new(ct, extent(g->n, g->ldc, g->sc, g->batch), g->beta != 0, g->beta != 0 ? 1.0f : NAN);
  float *C0 = copy_floats(&C), alpha = g->alpha, beta = g->beta;
  const cublasOperation_t ta = g->ta ? (g->m % 2 ? CUBLAS_OP_T : CUBLAS_OP_C) : CUBLAS_OP_N; /* C is T for reals */
  const cublasOperation_t tb = g->tb ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasStatus_t st = CUBLAS_STATUS_INTERNAL_ERROR;
  if (api == SGEMM)
    st = cublasSgemm(h, ta, tb, g->m, g->n, g->k, &alpha, A.d, g->lda, B.d, g->ldb, &beta, C.d, g->ldc);
  else if (api == SGEMM_BATCHED)
    st = cublasSgemmStridedBatched(h, ta, tb, g->m, g->n, g->k, &alpha, A.d, g->lda, g->sa, B.d, g->ldb, g->sb, &beta,
                                   C.d, g->ldc, g->sc, g->batch);
  else if (api == GEMM_EX)
    st = cublasGemmEx(h, ta, tb, g->m, g->n, g->k, &alpha, A.d, ab, g->lda, B.d, ab, g->ldb, &beta, C.d, ct, g->ldc,
                      CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  else
    st = cublasGemmStridedBatchedEx(h, ta, tb, g->m, g->n, g->k, &alpha, A.d, ab, g->lda, g->sa, B.d, ab, g->ldb, g->sb,
                                    &beta, C.d, ct, g->ldc, g->sc, g->batch, CUBLAS_COMPUTE_32F_FAST_TF32,
                                    CUBLAS_GEMM_DEFAULT_TENSOR_OP);
  alpha = beta = NAN; /* read at call time: the queued product must not see these */
  EXPECT(st == CUBLAS_STATUS_SUCCESS, "api %d returned %s", api, cublasGetStatusName(st));
  pull(&C);
  const int bad = compare(g, ct, A.h, B.h, C0, C.h, C0, C.n, -1);
  EXPECT(bad == 0, "api %d, %s -> %s, ta %d tb %d, m %d n %d k %d batch %d beta %g: %d mismatches", api,
         ab == CUDA_R_32F   ? "fp32"
         : ab == CUDA_R_16F ? "fp16"
                            : "bf16",
         ct == CUDA_R_32F ? "fp32" : "16-bit", g->ta, g->tb, g->m, g->n, g->k, g->batch, g->beta, bad);
  if (alias_planted) { /* the comparison must fail for a wrong reference or a nudged result */
    Gemm wrong = *g;
    wrong.ta = !wrong.ta;
    quiet = 1;
    EXPECT(compare(&wrong, ct, A.h, B.h, C0, C.h, C0, C.n, -1) > 0, "a reference with A's transpose flipped agrees");
    EXPECT(compare(g, ct, A.h, B.h, C0, C.h, C0, C.n, (long long)g->ldd + 1) > 0, "a nudged element passes");
    quiet = 0;
  }
  buf_free(&A), buf_free(&B), buf_free(&C), free(C0);
}

static void test_blas_products(cublasHandle_t h)
{
  const int types[][2] = {{CUDA_R_32F, CUDA_R_32F},
                          {CUDA_R_16BF, CUDA_R_16BF},
                          {CUDA_R_16F, CUDA_R_16F},
                          {CUDA_R_16BF, CUDA_R_32F},
                          {CUDA_R_16F, CUDA_R_32F}};
  for (int ta = 0; ta < 2; ta++)
    for (int tb = 0; tb < 2; tb++)
      for (int b0 = 0; b0 < 2; b0++) {
        const float beta = b0 ? 0.0f : -0.625f;
        Gemm g = shape(ta, tb, 13, 7, 9, 1, 0.75f, beta, 0);
        blas_case(h, SGEMM, &g, CUDA_R_32F, CUDA_R_32F, ta == 1 && tb == 0 && b0 == 0);
        Gemm gb = shape(ta, tb, 6, 11, 5, 3, -1.25f, beta, ta ^ tb);
        blas_case(h, SGEMM_BATCHED, &gb, CUDA_R_32F, CUDA_R_32F, 0);
        for (int t = 0; t < 5; t++) {
          blas_case(h, GEMM_EX, &g, types[t][0], types[t][1], 0);
          blas_case(h, GEMM_EX_BATCHED, &gb, types[t][0], types[t][1], 0);
        }
      }
  Gemm k0 = shape(0, 0, 4, 3, 0, 1, 1.0f, 0.5f, 0); /* k = 0: C = beta C */
  blas_case(h, SGEMM, &k0, CUDA_R_32F, CUDA_R_32F, 0);
  Gemm a0 = shape(1, 1, 5, 4, 3, 2, 0.0f, 2.0f, 0); /* alpha = 0: A and B not needed */
  blas_case(h, SGEMM_BATCHED, &a0, CUDA_R_32F, CUDA_R_32F, 0);
}

/* The documented status of each bad argument (no work is queued for any). */
static void test_blas_checks(cublasHandle_t h)
{
  float one = 1, *A, *B, *C;
  CK(cudaMalloc((void **)&A, 4096));
  CK(cudaMalloc((void **)&B, 4096));
  CK(cudaMalloc((void **)&C, 4096));
  const cublasOperation_t N = CUBLAS_OP_N, T = CUBLAS_OP_T;
  const cublasStatus_t INV = CUBLAS_STATUS_INVALID_VALUE;
  STATUS(cublasSgemm(NULL, N, N, 2, 2, 2, &one, A, 2, B, 2, &one, C, 2), CUBLAS_STATUS_NOT_INITIALIZED);
  STATUS(cublasSgemm(h, N, N, -1, 2, 2, &one, A, 2, B, 2, &one, C, 2), INV);
  STATUS(cublasSgemm(h, N, N, 2, -1, 2, &one, A, 2, B, 2, &one, C, 2), INV);
  STATUS(cublasSgemm(h, N, N, 2, 2, -1, &one, A, 2, B, 2, &one, C, 2), INV);
  STATUS(cublasSgemm(h, (cublasOperation_t)7, N, 2, 2, 2, &one, A, 2, B, 2, &one, C, 2), INV);
  STATUS(cublasSgemm(h, N, CUBLAS_OP_CONJG, 2, 2, 2, &one, A, 2, B, 2, &one, C, 2), INV);
  STATUS(cublasSgemm(h, N, N, 4, 2, 3, &one, A, 3, B, 3, &one, C, 4), INV); /* lda < m */
  STATUS(cublasSgemm(h, T, N, 4, 2, 3, &one, A, 2, B, 3, &one, C, 4), INV); /* lda < k */
  STATUS(cublasSgemm(h, N, N, 4, 2, 3, &one, A, 4, B, 2, &one, C, 4), INV); /* ldb < k */
  STATUS(cublasSgemm(h, N, T, 4, 5, 3, &one, A, 4, B, 4, &one, C, 4), INV); /* ldb < n */
  STATUS(cublasSgemm(h, N, N, 4, 2, 3, &one, A, 4, B, 3, &one, C, 3), INV); /* ldc < m */
  STATUS(cublasSgemm(h, N, N, 0, 2, 3, &one, A, 1, B, 3, &one, C, 0), INV); /* ld >= max(1, .) even for m 0 */
  STATUS(cublasSgemm(h, N, N, 2, 2, 2, NULL, A, 2, B, 2, &one, C, 2), INV);
  STATUS(cublasSgemm(h, N, N, 2, 2, 2, &one, A, 2, B, 2, NULL, C, 2), INV);
  OK(cublasSgemm(h, N, N, 0, 2, 3, &one, A, 1, B, 3, &one, C, 1)); /* an empty product: nothing to do */
  STATUS(cublasSgemmStridedBatched(h, N, N, 2, 2, 2, &one, A, 2, 4, B, 2, 4, &one, C, 2, 4, -1), INV);
  OK(cublasSgemmStridedBatched(h, N, N, 2, 2, 2, &one, A, 2, 4, B, 2, 4, &one, C, 2, 4, 0));
  STATUS(cublasGemmEx(h, N, N, 2, 2, 2, &one, A, CUDA_R_16BF, 2, B, CUDA_R_16F, 2, &one, C, CUDA_R_32F, 2,
                      CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
         CUBLAS_STATUS_NOT_SUPPORTED); /* A, B differ */
  STATUS(cublasGemmEx(h, N, N, 2, 2, 2, &one, A, CUDA_R_32F, 2, B, CUDA_R_32F, 2, &one, C, CUDA_R_16BF, 2,
                      CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
         CUBLAS_STATUS_NOT_SUPPORTED); /* fp32 in, bf16 out */
  STATUS(cublasGemmEx(h, N, N, 2, 2, 2, &one, A, CUDA_R_32F, 2, B, CUDA_R_32F, 2, &one, C, CUDA_R_32F, 2,
                      CUBLAS_COMPUTE_64F, CUBLAS_GEMM_DEFAULT),
         CUBLAS_STATUS_NOT_SUPPORTED);
  STATUS(cublasGemmEx(h, N, N, 2, 2, 2, &one, A, CUDA_R_32F, 2, B, CUDA_R_32F, 2, &one, C, CUDA_R_32F, 1,
                      CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
         INV);
  STATUS(cublasGemmStridedBatchedEx(h, N, N, 2, 2, 2, &one, A, CUDA_R_16F, 2, 4, B, CUDA_R_16F, 2, 4, &one, C,
                                    CUDA_R_16F, 2, 4, -2, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
         INV);
  CK(cudaFree(A));
  CK(cudaFree(B));
  CK(cudaFree(C));
}

static void test_blas_handle(void)
{
  cublasHandle_t h = NULL;
  cudaStream_t got = NULL;
  cublasMath_t mode;
  STATUS(cublasCreate(NULL), CUBLAS_STATUS_INVALID_VALUE);
  OK(cublasCreate(&h));
  OK(cublasGetStream(h, &got));
  EXPECT(got == NULL, "a new handle's stream is the default stream");
  OK(cublasSetStream(h, stream));
  OK(cublasGetStream(h, &got));
  EXPECT(got == stream, "cublasGetStream gives the stream set");
  OK(cublasSetMathMode(h, CUBLAS_PEDANTIC_MATH));
  OK(cublasGetMathMode(h, &mode));
  EXPECT(mode == CUBLAS_PEDANTIC_MATH, "math mode %d", (int)mode);
  OK(cublasSetMathMode(h,
                       (cublasMath_t)(CUBLAS_TF32_TENSOR_OP_MATH | CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)));
  STATUS(cublasSetMathMode(h, (cublasMath_t)7), CUBLAS_STATUS_INVALID_VALUE);
  STATUS(cublasSetStream(NULL, stream), CUBLAS_STATUS_NOT_INITIALIZED);
  OK(cublasDestroy(h));
  STATUS(cublasSetStream(h, stream), CUBLAS_STATUS_NOT_INITIALIZED); /* destroyed */
  EXPECT(strcmp(cublasGetStatusName(CUBLAS_STATUS_INVALID_VALUE), "CUBLAS_STATUS_INVALID_VALUE") == 0 &&
             strcmp(cublasGetStatusName(CUBLAS_STATUS_NOT_SUPPORTED), "CUBLAS_STATUS_NOT_SUPPORTED") == 0 &&
             strlen(cublasGetStatusString(CUBLAS_STATUS_EXECUTION_FAILED)) > 0 &&
             strcmp(cublasLtGetStatusName(CUBLAS_STATUS_ALLOC_FAILED), "CUBLAS_STATUS_ALLOC_FAILED") == 0,
         "status names");
  EXPECT(CUBLAS_STATUS_INVALID_VALUE == 7 && CUBLAS_STATUS_NOT_SUPPORTED == 15 && CUBLAS_COMPUTE_32F == 68 &&
             CUDA_R_16BF == 14 && CUDA_R_16F == 2 && CUBLASLT_EPILOGUE_GELU_AUX_BIAS == 164 &&
             CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE == 26 && CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES == 8,
         "enum values as cuBLAS's");
}

/* ================================ cuBLASLt ================================ */

typedef struct {
  cublasLtMatmulDesc_t op;
  cublasLtMatrixLayout_t a, b, c, d;
  cublasLtMatmulPreference_t pref;
} Plan;

static cublasLtMatrixLayout_t layout(int t, int rows, int cols, int ld, int batch, long long stride)
{
  cublasLtMatrixLayout_t l;
  OK(cublasLtMatrixLayoutCreate(&l, (cudaDataType)t, (uint64_t)rows, (uint64_t)cols, ld));
  if (batch > 1) {
    int32_t bc = batch;
    int64_t s = stride;
    OK(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &bc, sizeof bc));
    OK(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &s, sizeof s));
  }
  return l;
}

static void set_desc(cublasLtMatmulDesc_t op, cublasLtMatmulDescAttributes_t a, const void *v, size_t n)
{
  OK(cublasLtMatmulDescSetAttribute(op, a, v, n));
}

static Plan plan_new(const Gemm *g, int ab, int cd, int compute, uint64_t max_work)
{
  Plan p;
  int32_t ta = g->ta ? CUBLAS_OP_T : CUBLAS_OP_N, tb = g->tb ? CUBLAS_OP_T : CUBLAS_OP_N;
  OK(cublasLtMatmulDescCreate(&p.op, (cublasComputeType_t)compute, CUDA_R_32F));
  set_desc(p.op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta);
  set_desc(p.op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb);
  p.a = layout(ab, g->ta ? g->k : g->m, g->ta ? g->m : g->k, g->lda, g->batch, g->sa);
  p.b = layout(ab, g->tb ? g->n : g->k, g->tb ? g->k : g->n, g->ldb, g->batch, g->sb);
  p.c = layout(cd, g->m, g->n, g->ldc, g->batch, g->sc);
  p.d = layout(cd, g->m, g->n, g->ldd, g->batch, g->sd);
  OK(cublasLtMatmulPreferenceCreate(&p.pref));
  OK(cublasLtMatmulPreferenceSetAttribute(p.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &max_work,
                                          sizeof max_work));
  return p;
}

static void plan_free(Plan *p)
{
  OK(cublasLtMatmulDescDestroy(p->op));
  OK(cublasLtMatrixLayoutDestroy(p->a));
  OK(cublasLtMatrixLayoutDestroy(p->b));
  OK(cublasLtMatrixLayoutDestroy(p->c));
  OK(cublasLtMatrixLayoutDestroy(p->d));
  OK(cublasLtMatmulPreferenceDestroy(p->pref));
}

static int heuristic(cublasLtHandle_t lt, const Plan *p, cublasLtMatmulHeuristicResult_t *r)
{
  int found = 0;
  OK(cublasLtMatmulAlgoGetHeuristic(lt, p->op, p->a, p->b, p->c, p->d, p->pref, 1, r, &found));
  EXPECT(found == 1 && r->state == CUBLAS_STATUS_SUCCESS, "heuristic found %d", found);
  return found;
}

/* What each emulated epilogue does (cublasLt.h), for the reference. */
typedef struct {
  uint32_t id;
  int bias_in, aux_out, aux_in, relu, gelu, bgrad_d, bgrad_a, bgrad_b;
} Epi;
static const Epi epilogues[] = {
    {CUBLASLT_EPILOGUE_DEFAULT, 0, 0, 0, 0, 0, 0, 0, 0},   {CUBLASLT_EPILOGUE_RELU, 0, 0, 0, 1, 0, 0, 0, 0},
    {CUBLASLT_EPILOGUE_BIAS, 1, 0, 0, 0, 0, 0, 0, 0},      {CUBLASLT_EPILOGUE_RELU_BIAS, 1, 0, 0, 1, 0, 0, 0, 0},
    {CUBLASLT_EPILOGUE_GELU, 0, 0, 0, 0, 1, 0, 0, 0},      {CUBLASLT_EPILOGUE_GELU_AUX, 0, 1, 0, 0, 1, 0, 0, 0},
    {CUBLASLT_EPILOGUE_GELU_BIAS, 1, 0, 0, 0, 1, 0, 0, 0}, {CUBLASLT_EPILOGUE_GELU_AUX_BIAS, 1, 1, 0, 0, 1, 0, 0, 0},
    {CUBLASLT_EPILOGUE_DGELU, 0, 0, 1, 0, 0, 0, 0, 0},     {CUBLASLT_EPILOGUE_DGELU_BGRAD, 0, 0, 1, 0, 0, 1, 0, 0},
    {CUBLASLT_EPILOGUE_BGRADA, 0, 0, 0, 0, 0, 0, 1, 0},    {CUBLASLT_EPILOGUE_BGRADB, 0, 0, 0, 0, 0, 0, 0, 1}};

static double gelu_ref(double x) { return 0.5 * x * (1 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))); }
static double dgelu_ref(double x)
{
  const double k = 0.7978845608028654, t = tanh(k * (x + 0.044715 * x * x * x));
  return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * k * (1 + 3 * 0.044715 * x * x);
}

typedef struct { /* buffers of one epilogue case */
  Buf bias, aux;
  int aux_ld, bias_len;
  long long aux_stride, bias_stride;
} EpiBufs;

/* The epilogue's attributes and buffers: bias (input, or gradient output poisoned), aux (GELU
 * input out, poisoned; or in, values in [-3, 3]) with ld a multiple of 8 above m. */
static EpiBufs epi_setup(cublasLtMatmulDesc_t op, const Epi *ep, const Gemm *g, int cd, int bias_type)
{
  EpiBufs b;
  memset(&b, 0, sizeof b);
  uint32_t id = ep->id;
  set_desc(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &id, sizeof id);
  b.bias_len = ep->bgrad_b ? g->n : g->m;
  b.bias_stride = g->batch > 1 ? b.bias_len + 3 : 0;
  if (ep->bias_in || ep->bgrad_d || ep->bgrad_a || ep->bgrad_b) {
    const int bt = bias_type < 0 ? cd : bias_type, input = ep->bias_in;
    b.bias = buf_new(bt, (size_t)(b.bias_stride * (g->batch - 1) + b.bias_len), input, input ? 1.0f : NAN);
    set_desc(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &b.bias.d, sizeof b.bias.d);
    int64_t s = b.bias_stride;
    set_desc(op, CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE, &s, sizeof s);
    if (bias_type >= 0) {
      int32_t t = bias_type;
      set_desc(op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &t, sizeof t);
    }
  }
  if (ep->aux_out || ep->aux_in) {
    b.aux_ld = (g->m + 7) / 8 * 8 + 8;
    b.aux_stride = g->batch > 1 ? (long long)b.aux_ld * g->n + 8 : 0;
    b.aux = buf_new(cd, extent(g->n, b.aux_ld, b.aux_stride, g->batch), ep->aux_in, ep->aux_in ? 3.0f : NAN);
    int64_t ld = b.aux_ld, s = b.aux_stride;
    set_desc(op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &b.aux.d, sizeof b.aux.d);
    set_desc(op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &ld, sizeof ld);
    set_desc(op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE, &s, sizeof s);
  }
  return b;
}

static int check_close(const char *what, double got, double want, double tol, int *bad)
{
  if (fabs(got - want) <= tol) return 1;
  if ((*bad)++ < 3) fprintf(stderr, "  %s = %.9g, want %.9g (tolerance %.3g)\n", what, got, want, tol);
  return 0;
}

/* The reference of one batch entry through the epilogue, compared element by element. */
static void epi_compare_entry(const Gemm *g, const Epi *ep, int cd, int e, const float *A, const float *B,
                              const float *C0, const float *D, const EpiBufs *eb, const float *aux_in, int *bad)
{
  const int m = g->m, n = g->n, bt = eb->bias.type;
  double *T = malloc(sizeof(double) * m * n), *err = malloc(sizeof(double) * m * n);
  double *rs = calloc((size_t)m, sizeof(double)), *rb = calloc((size_t)m, sizeof(double)),
         *ra = calloc((size_t)m, sizeof(double));
  reference(g, e, A, B, C0, T, err);
  for (int j = 0; j < n; j++)
    for (int i = 0; i < m; i++) {
      double t = T[i + j * m], b = err[i + j * m];
      const long long ia = e * eb->aux_stride + i + (long long)j * eb->aux_ld;
      if (ep->bias_in) t += eb->bias.h[e * eb->bias_stride + i], b += U32 * fabs(t);
      if (ep->aux_out) check_close("aux", eb->aux.h[ia], t, tol_out(cd, t, b), bad);
      if (ep->relu) t = t > 0 ? t : 0;
      if (ep->gelu) b = 1.13 * b + 8 * U32 * (1 + fabs(t)), t = gelu_ref(t);
      if (ep->aux_in) {
        const double x = aux_in[ia], d = dgelu_ref(x);
        b = fabs(d) * b + fabs(t) * 16 * U32 * (1 + x * x), t *= d;
      }
      check_close("D", D[e * g->sd + i + (long long)j * g->ldd], t, tol_out(cd, t, b), bad);
      rs[i] += t, rb[i] += b, ra[i] += fabs(t);
    }
  if (ep->bgrad_d) /* sum over the columns of D (fp32 values before D's rounding) */
    for (int i = 0; i < m; i++)
      check_close("bias grad", eb->bias.h[e * eb->bias_stride + i], rs[i], tol_out(bt, rs[i], rb[i] + n * U32 * ra[i]),
                  bad);
  for (int i = 0; (ep->bgrad_a || ep->bgrad_b) && i < eb->bias_len; i++) { /* op(A) row sums or op(B) column sums */
    double s = 0;
    for (int p = 0; p < g->k; p++)
      s += ep->bgrad_a ? op_at(A + e * g->sa, g->lda, g->ta, i, p) : op_at(B + e * g->sb, g->ldb, g->tb, p, i);
    check_close(ep->bgrad_a ? "BGRADA" : "BGRADB", eb->bias.h[e * eb->bias_stride + i], s, tol_out(bt, s, 1e-12), bad);
  }
  free(T), free(err), free(rs), free(rb), free(ra);
}

/* One cuBLASLt product with an epilogue: plan, heuristic, matmul on the stream; the descriptors
 * are destroyed and alpha overwritten before the stream drains. */
static void lt_case(cublasLtHandle_t lt, const Gemm *g, int ab, int cd, int compute, const Epi *ep, int in_place,
                    int bias_type)
{
  const int acols = g->ta ? g->m : g->k, bcols = g->tb ? g->k : g->n;
  Buf A = buf_new(ab, extent(acols, g->lda, g->sa, g->batch), 1, 1.0f);
  Buf B = buf_new(ab, extent(bcols, g->ldb, g->sb, g->batch), 1, 1.0f);
  Buf C = buf_new(cd, extent(g->n, g->ldc, g->sc, g->batch), g->beta != 0, g->beta != 0 ? 1.0f : NAN);
  Buf D = in_place ? C : buf_new(cd, extent(g->n, g->ldd, g->sd, g->batch), 0, NAN);
  float *C0 = copy_floats(&C), *D0 = copy_floats(&D), alpha = g->alpha, beta = g->beta;
  Plan p = plan_new(g, ab, cd, compute, 1u << 20);
  EpiBufs eb = epi_setup(p.op, ep, g, cd, bias_type);
  float *aux_in = ep->aux_in ? copy_floats(&eb.aux) : NULL;
  void *work;
  CK(cudaMalloc(&work, 1u << 20));
  cublasLtMatmulHeuristicResult_t r;
  if (heuristic(lt, &p, &r)) {
    EXPECT(r.workspaceSize <= (1u << 20), "workspace %zu above the preference", r.workspaceSize);
    OK(cublasLtMatmul(lt, p.op, &alpha, A.d, p.a, B.d, p.b, &beta, C.d, p.c, D.d, p.d, &r.algo, work, 1u << 20,
                      stream));
  }
  alpha = NAN;
  plan_free(&p);
  pull(&D);
  if (eb.bias.d) pull(&eb.bias);
  if (eb.aux.d) pull(&eb.aux);
  int bad = 0;
  for (int e = 0; e < g->batch; e++) epi_compare_entry(g, ep, cd, e, A.h, B.h, C0, D.h, &eb, aux_in, &bad);
  char *in = region(D.n, g->m, g->n, g->ldd, g->sd, g->batch);
  for (size_t i = 0; i < D.n; i++)
    if (!in[i] && !same_float(D.h[i], D0[i]) && bad++ < 3)
      fprintf(stderr, "  D[%zu] outside the matrices changed\n", i);
  EXPECT(bad == 0, "cublasLtMatmul epilogue %u, ta %d tb %d, %s -> %s, batch %d, %s: %d mismatches", ep->id, g->ta,
         g->tb,
         ab == CUDA_R_32F   ? "fp32"
         : ab == CUDA_R_16F ? "fp16"
                            : "bf16",
         cd == CUDA_R_32F ? "fp32" : "16-bit", g->batch, in_place ? "C == D" : "C != D", bad);
  if (!in_place) {
    pull(&C);
    int changed = 0;
    for (size_t i = 0; i < C.n; i++) changed += !same_float(C.h[i], C0[i]);
    EXPECT(changed == 0, "C changed in %d places though D is elsewhere", changed);
    buf_free(&D);
  }
  if (eb.bias.d) buf_free(&eb.bias);
  if (eb.aux.d) buf_free(&eb.aux);
  buf_free(&A), buf_free(&B), buf_free(&C), free(C0), free(D0), free(aux_in), free(in);
  CK(cudaFree(work));
}

static void test_lt_products(cublasLtHandle_t lt)
{
  const int types[][2] = {
      {CUDA_R_32F, CUDA_R_32F}, {CUDA_R_16BF, CUDA_R_16BF}, {CUDA_R_16F, CUDA_R_16F}, {CUDA_R_16BF, CUDA_R_32F}};
  const int ne = (int)(sizeof epilogues / sizeof epilogues[0]);
  for (int ta = 0; ta < 2; ta++)
    for (int tb = 0; tb < 2; tb++)
      for (int t = 0; t < 4; t++) {
        Gemm g = shape(ta, tb, 11, 6, 8, 1, 0.5f, -0.75f, 0);
        Gemm gb = shape(ta, tb, 5, 9, 7, 3, -0.375f, 0.25f, 0);
        const int compute = t == 0 && ta ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
        for (int e = 0; e < ne; e++) {
          lt_case(lt, &g, types[t][0], types[t][1], compute, &epilogues[e], (ta + tb + e) % 2, -1);
          if (ta == tb) lt_case(lt, &gb, types[t][0], types[t][1], compute, &epilogues[e], e % 2, -1);
        }
      }
  Gemm g = shape(0, 1, 9, 5, 6, 1, 1.0f, 0.0f, 0); /* beta 0: C not read (NaN there stays out) */
  lt_case(lt, &g, CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F, &epilogues[7], 0, CUDA_R_32F); /* fp32 bias, bf16 D */
  lt_case(lt, &g, CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F, &epilogues[9], 0, CUDA_R_32F); /* fp32 bias gradient */
}

/* Alignment: an algorithm found for 256-byte aligned operands refuses a 4-byte aligned view,
 * one found for 4 bytes takes it (and computes right); a bias less aligned than at the
 * heuristic is refused.  Workspace: as the heuristic says, checked at the call. */
static void test_lt_algo(cublasLtHandle_t lt)
{
  Gemm g = shape(0, 0, 8, 8, 8, 1, 1.0f, 0.0f, 0);
  Buf A = buf_new(CUDA_R_32F, 2 * extent(g.k, g.lda, 0, 1), 1, 1.0f),
      B = buf_new(CUDA_R_32F, extent(g.n, g.ldb, 0, 1), 1, 1.0f);
  Buf D = buf_new(CUDA_R_32F, extent(g.n, g.ldd, 0, 1), 0, NAN);
  float one = 1, zero = 0, *A1 = (float *)A.d + 1;
  void *work;
  CK(cudaMalloc(&work, 1u << 16));
  Plan p = plan_new(&g, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, 0);
  cublasLtMatmulHeuristicResult_t r;
  uint32_t al;
  size_t got = 0;
  OK(cublasLtMatmulPreferenceGetAttribute(p.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &al, sizeof al, &got));
  EXPECT(al == 256 && got == sizeof al, "default minimum alignment %u (%zu bytes)", al, got);
  heuristic(lt, &p, &r);
  EXPECT(r.workspaceSize == 0, "no workspace allowed, yet the algorithm needs %zu", r.workspaceSize);
  STATUS(cublasLtMatmul(lt, p.op, &one, A1, p.a, B.d, p.b, &zero, D.d, p.d, D.d, p.d, &r.algo, NULL, 0, stream),
         CUBLAS_STATUS_NOT_SUPPORTED);
  OK(cublasLtMatmul(lt, p.op, &one, A.d, p.a, B.d, p.b, &zero, D.d, p.d, D.d, p.d, &r.algo, NULL, 0, stream));
  OK(cublasLtMatmul(lt, p.op, &one, A1, p.a, B.d, p.b, &zero, D.d, p.d, D.d, p.d, NULL, NULL, 0,
                    stream)); /* implicit */
  al = 4;
  OK(cublasLtMatmulPreferenceSetAttribute(p.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &al, sizeof al));
  heuristic(lt, &p, &r);
  OK(cublasLtMatmul(lt, p.op, &one, A1, p.a, B.d, p.b, &zero, D.d, p.d, D.d, p.d, &r.algo, NULL, 0, stream));
  pull(&A), pull(&D);
  float *D0 = copy_floats(&D);
  EXPECT(compare(&g, CUDA_R_32F, A.h + 1, B.h, NULL, D.h, D0, D.n, -1) == 0, "product of the 4-byte aligned view");
  /* workspace: a preference that allows m n 4 bytes gets an algorithm that needs them */
  uint64_t max = 1u << 16;
  OK(cublasLtMatmulPreferenceSetAttribute(p.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &max, sizeof max));
  heuristic(lt, &p, &r);
  EXPECT(r.workspaceSize == 256 && r.workspaceSize <= max, "workspace %zu for an 8 x 8 fp32 D", r.workspaceSize);
  STATUS(cublasLtMatmul(lt, p.op, &one, A.d, p.a, B.d, p.b, &zero, D.d, p.d, D.d, p.d, &r.algo, work, 128, stream),
         CUBLAS_STATUS_INVALID_VALUE);
  STATUS(cublasLtMatmul(lt, p.op, &one, A.d, p.a, B.d, p.b, &zero, D.d, p.d, D.d, p.d, &r.algo, NULL, max, stream),
         CUBLAS_STATUS_INVALID_VALUE);
  OK(cublasLtMatmul(lt, p.op, &one, A.d, p.a, B.d, p.b, &zero, D.d, p.d, D.d, p.d, &r.algo, work, max, stream));
  cublasLtMatmulAlgo_t junk;
  memset(&junk, 0, sizeof junk);
  STATUS(cublasLtMatmul(lt, p.op, &one, A.d, p.a, B.d, p.b, &zero, D.d, p.d, D.d, p.d, &junk, work, max, stream),
         CUBLAS_STATUS_INVALID_VALUE);
  /* bias alignment as seen by the heuristic */
  uint32_t epi = CUBLASLT_EPILOGUE_BIAS;
  void *bias = D.d, *bias1 = (float *)D.d + 1;
  set_desc(p.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi);
  set_desc(p.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias);
  heuristic(lt, &p, &r);
  set_desc(p.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias1, sizeof bias1);
  STATUS(cublasLtMatmul(lt, p.op, &one, A.d, p.a, B.d, p.b, &zero, D.d, p.d, D.d, p.d, &r.algo, work, max, stream),
         CUBLAS_STATUS_NOT_SUPPORTED);
  CK(cudaStreamSynchronize(stream));
  plan_free(&p);
  buf_free(&A), buf_free(&B), buf_free(&D), free(D0);
  CK(cudaFree(work));
}

/* Descriptor attributes: sizes, round trips, the documented INVALID_VALUE cases. */
static void test_lt_attributes(void)
{
  cublasLtMatmulDesc_t op;
  cublasLtMatrixLayout_t l;
  cublasLtMatmulPreference_t pref;
  const cublasStatus_t INV = CUBLAS_STATUS_INVALID_VALUE;
  int32_t v = CUBLAS_OP_T, back = -1;
  size_t n = 0;
  OK(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  OK(cublasLtMatmulDescGetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, NULL, 0, &n));
  EXPECT(n == 4, "TRANSA takes %zu bytes", n);
  OK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &v, sizeof v));
  OK(cublasLtMatmulDescGetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &back, sizeof back, &n));
  EXPECT(back == CUBLAS_OP_T && n == 4, "TRANSA round trip %d", back);
  OK(cublasLtMatmulDescGetAttribute(op, CUBLASLT_MATMUL_DESC_COMPUTE_TYPE, &back, sizeof back, NULL));
  EXPECT(back == CUBLAS_COMPUTE_32F, "compute type %d", back);
  OK(cublasLtMatmulDescGetAttribute(op, CUBLASLT_MATMUL_DESC_SCALE_TYPE, &back, sizeof back, NULL));
  EXPECT(back == CUDA_R_32F, "scale type %d", back);
  OK(cublasLtMatmulDescGetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &back, sizeof back, NULL));
  EXPECT(back == CUBLASLT_EPILOGUE_DEFAULT, "default epilogue %d", back);
  OK(cublasLtMatmulDescGetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &back, sizeof back, NULL));
  EXPECT(back == -1, "default bias type %d", back);
  int64_t ld = 0;
  OK(cublasLtMatmulDescGetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &ld, sizeof ld, NULL));
  void *ptr = &n;
  OK(cublasLtMatmulDescGetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &ptr, sizeof ptr, NULL));
  EXPECT(ptr == NULL && ld == 0, "default bias pointer %p, aux ld %lld", ptr, (long long)ld);
  v = 5;
  STATUS(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &v, sizeof v), INV); /* not an operation */
  OK(cublasLtMatmulDescGetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &back, sizeof back, NULL));
  EXPECT(back == CUBLAS_OP_N, "a refused value was kept: %d", back);
  STATUS(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &v, 8), INV);
  STATUS(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, NULL, 4), INV);
  STATUS(cublasLtMatmulDescSetAttribute(op, (cublasLtMatmulDescAttributes_t)9999, &v, 4), INV);
  STATUS(cublasLtMatmulDescGetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, NULL, 0, NULL), INV);
  STATUS(cublasLtMatmulDescGetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &back, 2, NULL), INV);
  OK(cublasLtMatmulDescDestroy(op));
  STATUS(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &v, 4), INV); /* destroyed */

  OK(cublasLtMatrixLayoutCreate(&l, CUDA_R_16BF, 3, 4, 5));
  uint64_t rows = 0;
  uint32_t type = 0;
  int32_t order = -1, bc = 0;
  OK(cublasLtMatrixLayoutGetAttribute(l, CUBLASLT_MATRIX_LAYOUT_ROWS, &rows, sizeof rows, NULL));
  OK(cublasLtMatrixLayoutGetAttribute(l, CUBLASLT_MATRIX_LAYOUT_TYPE, &type, sizeof type, NULL));
  OK(cublasLtMatrixLayoutGetAttribute(l, CUBLASLT_MATRIX_LAYOUT_ORDER, &order, sizeof order, NULL));
  OK(cublasLtMatrixLayoutGetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &bc, sizeof bc, NULL));
  EXPECT(rows == 3 && type == CUDA_R_16BF && order == CUBLASLT_ORDER_COL && bc == 1, "layout %llu %u %d %d",
         (unsigned long long)rows, type, order, bc);
  STATUS(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &rows, sizeof rows), INV);
  ld = -1;
  STATUS(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_LD, &ld, sizeof ld), INV);
  OK(cublasLtMatrixLayoutDestroy(l));
  OK(cublasLtMatrixLayoutDestroy(NULL));

  OK(cublasLtMatmulPreferenceCreate(&pref));
  uint32_t small = 4;
  STATUS(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &small, sizeof small),
         INV);
  /* split-K reduction schemes: every one allowed by default; a bit outside the mask refused */
  uint32_t schemes = 0;
  size_t got = 0;
  OK(cublasLtMatmulPreferenceGetAttribute(pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &schemes, sizeof schemes,
                                          &got));
  EXPECT(schemes == CUBLASLT_REDUCTION_SCHEME_MASK && got == sizeof schemes, "default reduction schemes %u", schemes);
  schemes = CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
  OK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &schemes, sizeof schemes));
  schemes = 8;
  const cublasLtMatmulPreferenceAttributes_t mask = CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK;
  STATUS(cublasLtMatmulPreferenceSetAttribute(pref, mask, &schemes, sizeof schemes), INV);
  OK(cublasLtMatmulPreferenceGetAttribute(pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &schemes, sizeof schemes,
                                          &got));
  EXPECT(schemes == CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE, "a refused mask left %u", schemes);
  OK(cublasLtMatmulPreferenceDestroy(pref));
}

/* cuBLASLt problems in conflict or not emulated: the heuristic's and the matmul's status. */
static void test_lt_checks(cublasLtHandle_t lt)
{
  const cublasStatus_t INV = CUBLAS_STATUS_INVALID_VALUE, NS = CUBLAS_STATUS_NOT_SUPPORTED;
  Gemm g = shape(0, 0, 8, 4, 6, 1, 1.0f, 1.0f, 0);
  Plan p = plan_new(&g, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, 0);
  cublasLtMatmulHeuristicResult_t r;
  int found = 7;
  float one = 1, *X;
  CK(cudaMalloc((void **)&X, 4096));
#define HEUR(lay_a, lay_b, want)                                                                                       \
  STATUS(cublasLtMatmulAlgoGetHeuristic(lt, p.op, lay_a, lay_b, p.c, p.d, p.pref, 1, &r, &found), want)
  STATUS(cublasLtMatmulAlgoGetHeuristic(lt, p.op, p.a, p.b, p.c, p.d, p.pref, 0, &r, &found), INV);
  STATUS(cublasLtMatmulAlgoGetHeuristic(lt, p.op, p.a, p.b, p.c, p.d, NULL, 1, &r, &found), INV);
  STATUS(cublasLtMatmulAlgoGetHeuristic(NULL, p.op, p.a, p.b, p.c, p.d, p.pref, 1, &r, &found),
         CUBLAS_STATUS_NOT_INITIALIZED);
  cublasLtMatrixLayout_t bad = layout(CUDA_R_32F, 6, 5, 6, 1, 0); /* B 6 x 5: n 5 != D's 4 */
  HEUR(p.a, bad, INV);
  OK(cublasLtMatrixLayoutDestroy(bad));
  bad = layout(CUDA_R_32F, 7, 4, 7, 1, 0); /* B 7 x 4: k 7 != A's 6 */
  HEUR(p.a, bad, INV);
  OK(cublasLtMatrixLayoutDestroy(bad));
  bad = layout(CUDA_R_32F, 8, 6, 7, 1, 0); /* ld 7 < rows 8 */
  HEUR(bad, p.b, INV);
  OK(cublasLtMatrixLayoutDestroy(bad));
  bad = layout(CUDA_R_32F, 8, 6, 8, 2, 48); /* batch 2 against 1 */
  HEUR(bad, p.b, INV);
  OK(cublasLtMatrixLayoutDestroy(bad));
  bad = layout(CUDA_R_32F, 8, 6, 8, 1, 0);
  int32_t row = CUBLASLT_ORDER_ROW;
  OK(cublasLtMatrixLayoutSetAttribute(bad, CUBLASLT_MATRIX_LAYOUT_ORDER, &row, sizeof row));
  HEUR(bad, p.b, NS);
  OK(cublasLtMatrixLayoutDestroy(bad));
  bad = layout(CUDA_R_16F, 8, 6, 8, 1, 0); /* A fp16, B fp32 */
  HEUR(bad, p.b, NS);
  OK(cublasLtMatrixLayoutDestroy(bad));
  HEUR(bad, p.b, INV); /* destroyed */
  found = 7;
  HEUR(p.a, p.b, CUBLAS_STATUS_SUCCESS);
  EXPECT(found == 1, "a valid problem gets one algorithm, not %d", found);
  uint32_t epi = CUBLASLT_EPILOGUE_RELU_AUX;
  set_desc(p.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi);
  HEUR(p.a, p.b, NS);
  epi = CUBLASLT_EPILOGUE_GELU_AUX;
  set_desc(p.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi);
  HEUR(p.a, p.b, INV); /* no aux pointer */
  set_desc(p.op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &X, sizeof X);
  HEUR(p.a, p.b, INV); /* aux ld 0 < m */
  int64_t ld = 12;
  set_desc(p.op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &ld, sizeof ld);
  HEUR(p.a, p.b, INV); /* not a multiple of 8 */
  ld = 16;
  set_desc(p.op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &ld, sizeof ld);
  HEUR(p.a, p.b, CUBLAS_STATUS_SUCCESS);
  int32_t t16 = CUDA_R_16BF;
  set_desc(p.op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE, &t16, sizeof t16);
  HEUR(p.a, p.b, INV); /* aux of another type than D */
  epi = CUBLASLT_EPILOGUE_BIAS;
  set_desc(p.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi);
  HEUR(p.a, p.b, INV); /* no bias pointer */
  epi = CUBLASLT_EPILOGUE_DEFAULT;
  set_desc(p.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi);
  int32_t pm = CUBLASLT_POINTER_MODE_DEVICE;
  set_desc(p.op, CUBLASLT_MATMUL_DESC_POINTER_MODE, &pm, sizeof pm);
  HEUR(p.a, p.b, NS);
  pm = CUBLASLT_POINTER_MODE_HOST;
  set_desc(p.op, CUBLASLT_MATMUL_DESC_POINTER_MODE, &pm, sizeof pm);
  int32_t ct = CUBLAS_COMPUTE_64F;
  set_desc(p.op, CUBLASLT_MATMUL_DESC_COMPUTE_TYPE, &ct, sizeof ct);
  HEUR(p.a, p.b, NS);
  ct = CUBLAS_COMPUTE_32F;
  set_desc(p.op, CUBLASLT_MATMUL_DESC_COMPUTE_TYPE, &ct, sizeof ct);
  int32_t sc = CUDA_R_16F;
  set_desc(p.op, CUBLASLT_MATMUL_DESC_SCALE_TYPE, &sc, sizeof sc);
  HEUR(p.a, p.b, NS);
  sc = CUDA_R_32F;
  set_desc(p.op, CUBLASLT_MATMUL_DESC_SCALE_TYPE, &sc, sizeof sc);
  HEUR(p.a, p.b, CUBLAS_STATUS_SUCCESS);
  /* matmul: null scalars, C == D described differently, a null handle */
  STATUS(cublasLtMatmul(lt, p.op, NULL, X, p.a, X, p.b, &one, X, p.c, X, p.d, &r.algo, NULL, 0, stream), INV);
  cublasLtMatrixLayout_t c2 = layout(CUDA_R_32F, 8, 4, 9, 1, 0);
  STATUS(cublasLtMatmul(lt, p.op, &one, X, p.a, X, p.b, &one, X, c2, X, p.d, &r.algo, NULL, 0, stream), INV);
  OK(cublasLtMatrixLayoutDestroy(c2));
  STATUS(cublasLtMatmul(NULL, p.op, &one, X, p.a, X, p.b, &one, X, p.c, X, p.d, &r.algo, NULL, 0, stream),
         CUBLAS_STATUS_NOT_INITIALIZED);
#undef HEUR
  plan_free(&p);
  CK(cudaFree(X));
}

/* ================================ faults ================================ */

/* Exit 10 when the call was accepted, the stream drained into cudaErrorIllegalAddress, and a
 * later GEMM is refused (the error is sticky). */
static void expect_fault(cublasStatus_t call, cublasHandle_t h, float *any)
{
  float one = 1;
  cudaError_t e = cudaStreamSynchronize(stream);
  cublasStatus_t later = cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, &one, any, 1, any, 1, &one, any, 1);
  exit(call == CUBLAS_STATUS_SUCCESS && e == cudaErrorIllegalAddress && later == CUBLAS_STATUS_EXECUTION_FAILED ? 10
                                                                                                                : 1);
}

static cublasHandle_t child_handle(void)
{
  cublasHandle_t h;
  if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS || cublasSetStream(h, stream) != CUBLAS_STATUS_SUCCESS) exit(3);
  return h;
}

static void plant_short_a(void) /* A of 4 x 3 with ld 4 needs 12 floats; it has 11 */
{
  cublasHandle_t h = child_handle();
  float one = 1, *A, *B, *C;
  CK(cudaMalloc((void **)&A, 11 * 4));
  CK(cudaMalloc((void **)&B, 12 * 4));
  CK(cudaMalloc((void **)&C, 16 * 4));
  expect_fault(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 3, &one, A, 4, B, 3, &one, C, 4), h, C);
}

static void plant_batch_b(void) /* the third batch entry of B starts past the end */
{
  cublasHandle_t h = child_handle();
  float one = 1, *A, *B, *C;
  CK(cudaMalloc((void **)&A, 64 * 4));
  CK(cudaMalloc((void **)&B, 20 * 4));
  CK(cudaMalloc((void **)&C, 64 * 4));
  expect_fault(
      cublasSgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &one, A, 2, 4, B, 2, 10, &one, C, 2, 4, 3), h, C);
}

static void lt_plant(int what) /* 0: D too small, 1: bias in host memory, 2: workspace too small */
{
  cublasHandle_t h = child_handle();
  cublasLtHandle_t lt;
  if (cublasLtCreate(&lt) != CUBLAS_STATUS_SUCCESS) exit(3);
  Gemm g = shape(0, 0, 8, 8, 8, 1, 1.0f, 0.0f, 0);
  Plan p = plan_new(&g, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, what == 2 ? 1u << 16 : 0);
  float one = 1, zero = 0, *A, *D, *host_bias = malloc(64 * 4);
  void *work;
  CK(cudaMalloc((void **)&A, 4096));
  CK(cudaMalloc((void **)&D, what == 0 ? 98 * 4 : 4096));
  CK(cudaMalloc(&work, 128)); /* the algorithm below needs 256 bytes */
  if (what == 1) {
    uint32_t epi = CUBLASLT_EPILOGUE_BIAS;
    set_desc(p.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi);
    set_desc(p.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &host_bias, sizeof host_bias);
  }
  cublasLtMatmulHeuristicResult_t r;
  int found = 0;
  if (cublasLtMatmulAlgoGetHeuristic(lt, p.op, p.a, p.b, p.c, p.d, p.pref, 1, &r, &found) || found != 1) exit(4);
  expect_fault(cublasLtMatmul(lt, p.op, &one, A, p.a, A, p.b, &zero, D, p.d, D, p.d, &r.algo, work,
                              what == 2 ? r.workspaceSize : 0, stream),
               h, A);
}
static void plant_lt_d(void) { lt_plant(0); }
static void plant_lt_bias(void) { lt_plant(1); }
static void plant_lt_work(void) { lt_plant(2); }

static void test_faults(void)
{
  struct {
    void (*fn)(void);
    const char *want;
  } cases[] = {{plant_short_a, "cublasSgemm: operand A"},
               {plant_batch_b, "cublasSgemmStridedBatched: operand B"},
               {plant_lt_d, "cublasLtMatmul: operand D"},
               {plant_lt_bias, "not inside a live device allocation"},
               {plant_lt_work, "cublasLtMatmul: workspace of 256 bytes"}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    int saw = 0, rc = emu_child(cases[i].fn, cases[i].want, &saw);
    EXPECT(rc == 10 && saw, "fault %zu (%s): child exit %d, message seen %d", i, cases[i].want, rc, saw);
  }
}

int main(void)
{
  CK(cudaSetDevice(0));
  CK(cudaStreamCreate(&stream));
  test_blas_handle();
  cublasHandle_t h;
  cublasLtHandle_t lt;
  OK(cublasCreate(&h));
  OK(cublasSetStream(h, stream));
  OK(cublasLtCreate(&lt));
  test_blas_products(h);
  test_blas_checks(h);
  test_lt_attributes();
  test_lt_checks(lt);
  test_lt_algo(lt);
  test_lt_products(lt);
  test_faults();
  OK(cublasLtDestroy(lt));
  OK(cublasDestroy(h));
  STATUS(cublasLtDestroy(lt), CUBLAS_STATUS_NOT_INITIALIZED);
  CK(cudaStreamDestroy(stream));
  printf("test_emu_cublas: %d passed, %d failed\n", n_pass, n_fail);
  return n_fail ? 1 : 0;
}
