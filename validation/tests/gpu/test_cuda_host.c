/* The CUDA backend's host-side logic, which needs no GPU (runs in every build):
 *   - the device copy of the dropout RNG (src/backend/cuda_rng.h, compiled here for the host)
 *     gives ptdp/rng.h's bits on many keys, so GPU masks can equal the CPU's;
 *   - the row-major to column-major GEMM mapping (cuda_gemm_map.h), checked by running a plain
 *     column-major reference product with the mapped arguments against a row-major one, for
 *     every transpose pair and padded strides;
 *   - the GPU of a rank (ptdp_cuda_pick_device) and the transport choice
 *     (ptdp_comm_backend_resolve), on worked examples. */
#include "ptdp/comm.h"
#include "ptdp/cuda.h"
#include "ptdp/error.h"
#include "ptdp/rng.h"

#include "../../../src/backend/cuda_gemm_map.h"
#include "../../../src/backend/cuda_rng.h"
#include "../expect.h"

#include <math.h>
#include <mpi.h>
#include <stdlib.h>

static void check_rng(void)
{
  int same = 1;
  for (uint64_t i = 0; i < 200000; i++) {
    uint64_t seed = ptdp_rng_mix(i), sample = i % 97, row = i / 7;
    uint32_t site = (uint32_t)(i % 6), layer = (uint32_t)(i % 13);
    uint64_t a = ptdp_rng_row(seed, site, layer, sample, row), b = ptdp_cu_rng_row(seed, site, layer, sample, row);
    uint64_t ca = ptdp_rng_at(a, i * 31), cb = ptdp_cu_rng_at(b, i * 31);
    same &= a == b && ca == cb && ptdp_rng_uniform(ca) == ptdp_cu_rng_uniform(cb);
  }
  EXPECT(same, "cuda_rng.h equals rng.c on 200000 keys");
}

/* row-major reference: C = op(A) op(B) */
static float rm_at(const float *X, int ld, int trans, int i, int j) { return trans ? X[(size_t)j * ld + i] : X[(size_t)i * ld + j]; }

/* column-major reference: C'(i,j) = sum_l op'(A')(i,l) op'(B')(l,j), X(i,j) = X[i + j ld] */
static float cm_at(const float *X, int ld, int trans, int i, int j) { return trans ? X[(size_t)i * ld + j] : X[(size_t)j * ld + i]; }

static void check_gemm_map(void)
{
  const int M = 5, N = 7, K = 3;
  for (int ta = 0; ta < 2; ta++)
    for (int tb = 0; tb < 2; tb++) {
      const int lda = (ta ? M : K) + 2, ldb = (tb ? K : N) + 1, ldc = N + 3;
      float A[64], B[64], C1[64] = {0}, C2[64] = {0};
      for (int i = 0; i < 64; i++) {
        A[i] = (float)((i * 7) % 11) - 5;
        B[i] = (float)((i * 5) % 13) - 6;
      }
      for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
          float s = 0;
          for (int l = 0; l < K; l++) s += rm_at(A, lda, ta, i, l) * rm_at(B, ldb, tb, l, j);
          C1[(size_t)i * ldc + j] = s;
        }
      ptdp_cu_gemm_cm g = ptdp_cu_gemm_map(ta, tb, M, N, K, lda, ldb, ldc);
      EXPECT(g.m == N && g.n == M && g.k == K, "map: m n k");
      EXPECT((g.trans_a ? g.a_cols : g.a_rows) == g.m && (g.trans_a ? g.a_rows : g.a_cols) == g.k &&
                 (g.trans_b ? g.b_cols : g.b_rows) == g.k && (g.trans_b ? g.b_rows : g.b_cols) == g.n &&
                 g.lda >= g.a_rows && g.ldb >= g.b_rows,
             "map: layouts consistent (ta %d tb %d)", ta, tb);
      for (int i = 0; i < g.m; i++)
        for (int j = 0; j < g.n; j++) {
          float s = 0; /* A' is our B, B' our A */
          for (int l = 0; l < g.k; l++) s += cm_at(B, g.lda, g.trans_a, i, l) * cm_at(A, g.ldb, g.trans_b, l, j);
          C2[i + (size_t)j * g.ldc] = s;
        }
      int eq = 1;
      for (int i = 0; i < 64; i++) eq &= C1[i] == C2[i];
      EXPECT(eq, "column-major product with the mapped arguments equals the row-major one (ta %d tb %d)", ta, tb);
    }
}

static void check_choices(void)
{
  const int want[8] = {0, 1, 2, 3, 0, 1, 2, 3};
  int ok = 1;
  for (int r = 0; r < 8; r++) ok &= ptdp_cuda_pick_device(-1, r, 4) == want[r];
  EXPECT(ok, "8 ranks on 4 GPUs: 0 1 2 3 0 1 2 3");
  EXPECT(ptdp_cuda_pick_device(2, 5, 4) == 2, "the device key wins");
  EXPECT(ptdp_cuda_pick_device(-1, 3, 0) == -1, "no GPU: -1");
  ptdp_comm_backend cb;
  ptdp_error_set_quiet(1);
  EXPECT(!ptdp_comm_backend_resolve(PTDP_COMM_AUTO, 1, 1, 0, &cb) && cb == PTDP_COMM_NCCL, "auto, GPU, NCCL: nccl");
  EXPECT(!ptdp_comm_backend_resolve(PTDP_COMM_AUTO, 1, 1, 1, &cb) && cb == PTDP_COMM_MPI, "auto, shared GPU: mpi");
  EXPECT(!ptdp_comm_backend_resolve(PTDP_COMM_AUTO, 1, 0, 0, &cb) && cb == PTDP_COMM_MPI, "auto, no NCCL: mpi");
  EXPECT(!ptdp_comm_backend_resolve(PTDP_COMM_AUTO, 0, 1, 0, &cb) && cb == PTDP_COMM_MPI, "auto, CPU: mpi");
  EXPECT(!ptdp_comm_backend_resolve(PTDP_COMM_MPI, 1, 1, 0, &cb) && cb == PTDP_COMM_MPI, "mpi: mpi");
  EXPECT(ptdp_comm_backend_resolve(PTDP_COMM_NCCL, 1, 1, 1, &cb) == PTDP_ERR_INPUT, "nccl on a shared GPU: refused");
  EXPECT(ptdp_comm_backend_resolve(PTDP_COMM_NCCL, 0, 1, 0, &cb) == PTDP_ERR_INPUT, "nccl on the CPU: refused");
  EXPECT(ptdp_comm_backend_resolve(PTDP_COMM_NCCL, 1, 0, 0, &cb) == PTDP_ERR_INPUT, "nccl not built: refused");
  ptdp_error_clear();
  ptdp_error_set_quiet(0);
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  check_rng();
  check_gemm_map();
  check_choices();
  char why[256] = "";
  int n = ptdp_cuda_device_count(why, sizeof why);
  printf("test_cuda_host: CUDA built %d, NCCL built %d, GPUs %d%s%s\n", ptdp_cuda_built(), ptdp_nccl_built(), n,
         n < 0 ? ": " : "", n < 0 ? why : "");
  int status = expect_summary("test_cuda_host");
  MPI_Finalize();
  return status;
}
