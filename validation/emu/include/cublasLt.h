/* The CUDA emulation's cublasLt.h (validation/emu): the part of cuBLASLt that ptdp calls, with
 * cuBLASLt's names, types, status codes and documented semantics, implemented on the host's
 * CBLAS by emu_cublaslt.cc (on emu_cublas.cc's engine).  C and C++.  Written from NVIDIA's documentation, not copied; enum
 * values are cuBLASLt's, since programs print and store them.
 *
 * What the emulation does (and what it refuses with CUBLAS_STATUS_NOT_SUPPORTED):
 *   types     A and B alike in CUDA_R_32F, CUDA_R_16F or CUDA_R_16BF, C and D alike in A's
 *             type or CUDA_R_32F, compute CUBLAS_COMPUTE_32F (or its PEDANTIC / FAST_TF32 / FAST_16F /
 *             FAST_16BF variants: all plain fp32 here), scale type CUDA_R_32F;
 *   layouts   CUBLASLT_ORDER_COL only, strided batches (BATCH_COUNT, STRIDED_BATCH_OFFSET);
 *   epilogues DEFAULT, RELU, BIAS, RELU_BIAS, GELU (tanh form), GELU_AUX, GELU_BIAS,
 *             GELU_AUX_BIAS, DGELU, DGELU_BGRAD, BGRADA, BGRADB (not the ReLU bit-mask ones);
 *   algos     one per valid problem from cublasLtMatmulAlgoGetHeuristic.  It remembers the
 *             preference's minimum alignments (default 256 bytes) and the alignment of the
 *             bias and aux pointers it saw: cublasLtMatmul with less aligned pointers returns
 *             NOT_SUPPORTED, as a GPU's kernels refuse them.  Its workspace need is the fp32
 *             partial products of a two-way split of k (m n batch 4 bytes) when the
 *             preference's MAX_WORKSPACE_BYTES allows that, else 0.
 * The product runs when the stream drains (emu::enqueue); every operand's extent is checked
 * then against the device allocations (a fault otherwise). */
#ifndef PTDP_EMU_CUBLASLT_H
#define PTDP_EMU_CUBLASLT_H

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <library_types.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cublasLtContext *cublasLtHandle_t;
typedef struct cublasLtMatmulDescEmu *cublasLtMatmulDesc_t;
typedef struct cublasLtMatrixLayoutEmu *cublasLtMatrixLayout_t;
typedef struct cublasLtMatmulPreferenceEmu *cublasLtMatmulPreference_t;

/* An algorithm: plain data the caller copies and keeps (as cuBLASLt's 64-byte struct). */
typedef struct {
  uint64_t data[8];
} cublasLtMatmulAlgo_t;

typedef struct {
  cublasLtMatmulAlgo_t algo;
  size_t workspaceSize;  /* bytes of workspace the algorithm needs */
  cublasStatus_t state;  /* CUBLAS_STATUS_SUCCESS for a usable result */
  float wavesCount;      /* device utilisation estimate: 1.0 in the emulation */
  int reserved[4];
} cublasLtMatmulHeuristicResult_t;

typedef enum {
  CUBLASLT_ORDER_COL = 0,
  CUBLASLT_ORDER_ROW = 1,
  CUBLASLT_ORDER_COL32 = 2,
  CUBLASLT_ORDER_COL4_4R2_8C = 3,
  CUBLASLT_ORDER_COL32_2R_4R4 = 4
} cublasLtOrder_t;

/* Matrix layout attributes, with the type of their value. */
typedef enum {
  CUBLASLT_MATRIX_LAYOUT_TYPE = 0,                 /* uint32_t (cudaDataType) */
  CUBLASLT_MATRIX_LAYOUT_ORDER = 1,                /* int32_t, default CUBLASLT_ORDER_COL */
  CUBLASLT_MATRIX_LAYOUT_ROWS = 2,                 /* uint64_t */
  CUBLASLT_MATRIX_LAYOUT_COLS = 3,                 /* uint64_t */
  CUBLASLT_MATRIX_LAYOUT_LD = 4,                   /* int64_t, >= rows for column order */
  CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT = 5,          /* int32_t, default 1 */
  CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET = 6, /* int64_t elements, default 0 */
  CUBLASLT_MATRIX_LAYOUT_PLANE_OFFSET = 7          /* int64_t, complex only: not emulated */
} cublasLtMatrixLayoutAttribute_t;

typedef enum {
  CUBLASLT_POINTER_MODE_HOST = 0,
  CUBLASLT_POINTER_MODE_DEVICE = 1,
  CUBLASLT_POINTER_MODE_DEVICE_VECTOR = 2,
  CUBLASLT_POINTER_MODE_ALPHA_DEVICE_VECTOR_BETA_ZERO = 3,
  CUBLASLT_POINTER_MODE_ALPHA_DEVICE_VECTOR_BETA_HOST = 4
} cublasLtPointerMode_t;

