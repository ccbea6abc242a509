/* The mixed-precision wrapper's life cycle and work space (ptdp_backend_mixed_create), on the
 * cpu and guard backends; its operations are test_ops's (every one in bf16 and fp16).
 *
 *  - t == fp32 hands inner back; bf16 and fp16 make a table with inner's name, host_accessible
 *    and stream, the storage type, and a gemm_wgrad; wrapping a wrapper, an unknown type or no
 *    backend is PTDP_ERR_INPUT with *out NULL; ptdp_dtype_name names the types.
 *  - The work space: none before the first operation and on a plain backend; after an operation
 *    at least its fp32 copies (gemm: A, B and C); kept through a smaller operation; grown by a
 *    larger one; given back by destroy, which destroys inner, as a failed create does (an inner
 *    cpu backend whose alloc, free and destroy are counted).
 *  - A model-like strided gemm: A and C are column slices of one wider matrix X (ld = X's row),
 *    as in the attention of ptdp-generate.  Values are small integers, so every product and sum
 *    is exact in fp32 and in bf16/fp16, and the result is checked exactly: C's columns hold
 *    A B, every other column of X (A's included) is as it was. */
#include "ptdp/backend.h"
#include "ptdp/error.h"
#include "ptdp/half.h"

#include "../expect.h"

#include <mpi.h>
#include <stdlib.h>
#include <string.h>

static void check_create(const char *name, ptdp_dtype t)
{
  ptdp_backend *in = NULL, *be = NULL;
  if (ptdp_backend_create(name, NULL, &in)) exit(2);
  ptdp_backend *same = NULL;
  EXPECT(!ptdp_backend_mixed_create(in, PTDP_F32, &same) && same == in, "%s: fp32 hands inner back", name);
  EXPECT(!ptdp_backend_mixed_create(in, t, &be) && be && be != in, "%s: wrapped in %s", name, ptdp_dtype_name(t));
  EXPECT(!strcmp(be->name, name) && be->host_accessible == in->host_accessible && be->stream == in->stream &&
             be->dtype == t && be->gemm_wgrad && !in->gemm_wgrad,
         "%s in %s: the table", name, ptdp_dtype_name(t));
  EXPECT(ptdp_backend_mixed_work_bytes(be) == 0 && ptdp_backend_mixed_work_bytes(in) == 0 &&
             ptdp_backend_mixed_work_bytes(NULL) == 0,
         "%s: no work space yet, none on a plain backend", name);
  /* wrapping the wrapper: refused, and the wrapper (with inner) destroyed */
  ptdp_backend *twice = (ptdp_backend *)&twice;
  ptdp_error_set_quiet(1);
  EXPECT(ptdp_backend_mixed_create(be, PTDP_BF16, &twice) == PTDP_ERR_INPUT && !twice, "%s: a wrapper wrapped", name);
  EXPECT(strstr(ptdp_error_message(), ptdp_dtype_name(t)) != NULL, "the message names the stored type: %s",
         ptdp_error_message());
  ptdp_error_clear();
  if (ptdp_backend_create(name, NULL, &in)) exit(2);
  EXPECT(ptdp_backend_mixed_create(in, (ptdp_dtype)7, &twice) == PTDP_ERR_INPUT && !twice, "%s: type 7", name);
  ptdp_error_clear();
  EXPECT(ptdp_backend_mixed_create(NULL, PTDP_F16, &twice) == PTDP_ERR_INPUT && !twice, "no backend to wrap");
  ptdp_error_clear();
  ptdp_error_set_quiet(0);
}

static void check_names(void)
{
  EXPECT(!strcmp(ptdp_dtype_name(PTDP_F32), "fp32") && !strcmp(ptdp_dtype_name(PTDP_BF16), "bf16") &&
             !strcmp(ptdp_dtype_name(PTDP_F16), "fp16") && ptdp_dtype_name((ptdp_dtype)9),
         "ptdp_dtype_name");
}

/* The op list (PTDP_BACKEND_OPS) against a table: a whole table passes ptdp_backend_check_ops;
 * each op taken out in turn is an internal error that names it (the planted mistakes). */
