/* GEMMs of the CUDA backend through cuBLASLt with fp32 accumulation (CUBLAS_COMPUTE_32F, fp32
 * alpha and beta: no TF32, so fp32 results match the CPU's sgemm to rounding).  A, B and C are
 * of the table's storage type: fp32, or bf16/fp16 (the tensor cores' products of 16-bit numbers
 * are exact in fp32 and summed in fp32; D = alpha sum + beta C is rounded once to the type, the
 * rounding the mixed-precision wrapper does on its fp32 result, so the two agree to the order of
 * the sums).  A 16-bit table's gemm_wgrad keeps C in fp32 (the main gradient, beta 1).  With a
 * 16-bit C the heuristic may only split K with its partial sums in fp32 (the preference's
 * reduction schemes: none or compute type), never in the 16-bit output.
 *
 * Fused epilogues (the table's gemm_bias, gemm_bias_gelu, gemm_dgelu_bgrad): cuBLASLt's BIAS,
 * GELU_AUX_BIAS (the pre-activation kept as the aux matrix, ld N: a multiple of 8, as cuBLASLt
 * requires) and DGELU (the aux read back).  In column-major terms C^T is [N, M], so the bias of
 * our columns is cuBLASLt's bias over D's rows, as it wants.  The bias gradient is not
 * DGELU_BGRAD's: cuBLASLt stores that vector in D's type, and the main gradient is fp32; the
 * backend's column-sum kernel reads the 16-bit C instead (one pass).  Where an epilogue cannot
 * run (N not a multiple of 8 for the aux matrix, the heuristic without an algorithm, K = 0) the
 * plan records it, stderr says so once per shape, and the op runs gemm and the kernels.
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
 * Run on a GPU (NVIDIA H200, 2026-11-26): test_ops and test_cuda_model pass; see ptdp-gpu(7). */
#include "cuda_gemm_map.h"
#include "cuda_internal.h"

#include "ptdp/error.h"
#include "ptdp/error_gpu.h"

#include <stdio.h>
#include <string.h>

/* The largest power of two (at most 256) dividing every address and row stride in bytes
 * (elements of es_ab bytes in A and B, es_c in C). */
static int alignment(const void *A, const void *B, const void *C, int lda, int ldb, int ldc, size_t es_ab, size_t es_c)
{
  uintptr_t bits = (uintptr_t)A | (uintptr_t)B | (uintptr_t)C | ((uintptr_t)lda * es_ab) | ((uintptr_t)ldb * es_ab) |
                   ((uintptr_t)ldc * es_c) | 256;
  return (int)(bits & -bits);
}

cudaDataType ptdp_cu_data_type(ptdp_dtype t)
{
  return t == PTDP_BF16 ? CUDA_R_16BF : t == PTDP_F16 ? CUDA_R_16F : CUDA_R_32F;
}

/* The epilogue of a product. */
enum { EPI_NONE = 0, EPI_BIAS = 1, EPI_GELU_AUX_BIAS = 2, EPI_DGELU = 3 };
typedef struct {
  int kind;
  const void *bias, *aux; /* bias [N] (BIAS, GELU_AUX_BIAS); aux [M, N] (written, or read by DGELU) */
} epilogue;
static const char *const epi_name[] = {"none", "BIAS", "GELU_AUX_BIAS", "DGELU"};

static int epi_uses_aux(int kind) { return kind == EPI_GELU_AUX_BIAS || kind == EPI_DGELU; }
static int epi_uses_bias(int kind) { return kind == EPI_BIAS || kind == EPI_GELU_AUX_BIAS; }

/* The largest power of two (at most 16: vector loads) dividing the epilogue's pointers. */
static int epi_alignment(const epilogue *e)
{
  uintptr_t bits = (epi_uses_bias(e->kind) ? (uintptr_t)e->bias : 0) | (epi_uses_aux(e->kind) ? (uintptr_t)e->aux : 0) |
                   16;
  return (int)(bits & -bits);
}

/* This call's bias and aux pointers into the plan's descriptor (set anew on every call). */
static int epi_pointers(cublasLtMatmulDesc_t op, const epilogue *e)
{
  if (epi_uses_bias(e->kind))
    PTDP_CALL_CUBLAS(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &e->bias, sizeof e->bias));
  if (epi_uses_aux(e->kind))
    PTDP_CALL_CUBLAS(
        cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &e->aux, sizeof e->aux));
  return PTDP_OK;
}

