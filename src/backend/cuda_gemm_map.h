/* Row-major GEMM arguments as one column-major product (pure; host and tests include it).
 *
 * Row-major C[M, N] = op(A)[M, K] op(B)[K, N], strides lda, ldb, ldc, is column-major
 * C'[N, M] = op'(B') op'(A'), where a row-major matrix read column-major is its transpose:
 *     cuBLAS A' = our B: stored [K, N] row-major (tb = 0) = column-major [N, K], no transpose;
 *                        stored [N, K] (tb = 1) = column-major [K, N], transposed;
 *     cuBLAS B' = our A: [M, K] (ta = 0) = column-major [K, M], no transpose; ta = 1 transposed.
 * Worked example: M = 2, N = 3, K = 4, no transposes: m = 3, n = 2, k = 4; A' is 3 x 4 with
 * ld ldb, B' is 4 x 2 with ld lda, C' is 3 x 2 with ld ldc. */
#ifndef PTDP_CUDA_GEMM_MAP_H
#define PTDP_CUDA_GEMM_MAP_H

typedef struct {
  int trans_a, trans_b; /* of cuBLAS's A' (our B) and B' (our A) */
  int m, n, k;          /* C' is m x n column-major */
  int a_rows, a_cols, lda; /* A' as stored: rows x cols column-major, leading dimension */
  int b_rows, b_cols, ldb;
  int ldc;
} ptdp_cu_gemm_cm;

static inline ptdp_cu_gemm_cm ptdp_cu_gemm_map(int ta, int tb, int M, int N, int K, int lda, int ldb, int ldc)
{
  ptdp_cu_gemm_cm g;
  g.trans_a = tb;
  g.trans_b = ta;
  g.m = N;
  g.n = M;
  g.k = K;
  g.a_rows = tb ? K : N;
  g.a_cols = tb ? N : K;
  g.lda = ldb;
  g.b_rows = ta ? M : K;
  g.b_cols = ta ? K : M;
  g.ldb = lda;
  g.ldc = ldc;
  return g;
}

#endif
