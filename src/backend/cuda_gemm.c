/* GEMMs of the CUDA backend through cuBLASLt, fp32 in and out with fp32 accumulation
 * (CUBLAS_COMPUTE_32F: no TF32, so results match the CPU's sgemm to rounding).
 *
 * Our matrices are row-major; cuBLASLt's are column-major.  A row-major [M, N] matrix with row
 * stride ld is the column-major [N, M] matrix with leading dimension ld, so
 *     C = op(A) op(B)   (row-major)   <=>   C^T = op(B)^T op(A)^T   (column-major)
 * and one column-major product with the operands swapped computes it: see cuda_gemm_map.h,
 * which the host-side test checks against a reference product without a GPU.
 *
 * A plan (descriptors, layouts and the heuristic's algorithm) is built once per shape and kept
 * (PTDP_CU_PLANS of them, oldest replaced first): a training step repeats a few dozen shapes.
 * The alignment of the pointers is part of the key, since cuBLASLt otherwise assumes 256-byte
 * aligned operands and views into a buffer (a head's Q, a micro-batch's rows) are not.
 * NOT YET RUN ON A GPU: see README, "GPUs". */
#include "cuda_gemm_map.h"
#include "cuda_internal.h"

#include "ptdp/error.h"
#include "ptdp/error_gpu.h"

#include <stdio.h>
#include <string.h>

/* The largest power of two (at most 256) dividing every address and row stride in bytes. */
static int alignment(const void *A, const void *B, const void *C, int lda, int ldb, int ldc)
{
  uintptr_t bits = (uintptr_t)A | (uintptr_t)B | (uintptr_t)C | ((uintptr_t)lda * 4) | ((uintptr_t)ldb * 4) |
                   ((uintptr_t)ldc * 4) | 256;
  return (int)(bits & -bits);
}

/* Releases cannot return a failure (plans are dropped on eviction and at destroy): print it. */
static void report_blas(cublasStatus_t st, const char *call)
{
  if (st != CUBLAS_STATUS_SUCCESS)
    fprintf(stderr, "ptdp: cuda: %s failed: %s: %s\n", call, cublasGetStatusName(st), cublasGetStatusString(st));
}

static void plan_destroy(ptdp_cu_plan *p)
{
  if (p->op) report_blas(cublasLtMatmulDescDestroy(p->op), "cublasLtMatmulDescDestroy");
  if (p->a) report_blas(cublasLtMatrixLayoutDestroy(p->a), "cublasLtMatrixLayoutDestroy");
  if (p->b) report_blas(cublasLtMatrixLayoutDestroy(p->b), "cublasLtMatrixLayoutDestroy");
  if (p->c) report_blas(cublasLtMatrixLayoutDestroy(p->c), "cublasLtMatrixLayoutDestroy");
  memset(p, 0, sizeof *p);
}

void ptdp_cu_gemm_release(ptdp_cu_ctx *c)
{
  for (int i = 0; i < c->nplans; i++) plan_destroy(&c->plans[i]);
  c->nplans = 0;
}

/* The heuristic's limits: our workspace, and the alignment of this shape's pointers. */
static int pref_set(cublasLtMatmulPreference_t pref, const size_t *work_bytes, uint32_t align)
{
  static const cublasLtMatmulPreferenceAttributes_t aligns[] = {
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
  PTDP_CALL_CUBLAS(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, work_bytes,
                                                        sizeof *work_bytes));
  for (size_t i = 0; i < sizeof aligns / sizeof aligns[0]; i++)
    PTDP_CALL_CUBLAS(cublasLtMatmulPreferenceSetAttribute(pref, aligns[i], &align, sizeof align));
  return PTDP_OK;
}

/* The heuristic's best algorithm for the plan's descriptors; *found 0 when it has none. */
static int plan_algo(ptdp_cu_ctx *c, ptdp_cu_plan *p, cublasLtMatmulHeuristicResult_t *res, int *found)
{
  cublasLtMatmulPreference_t pref;
  PTDP_CALL_CUBLAS(cublasLtMatmulPreferenceCreate(&pref));
  int err = pref_set(pref, &c->lt_work_bytes, (uint32_t)p->align);
  cublasStatus_t st = CUBLAS_STATUS_SUCCESS;
  if (!err) st = cublasLtMatmulAlgoGetHeuristic(c->lt, p->op, p->a, p->b, p->c, p->c, pref, 1, res, found);
  cublasStatus_t sd = cublasLtMatmulPreferenceDestroy(pref);
  if (err) return ptdp_error_trace(err, __FILE__, __LINE__, __func__);
  PTDP_CALL_CUBLAS(st);
  PTDP_CALL_CUBLAS(sd);
  return PTDP_OK;
}