/* The epilogue's attributes; aux_ld in elements (D's rows: our N). */
static int epi_setup(cublasLtMatmulDesc_t op, const epilogue *e, int64_t aux_ld)
{
  static const cublasLtEpilogue_t lt[] = {CUBLASLT_EPILOGUE_DEFAULT, CUBLASLT_EPILOGUE_BIAS,
                                          CUBLASLT_EPILOGUE_GELU_AUX_BIAS, CUBLASLT_EPILOGUE_DGELU};
  if (e->kind == EPI_NONE) return PTDP_OK;
  PTDP_CALL_CUBLAS(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &lt[e->kind], sizeof lt[0]));
  if (epi_uses_aux(e->kind))
    PTDP_CALL_CUBLAS(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &aux_ld, sizeof aux_ld));
  PTDP_CALL(epi_pointers(op, e));
  return PTDP_OK;
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

/* The heuristic's limits: our workspace, the alignment of this shape's pointers, and with a
 * 16-bit C (c16) split-K partial sums in fp32 only. */
static int pref_set(cublasLtMatmulPreference_t pref, const size_t *work_bytes, uint32_t align, int c16)
{
  static const uint32_t fp32_sums = CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
  static const cublasLtMatmulPreferenceAttributes_t aligns[] = {
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
  PTDP_CALL_CUBLAS(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, work_bytes,
                                                        sizeof *work_bytes));
  for (size_t i = 0; i < sizeof aligns / sizeof aligns[0]; i++)
    PTDP_CALL_CUBLAS(cublasLtMatmulPreferenceSetAttribute(pref, aligns[i], &align, sizeof align));
  if (c16)
    PTDP_CALL_CUBLAS(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &fp32_sums,
                                                          sizeof fp32_sums));
  return PTDP_OK;
}

/* The heuristic's best algorithm for the plan's descriptors; *found 0 when it has none. */
static int plan_algo(ptdp_cu_ctx *c, ptdp_cu_plan *p, cublasLtMatmulHeuristicResult_t *res, int *found)
{
  cublasLtMatmulPreference_t pref;
  PTDP_CALL_CUBLAS(cublasLtMatmulPreferenceCreate(&pref));
  int err = pref_set(pref, &c->lt_work_bytes, (uint32_t)p->align, p->c_type != PTDP_F32);
  cublasStatus_t st = CUBLAS_STATUS_SUCCESS;
  if (!err) st = cublasLtMatmulAlgoGetHeuristic(c->lt, p->op, p->a, p->b, p->c, p->c, pref, 1, res, found);
  if (p->epi != EPI_NONE && st == CUBLAS_STATUS_NOT_SUPPORTED) { /* an epilogue declined: not an error */
    st = CUBLAS_STATUS_SUCCESS;
    *found = 0;
  }
  cublasStatus_t sd = cublasLtMatmulPreferenceDestroy(pref);
  if (err) return ptdp_error_trace(err, __FILE__, __LINE__, __func__);
  PTDP_CALL_CUBLAS(st);
  PTDP_CALL_CUBLAS(sd);
  return PTDP_OK;
}

/* An epilogue plan that cannot run: recorded (the op then runs gemm and the kernels), said once. */
static int plan_decline(ptdp_cu_plan *p, const char *why)
{
  fprintf(stderr, "ptdp: cuda: epilogue %s declined for C[%d,%d] = op(A) op(B), K %d, %s (%s): gemm and kernels\n",
          epi_name[p->epi], p->M, p->N, p->K, ptdp_dtype_name((ptdp_dtype)p->c_type), why);
  p->declined = 1;
  return PTDP_OK;
}

static int plan_build(ptdp_cu_ctx *c, ptdp_cu_plan *p, const ptdp_cu_gemm_cm *g, const epilogue *e)
{
  if (epi_uses_aux(p->epi) && (p->N % 8 != 0 || p->ldc != p->N))
    return plan_decline(p, "the aux matrix's ld must be a multiple of 8");
  cublasOperation_t opa = g->trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, opb = g->trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  PTDP_CALL_CUBLAS(cublasLtMatmulDescCreate(&p->op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  PTDP_CALL_CUBLAS(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSA, &opa, sizeof opa));
  PTDP_CALL_CUBLAS(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSB, &opb, sizeof opb));
  PTDP_CALL(epi_setup(p->op, e, g->m));
  const cudaDataType tab = ptdp_cu_data_type((ptdp_dtype)p->ab_type), tc = ptdp_cu_data_type((ptdp_dtype)p->c_type);
  PTDP_CALL_CUBLAS(cublasLtMatrixLayoutCreate(&p->a, tab, g->a_rows, g->a_cols, g->lda));
  PTDP_CALL_CUBLAS(cublasLtMatrixLayoutCreate(&p->b, tab, g->b_rows, g->b_cols, g->ldb));
  PTDP_CALL_CUBLAS(cublasLtMatrixLayoutCreate(&p->c, tc, g->m, g->n, g->ldc));
  cublasLtMatmulHeuristicResult_t res;
  int found = 0;
  PTDP_CALL(plan_algo(c, p, &res, &found));
  if (!found && p->epi != EPI_NONE) return plan_decline(p, "the heuristic has no algorithm");
  if (!found)
    return PTDP_FAIL(PTDP_ERR_LIB,
                           "cuBLASLt has no algorithm for C[%d,%d] = op(A) op(B), K %d, ld %d %d %d, align %d, "
                           "A and B %s, C %s", p->M, p->N, p->K, p->lda, p->ldb, p->ldc, p->align,
                           ptdp_dtype_name((ptdp_dtype)p->ab_type), ptdp_dtype_name((ptdp_dtype)p->c_type));
  p->algo = res.algo;
  return PTDP_OK;
}

