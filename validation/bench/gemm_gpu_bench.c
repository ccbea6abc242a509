/* The practical GEMM ceiling of a GPU: C = A B through cuBLASLt, n x n x n, timed with CUDA
 * events over `reps` calls after a warm-up, in bf16 (fp32 accumulation: what a bf16 model's
 * GEMMs can reach) and in fp32 (CUBLAS_COMPUTE_32F, no TF32: what the fp32 backend's can).
 *   gemm_gpu_bench [n=8192] [reps=20]
 * prints "gemm bf16 n=... TFLOP/s=..." and "gemm fp32 ...".  Built and run by bench_gpu.sh.
 * NOT YET RUN ON A GPU. */
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#define CK(x)                                                                     \
  do {                                                                            \
    int e_ = (int)(x);                                                            \
    if (e_) {                                                                     \
      fprintf(stderr, "gemm_gpu_bench: %s failed (%d) at line %d\n", #x, e_, __LINE__); \
      exit(1);                                                                    \
    }                                                                             \
  } while (0)

static double run(cublasLtHandle_t lt, cudaDataType_t t, cublasComputeType_t ct, int n, int reps, void *work,
                  size_t wbytes)
{
  size_t es = t == CUDA_R_32F ? 4 : 2;
  void *A, *B, *C;
  CK(cudaMalloc(&A, (size_t)n * n * es));
  CK(cudaMalloc(&B, (size_t)n * n * es));
  CK(cudaMalloc(&C, (size_t)n * n * es));
  CK(cudaMemset(A, 0x3c, (size_t)n * n * es)); /* small finite values in both types */
  CK(cudaMemset(B, 0x3c, (size_t)n * n * es));
  cublasLtMatmulDesc_t op;
  cublasLtMatrixLayout_t la, lb, lc;
  CK(cublasLtMatmulDescCreate(&op, ct, CUDA_R_32F));
  CK(cublasLtMatrixLayoutCreate(&la, t, n, n, n));
  CK(cublasLtMatrixLayoutCreate(&lb, t, n, n, n));
  CK(cublasLtMatrixLayoutCreate(&lc, t, n, n, n));
  cublasLtMatmulPreference_t pref;
  CK(cublasLtMatmulPreferenceCreate(&pref));
  CK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wbytes, sizeof wbytes));
  cublasLtMatmulHeuristicResult_t res;
  int found = 0;
  CK(cublasLtMatmulAlgoGetHeuristic(lt, op, la, lb, lc, lc, pref, 1, &res, &found));
  if (!found) return 0;
  float alpha = 1.0f, beta = 0.0f;
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  for (int i = 0; i < 3; i++) CK(cublasLtMatmul(lt, op, &alpha, A, la, B, lb, &beta, C, lc, C, lc, &res.algo, work, wbytes, 0));
  CK(cudaEventRecord(e0, 0));
  for (int i = 0; i < reps; i++)
    CK(cublasLtMatmul(lt, op, &alpha, A, la, B, lb, &beta, C, lc, C, lc, &res.algo, work, wbytes, 0));
  CK(cudaEventRecord(e1, 0));
  CK(cudaEventSynchronize(e1));
  float ms = 0;
  CK(cudaEventElapsedTime(&ms, e0, e1));
  cudaFree(A);
  cudaFree(B);
  cudaFree(C);
  cublasLtMatmulPreferenceDestroy(pref);
  cublasLtMatrixLayoutDestroy(la);
  cublasLtMatrixLayoutDestroy(lb);
  cublasLtMatrixLayoutDestroy(lc);
  cublasLtMatmulDescDestroy(op);
  return 2.0 * n * (double)n * n * reps / (ms * 1e-3) / 1e12;
}

int main(int argc, char **argv)
{
  int n = argc > 1 ? atoi(argv[1]) : 8192, reps = argc > 2 ? atoi(argv[2]) : 20;
  struct cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  printf("gpu %s, %d SMs, %.0f GiB\n", prop.name, prop.multiProcessorCount, prop.totalGlobalMem / 1073741824.0);
  cublasLtHandle_t lt;
  CK(cublasLtCreate(&lt));
  size_t wbytes = 32u << 20;
  void *work;
  CK(cudaMalloc(&work, wbytes));
  printf("gemm bf16 n=%d TFLOP/s=%.1f\n", n, run(lt, CUDA_R_16BF, CUBLAS_COMPUTE_32F, n, reps, work, wbytes));
  printf("gemm fp32 n=%d TFLOP/s=%.1f\n", n, run(lt, CUDA_R_32F, CUBLAS_COMPUTE_32F, n, reps / 4 + 1, work, wbytes));
  return 0;
}
