// Kernels of test_emu_flash_ptx.c: the emulated PTX instructions of src/backend/cuda_mma.h
// (validation/emu/include/mma.h) on one warp, each against the PTX ISA's own statement of it.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "cuda_mma.h"

// Shared arrays 16-byte aligned (ldmatrix's rows and cp.async's destinations must be).
struct __align__(16) px_rows {
  uint16_t v[48 * 56];
};
struct __align__(16) px_words {
  uint32_t v[8];
};

// ldmatrix .xNUM (.trans): src [32, 8] 16-bit rows into shared memory, lane l gives row l's
// address (so matrix i is rows 8i..8i+7); out[l][i] = lane l's register i.
template <int NUM, bool TRANS> __global__ void ptx_ldm(const uint16_t *src, uint32_t *out)
{
  __shared__ px_rows shr;
  uint16_t *sh = shr.v;
  const int lane = threadIdx.x;
  for (int i = 2 * lane; i < 256; i += 64) sh[i] = src[i], sh[i + 1] = src[i + 1];
  __syncwarp();
  uint32_t r[4] = {0u, 0u, 0u, 0u};
  ptdp_ldmatrix<NUM, TRANS>(r, sh + 8 * lane);
  for (int i = 0; i < 4; i++) out[lane * 4 + i] = r[i];
}

// mma.m16n8k16 with the fragments built in each lane by the ISA's element formulas (9.7.14.5.8,
// "row = groupID + 8 for a2, a3, a6, a7 ..."), written here element by element, independently
// of the emulation's inverse mapping: A [16, 16], B [16, 8] (row-major [k][n]), C, D [16, 8].
template <typename T> __global__ void ptx_mma(const uint16_t *A, const uint16_t *B, const float *C, float *D)
{
  const int lane = threadIdx.x, g = lane / 4, t = lane % 4;
  uint32_t a[4] = {0u, 0u, 0u, 0u}, b[2] = {0u, 0u};
  float c[4], d[4];
  for (int i = 0; i < 8; i++) { // a_i: row g (+8 for i in 2,3,6,7), column 2t + (i & 1) (+8 for i >= 4)
    const int row = g + ((i == 2 || i == 3 || i == 6 || i == 7) ? 8 : 0), col = 2 * t + (i & 1) + (i >= 4 ? 8 : 0);
    a[i / 2] |= (uint32_t)A[row * 16 + col] << (16 * (i & 1));
  }
  for (int i = 0; i < 4; i++) { // b_i: row (k) 2t + (i & 1) (+8 for i >= 2), column groupID
    const int k = 2 * t + (i & 1) + (i >= 2 ? 8 : 0);
    b[i / 2] |= (uint32_t)B[k * 8 + g] << (16 * (i & 1));
  }
  for (int i = 0; i < 4; i++) c[i] = C[(g + (i >= 2 ? 8 : 0)) * 8 + 2 * t + (i & 1)]; // c_i: row g (+8 for i >= 2)
  ptdp_mma16816<T>(d, a, b, c);
  for (int i = 0; i < 4; i++) D[(g + (i >= 2 ? 8 : 0)) * 8 + 2 * t + (i & 1)] = d[i];
}

// D [16, 16] = A [16, K] B [K, 16] + C, K = 16 kt <= 48, as the flash kernels compose them:
// A and B into shared memory by cp.async (A's row zrow zero-filled: src-size 0), A by
// ldmatrix.x4, B by (bmode) 0 ldmatrix.x4 of B^T rows (B given as B^T [16, K]), 1 .x4.trans of
// B rows ([K, 16]), 2 .x2 of B^T rows per 8 columns, 3 .x2.trans of B rows per 8 columns.
#define PX_LD 56 // 48 + 8: padded rows
template <typename T>
__global__ void ptx_gemm(int kt, int bmode, int zrow, const uint16_t *A, const uint16_t *B, const float *C, float *D)
{
  __shared__ px_rows as, bs;
  uint16_t *As = as.v, *Bs = bs.v;
  const int lane = threadIdx.x, g = lane / 4, t = lane % 4, K = 16 * kt;
  const int bt = bmode == 0 || bmode == 2, brows = bt ? 16 : K, bcols = bt ? K : 16;
  for (int e = lane; e < 16 * K / 8; e += 32) {
    const int r = e / (K / 8), c = (e % (K / 8)) * 8;
    ptdp_cp_async16(As + r * PX_LD + c, A + r * K + c, r == zrow ? 0 : 16);
  }
  for (int e = lane; e < brows * bcols / 8; e += 32) {
    const int r = e / (bcols / 8), c = (e % (bcols / 8)) * 8;
    ptdp_cp_async16(Bs + r * PX_LD + c, B + r * bcols + c, 16);
  }
  ptdp_cp_async_commit();
  ptdp_cp_async_wait<0>();
  __syncwarp();
  float acc[2][4];
  for (int n = 0; n < 2; n++)
    for (int i = 0; i < 4; i++) acc[n][i] = C[(g + (i >= 2 ? 8 : 0)) * 16 + 8 * n + 2 * t + (i & 1)];
  for (int kk = 0; kk < kt; kk++) {
    uint32_t a[4], b[4];
    ptdp_ldmatrix<4, false>(a, As + (lane % 16) * PX_LD + 16 * kk + (lane / 16) * 8);
    if (bmode == 0) ptdp_ldmatrix<4, false>(b, Bs + ((lane / 16) * 8 + lane % 8) * PX_LD + 16 * kk + ((lane / 8) % 2) * 8);
    else if (bmode == 1) ptdp_ldmatrix<4, true>(b, Bs + (16 * kk + ((lane / 8) % 2) * 8 + lane % 8) * PX_LD + (lane / 16) * 8);
    else
      for (int n = 0; n < 2; n++) { // lanes 0..15 give the addresses
        const int l = lane % 16;
        if (bmode == 2) ptdp_ldmatrix<2, false>(b + 2 * n, Bs + (8 * n + l % 8) * PX_LD + 16 * kk + (l / 8) * 8);
        else ptdp_ldmatrix<2, true>(b + 2 * n, Bs + (16 * kk + (l / 8) * 8 + l % 8) * PX_LD + 8 * n);
      }
    ptdp_mma16816<T>(acc[0], a, b, acc[0]);
    ptdp_mma16816<T>(acc[1], a, b + 2, acc[1]);
  }
  for (int n = 0; n < 2; n++)
    for (int i = 0; i < 4; i++) D[(g + (i >= 2 ? 8 : 0)) * 16 + 8 * n + 2 * t + (i & 1)] = acc[n][i];
}