static int plan_build(ptdp_cu_ctx *c, ptdp_cu_plan *p, const ptdp_cu_gemm_cm *g)
{
  cublasOperation_t opa = g->trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, opb = g->trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  PTDP_CALL_CUBLAS(cublasLtMatmulDescCreate(&p->op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  PTDP_CALL_CUBLAS(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSA, &opa, sizeof opa));
  PTDP_CALL_CUBLAS(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSB, &opb, sizeof opb));
  PTDP_CALL_CUBLAS(cublasLtMatrixLayoutCreate(&p->a, CUDA_R_32F, g->a_rows, g->a_cols, g->lda));
  PTDP_CALL_CUBLAS(cublasLtMatrixLayoutCreate(&p->b, CUDA_R_32F, g->b_rows, g->b_cols, g->ldb));
  PTDP_CALL_CUBLAS(cublasLtMatrixLayoutCreate(&p->c, CUDA_R_32F, g->m, g->n, g->ldc));
  cublasLtMatmulHeuristicResult_t res;
  int found = 0;
  PTDP_CALL(plan_algo(c, p, &res, &found));
  if (!found)
    return PTDP_FAIL(PTDP_ERR_LIB,
                           "cuBLASLt has no algorithm for C[%d,%d] = op(A) op(B), K %d, ld %d %d %d, align %d",
                           p->M, p->N, p->K, p->lda, p->ldb, p->ldc, p->align);
  p->algo = res.algo;
  return PTDP_OK;
}

/* The plan of this shape: found, or built in a free (or the oldest) slot. */
static int plan_get(ptdp_cu_ctx *c, const ptdp_cu_plan *key, const ptdp_cu_gemm_cm *g, ptdp_cu_plan **out)
{
  for (int i = 0; i < c->nplans; i++) {
    ptdp_cu_plan *p = &c->plans[i];
    if (p->ta == key->ta && p->tb == key->tb && p->M == key->M && p->N == key->N && p->K == key->K &&
        p->lda == key->lda && p->ldb == key->ldb && p->ldc == key->ldc && p->align == key->align &&
        p->beta0 == key->beta0) {
      *out = p;
      return PTDP_OK;
    }
  }
  ptdp_cu_plan *p = NULL;
  if (c->nplans < PTDP_CU_PLANS)
    p = &c->plans[c->nplans++];
  else {
    p = &c->plans[c->next_evict];
    c->next_evict = (c->next_evict + 1) % PTDP_CU_PLANS;
    plan_destroy(p);
  }
  *p = *key;
  p->op = NULL;
  p->a = p->b = p->c = NULL;
  int err = plan_build(c, p, g);
  if (err) {
    plan_destroy(p); /* zeroed: M = 0 matches no key (M = 0 never gets here) */
    return ptdp_error_trace(err, __FILE__, __LINE__, __func__);
  }
  *out = p;
  return PTDP_OK;
}

int ptdp_cu_gemm(ptdp_backend *be, int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
                 const float *B, int ldb, float beta, float *C, int ldc)
{
  ptdp_cu_ctx *c = be->ctx;
  PTDP_CHECK_LOCAL(M >= 0 && N >= 0 && K >= 0 && lda >= (ta ? (M > 1 ? M : 1) : (K > 1 ? K : 1)) &&
                       ldb >= (tb ? (K > 1 ? K : 1) : (N > 1 ? N : 1)) && ldc >= (N > 1 ? N : 1),
                   "invalid gemm arguments M=%d N=%d K=%d lda=%d ldb=%d ldc=%d (ta=%d tb=%d)", M, N, K, lda, ldb,
                   ldc, ta, tb);
  if (M == 0 || N == 0) return PTDP_OK;
  if (K == 0) { /* C = beta C: no product to plan */
    if (beta == 1.0f) return PTDP_OK;
    if (beta == 0.0f) /* zeros, as sgemm writes, whatever C held (NaN included) */
      PTDP_CALL_CUDA(cudaMemset2DAsync(C, (size_t)ldc * 4, 0, (size_t)N * 4, (size_t)M, c->stream));
    else
      for (int r = 0; r < M; r++) PTDP_CALL_CUDA(ptdp_cuk_scale(c->stream, C + (size_t)r * ldc, beta, (size_t)N));
    return PTDP_OK;
  }
  ptdp_cu_gemm_cm g = ptdp_cu_gemm_map(ta, tb, M, N, K, lda, ldb, ldc);
  ptdp_cu_plan key = {.ta = ta, .tb = tb, .M = M, .N = N, .K = K, .lda = lda, .ldb = ldb, .ldc = ldc,
                      .align = alignment(A, B, C, lda, ldb, ldc), .beta0 = beta == 0.0f};
  ptdp_cu_plan *p = NULL;
  PTDP_CALL(plan_get(c, &key, &g, &p));
  /* operands swapped: cuBLASLt's A is our B */
  PTDP_CALL_CUBLAS(cublasLtMatmul(c->lt, p->op, &alpha, B, p->a, A, p->b, &beta, C, p->c, C, p->c, &p->algo,
                                  c->lt_work, c->lt_work_bytes, c->stream));
  return PTDP_OK;
}