/* Matmul descriptor attributes, with the type of their value. */
typedef enum {
  CUBLASLT_MATMUL_DESC_COMPUTE_TYPE = 0,                /* int32_t (cublasComputeType_t) */
  CUBLASLT_MATMUL_DESC_SCALE_TYPE = 1,                  /* int32_t (cudaDataType) */
  CUBLASLT_MATMUL_DESC_POINTER_MODE = 2,                /* int32_t, only HOST emulated */
  CUBLASLT_MATMUL_DESC_TRANSA = 3,                      /* int32_t (cublasOperation_t) */
  CUBLASLT_MATMUL_DESC_TRANSB = 4,                      /* int32_t */
  CUBLASLT_MATMUL_DESC_TRANSC = 5,                      /* int32_t, only CUBLAS_OP_N */
  CUBLASLT_MATMUL_DESC_FILL_MODE = 6,                   /* int32_t, only FULL emulated */
  CUBLASLT_MATMUL_DESC_EPILOGUE = 7,                    /* uint32_t (cublasLtEpilogue_t) */
  CUBLASLT_MATMUL_DESC_BIAS_POINTER = 8,                /* void *: bias, or bias gradient out */
  CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE = 10,          /* int64_t elements */
  CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER = 11,       /* void *: GELU input, out or in */
  CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD = 12,            /* int64_t: >= rows of D, multiple of 8 */
  CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE = 13,  /* int64_t elements, multiple of 8 */
  CUBLASLT_MATMUL_DESC_ALPHA_VECTOR_BATCH_STRIDE = 14,  /* not emulated */
  CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET = 15,            /* int32_t, accepted and ignored */
  CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE = 22,     /* int32_t, -1: D's type */
  CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE = 26              /* int32_t, -1: D's type */
} cublasLtMatmulDescAttributes_t;

/* Epilogues: what happens to T = alpha op(A) op(B) + beta C before D is stored.  Bias vectors
 * are packed, of length rows(D), added to every column; aux is a rows(D) x cols(D) matrix with
 * leading dimension EPILOGUE_AUX_LD. */
typedef enum {
  CUBLASLT_EPILOGUE_DEFAULT = 1,        /* D = T */
  CUBLASLT_EPILOGUE_RELU = 2,           /* D = max(T, 0) */
  CUBLASLT_EPILOGUE_RELU_AUX = 130,     /* ReLU with a bit mask in aux: not emulated */
  CUBLASLT_EPILOGUE_BIAS = 4,           /* D = T + bias */
  CUBLASLT_EPILOGUE_RELU_BIAS = 6,      /* D = max(T + bias, 0) */
  CUBLASLT_EPILOGUE_RELU_AUX_BIAS = 134, /* not emulated */
  CUBLASLT_EPILOGUE_DRELU = 136,        /* not emulated */
  CUBLASLT_EPILOGUE_DRELU_BGRAD = 152,  /* not emulated */
  CUBLASLT_EPILOGUE_GELU = 32,          /* D = gelu(T) */
  CUBLASLT_EPILOGUE_GELU_AUX = 160,     /* aux = T, D = gelu(T) */
  CUBLASLT_EPILOGUE_GELU_BIAS = 36,     /* D = gelu(T + bias) */
  CUBLASLT_EPILOGUE_GELU_AUX_BIAS = 164, /* aux = T + bias, D = gelu(T + bias) */
  CUBLASLT_EPILOGUE_DGELU = 192,        /* D = T gelu'(aux) */
  CUBLASLT_EPILOGUE_DGELU_BGRAD = 208,  /* D = T gelu'(aux), bias[i] = sum over columns j of D[i, j] */
  CUBLASLT_EPILOGUE_BGRADA = 256,       /* D = T, bias[i] = sum over p < k of op(A)[i, p] (length m) */
  CUBLASLT_EPILOGUE_BGRADB = 512        /* D = T, bias[j] = sum over p < k of op(B)[p, j] (length n) */
} cublasLtEpilogue_t;

/* Heuristic preference attributes, with the type of their value. */
typedef enum {
  CUBLASLT_MATMUL_PREF_SEARCH_MODE = 0,          /* uint32_t, accepted and ignored */
  CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES = 1,  /* uint64_t, default 0 */
  CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK = 3, /* uint32_t, bits of cublasLtReductionScheme_t */
  CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES = 5, /* uint32_t, default 256 */
  CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES = 6,
  CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES = 7,
  CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES = 8,
  CUBLASLT_MATMUL_PREF_MAX_WAVES_COUNT = 9,      /* float, accepted and ignored */
  CUBLASLT_MATMUL_PREF_IMPL_MASK = 12            /* uint64_t, accepted and ignored */
} cublasLtMatmulPreferenceAttributes_t;