// cp.async's groups: out[0] a word read before any wait (the old contents), out[1] after
// wait_group 1 with two groups committed (the first group's word, the second's still old),
// out[2] the second's word then, out[3] after wait_group 0.
__global__ void ptx_cp_groups(const uint32_t *src, uint32_t *out)
{
  __shared__ px_words shw;
  uint32_t *sh = shw.v;
  if (threadIdx.x) return;
  for (int i = 0; i < 8; i++) sh[i] = 0xdeadbeefu;
  ptdp_cp_async16(sh, src, 16);
  ptdp_cp_async_commit();
  out[0] = sh[0];
  ptdp_cp_async16(sh + 4, src + 4, 16);
  ptdp_cp_async_commit();
  ptdp_cp_async_wait<1>();
  out[1] = sh[0], out[2] = sh[4];
  ptdp_cp_async_wait<0>();
  out[3] = sh[4];
}

// The misuses: 0 ldmatrix with a row address 2 bytes off 16; 1 a lane returns before mma;
// 2 lanes read rows other lanes copied by cp.async without __syncwarp after the wait.
__global__ void ptx_misuse(int kind, const uint16_t *src, float *D)
{
  __shared__ px_rows shr;
  uint16_t *sh = shr.v;
  const int lane = threadIdx.x;
  uint32_t r[4] = {0u, 0u, 0u, 0u};
  float c[4] = {0, 0, 0, 0};
  ptdp_cp_async16(sh + 8 * lane, src + 8 * lane, 16);
  ptdp_cp_async_commit();
  ptdp_cp_async_wait<0>();
  if (kind == 2) ptdp_ldmatrix<4, false>(r, sh + 8 * ((lane + 1) % 32)); // the mistake: no __syncwarp
  __syncwarp();
  if (kind == 0) ptdp_ldmatrix<4, false>(r, sh + 8 * lane + (lane == 5 ? 1 : 0));
  if (kind == 1 && lane == 3) return;
  ptdp_mma16816<__nv_bfloat16>(c, r, r, c);
  D[lane] = c[0];
}

// (launched through function pointers: translate.sh takes only a plain kernel name)
extern "C" cudaError_t emu_ptx_ldm(int num, int trans, const void *src, void *out)
{
  void (*k)(const uint16_t *, uint32_t *) = num == 4 ? (trans ? ptx_ldm<4, true> : ptx_ldm<4, false>)
                                                     : (trans ? ptx_ldm<2, true> : ptx_ldm<2, false>);
  k<<<1, 32>>>((const uint16_t *)src, (uint32_t *)out);
  return cudaGetLastError();
}

extern "C" cudaError_t emu_ptx_mma(int type, const void *A, const void *B, const float *C, float *D)
{
  void (*k)(const uint16_t *, const uint16_t *, const float *, float *) = type ? ptx_mma<__half> : ptx_mma<__nv_bfloat16>;
  k<<<1, 32>>>((const uint16_t *)A, (const uint16_t *)B, C, D);
  return cudaGetLastError();
}

extern "C" cudaError_t emu_ptx_gemm(int type, int kt, int bmode, int zrow, const void *A, const void *B, const float *C,
                                    float *D)
{
  void (*k)(int, int, int, const uint16_t *, const uint16_t *, const float *, float *) =
      type ? ptx_gemm<__half> : ptx_gemm<__nv_bfloat16>;
  k<<<1, 32>>>(kt, bmode, zrow, (const uint16_t *)A, (const uint16_t *)B, C, D);
  return cudaGetLastError();
}

extern "C" cudaError_t emu_ptx_cp_groups(const void *src, void *out)
{
  ptx_cp_groups<<<1, 32>>>((const uint32_t *)src, (uint32_t *)out);
  return cudaGetLastError();
}

extern "C" cudaError_t emu_ptx_misuse(int kind, const void *src, float *D)
{
  ptx_misuse<<<1, 32>>>(kind, (const uint16_t *)src, D);
  return cudaGetLastError();
}
