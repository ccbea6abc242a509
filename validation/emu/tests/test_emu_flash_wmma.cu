// Kernels of test_emu_flash_wmma.c: the emulated nvcuda::wmma (validation/emu/include/mma.h)
// on one warp, and the misuses it must refuse (each launched alone, in a child process).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <mma.h>

using namespace nvcuda;

// D [16, 16] = A [16, K] B [K, 16] + C, K = 16 kt; A, B in the layouts LA, LB (leading
// dimensions: A row_major K, col_major 16; B row_major 16, col_major K); C row-major; D stored
// row-major (dcol 0) or column-major (dcol 1).
template <typename T, typename LA, typename LB>
__global__ void wmma_gemm(int kt, const T *A, const T *B, const float *C, float *D, int dcol)
{
  const bool acol = std::is_same<LA, wmma::col_major>::value, bcol = std::is_same<LB, wmma::col_major>::value;
  const int K = 16 * kt;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
  wmma::load_matrix_sync(acc, C, 16, wmma::mem_row_major);
  for (int k = 0; k < kt; k++) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, T, LA> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, T, LB> b;
    wmma::load_matrix_sync(a, acol ? A + 16 * k * 16 : A + 16 * k, acol ? 16 : K);
    wmma::load_matrix_sync(b, bcol ? B + 16 * k : B + 16 * k * 16, bcol ? K : 16);
    wmma::mma_sync(acc, a, b, acc);
  }
  wmma::store_matrix_sync(D, acc, 16, dcol ? wmma::mem_col_major : wmma::mem_row_major);
}

template <typename T, typename LA, typename LB>
static cudaError_t launch_gemm(int kt, const void *A, const void *B, const float *C, float *D, int dcol)
{
  void (*k)(int, const T *, const T *, const float *, float *, int) = wmma_gemm<T, LA, LB>;
  k<<<1, 32>>>(kt, (const T *)A, (const T *)B, C, D, dcol);
  return cudaGetLastError();
}

// type 0 bf16, 1 fp16; la, lb 0 row_major, 1 col_major
extern "C" cudaError_t emu_wmma_gemm(int type, int la, int lb, int kt, const void *A, const void *B, const float *C,
                                     float *D, int dcol)
{
  typedef wmma::row_major R;
  typedef wmma::col_major Co;
  switch (type * 4 + la * 2 + lb) {
  case 0: return launch_gemm<__nv_bfloat16, R, R>(kt, A, B, C, D, dcol);
  case 1: return launch_gemm<__nv_bfloat16, R, Co>(kt, A, B, C, D, dcol);
  case 2: return launch_gemm<__nv_bfloat16, Co, R>(kt, A, B, C, D, dcol);
  case 3: return launch_gemm<__nv_bfloat16, Co, Co>(kt, A, B, C, D, dcol);
  case 4: return launch_gemm<__half, R, R>(kt, A, B, C, D, dcol);
  case 5: return launch_gemm<__half, R, Co>(kt, A, B, C, D, dcol);
  case 6: return launch_gemm<__half, Co, R>(kt, A, B, C, D, dcol);
  default: return launch_gemm<__half, Co, Co>(kt, A, B, C, D, dcol);
  }
}

// The misuses (A: 2 tiles of 16 x 16 bf16, D: 16 x 16 floats):
//   0 lane 3 returns before mma_sync        3 ldm 20 (not a multiple of 8)
//   1 lane 3 at another wmma call           4 accumulator stored to shared memory and read
//   2 pointer 16 bytes off 256-bit            back as an operand without __syncwarp
__global__ void wmma_misuse(int kind, const __nv_bfloat16 *A, float *D)
{
  __shared__ float st[256];
  __shared__ unsigned short sh_bits[256]; // (a __shared__ array of a class type would be constructed by every
  __nv_bfloat16 *sh = (__nv_bfloat16 *)sh_bits; //  thread in the emulation's thread_local)
  const int lane = threadIdx.x % 32;
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> a;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::row_major> b;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
  wmma::fill_fragment(acc, 0.0f);
  if (kind == 2) wmma::load_matrix_sync(a, A + 8, 16);
  else if (kind == 3) wmma::load_matrix_sync(a, A, 20);
  else wmma::load_matrix_sync(a, A, 16);
  wmma::load_matrix_sync(b, A + 256, 16);
  if (kind == 0 && lane == 3) return;
  if (kind == 1 && lane == 3) wmma::load_matrix_sync(b, A, 16);
  else wmma::mma_sync(acc, a, b, acc);
  if (kind == 4) {
    wmma::store_matrix_sync(st, acc, 16, wmma::mem_row_major);
    __syncwarp();
    // pairs of elements per lane: the race detector watches 4-byte words
    for (int i = 2 * lane; i < 256; i += 64) sh[i] = __nv_bfloat16(st[i]), sh[i + 1] = __nv_bfloat16(st[i + 1]);
    // the mistake: no __syncwarp here; the operand load reads other lanes' elements
    wmma::load_matrix_sync(a, sh, 16);
    wmma::mma_sync(acc, a, b, acc);
  }
  wmma::store_matrix_sync(D, acc, 16, wmma::mem_row_major);
}

extern "C" cudaError_t emu_wmma_misuse(int kind, const void *A, float *D)
{
  wmma_misuse<<<1, 32>>>(kind, (const __nv_bfloat16 *)A, D);
  return cudaGetLastError();
}