static void check_op_table(const char *name, ptdp_dtype t)
{
  ptdp_backend *in = NULL, *be = NULL;
  if (ptdp_backend_create(name, NULL, &in) || ptdp_backend_mixed_create(in, t, &be)) exit(2);
  EXPECT(ptdp_backend_check_ops(be) == 0, "%s in %s: every op there", name, ptdp_dtype_name(t));
  ptdp_backend copy = *be;
  int named = 0, ops = 0;
  ptdp_error_set_quiet(1);
#define TAKE_OUT(P, op)                                                                                  \
  copy.op = NULL;                                                                                        \
  ops++;                                                                                                 \
  named += ptdp_backend_check_ops(&copy) == PTDP_ERR_INTERNAL && strstr(ptdp_error_message(), #op) != NULL; \
  ptdp_error_clear();                                                                                    \
  copy.op = be->op;
  PTDP_BACKEND_OPS(TAKE_OUT, unused)
#undef TAKE_OUT
  ptdp_error_set_quiet(0);
  EXPECT(ops == 30 && named == ops, "%s: %d of %d missing ops named", name, named, ops);
  be->destroy(be);
}

/* n elements of type t on be, from host floats (exact in t: small integers) */
static void *put(ptdp_backend *be, const float *h, size_t n)
{
  const ptdp_dtype t = be->dtype;
  char *b = malloc(n * ptdp_dtype_size(t) + 1);
  void *d = NULL;
  if (!b) exit(2);
  for (size_t i = 0; i < n; i++) ptdp_half_store(b, t, i, h[i]);
  if (be->alloc(be, &d, n * ptdp_dtype_size(t)) || be->to_device(be, d, b, n * ptdp_dtype_size(t))) exit(2);
  free(b);
  return d;
}

static void get(ptdp_backend *be, float *h, const void *d, size_t n)
{
  char *b = malloc(n * ptdp_dtype_size(be->dtype) + 1);
  if (!b || be->to_host(be, b, d, n * ptdp_dtype_size(be->dtype)) || be->synchronize(be)) exit(2);
  for (size_t i = 0; i < n; i++) h[i] = ptdp_half_load(b, be->dtype, i);
  free(b);
}

/* X [M, W]; A = X[:, a0 : a0 + K], C = X[:, c0 : c0 + N] (lda = ldc = W), B [K, N] packed. */
enum { M = 9, W = 40, K = 5, N = 7, A0 = 30, C0 = 3 };

static void check_strided(ptdp_backend *be)
{
  float x[M * W], b[K * N], want[M * W], got[M * W];
  for (int i = 0; i < M * W; i++) x[i] = (float)(i % 7 - 3);
  for (int i = 0; i < K * N; i++) b[i] = (float)(i % 5 - 2);
  memcpy(want, x, sizeof x);
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      float s = 0;
      for (int k = 0; k < K; k++) s += x[i * W + A0 + k] * b[k * N + j];
      want[i * W + C0 + j] = s; /* |s| <= 5 * 3 * 2: exact in every type */
    }
  float *X = put(be, x, M * W), *B = put(be, b, K * N);
  const size_t e = ptdp_dtype_size(be->dtype);
  float *A = (float *)((char *)X + A0 * e), *C = (float *)((char *)X + C0 * e);
  EXPECT(!be->gemm(be, 0, 0, M, N, K, 1.0f, A, W, B, N, 0.0f, C, W), "strided gemm: %s", ptdp_error_message());
  get(be, got, X, M * W);
  int diff = 0;
  for (int i = 0; i < M * W; i++) diff += got[i] != want[i];
  EXPECT(diff == 0, "%s %s: strided gemm on slices of one matrix: %d elements of X wrong", be->name,
         ptdp_dtype_name(be->dtype), diff);
  be->free(be, X);
  be->free(be, B);
}