/* The plan of this shape: found, or built in a free (or the oldest) slot. */
static int plan_get(ptdp_cu_ctx *c, const ptdp_cu_plan *key, const ptdp_cu_gemm_cm *g, const epilogue *e,
                    ptdp_cu_plan **out)
{
  for (int i = 0; i < c->nplans; i++) {
    ptdp_cu_plan *p = &c->plans[i];
    if (p->ta == key->ta && p->tb == key->tb && p->M == key->M && p->N == key->N && p->K == key->K &&
        p->lda == key->lda && p->ldb == key->ldb && p->ldc == key->ldc && p->align == key->align &&
        p->beta0 == key->beta0 && p->ab_type == key->ab_type && p->c_type == key->c_type && p->epi == key->epi &&
        p->ealign == key->ealign) {
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
  int err = plan_build(c, p, g, e);
  if (err) {
    plan_destroy(p); /* zeroed: M = 0 matches no key (M = 0 never gets here) */
    return ptdp_error_trace(err, __FILE__, __LINE__, __func__);
  }
  *out = p;
  return PTDP_OK;
}

/* C = beta C without a product (K = 0): zeros under beta 0, as sgemm writes, whatever C held
 * (NaN included); rows scaled otherwise. */
static int scale_only(ptdp_cu_ctx *c, ptdp_dtype tc, int M, int N, float beta, void *C, int ldc)
{
  const size_t es = ptdp_dtype_size(tc);
  if (beta == 1.0f) return PTDP_OK;
  if (beta == 0.0f)
    PTDP_CALL_CUDA(cudaMemset2DAsync(C, (size_t)ldc * es, 0, (size_t)N * es, (size_t)M, c->stream));
  else
    for (int r = 0; r < M; r++)
      PTDP_CALL_CUDA(ptdp_cuk_scale_s(c->stream, tc, (char *)C + (size_t)r * ldc * es, beta, (size_t)N));
  return PTDP_OK;
}

/* C = alpha op(A) op(B) + beta C with A, B of type tab and C of type tc (row-major), then the
 * epilogue e (NULL: none); *declined (with e) 1 when the epilogue cannot run and nothing ran. */
static int gemm_typed(ptdp_backend *be, ptdp_dtype tab, ptdp_dtype tc, int ta, int tb, int M, int N, int K,
                      float alpha, const void *A, int lda, const void *B, int ldb, float beta, void *C, int ldc,
                      const epilogue *e, int *declined)
{
  static const epilogue none = {EPI_NONE, NULL, NULL};
  if (!e) e = &none;
  if (declined) *declined = 0;
  ptdp_cu_ctx *c = be->ctx;
  PTDP_CHECK_LOCAL(M >= 0 && N >= 0 && K >= 0 && lda >= (ta ? (M > 1 ? M : 1) : (K > 1 ? K : 1)) &&
                       ldb >= (tb ? (K > 1 ? K : 1) : (N > 1 ? N : 1)) && ldc >= (N > 1 ? N : 1),
                   "invalid gemm arguments M=%d N=%d K=%d lda=%d ldb=%d ldc=%d (ta=%d tb=%d)", M, N, K, lda, ldb,
                   ldc, ta, tb);
  if (e->kind != EPI_NONE && (K == 0 || M == 0 || N == 0)) { /* the kernels handle the empty cases */
    *declined = 1;
    return PTDP_OK;
  }
  if (M == 0 || N == 0) return PTDP_OK;
  if (K == 0) return scale_only(c, tc, M, N, beta, C, ldc); /* no product to plan */
  ptdp_cu_gemm_cm g = ptdp_cu_gemm_map(ta, tb, M, N, K, lda, ldb, ldc);
  ptdp_cu_plan key = {.ta = ta, .tb = tb, .M = M, .N = N, .K = K, .lda = lda, .ldb = ldb, .ldc = ldc,
                      .align = alignment(A, B, C, lda, ldb, ldc, ptdp_dtype_size(tab), ptdp_dtype_size(tc)),
                      .beta0 = beta == 0.0f, .ab_type = (int)tab, .c_type = (int)tc, .epi = e->kind,
                      .ealign = epi_alignment(e)};
  ptdp_cu_plan *p = NULL;
  PTDP_CALL(plan_get(c, &key, &g, e, &p));
  if (p->declined) {
    *declined = 1;
    return PTDP_OK;
  }
  PTDP_CALL(epi_pointers(p->op, e));
  /* operands swapped: cuBLASLt's A is our B */
  PTDP_CALL_CUBLAS(cublasLtMatmul(c->lt, p->op, &alpha, B, p->a, A, p->b, &beta, C, p->c, C, p->c, &p->algo,
                                  c->lt_work, c->lt_work_bytes, c->stream));
  return PTDP_OK;
}

int ptdp_cu_gemm(ptdp_backend *be, int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
                 const float *B, int ldb, float beta, float *C, int ldc)
{
  const ptdp_dtype t = ((ptdp_cu_ctx *)be->ctx)->t;
  PTDP_CALL(gemm_typed(be, t, t, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, NULL, NULL));
  return PTDP_OK;
}

int ptdp_cu_gemm_wgrad(ptdp_backend *be, int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
                       const float *B, int ldb, float *C, int ldc)
{
  const ptdp_dtype t = ((ptdp_cu_ctx *)be->ctx)->t;
  PTDP_CALL(gemm_typed(be, t, PTDP_F32, ta, tb, M, N, K, alpha, A, lda, B, ldb, 1.0f, C, ldc, NULL, NULL));
  return PTDP_OK;
}

/* ---- the fused epilogues (ptdp/backend.h), each with its unfused sequence where declined ---- */

/* C = A B [M, N] (row stride N) with the epilogue e fused in where cuBLASLt runs it; where it
 * declines, *declined and the plain product into plain, for the caller's kernels to finish. */
static int gemm_epilogue(ptdp_backend *be, const epilogue *e, int ta, int tb, int M, int N, int K, const float *A,
                         int lda, const float *B, int ldb, float *C, float *plain, int *declined)
{
  const ptdp_dtype t = ((ptdp_cu_ctx *)be->ctx)->t;
  *declined = 0;
  PTDP_CALL(gemm_typed(be, t, t, ta, tb, M, N, K, 1.0f, A, lda, B, ldb, 0.0f, C, N, e, declined));
  if (*declined) PTDP_CALL(ptdp_cu_gemm(be, ta, tb, M, N, K, 1.0f, A, lda, B, ldb, 0.0f, plain, N));
  return PTDP_OK;
}

int ptdp_cu_gemm_bias(ptdp_backend *be, int ta, int tb, int M, int N, int K, const float *A, int lda, const float *B,
                      int ldb, const float *bias, float *C)
{
  const epilogue e = {EPI_BIAS, bias, NULL};
  int declined;
  PTDP_CALL(gemm_epilogue(be, &e, ta, tb, M, N, K, A, lda, B, ldb, C, C, &declined));
  if (declined) PTDP_CALL(be->bias_forward(be, C, bias, M, N));
  return PTDP_OK;
}

/* D = C, aux = pre */
int ptdp_cu_gemm_bias_gelu(ptdp_backend *be, int ta, int tb, int M, int N, int K, const float *A, int lda,
                           const float *B, int ldb, const float *bias, float *pre, float *C)
{
  const epilogue e = {EPI_GELU_AUX_BIAS, bias, pre};
  int declined;
  PTDP_CALL(gemm_epilogue(be, &e, ta, tb, M, N, K, A, lda, B, ldb, C, pre, &declined));
  if (!declined) return PTDP_OK;
  PTDP_CALL(be->bias_forward(be, pre, bias, M, N));
  PTDP_CALL(be->gelu_forward(be, pre, C, (size_t)M * N));
  return PTDP_OK;
}

/* D = C = T gelu'(pre) (DGELU), then db += column sums of the stored C (the kernel, in fp32) */
int ptdp_cu_gemm_dgelu_bgrad(ptdp_backend *be, int ta, int tb, int M, int N, int K, const float *A, int lda,
                             const float *B, int ldb, const float *pre, float *C, float *db)
{
  const epilogue e = {EPI_DGELU, NULL, pre};
  int declined;
  PTDP_CALL(gemm_epilogue(be, &e, ta, tb, M, N, K, A, lda, B, ldb, C, C, &declined));
  if (declined) PTDP_CALL(be->gelu_backward(be, pre, C, C, (size_t)M * N));
  PTDP_CALL(be->bias_backward(be, C, db, M, N));
  return PTDP_OK;
}