/* Where split-K partial sums may be reduced (bits of CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK;
 * the emulated algorithm sums in fp32 whatever the mask allows, as COMPUTE_TYPE). */
typedef enum {
  CUBLASLT_REDUCTION_SCHEME_NONE = 0,
  CUBLASLT_REDUCTION_SCHEME_INPLACE = 1,     /* in the output buffer, in the output type */
  CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE = 2, /* in the workspace, in the compute type */
  CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE = 4,  /* in the workspace, in the output type */
  CUBLASLT_REDUCTION_SCHEME_MASK = 0x7
} cublasLtReductionScheme_t;

cublasStatus_t cublasLtCreate(cublasLtHandle_t *lightHandle);
cublasStatus_t cublasLtDestroy(cublasLtHandle_t lightHandle);
const char *cublasLtGetStatusName(cublasStatus_t status);
const char *cublasLtGetStatusString(cublasStatus_t status);
size_t cublasLtGetVersion(void);

/* Set: INVALID_VALUE for a null buf, a size not the attribute's, an unknown attribute or a
 * value out of its range.  Get: sizeInBytes 0 asks the size (into *sizeWritten); otherwise buf
 * must be non-null and sizeInBytes exactly the attribute's size. */
cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *matLayout, cudaDataType type, uint64_t rows,
                                          uint64_t cols, int64_t ld);
cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t matLayout);
cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t matLayout, cublasLtMatrixLayoutAttribute_t attr,
                                                const void *buf, size_t sizeInBytes);
cublasStatus_t cublasLtMatrixLayoutGetAttribute(cublasLtMatrixLayout_t matLayout, cublasLtMatrixLayoutAttribute_t attr,
                                                void *buf, size_t sizeInBytes, size_t *sizeWritten);

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *matmulDesc, cublasComputeType_t computeType,
                                        cudaDataType_t scaleType);
cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t matmulDesc);
cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t matmulDesc, cublasLtMatmulDescAttributes_t attr,
                                              const void *buf, size_t sizeInBytes);
cublasStatus_t cublasLtMatmulDescGetAttribute(cublasLtMatmulDesc_t matmulDesc, cublasLtMatmulDescAttributes_t attr,
                                              void *buf, size_t sizeInBytes, size_t *sizeWritten);

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *pref);
cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref);
cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t pref,
                                                    cublasLtMatmulPreferenceAttributes_t attr, const void *buf,
                                                    size_t sizeInBytes);
cublasStatus_t cublasLtMatmulPreferenceGetAttribute(cublasLtMatmulPreference_t pref,
                                                    cublasLtMatmulPreferenceAttributes_t attr, void *buf,
                                                    size_t sizeInBytes, size_t *sizeWritten);

/* At most one result (*returnAlgoCount 0 or 1).  INVALID_VALUE for requestedAlgoCount <= 0, a
 * null argument or a problem in conflict (shapes, leading dimensions, batch counts, epilogue
 * pointers and aux leading dimension); NOT_SUPPORTED for a combination not emulated. */
cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t operationDesc,
                                              cublasLtMatrixLayout_t Adesc, cublasLtMatrixLayout_t Bdesc,
                                              cublasLtMatrixLayout_t Cdesc, cublasLtMatrixLayout_t Ddesc,
                                              cublasLtMatmulPreference_t preference, int requestedAlgoCount,
                                              cublasLtMatmulHeuristicResult_t heuristicResultsArray[],
                                              int *returnAlgoCount);

/* D = epilogue(alpha op(A) op(B) + beta C); C and D may be the same memory (then Cdesc must
 * describe it as Ddesc does).  algo NULL: any alignment, no workspace.  INVALID_VALUE as for
 * the heuristic and for workspaceSizeInBytes below the algorithm's need or a null workspace
 * it needs; NOT_SUPPORTED for pointers less aligned than the algorithm assumes. */
cublasStatus_t cublasLtMatmul(cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t computeDesc, const void *alpha,
                              const void *A, cublasLtMatrixLayout_t Adesc, const void *B,
                              cublasLtMatrixLayout_t Bdesc, const void *beta, const void *C,
                              cublasLtMatrixLayout_t Cdesc, void *D, cublasLtMatrixLayout_t Ddesc,
                              const cublasLtMatmulAlgo_t *algo, void *workspace, size_t workspaceSizeInBytes,
                              cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