/* gemm of [m, k] by [k, n] with fresh operands (zeros: only the work space is looked at) */
static void gemm_of(ptdp_backend *be, int m, int n, int k)
{
  const size_t e = ptdp_dtype_size(be->dtype);
  void *a = NULL, *b = NULL, *c = NULL;
  if (be->alloc(be, &a, (size_t)m * k * e) || be->alloc(be, &b, (size_t)k * n * e) ||
      be->alloc(be, &c, (size_t)m * n * e))
    exit(2);
  EXPECT(!be->gemm(be, 0, 0, m, n, k, 1.0f, a, k, b, n, 0.5f, c, n), "gemm %d %d %d", m, n, k);
  be->free(be, a);
  be->free(be, b);
  be->free(be, c);
}

static void check_work(const char *name, ptdp_dtype t)
{
  ptdp_backend *be = NULL;
  if (ptdp_backend_create(name, NULL, &be) || ptdp_backend_mixed_create(be, t, &be)) exit(2);
  gemm_of(be, 100, 60, 80);
  const size_t first = ptdp_backend_mixed_work_bytes(be), need = (100 * 80 + 80 * 60 + 100 * 60) * sizeof(float);
  EXPECT(first >= need, "%s: work space %zu bytes for a gemm needing %zu", name, first, need);
  gemm_of(be, 10, 6, 8);
  EXPECT(ptdp_backend_mixed_work_bytes(be) == first, "%s: kept through a smaller gemm", name);
  gemm_of(be, 200, 60, 80);
  EXPECT(ptdp_backend_mixed_work_bytes(be) > first, "%s: grown for a larger gemm", name);
  check_strided(be);
  ptdp_backend_destroy(&be);
  EXPECT(!be, "destroy sets NULL");
}

/* A cpu backend whose alloc, free and destroy are counted (the originals are called). */
static ptdp_backend counted_orig;
static int live, destroyed;

static int counted_alloc(ptdp_backend *be, void **p, size_t bytes)
{
  int err = counted_orig.alloc(be, p, bytes);
  live += !err && *p;
  return err;
}

static void counted_free(ptdp_backend *be, void *p)
{
  live -= p != NULL;
  counted_orig.free(be, p);
}

static void counted_destroy(ptdp_backend *be)
{
  destroyed++;
  counted_orig.destroy(be);
}

static ptdp_backend *counted_cpu(void)
{
  ptdp_backend *be = NULL;
  if (ptdp_backend_cpu_create(&be)) exit(2);
  counted_orig = *be;
  be->alloc = counted_alloc;
  be->free = counted_free;
  be->destroy = counted_destroy;
  live = destroyed = 0;
  return be;
}

/* destroy gives the work space back (through its growth: one block live at a time) and
 * destroys inner; so does a failed create. */
static void check_freed(void)
{
  ptdp_backend *be = NULL, *bad = (ptdp_backend *)&bad;
  if (ptdp_backend_mixed_create(counted_cpu(), PTDP_F16, &be)) exit(2);
  gemm_of(be, 50, 40, 30);
  gemm_of(be, 500, 40, 30);
  EXPECT(live == 1, "one work space block live after growing, not %d", live);
  ptdp_backend_destroy(&be);
  EXPECT(live == 0 && destroyed == 1, "destroy: %d blocks left, inner destroyed %d times", live, destroyed);
  ptdp_error_set_quiet(1);
  EXPECT(ptdp_backend_mixed_create(counted_cpu(), (ptdp_dtype)7, &bad) && !bad && destroyed == 1,
         "a failed create destroys inner");
  if (ptdp_backend_mixed_create(counted_cpu(), PTDP_BF16, &be)) exit(2);
  EXPECT(ptdp_backend_mixed_create(be, PTDP_BF16, &bad) && !bad && destroyed == 1,
         "wrapping a wrapper destroys it (and its inner)");
  ptdp_error_clear();
  ptdp_error_set_quiet(0);
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  const char *names[] = {"cpu", "guard"};
  const ptdp_dtype types[] = {PTDP_BF16, PTDP_F16};
  check_names();
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 2; j++) {
      check_create(names[i], types[j]);
      check_work(names[i], types[j]);
      check_op_table(names[i], types[j]);
    }
  check_freed();
  int status = expect_summary("test_mixed");
  MPI_Finalize();
  return status;
}
