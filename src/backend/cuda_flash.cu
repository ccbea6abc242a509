// Fused causal (flash) attention for 16-bit storage (bf16, fp16) on the tensor cores: the
// function of ptdp_cpu_flash_forward/backward (src/backend/cpu_attention.c) without the s x s
// scores in global memory.  Two sets of kernels (cuda_flash.h: PTDP_FLASH_KERNEL chooses): the
// mma kernels (the default; "the mma kernels" below: registers, inline PTX, cp.async; hd 64
// and 128) and the wmma kernels described first here (the other head sizes, and the fallback).  Shapes as in
// ptdp/backend.h: qkv [N, (al + 2 groups) hd] with each token row [groups][al/groups query heads, the group's key,
// its value][hd] ([al][3][hd] without grouped-query attention, groups = al) and rows (pos, sample), ctx [N, al hd],
// lse [b, al, s] fp32.
// Grouped-query attention: the forward and dQ blocks own one query head and read its group's K, V (only the
// offsets change: fl_part); a dK/dV block owns a key tile of a group and runs over the group's query heads in
// order, summing dK, dV in its fp32 accumulators across them and storing once (no atomics: the order is fixed).
//
// Tiling.  A block is 4 warps (128 threads) and owns a tile of 64 rows of one (sample, head)
// pair; each warp owns 16 of those rows, so row statistics stay inside a warp.  The other
// operand streams through shared memory 64 rows at a time (16-bit), and the causal mask skips
// every tile above the diagonal (the diagonal tile is masked element by element).
//   forward   block = 64 queries; per key tile: S = Q K^T (wmma, fp32) into shared memory;
//             the warp's online softmax (running max m and sum l per row in fp32, the fp32
//             output accumulator O in shared memory rescaled by exp(m_old - m_new)); dropout
//             bits drawn for the kept entries; P rounded to the 16-bit type; O += P V (wmma).
//             Ends with ctx = O / l (rounded) and lse = m + log l.
//   backward  D = rowsum(dctx * ctx) (fp32, a small kernel), then two passes that recompute
//             P = exp(S scale - lse) from the saved lse (FlashAttention-2):
//             per key tile (64 keys): dV += Pd^T dO and dK += dS^T Q over the query tiles at
//             or below the diagonal, in wmma accumulators (fp32 registers);
//             per query tile (64 queries): dQ += dS K over the key tiles.
//             dS = P (dropout'(dP) - D), dP = dO V^T, rounded to the 16-bit type for the GEMM.
//             dQ has its own pass instead of FlashAttention-2's fp32 atomicAdd from the key
//             tiles: it recomputes S and dP (two more 64x64xhd products per tile pair, 7
//             instead of 5), but sums in a fixed order, so a run is reproducible bit for bit
//             (resumed runs and compare_builds rely on that), and dQ is written once in the
//             16-bit type with no fp32 scratch and no zeroing pass.
// Dropout.  The mask bit of (sample bi, head hh, query q, key k) is the CPU's:
//     keep = u(ptdp_rng_row(seed, site, layer, sample0 + bi, (head0 + hh) s + q), k) >= p
// (cuda_rng.h), drawn again where an entry is needed, so the fused masks equal the unfused ones
// and a fused run equals an unfused run to rounding, not only in distribution.
// Limits: hd a multiple of 16 up to 128 (the launchers refuse others: cudaErrorInvalidValue);
// hd 64 and 128 have instances of their own (FL_BY_HD), where the accumulators stay in registers
// (ptxas 13.0, sm_90: 60 bytes of spill stores in the bf16 hd 128 dK/dV kernel at 255 registers,
// 32 before the loop over a group's heads); others read hd at run time and keep the dK/dV/dQ
// accumulators in local memory.
// Shared memory per block (rows padded: FL_PAD_T), hd 128: forward 110 KiB, dK/dV 120.5 KiB, dQ
// 111.5 KiB (hd 64: 70, 88.5, 79.5), above the default 48 KiB (cudaFuncSetAttribute).
// Correctness is proven in the emulation (validation/emu/tests/test_emu_flash.c) and on a GPU by
// the conformance suite (test_ops, NVIDIA H200 2026-11-26); speed and the profiles that shaped
// the mma kernels are in validation/bench/README.md.
#include "cuda_device.h"
#include "cuda_flash.h"
#include "cuda_mma.h"
#include "cuda_rng.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <math.h>
#include <mma.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

using namespace nvcuda;

#define FL_ROWS 64   // rows of a block's own tile (queries forward and dQ, keys dK/dV)
#define FL_COLS 64   // rows of the streamed tiles
#define FL_WARPS 4   // FL_ROWS / 16
#define FL_THREADS (32 * FL_WARPS)
#define FL_HD_MAX 128
// Shared-memory rows are padded (16-bit rows by 8 elements, fp32 rows by 4), so that the 16 rows
// of a wmma tile start 16 bytes apart in the banks instead of all in the same ones; tile starts
// stay 256-bit aligned and ldm a multiple of 16 bytes, as wmma requires.
#define FL_PAD_T 8
#define FL_PAD_F 4
#define FL_LDP (FL_COLS + FL_PAD_T) // 16-bit [16, 64] tiles: P, Pd, dS
#define FL_LDS (FL_COLS + FL_PAD_F) // fp32 [16, 64] tiles: S, dP

// Dynamic shared memory, aligned for wmma's 256-bit rule: each kernel declares
//     extern __shared__ fl_smem_t fl_smem[];
// (of a type, so that every template instance declares the same array).
struct __align__(128) fl_smem_t {
  unsigned char b[128];
};

// 8 elements of a 16-bit type: rows are copied in these (hd and every row offset are multiples
// of 8 elements, and allocations are aligned).
struct __align__(16) fl_vec {
  unsigned int w[4];
};

struct fl_dims {
  int b, s, al, hd;
  int groups, hpg; // key/value groups (al without grouped-query attention) and query heads a group
  long long w;     // a sample's qkv row, (al + 2 groups) hd elements
  long long head0;
  ptdp_dropout_key drop;
  float scale;
  long long ld, ldc; // row strides of qkv (b w) and of ctx (b hl), in elements
};

template <typename T> using frag_a = wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major>;
template <typename T> using frag_a_col = wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::col_major>;
template <typename T> using frag_b_row = wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major>;
template <typename T> using frag_b_col = wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::col_major>;
typedef wmma::fragment<wmma::accumulator, 16, 16, 16, float> frag_acc;

static __device__ int fl_min(int a, int b) { return a < b ? a : b; }
static __device__ size_t fl_align(size_t x) { return (x + 127) & ~(size_t)127; }

// Rows [r0, r0 + n) of a [*, hd] operand with row stride ld into dst [n, hd] (row stride ldd),
// zeros from row lim on (the tails); threads t of nt share the work.
// 16-byte loads where src allows (a base off 16 bytes, possible for a pointer into a buffer,
// takes elements one by one: a misaligned vector load faults on a GPU).
template <typename T>
__device__ __forceinline__ static void fl_load_rows(T *dst, int ldd, const T *src, long long ld, int r0, int n, int lim,
                                                    int hd, int t, int nt)
{
  const int per_row = hd / 8, vec = ((size_t)src % sizeof(fl_vec)) == 0;
  for (int e = t; e < n * per_row; e += nt) {
    const int r = e / per_row, c = (e % per_row) * 8;
    const T *p = src + (long long)(r0 + r) * ld + c;
    if (vec) {
      fl_vec v = {{0u, 0u, 0u, 0u}};
      if (r0 + r < lim) v = *(const fl_vec *)p;
      *(fl_vec *)(dst + r * ldd + c) = v;
    } else {
      for (int i = 0; i < 8; i++) dst[r * ldd + c + i] = r0 + r < lim ? p[i] : T(0.0f);
    }
  }
}

// out[16, 16 n] (fp32, row stride ldo) = A[16, hd] B^T where B's rows are the 16 n rows of bt
// [*, hd]: S = Q K^T and dP = dO V^T for one warp (A, bt in shared memory, row strides lda, ldb).
template <typename T>
__device__ __forceinline__ static void fl_abt(float *out, int ldo, const T *a, int lda, const T *bt, int ldb, int n,
                                              int hd)
{
  for (int j = 0; j < n; j++) {
    frag_acc acc;
    wmma::fill_fragment(acc, 0.0f);
    for (int kk = 0; kk < hd / 16; kk++) {
      frag_a<T> fa;
      frag_b_col<T> fb;
      wmma::load_matrix_sync(fa, a + kk * 16, lda);
      wmma::load_matrix_sync(fb, bt + j * 16 * ldb + kk * 16, ldb);
      wmma::mma_sync(acc, fa, fb, acc);
    }
    wmma::store_matrix_sync(out + j * 16, acc, ldo, wmma::mem_row_major);
  }
}

// acc[j] += A[16, kdim] B[kdim, ncols] for the ncols/16 column tiles j of B (row strides lda,
// ldb).
template <typename T, typename FA>
__device__ __forceinline__ static void fl_ab_acc(frag_acc *acc, const T *a, int lda, const T *bm, int ldb, int kdim,
                                                 int ncols)
{
  for (int j = 0; j < ncols / 16; j++)
    for (int kk = 0; kk < kdim / 16; kk++) {
      FA fa;
      frag_b_row<T> fb;
      wmma::load_matrix_sync(fa, a + kk * 16, lda);
      wmma::load_matrix_sync(fb, bm + kk * 16 * ldb + j * 16, ldb);
      wmma::mma_sync(acc[j], fa, fb, acc[j]);
    }
}

__device__ static uint64_t fl_row_hash(const fl_dims &d, int bi, int hh, int q)
{
  return ptdp_cu_rng_row(d.drop.seed, d.drop.site, d.drop.layer, (uint64_t)(d.drop.sample0 + bi),
                         (uint64_t)((d.head0 + hh) * d.s + q));
}

// Offset in qkv of sample bi's part of query head hh: part 0 its query, 1 its group's key, 2 its group's value
// (the CPU's part_off; hd elements each, hpg query heads then the key and the value a group).
__device__ __forceinline__ static long long fl_part(const fl_dims &d, int bi, int hh, int part, int hd)
{
  const int grp = hh / d.hpg, slot = part == 0 ? hh % d.hpg : d.hpg + part - 1;
  return (long long)bi * d.w + ((long long)grp * (d.hpg + 2) + slot) * hd;
}

// ---------------------------------------------------------------- forward
template <typename T, int HD>
__global__ void __launch_bounds__(FL_THREADS) flash_fwd(fl_dims d, const T *qkv, T *ctx, float *lse)
{
  const int hd = HD ? HD : d.hd, hl = d.al * hd;
  const int qt = gridDim.x - 1 - blockIdx.x; // the longest rows first
  const int bi = blockIdx.y / d.al, hh = blockIdx.y % d.al;
  const int w = threadIdx.x / 32, lane = threadIdx.x % 32, r = lane / 2, half = lane % 2;
  const int q0 = qt * FL_ROWS, qw0 = q0 + 16 * w, q = qw0 + r;
  const T *Q = qkv + fl_part(d, bi, hh, 0, hd), *K = qkv + fl_part(d, bi, hh, 1, hd);
  const T *V = qkv + fl_part(d, bi, hh, 2, hd);
  extern __shared__ fl_smem_t fl_smem[];
  unsigned char *sm = (unsigned char *)fl_smem;
  const int ldt = hd + FL_PAD_T, ldo = hd + FL_PAD_F; // rows of [*, hd] tiles: 16-bit, fp32
  T *Ks = (T *)sm, *Vs = Ks + FL_COLS * ldt;
  unsigned char *wb = sm + fl_align(2 * FL_COLS * ldt * sizeof(T));
  wb += (size_t)w * fl_align(16 * (ldt + FL_LDP) * sizeof(T) + 16 * (FL_LDS + ldo) * sizeof(float));
  T *Qw = (T *)wb, *Pw = Qw + 16 * ldt;
  float *Sw = (float *)(Pw + 16 * FL_LDP), *Ow = Sw + 16 * FL_LDS;

  fl_load_rows(Qw, ldt, Q, d.ld, qw0, 16, d.s, hd, lane, 32);
  for (int c = half * (hd / 2); c < (half + 1) * (hd / 2); c++) Ow[r * ldo + c] = 0.0f;
  __syncwarp();
  const int drop = d.drop.p > 0.0f;
  const float keep_scale = drop ? 1.0f / (1.0f - d.drop.p) : 1.0f;
  const uint64_t rh = drop && q < d.s ? fl_row_hash(d, bi, hh, q) : 0;
  float m = -INFINITY, l = 0.0f; // this row's running max and sum (both lanes of the row hold them)
  const int qlast = fl_min(q0 + FL_ROWS, d.s) - 1, nkt = qlast / FL_COLS + 1;
  for (int kt = 0; kt < nkt; kt++) {
    const int k0 = kt * FL_COLS;
    __syncthreads(); // every warp is done with the previous K, V tiles
    fl_load_rows(Ks, ldt, K, d.ld, k0, FL_COLS, d.s, hd, threadIdx.x, FL_THREADS);
    fl_load_rows(Vs, ldt, V, d.ld, k0, FL_COLS, d.s, hd, threadIdx.x, FL_THREADS);
    __syncthreads();
    if (qw0 >= d.s || k0 > qw0 + 15) continue; // the warp's rows: none left, or all above the diagonal
    fl_abt(Sw, FL_LDS, Qw, ldt, Ks, ldt, FL_COLS / 16, hd);
    __syncwarp();
    // online softmax of row r over this tile's keys; this lane takes half of the columns
    float *srow = Sw + r * FL_LDS;
    T *prow = Pw + r * FL_LDP;
    const int c0 = half * (FL_COLS / 2), c1 = c0 + FL_COLS / 2;
    float mt = -INFINITY;
    for (int c = c0; c < c1; c++)
      if (k0 + c <= q && q < d.s) mt = fmaxf(mt, srow[c] * d.scale);
    mt = fmaxf(mt, __shfl_xor_sync(0xffffffffu, mt, 1));
    const float mnew = fmaxf(m, mt);
    const float alpha = mnew == -INFINITY ? 1.0f : expf(m - mnew);
    float sum = 0.0f;
    for (int c = c0; c < c1; c++) {
      const int k = k0 + c;
      float pv = 0.0f;
      if (k <= q && q < d.s) {
        pv = expf(srow[c] * d.scale - mnew);
        sum += pv;
        if (drop) pv = ptdp_cu_rng_uniform(ptdp_cu_rng_at(rh, (uint64_t)k)) >= d.drop.p ? pv * keep_scale : 0.0f;
      }
      prow[c] = T(pv);
    }
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    l = l * alpha + sum;
    m = mnew;
    for (int c = half * (hd / 2); c < (half + 1) * (hd / 2); c++) Ow[r * ldo + c] *= alpha;
    __syncwarp();
    for (int j = 0; j < hd / 16; j++) { // O[:, 16 j, 16 j + 16) += P V[:, 16 j, ...)
      frag_acc acc;
      wmma::load_matrix_sync(acc, Ow + j * 16, ldo, wmma::mem_row_major);
      fl_ab_acc<T, frag_a<T> >(&acc, Pw, FL_LDP, Vs + j * 16, ldt, FL_COLS, 16);
      wmma::store_matrix_sync(Ow + j * 16, acc, ldo, wmma::mem_row_major);
    }
    __syncwarp();
  }
  if (q < d.s) {
    const float inv = 1.0f / l;
    T *crow = ctx + (long long)q * d.ldc + (long long)bi * hl + (long long)hh * hd;
    for (int c = half * (hd / 2); c < (half + 1) * (hd / 2); c++) crow[c] = T(Ow[r * ldo + c] * inv);
    if (!half) lse[((long long)bi * d.al + hh) * d.s + q] = m + logf(l);
  }
}

// ---------------------------------------------------------------- backward
// D[bi, hh, q] = sum_j dctx[q, j] ctx[q, j] (fp32), one warp per row.
template <typename T> __global__ void flash_bwd_dot(fl_dims d, const T *ctx, const T *dctx, float *D)
{
  const long long row = (long long)blockIdx.x * FL_WARPS + threadIdx.x / 32; // of [b, al, s]
  const int lane = threadIdx.x % 32;
  if (row >= (long long)d.b * d.al * d.s) return; // a whole warp: no shuffle is left waiting
  const int q = (int)(row % d.s), hh = (int)((row / d.s) % d.al), bi = (int)(row / ((long long)d.s * d.al));
  const long long off = (long long)q * d.ldc + (long long)bi * d.al * d.hd + (long long)hh * d.hd;
  float v = 0.0f;
  for (int j = lane; j < d.hd; j += 32) v += (float)dctx[off + j] * (float)ctx[off + j];
  v = warp_sum(v);
  if (!lane) D[row] = v;
}

// dS (and Pd) of one 16 x 64 warp tile from S and dP (fp32, row stride FL_LDS) into dS and Pd
// (16-bit, row stride FL_LDP): element (i, c)
// is query qi(i, c) and key ki(i, c) (transposed in the dK/dV pass); lse and D per query.
struct fl_ds_args {
  int bi, hh, keys_are_rows, row0, col0;
  const float *lse, *D; // of the tile's queries, indexed by query - (keys_are_rows ? col0 : row0)
};

template <typename T>
__device__ __forceinline__ static void fl_ds(const fl_dims &d, const fl_ds_args &a, const float *S, const float *dP,
                                             T *dS, T *Pd)
{
  const int lane = threadIdx.x % 32, i = lane / 2, c0 = (lane % 2) * (FL_COLS / 2);
  const int drop = d.drop.p > 0.0f;
  const float keep_scale = drop ? 1.0f / (1.0f - d.drop.p) : 1.0f;
  uint64_t rh = 0;
  if (drop && !a.keys_are_rows && a.row0 + i < d.s) rh = fl_row_hash(d, a.bi, a.hh, a.row0 + i);
  for (int c = c0; c < c0 + FL_COLS / 2; c++) {
    const int q = a.keys_are_rows ? a.col0 + c : a.row0 + i, k = a.keys_are_rows ? a.row0 + i : a.col0 + c;
    const int qi = a.keys_are_rows ? c : i;
    const int causal = k <= q;
    float p = 0.0f, pd = 0.0f, ds = 0.0f;
    if (causal && q < d.s) {
      p = expf(S[i * FL_LDS + c] * d.scale - a.lse[qi]);
      float dp = dP[i * FL_LDS + c];
      pd = p;
      if (drop) {
        const uint64_t h = a.keys_are_rows ? fl_row_hash(d, a.bi, a.hh, q) : rh;
        const int keep = ptdp_cu_rng_uniform(ptdp_cu_rng_at(h, (uint64_t)k)) >= d.drop.p;
        pd = keep ? p * keep_scale : 0.0f;
        dp = keep ? dp * keep_scale : 0.0f;
      }
      ds = p * (dp - a.D[qi]);
    }
    dS[i * FL_LDP + c] = T(ds);
    if (Pd) Pd[i * FL_LDP + c] = T(pd);
  }
}

// Accumulators (fp32, scaled by a) of a warp's 16 rows to rows [r0, r0 + 16) of out (row stride
// ld, below lim), through the warp's fp32 staging tile st [16, hd] (row stride hd + FL_PAD_F).
template <typename T>
__device__ __forceinline__ static void fl_store_rows(T *out, long long ld, int r0, int lim, frag_acc *acc, float *st,
                                                     int hd, float a)
{
  const int lane = threadIdx.x % 32, r = lane / 2, half = lane % 2, lds = hd + FL_PAD_F;
  for (int j = 0; j < hd / 16; j++) wmma::store_matrix_sync(st + j * 16, acc[j], lds, wmma::mem_row_major);
  __syncwarp();
  if (r0 + r < lim)
    for (int c = half * (hd / 2); c < (half + 1) * (hd / 2); c++)
      out[(long long)(r0 + r) * ld + c] = T(st[r * lds + c] * a);
  __syncwarp();
}

// dK, dV: one block per (key tile, sample and group); each warp 16 keys, over the group's query heads in order and
// the query tiles that see them.
template <typename T, int HD>
__global__ void __launch_bounds__(FL_THREADS) flash_bwd_kv(fl_dims d, const T *qkv, const T *dctx, const float *lse,
                                                           const float *D, T *dqkv)
{
  const int hd = HD ? HD : d.hd, hl = d.al * hd;
  const int kt = blockIdx.x, bi = blockIdx.y / d.groups, h0 = (blockIdx.y % d.groups) * d.hpg;
  const int w = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int k0 = kt * FL_ROWS, kw0 = k0 + 16 * w;
  const long long koff = fl_part(d, bi, h0, 1, hd), voff = fl_part(d, bi, h0, 2, hd);
  const T *K = qkv + koff, *V = qkv + voff;
  extern __shared__ fl_smem_t fl_smem[];
  unsigned char *sm = (unsigned char *)fl_smem;
  const int ldt = hd + FL_PAD_T;
  T *Qs = (T *)sm, *dOs = Qs + FL_COLS * ldt;
  float *Ls = (float *)(sm + fl_align(2 * FL_COLS * ldt * sizeof(T))), *Ds = Ls + FL_COLS;
  unsigned char *wb = (unsigned char *)(Ds + FL_COLS);
  wb = sm + fl_align((size_t)(wb - sm));
  wb += (size_t)w * fl_align(2 * 16 * (ldt + FL_LDP) * sizeof(T) + 2 * 16 * FL_LDS * sizeof(float));
  T *Kw = (T *)wb, *Vw = Kw + 16 * ldt, *dSw = Vw + 16 * ldt, *Pdw = dSw + 16 * FL_LDP;
  float *Sw = (float *)(Pdw + 16 * FL_LDP), *dPw = Sw + 16 * FL_LDS; // contiguous: the 16 x hd staging at the end

  fl_load_rows(Kw, ldt, K, d.ld, kw0, 16, d.s, hd, lane, 32);
  fl_load_rows(Vw, ldt, V, d.ld, kw0, 16, d.s, hd, lane, 32);
  __syncwarp();
  frag_acc dk[FL_HD_MAX / 16], dv[FL_HD_MAX / 16];
  for (int j = 0; j < hd / 16; j++) wmma::fill_fragment(dk[j], 0.0f), wmma::fill_fragment(dv[j], 0.0f);
  const int nqt = (d.s + FL_COLS - 1) / FL_COLS;
  for (int hh = h0; hh < h0 + d.hpg; hh++) {
    const T *Q = qkv + fl_part(d, bi, hh, 0, hd), *dO = dctx + (long long)bi * hl + (long long)hh * hd;
    const float *L = lse + ((long long)bi * d.al + hh) * d.s, *Dr = D + ((long long)bi * d.al + hh) * d.s;
    for (int qt = k0 / FL_COLS; qt < nqt; qt++) {
      const int q0 = qt * FL_COLS;
      __syncthreads();
      fl_load_rows(Qs, ldt, Q, d.ld, q0, FL_COLS, d.s, hd, threadIdx.x, FL_THREADS);
      fl_load_rows(dOs, ldt, dO, d.ldc, q0, FL_COLS, d.s, hd, threadIdx.x, FL_THREADS);
      for (int c = threadIdx.x; c < FL_COLS; c += FL_THREADS) {
        Ls[c] = q0 + c < d.s ? L[q0 + c] : 0.0f;
        Ds[c] = q0 + c < d.s ? Dr[q0 + c] : 0.0f;
      }
      __syncthreads();
      if (kw0 >= d.s || kw0 > fl_min(q0 + FL_COLS, d.s) - 1) continue; // no key of the warp meets these queries
      fl_abt(Sw, FL_LDS, Kw, ldt, Qs, ldt, FL_COLS / 16, hd);   // S^T [16 keys, 64 queries]
      fl_abt(dPw, FL_LDS, Vw, ldt, dOs, ldt, FL_COLS / 16, hd); // dP^T
      __syncwarp();
      const fl_ds_args a = {bi, hh, 1, kw0, q0, Ls, Ds};
      fl_ds(d, a, Sw, dPw, dSw, Pdw);
      __syncwarp();
      fl_ab_acc<T, frag_a<T> >(dv, Pdw, FL_LDP, dOs, ldt, FL_COLS, hd); // dV += Pd^T dO
      fl_ab_acc<T, frag_a<T> >(dk, dSw, FL_LDP, Qs, ldt, FL_COLS, hd);  // dK += dS^T Q
    }
  }
  __syncwarp();
  T *dK = dqkv + koff, *dV = dqkv + voff;
  fl_store_rows(dK, d.ld, kw0, d.s, dk, Sw, hd, d.scale);
  fl_store_rows(dV, d.ld, kw0, d.s, dv, Sw, hd, 1.0f);
}

// dQ: one block per (query tile, pair); each warp 16 queries, over the key tiles they see.
template <typename T, int HD>
__global__ void __launch_bounds__(FL_THREADS) flash_bwd_q(fl_dims d, const T *qkv, const T *dctx, const float *lse,
                                                          const float *D, T *dqkv)
{
  const int hd = HD ? HD : d.hd, hl = d.al * hd;
  const int qt = gridDim.x - 1 - blockIdx.x, bi = blockIdx.y / d.al, hh = blockIdx.y % d.al;
  const int w = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int q0 = qt * FL_ROWS, qw0 = q0 + 16 * w;
  const long long qoff = fl_part(d, bi, hh, 0, hd);
  const T *Q = qkv + qoff, *K = qkv + fl_part(d, bi, hh, 1, hd), *V = qkv + fl_part(d, bi, hh, 2, hd);
  const T *dO = dctx + (long long)bi * hl + (long long)hh * hd;
  const float *L = lse + ((long long)bi * d.al + hh) * d.s, *Dr = D + ((long long)bi * d.al + hh) * d.s;
  extern __shared__ fl_smem_t fl_smem[];
  unsigned char *sm = (unsigned char *)fl_smem;
  const int ldt = hd + FL_PAD_T;
  T *Ks = (T *)sm, *Vs = Ks + FL_COLS * ldt;
  unsigned char *wb = sm + fl_align(2 * FL_COLS * ldt * sizeof(T));
  wb += (size_t)w * fl_align((2 * 16 * ldt + 16 * FL_LDP) * sizeof(T) + (2 * 16 * FL_LDS + 2 * 16) * sizeof(float));
  T *Qw = (T *)wb, *dOw = Qw + 16 * ldt, *dSw = dOw + 16 * ldt;
  float *Sw = (float *)(dSw + 16 * FL_LDP), *dPw = Sw + 16 * FL_LDS, *Lw = dPw + 16 * FL_LDS, *Dw = Lw + 16;

  fl_load_rows(Qw, ldt, Q, d.ld, qw0, 16, d.s, hd, lane, 32);
  fl_load_rows(dOw, ldt, dO, d.ldc, qw0, 16, d.s, hd, lane, 32);
  if (lane < 16) Lw[lane] = qw0 + lane < d.s ? L[qw0 + lane] : 0.0f;
  else Dw[lane - 16] = qw0 + lane - 16 < d.s ? Dr[qw0 + lane - 16] : 0.0f;
  __syncwarp();
  frag_acc dq[FL_HD_MAX / 16];
  for (int j = 0; j < hd / 16; j++) wmma::fill_fragment(dq[j], 0.0f);
  const int qlast = fl_min(q0 + FL_ROWS, d.s) - 1, nkt = qlast / FL_COLS + 1;
  for (int kt = 0; kt < nkt; kt++) {
    const int k0 = kt * FL_COLS;
    __syncthreads();
    fl_load_rows(Ks, ldt, K, d.ld, k0, FL_COLS, d.s, hd, threadIdx.x, FL_THREADS);
    fl_load_rows(Vs, ldt, V, d.ld, k0, FL_COLS, d.s, hd, threadIdx.x, FL_THREADS);
    __syncthreads();
    if (qw0 >= d.s || k0 > qw0 + 15) continue;
    fl_abt(Sw, FL_LDS, Qw, ldt, Ks, ldt, FL_COLS / 16, hd);  // S [16 queries, 64 keys]
    fl_abt(dPw, FL_LDS, dOw, ldt, Vs, ldt, FL_COLS / 16, hd); // dP
    __syncwarp();
    const fl_ds_args a = {bi, hh, 0, qw0, k0, Lw, Dw};
    fl_ds<T>(d, a, Sw, dPw, dSw, (T *)0);
    __syncwarp();
    fl_ab_acc<T, frag_a<T> >(dq, dSw, FL_LDP, Ks, ldt, FL_COLS, hd); // dQ += dS K
  }
  __syncwarp();
  fl_store_rows(dqkv + qoff, d.ld, qw0, d.s, dq, Sw, hd, d.scale);
}

// ================================================================ the mma kernels (the default)
// FlashAttention-2's register tiling on mma.sync.m16n8k16 (cuda_mma.h: the PTX ISA's fragment
// layouts): a block of 4 warps owns 64 rows, a warp 16 of them, and S, P, the softmax
// statistics and the fp32 accumulators (O; dK, dV; dQ) stay in registers, in the accumulator
// layout (lane l holds rows l/4 and l/4 + 8, columns 2(l%4) and 2(l%4)+1 of every 8-column
// tile), where the wmma kernels above round-trip S and O through shared memory.  An accumulator
// tile pair is already the A operand of the next product (P V, Pd^T dO, dS^T Q, dS K): packed
// to 16-bit pairs, no shuffle.  The streamed 64-row tiles (K, V forward and dQ; Q, dO and the
// rows' lse, D in dK/dV) are double-buffered with cp.async, the next tile's copy in flight
// while this one is used: two __syncthreads per tile.  ldmatrix reads the operands from shared
// memory (rows padded by 8 elements: 8 rows of an 8x8 matrix fall in distinct banks).
// Exponentials in base 2 (ex2.approx of S scale log2 e - m, one FFMA and one ex2 per entry); a
// tile is computed whole, also on the diagonal (its masked entries become P = 0, dS = 0), so no
// branch splits the products (the first GPU profile, ncu 2026-11-26: the per-chunk tests made
// the kernels spend 15 instructions per mma, and branch and barrier stalls dominated); no mask
// is tested on the tiles wholly below the diagonal (most of them).
// The same function as the wmma kernels:
// same masks (the dropout bits drawn per element from the same row hashes), same dQ pass (no
// atomics: every sum in a fixed order, bit-reproducible run to run); only the rounding order
// of the fp32 sums differs.  Head sizes 64 and 128 (template instances); others run the wmma
// kernels.  hd 64 keeps the warp's own A operands (Q; K and V; Q and dO) in registers too.
#define F2_BM 64  // rows of a block's own tile
#define F2_BN 64  // rows of a streamed tile
#define F2_THREADS 128
#define F2_PAD 8
#define F2_LOG2E 1.4426950408889634f
// Blocks a multiprocessor must hold, by registers, for the hd 64 kernels (__launch_bounds__'s second
// argument; 1 leaves the registers to ptxas).  Tuning knobs, -D at build time: validation/bench/
// README.md has what each measured.
#ifndef F2_MINB_FWD64
#define F2_MINB_FWD64 3 // 167 registers, no spill (ptxas 13.0), against 197 and 2 blocks without
#endif
#ifndef F2_MINB_KV64
#define F2_MINB_KV64 1
#endif
#ifndef F2_MINB_Q64
#define F2_MINB_Q64 3 // 168 registers, no spill (ptxas 13.0), against 174 and 2 blocks without
#endif
#ifdef __CUDACC__
#define F2_UNROLL _Pragma("unroll") // the fragment arrays stay in registers only when fully unrolled
#else
#define F2_UNROLL // (the emulation's host compiler)
#endif

template <typename T> __device__ __forceinline__ static uint32_t f2_pack(float lo, float hi)
{
  uint32_t a, b;
  if constexpr (std::is_same<T, __half>::value)
    a = __half_as_ushort(__float2half_rn(lo)), b = __half_as_ushort(__float2half_rn(hi));
  else
    a = __bfloat16_as_ushort(__float2bfloat16_rn(lo)), b = __bfloat16_as_ushort(__float2bfloat16_rn(hi));
  return a | b << 16;
}

// 2^x by the hardware's approximation (ex2.approx.ftz: relative error about 2^-22, 2^-inf = 0),
// not exp2f's slower path for subnormal results (which the 16-bit P cannot hold anyway); the
// emulation's exp2f where there is no GPU.
__device__ __forceinline__ static float f2_exp2(float x)
{
#ifdef PTDP_EMU_BUILD
  return exp2f(x);
#else
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
#endif
}

// Rows [r0, r0 + N) of a [*, HD] operand (row stride ld) into dst [N, HD + F2_PAD], zeros from
// row lim on.  Each thread copies the same 16-byte column of every (F2_THREADS / (HD / 8))-th row:
// its addresses step by a constant, computed once.  async: 16-byte cp.async copies (the caller
// commits and waits; a row past lim reads nothing); else element by element (a base off 16 bytes).
template <typename T, int HD, int N>
__device__ __forceinline__ static void f2_load(T *dst, const T *src, long long ld, int r0, int lim, bool async)
{
  constexpr int per_row = HD / 8, step = F2_THREADS / per_row, ldd = HD + F2_PAD;
  static_assert(F2_THREADS % per_row == 0 && N % step == 0, "a whole number of rows per pass");
  const int r = threadIdx.x / per_row, c = (threadIdx.x % per_row) * 8;
  const T *p = src + (long long)(r0 + r) * ld + c, *p0 = src + (long long)r0 * ld + c;
  const long long sld = (long long)step * ld;
  T *q = dst + r * ldd + c;
F2_UNROLL
  for (int k = 0; k < N / step; k++) {
    const bool in = r0 + r + k * step < lim;
    const T *pk = in ? p + k * sld : p0;
    if (async) ptdp_cp_async16(q + k * step * ldd, pk, in ? 16 : 0);
    else
      for (int i = 0; i < 8; i++) q[k * step * ldd + i] = in ? pk[i] : T(0.0f);
  }
}

// The A fragment of rows [0, 16), columns [c, c + 16) of a row-major tile (row stride ld).
template <typename T> __device__ __forceinline__ static void f2_lda(uint32_t *a, const T *tile, int ld, int c)
{
  const int lane = threadIdx.x % 32;
  ptdp_ldmatrix<4, false>(a, tile + (lane % 16) * ld + c + (lane / 16) * 8);
}
// B fragments of two 8-column tiles from B^T rows: rows [r, r + 16) of a row-major [n, k] tile,
// columns [c, c + 16) (b[0..1]: rows r..r+7, b[2..3]: rows r+8..r+15).
template <typename T> __device__ __forceinline__ static void f2_ldbt(uint32_t *b, const T *tile, int ld, int r, int c)
{
  const int lane = threadIdx.x % 32;
  ptdp_ldmatrix<4, false>(b, tile + (r + (lane / 16) * 8 + lane % 8) * ld + c + ((lane / 8) % 2) * 8);
}
// B fragments of two 8-column tiles from a row-major [k, n] tile: rows (k) [r, r + 16), columns
// [c, c + 8) in b[0..1] and [c + 8, c + 16) in b[2..3] (ldmatrix .trans).
template <typename T> __device__ __forceinline__ static void f2_ldb(uint32_t *b, const T *tile, int ld, int r, int c)
{
  const int lane = threadIdx.x % 32;
  ptdp_ldmatrix<4, true>(b, tile + (r + ((lane / 8) % 2) * 8 + lane % 8) * ld + c + (lane / 16) * 8);
}
// The A fragment of 16 columns (chunk c) of a [16, 64] accumulator array x[8][4], rounded.
template <typename T> __device__ __forceinline__ static void f2_acc_a(uint32_t *a, float (*x)[4], int c)
{
  a[0] = f2_pack<T>(x[2 * c][0], x[2 * c][1]), a[1] = f2_pack<T>(x[2 * c][2], x[2 * c][3]);
  a[2] = f2_pack<T>(x[2 * c + 1][0], x[2 * c + 1][1]), a[3] = f2_pack<T>(x[2 * c + 1][2], x[2 * c + 1][3]);
}

// Whether key k is seen by query q (the causal mask and the tail of the sequence): the backward's.
__device__ __forceinline__ static bool f2_sees(int k, int q, int s)
{
  return k <= q && q < s; // f2_sees
}

template <typename T, int HD>
__device__ __forceinline__ static void f2_abt(float (*x)[4], const uint32_t (*af)[4], const T *at, const T *bt, int ld);
template <typename T, int HD>
__device__ __forceinline__ static void f2_acc_xb(float (*acc)[4], float (*x)[4], const T *bm, int ld);
template <typename T, int HD>
__device__ __forceinline__ static void f2_store(T *out, long long ld, int r0, int lim, float (*acc)[4], float a);

template <typename T, int HD>
__global__ void __launch_bounds__(F2_THREADS, HD == 64 ? F2_MINB_FWD64 : 1) flash2_fwd(fl_dims d, const T *qkv, T *ctx, float *lse)
{
  constexpr int LD = HD + F2_PAD, NT = F2_BN / 8, KC = HD / 16, DT = HD / 8;
  const int hl = d.al * HD;
  const int qt = gridDim.x - 1 - blockIdx.x, bi = blockIdx.y / d.al, hh = blockIdx.y % d.al; // longest rows first
  const int w = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t4 = lane % 4;
  const int q0 = qt * F2_BM, qw0 = q0 + 16 * w;
  const T *Q = qkv + fl_part(d, bi, hh, 0, HD), *K = qkv + fl_part(d, bi, hh, 1, HD);
  const T *V = qkv + fl_part(d, bi, hh, 2, HD);
  const bool async = (size_t)Q % 16 == 0;
  extern __shared__ fl_smem_t fl_smem[];
  T *Qs = (T *)fl_smem, *Ks = Qs + F2_BM * LD, *Vs = Ks + 2 * F2_BN * LD; // K, V: two stages each
  const int nkt = (fl_min(q0 + F2_BM, d.s) - 1) / F2_BN + 1;
  f2_load<T, HD, F2_BM>(Qs, Q, d.ld, q0, d.s, async);
  f2_load<T, HD, F2_BN>(Ks, K, d.ld, 0, d.s, async);
  f2_load<T, HD, F2_BN>(Vs, V, d.ld, 0, d.s, async);
  ptdp_cp_async_commit();
  const int drop = d.drop.p > 0.0f;
  const float keep_scale = drop ? 1.0f / (1.0f - d.drop.p) : 1.0f, sl2 = d.scale * F2_LOG2E;
  uint64_t rh[2] = {0, 0};
  for (int r = 0; r < 2; r++)
    if (drop && qw0 + g + 8 * r < d.s) rh[r] = fl_row_hash(d, bi, hh, qw0 + g + 8 * r);
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f}; // rows g, g + 8: running max of S, this lane's part of the sum
  float o[DT][4];
  uint32_t qf[KC][4];
F2_UNROLL
  for (int j = 0; j < DT; j++) o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0.0f;
  for (int kt = 0; kt < nkt; kt++) {
    const int k0 = kt * F2_BN, cur = kt & 1;
    if (kt + 1 < nkt) {
      f2_load<T, HD, F2_BN>(Ks + (1 - cur) * F2_BN * LD, K, d.ld, k0 + F2_BN, d.s, async);
      f2_load<T, HD, F2_BN>(Vs + (1 - cur) * F2_BN * LD, V, d.ld, k0 + F2_BN, d.s, async);
    }
    ptdp_cp_async_commit();
    ptdp_cp_async_wait<1>(); // this tile's group (and Q's) complete
    __syncthreads();
    const T *Kt = Ks + cur * F2_BN * LD, *Vt = Vs + cur * F2_BN * LD;
    if (kt == 0)
F2_UNROLL
      for (int kk = 0; kk < KC; kk++) f2_lda(qf[kk], Qs + 16 * w * LD, LD, 16 * kk);
    if (qw0 < d.s && k0 <= qw0 + 15) { // else the warp's rows: none left, or all above the diagonal
      // The whole 64-key tile, also on the diagonal (its masked chunks give P = 0): no branch per chunk.
      float sc[NT][4];
F2_UNROLL
      for (int j = 0; j < NT; j++) sc[j][0] = sc[j][1] = sc[j][2] = sc[j][3] = 0.0f;
      f2_abt<T, HD>(sc, qf, Qs, Kt, LD); // S = Q K^T
      if (!(k0 + F2_BN <= qw0 && qw0 + 16 <= d.s)) // the diagonal tile or the sequence's end: the mask
F2_UNROLL
        for (int j = 0; j < NT; j++)
F2_UNROLL
          for (int e = 0; e < 4; e++) {
            const int q = qw0 + g + 8 * (e / 2), k = k0 + 8 * j + 2 * t4 + e % 2;
            if (!(k <= q && q < d.s)) sc[j][e] = -INFINITY;
          }
      float mt[2] = {-INFINITY, -INFINITY}, ms[2]; // the tile's row maxima (S units); m sl2, 0 for a row masked so far
F2_UNROLL
      for (int j = 0; j < NT; j++)
F2_UNROLL
        for (int e = 0; e < 4; e++) mt[e / 2] = fmaxf(mt[e / 2], sc[j][e]);
      float alpha[2];
F2_UNROLL
      for (int r = 0; r < 2; r++) {
        mt[r] = fmaxf(mt[r], __shfl_xor_sync(0xffffffffu, mt[r], 1));
        mt[r] = fmaxf(mt[r], __shfl_xor_sync(0xffffffffu, mt[r], 2));
        const float mnew = fmaxf(m[r], mt[r]);
        ms[r] = mnew == -INFINITY ? 0.0f : mnew * sl2;
        alpha[r] = f2_exp2(m[r] * sl2 - ms[r]); // 0 while the row has seen nothing (l, O are 0)
        m[r] = mnew;
        l[r] *= alpha[r];
      }
F2_UNROLL
      for (int j = 0; j < NT; j++)
F2_UNROLL
        for (int e = 0; e < 4; e++) { // P = 2^(S sl2 - m sl2): one FFMA and ex2; a masked entry's -inf gives 0
          sc[j][e] = f2_exp2(fmaf(sc[j][e], sl2, -ms[e / 2]));
          l[e / 2] += sc[j][e];
        }
      if (drop)
F2_UNROLL
        for (int j = 0; j < NT; j++)
F2_UNROLL
          for (int e = 0; e < 4; e++) {
            const int k = k0 + 8 * j + 2 * t4 + e % 2;
            sc[j][e] = ptdp_cu_rng_uniform(ptdp_cu_rng_at(rh[e / 2], (uint64_t)k)) >= d.drop.p ? sc[j][e] * keep_scale : 0.0f;
          }
F2_UNROLL
      for (int j = 0; j < DT; j++)
F2_UNROLL
        for (int e = 0; e < 4; e++) o[j][e] *= alpha[e / 2]; // the rescale of O
      f2_acc_xb<T, HD>(o, sc, Vt, LD); // O += P V
    }
    __syncthreads(); // every warp is done with this stage before the next iteration refills it
  }
  ptdp_cp_async_wait<0>();
F2_UNROLL
  for (int r = 0; r < 2; r++) {
    l[r] += __shfl_xor_sync(0xffffffffu, l[r], 1);
    l[r] += __shfl_xor_sync(0xffffffffu, l[r], 2);
    const int q = qw0 + g + 8 * r;
    if (q >= d.s) continue;
    const float inv = 1.0f / l[r];
F2_UNROLL
    for (int j = 0; j < DT; j++) o[j][2 * r] *= inv, o[j][2 * r + 1] *= inv;
    if (!t4) lse[((long long)bi * d.al + hh) * d.s + q] = m[r] * d.scale + logf(l[r]);
  }
  f2_store<T, HD>(ctx + (long long)bi * hl + (long long)hh * HD, d.ldc, qw0, d.s, o, 1.0f);
}

// dS (into dp) and Pd (into sc) of a warp's [16, 64] tile from S (sc, unscaled) and dP (dp), in
// the accumulator layout; rows and columns are (query, key) or, in the dK/dV pass (KR), (key,
// query).  lse2 (lse log2 e) and D of the element's query: per row (rows are queries) from
// lq2, Dq; per column from the tile's arrays L2, Dc (index: query - col0).  A tile wholly seen
// and no dropout (most tiles) takes a path with no test per element: P = 2^(S sl2 - lse2) (one
// FFMA and ex2), dS = P (dP - D); else the mask (a masked entry: P = dS = 0) and the dropout bits.
struct f2_ds_args {
  int bi, hh, row0, col0;
  int whole; // every (query, key) of the tile seen: no mask to test
  float lq2[2], Dq[2];
  uint64_t rh[2];
  const float *L2, *Dc;
};

template <bool KR>
__device__ __forceinline__ static void f2_ds(const fl_dims &d, const f2_ds_args &a, float (*sc)[4], float (*dp)[4])
{
  const int lane = threadIdx.x % 32, g = lane / 4, t4 = lane % 4;
  const int drop = d.drop.p > 0.0f;
  const float sl2 = d.scale * F2_LOG2E;
  if (a.whole && !drop) {
F2_UNROLL
    for (int j = 0; j < F2_BN / 8; j++) {
      float2 lc = make_float2(0.0f, 0.0f), dc = lc; // the columns' lse2 and D (KR: 8-byte aligned pairs)
      if (KR) lc = *(const float2 *)(a.L2 + 8 * j + 2 * t4), dc = *(const float2 *)(a.Dc + 8 * j + 2 * t4);
F2_UNROLL
      for (int e = 0; e < 4; e++) {
        const int r = e / 2, cc = e % 2;
        const float l2 = KR ? (cc ? lc.y : lc.x) : a.lq2[r], D = KR ? (cc ? dc.y : dc.x) : a.Dq[r];
        const float p = f2_exp2(fmaf(sc[j][e], sl2, -l2));
        dp[j][e] = p * (dp[j][e] - D), sc[j][e] = p;
      }
    }
    return;
  }
  const float keep_scale = drop ? 1.0f / (1.0f - d.drop.p) : 1.0f;
F2_UNROLL
  for (int j = 0; j < F2_BN / 8; j++)
F2_UNROLL
    for (int cc = 0; cc < 2; cc++) {
      const int col = a.col0 + 8 * j + 2 * t4 + cc;
      uint64_t ch = 0; // the row hash of a column's query (KR)
      if (KR && drop && col < d.s) ch = fl_row_hash(d, a.bi, a.hh, col);
F2_UNROLL
      for (int r = 0; r < 2; r++) {
        const int e = 2 * r + cc, row = a.row0 + g + 8 * r;
        const int q = KR ? col : row, k = KR ? row : col;
        float p = 0.0f, pd = 0.0f, ds = 0.0f;
        if (f2_sees(k, q, d.s)) {
          const float l2 = KR ? a.L2[col - a.col0] : a.lq2[r], D = KR ? a.Dc[col - a.col0] : a.Dq[r];
          p = f2_exp2(fmaf(sc[j][e], sl2, -l2));
          float dpv = dp[j][e];
          pd = p;
          if (drop) {
            const int keep = ptdp_cu_rng_uniform(ptdp_cu_rng_at(KR ? ch : a.rh[r], (uint64_t)k)) >= d.drop.p;
            pd = keep ? p * keep_scale : 0.0f;
            dpv = keep ? dpv * keep_scale : 0.0f;
          }
          ds = p * (dpv - D);
        }
        sc[j][e] = pd, dp[j][e] = ds;
      }
    }
}

// x[16, 64] += A[16, HD] B^T for B^T the 64 rows of bt [64, HD], A from registers (af) or, af
// null, from the warp's rows at at (row stride ld).
template <typename T, int HD>
__device__ __forceinline__ static void f2_abt(float (*x)[4], const uint32_t (*af)[4], const T *at, const T *bt, int ld)
{
F2_UNROLL
  for (int kk = 0; kk < HD / 16; kk++) { // each x[j] still sums its k steps in order
    uint32_t a[4];
    if (af) a[0] = af[kk][0], a[1] = af[kk][1], a[2] = af[kk][2], a[3] = af[kk][3];
    else f2_lda(a, at, ld, 16 * kk);
F2_UNROLL
    for (int c = 0; c < F2_BN / 16; c++) {
      uint32_t b[4];
      f2_ldbt(b, bt, ld, 16 * c, 16 * kk);
      ptdp_mma16816<T>(x[2 * c], a, b, x[2 * c]);
      ptdp_mma16816<T>(x[2 * c + 1], a, b + 2, x[2 * c + 1]);
    }
  }
}

// acc[16, HD] += X[16, 64] B for X an accumulator array (rounded to T) and B the 64 rows of bm [64, HD].
template <typename T, int HD>
__device__ __forceinline__ static void f2_acc_xb(float (*acc)[4], float (*x)[4], const T *bm, int ld)
{
F2_UNROLL
  for (int c = 0; c < F2_BN / 16; c++) {
    uint32_t a[4];
    f2_acc_a<T>(a, x, c);
F2_UNROLL
    for (int jj = 0; jj < HD / 16; jj++) {
      uint32_t b[4];
      f2_ldb(b, bm, ld, 16 * c, 16 * jj);
      ptdp_mma16816<T>(acc[2 * jj], a, b, acc[2 * jj]);
      ptdp_mma16816<T>(acc[2 * jj + 1], a, b + 2, acc[2 * jj + 1]);
    }
  }
}

// Rows g and g + 8 of a warp's accumulator [16, HD] (times a) to rows r0 + g (+ 8) of out: a lane's two
// adjacent columns as one 32-bit store where out is 4-byte aligned (ld and the columns are even).
template <typename T, int HD>
__device__ __forceinline__ static void f2_store(T *out, long long ld, int r0, int lim, float (*acc)[4], float a)
{
  const int lane = threadIdx.x % 32, g = lane / 4, t4 = lane % 4;
  const bool pair = (size_t)out % 4 == 0;
F2_UNROLL
  for (int r = 0; r < 2; r++) {
    if (r0 + g + 8 * r >= lim) continue;
    T *row = out + (long long)(r0 + g + 8 * r) * ld;
F2_UNROLL
    for (int j = 0; j < HD / 8; j++)
      if (pair) *(uint32_t *)(row + 8 * j + 2 * t4) = f2_pack<T>(acc[j][2 * r] * a, acc[j][2 * r + 1] * a);
      else row[8 * j + 2 * t4] = T(acc[j][2 * r] * a), row[8 * j + 2 * t4 + 1] = T(acc[j][2 * r + 1] * a);
  }
}

template <int HD> struct f2_areg {
  static constexpr bool on = HD <= 64; // the warp's A operands in registers (hd 128: from shared memory)
  static constexpr int n = on ? HD / 16 : 1;
};

// Tile q0 of query head hh's Q, dO (16-bit) into one stage of the dK/dV pass (cp.async).
template <typename T, int HD>
__device__ __forceinline__ static void f2_kv_fetch(const fl_dims &d, const T *qkv, const T *dctx, int bi, int hh, int q0,
                                                   T *Qs, T *dOs, bool async)
{
  const T *Q = qkv + fl_part(d, bi, hh, 0, HD), *dO = dctx + (long long)bi * d.al * HD + (long long)hh * HD;
  f2_load<T, HD, F2_BN>(Qs, Q, d.ld, q0, d.s, async);
  f2_load<T, HD, F2_BN>(dOs, dO, d.ldc, q0, d.s, async);
}

// lse and D of query q0 + threadIdx.x of head hh (threads below F2_BN; 0 past the sequence).
__device__ __forceinline__ static void f2_kv_rows(const fl_dims &d, const float *lse, const float *D, int bi, int hh,
                                                  int q0, float *l, float *dd)
{
  const long long o = ((long long)bi * d.al + hh) * d.s + q0 + threadIdx.x;
  const bool in = threadIdx.x < F2_BN && q0 + (int)threadIdx.x < d.s;
  *l = in ? lse[o] : 0.0f, *dd = in ? D[o] : 0.0f;
}

// dK, dV: one block per (64-key tile, sample and group), a warp 16 keys, over the group's query heads in order and,
// for each, the query tiles that see the keys: one pipeline over the (head, query tile) steps, the next step's tile in
// flight while this one is used, dK and dV summed over the heads in registers.
template <typename T, int HD>
__global__ void __launch_bounds__(F2_THREADS, HD == 64 ? F2_MINB_KV64 : 1) flash2_bwd_kv(fl_dims d, const T *qkv, const T *dctx, const float *lse,
                                                            const float *D, T *dqkv)
{
  constexpr int LD = HD + F2_PAD, NT = F2_BN / 8, DT = HD / 8;
  typedef f2_areg<HD> AR;
  const int kt = blockIdx.x, bi = blockIdx.y / d.groups, h0 = (blockIdx.y % d.groups) * d.hpg;
  const int w = threadIdx.x / 32;
  const int k0 = kt * F2_BM, kw0 = k0 + 16 * w;
  const long long koff = fl_part(d, bi, h0, 1, HD), voff = fl_part(d, bi, h0, 2, HD);
  const T *K = qkv + koff, *V = qkv + voff;
  // every head's Q and dO start a multiple of HD elements (128 bytes or more) from these
  const bool async = (size_t)(qkv + fl_part(d, bi, h0, 0, HD)) % 16 == 0 &&
                     (size_t)(dctx + (long long)bi * d.al * HD + (long long)h0 * HD) % 16 == 0;
  uint32_t kf[AR::n][4], vf[AR::n][4];
  float dk[DT][4], dv[DT][4];
F2_UNROLL
  for (int j = 0; j < DT; j++)
F2_UNROLL
    for (int e = 0; e < 4; e++) dk[j][e] = dv[j][e] = 0.0f;
  extern __shared__ fl_smem_t fl_smem[];
  T *Ks = (T *)fl_smem, *Vs = Ks + F2_BM * LD, *Qs = Vs + F2_BM * LD, *dOs = Qs + 2 * F2_BN * LD; // Q, dO: 2 stages
  float *L2s = (float *)(dOs + 2 * F2_BN * LD), *Ds = L2s + 2 * F2_BN;
  const int nqt = (d.s + F2_BN - 1) / F2_BN, qt0 = k0 / F2_BN, nq = nqt - qt0, nstep = d.hpg * nq;
  f2_load<T, HD, F2_BM>(Ks, K, d.ld, k0, d.s, async);
  f2_load<T, HD, F2_BM>(Vs, V, d.ld, k0, d.s, async);
  // Step it: head hh, query tile qt (head h0 + it / nq, tile qt0 + it % nq).  The next step's Q and dO tiles are in
  // flight (cp.async) while this one is used; its rows' lse and D wait in registers (nl, nd) and go to shared memory
  // at the step's end, so no thread stalls on their loads before the products.
  int hh = h0, qt = qt0;
  float nl = 0.0f, nd = 0.0f;
  for (int it = 0; it < nstep; it++) {
    const int q0 = qt * F2_BN, cur = it & 1, nx = 1 - cur;
    int hx = hh, qx = qt + 1; // step it + 1's
    if (qx == nqt) qx = qt0, hx++;
    if (it == 0) { // the first tile, then each step fetches the next
      f2_kv_fetch<T, HD>(d, qkv, dctx, bi, hh, q0, Qs, dOs, async);
      ptdp_cp_async_commit();
      f2_kv_rows(d, lse, D, bi, hh, q0, &nl, &nd);
      if (threadIdx.x < F2_BN) L2s[threadIdx.x] = nl * F2_LOG2E, Ds[threadIdx.x] = nd;
    }
    if (it + 1 < nstep) {
      f2_kv_fetch<T, HD>(d, qkv, dctx, bi, hx, qx * F2_BN, Qs + nx * F2_BN * LD, dOs + nx * F2_BN * LD, async);
      f2_kv_rows(d, lse, D, bi, hx, qx * F2_BN, &nl, &nd);
    }
    ptdp_cp_async_commit();
    ptdp_cp_async_wait<1>();
    __syncthreads();
    const T *Qt = Qs + cur * F2_BN * LD, *dOt = dOs + cur * F2_BN * LD;
    if (it == 0) {
      if (AR::on)
F2_UNROLL
        for (int kk = 0; kk < AR::n; kk++) f2_lda(kf[kk], Ks + 16 * w * LD, LD, 16 * kk), f2_lda(vf[kk], Vs + 16 * w * LD, LD, 16 * kk);
    }
    if (kw0 < d.s) {
      float sc[NT][4], dp[NT][4];
F2_UNROLL
      for (int j = 0; j < NT; j++)
F2_UNROLL
        for (int e = 0; e < 4; e++) sc[j][e] = dp[j][e] = 0.0f;
      f2_abt<T, HD>(sc, AR::on ? kf : 0, Ks + 16 * w * LD, Qt, LD);  // S^T = K Q^T
      f2_abt<T, HD>(dp, AR::on ? vf : 0, Vs + 16 * w * LD, dOt, LD); // dP^T = V dO^T
      const int whole = q0 >= kw0 + 15 && q0 + F2_BN <= d.s && kw0 + 16 <= d.s; // every query after every key
      f2_ds_args a = {bi, hh, kw0, q0, whole, {0, 0}, {0, 0}, {0, 0}, L2s + cur * F2_BN,
                      Ds + cur * F2_BN};
      f2_ds<true>(d, a, sc, dp);
      f2_acc_xb<T, HD>(dv, sc, dOt, LD); // dV += Pd^T dO
      f2_acc_xb<T, HD>(dk, dp, Qt, LD);  // dK += dS^T Q
    }
    if (it + 1 < nstep && threadIdx.x < F2_BN) L2s[nx * F2_BN + threadIdx.x] = nl * F2_LOG2E, Ds[nx * F2_BN + threadIdx.x] = nd;
    __syncthreads();
    hh = hx, qt = qx;
  }
  ptdp_cp_async_wait<0>();
  T *dK = dqkv + koff, *dV = dqkv + voff;
  f2_store<T, HD>(dK, d.ld, kw0, d.s, dk, d.scale);
  f2_store<T, HD>(dV, d.ld, kw0, d.s, dv, 1.0f);
}

// dQ: one block per (64-query tile, pair), a warp 16 queries, over the key tiles they see.
template <typename T, int HD>
__global__ void __launch_bounds__(F2_THREADS, HD == 64 ? F2_MINB_Q64 : 1) flash2_bwd_q(fl_dims d, const T *qkv, const T *dctx, const float *lse,
                                                           const float *D, T *dqkv)
{
  constexpr int LD = HD + F2_PAD, NT = F2_BN / 8, DT = HD / 8;
  typedef f2_areg<HD> AR;
  const int hl = d.al * HD;
  const int qt = gridDim.x - 1 - blockIdx.x, bi = blockIdx.y / d.al, hh = blockIdx.y % d.al;
  const int w = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4;
  const int q0 = qt * F2_BM, qw0 = q0 + 16 * w;
  const long long qoff = fl_part(d, bi, hh, 0, HD);
  const T *Q = qkv + qoff, *K = qkv + fl_part(d, bi, hh, 1, HD), *V = qkv + fl_part(d, bi, hh, 2, HD);
  const T *dO = dctx + (long long)bi * hl + (long long)hh * HD;
  const float *L = lse + ((long long)bi * d.al + hh) * d.s, *Dr = D + ((long long)bi * d.al + hh) * d.s;
  const bool async = (size_t)Q % 16 == 0 && (size_t)dO % 16 == 0;
  extern __shared__ fl_smem_t fl_smem[];
  T *Qs = (T *)fl_smem, *dOs = Qs + F2_BM * LD, *Ks = dOs + F2_BM * LD, *Vs = Ks + 2 * F2_BN * LD; // K, V: 2 stages
  const int nkt = (fl_min(q0 + F2_BM, d.s) - 1) / F2_BN + 1;
  f2_load<T, HD, F2_BM>(Qs, Q, d.ld, q0, d.s, async);
  f2_load<T, HD, F2_BM>(dOs, dO, d.ldc, q0, d.s, async);
  f2_load<T, HD, F2_BN>(Ks, K, d.ld, 0, d.s, async);
  f2_load<T, HD, F2_BN>(Vs, V, d.ld, 0, d.s, async);
  ptdp_cp_async_commit();
  f2_ds_args a = {bi, hh, qw0, 0, 0, {0, 0}, {0, 0}, {0, 0}, (const float *)0, (const float *)0};
  for (int r = 0; r < 2; r++) {
    const int q = qw0 + g + 8 * r;
    a.lq2[r] = q < d.s ? L[q] * F2_LOG2E : 0.0f, a.Dq[r] = q < d.s ? Dr[q] : 0.0f;
    if (d.drop.p > 0.0f && q < d.s) a.rh[r] = fl_row_hash(d, bi, hh, q);
  }
  uint32_t qf[AR::n][4], df[AR::n][4];
  float dq[DT][4];
F2_UNROLL
  for (int j = 0; j < DT; j++) dq[j][0] = dq[j][1] = dq[j][2] = dq[j][3] = 0.0f;
  for (int kt = 0; kt < nkt; kt++) {
    const int k0 = kt * F2_BN, cur = kt & 1;
    if (kt + 1 < nkt) {
      f2_load<T, HD, F2_BN>(Ks + (1 - cur) * F2_BN * LD, K, d.ld, k0 + F2_BN, d.s, async);
      f2_load<T, HD, F2_BN>(Vs + (1 - cur) * F2_BN * LD, V, d.ld, k0 + F2_BN, d.s, async);
    }
    ptdp_cp_async_commit();
    ptdp_cp_async_wait<1>();
    __syncthreads();
    const T *Kt = Ks + cur * F2_BN * LD, *Vt = Vs + cur * F2_BN * LD;
    if (kt == 0 && AR::on)
F2_UNROLL
      for (int kk = 0; kk < AR::n; kk++) f2_lda(qf[kk], Qs + 16 * w * LD, LD, 16 * kk), f2_lda(df[kk], dOs + 16 * w * LD, LD, 16 * kk);
    if (qw0 < d.s && k0 <= qw0 + 15) {
      float sc[NT][4], dp[NT][4];
F2_UNROLL
      for (int j = 0; j < NT; j++)
F2_UNROLL
        for (int e = 0; e < 4; e++) sc[j][e] = dp[j][e] = 0.0f;
      f2_abt<T, HD>(sc, AR::on ? qf : 0, Qs + 16 * w * LD, Kt, LD);  // S = Q K^T
      f2_abt<T, HD>(dp, AR::on ? df : 0, dOs + 16 * w * LD, Vt, LD); // dP = dO V^T
      a.col0 = k0, a.whole = k0 + F2_BN <= qw0 && qw0 + 16 <= d.s; // every key before every query
      f2_ds<false>(d, a, sc, dp);
      f2_acc_xb<T, HD>(dq, dp, Kt, LD); // dQ += dS K
    }
    __syncthreads();
  }
  ptdp_cp_async_wait<0>();
  f2_store<T, HD>(dqkv + qoff, d.ld, qw0, d.s, dq, d.scale);
}

// ---------------------------------------------------------------- launchers
// (through function pointers, which the emulation's reports and PTDP_EMU_STATS name)
static fl_dims fl_dims_of(const ptdp_attn_desc *a)
{
  fl_dims d;
  d.b = a->b, d.s = a->s, d.al = a->al, d.hd = a->hd, d.head0 = a->head0, d.drop = a->drop;
  d.groups = a->groups > 0 ? a->groups : a->al, d.hpg = a->al / d.groups;
  d.scale = 1.0f / sqrtf((float)a->hd);
  d.w = (long long)(a->al + 2 * d.groups) * a->hd;
  d.ld = a->b * d.w;
  d.ldc = (long long)a->b * a->al * a->hd;
  return d;
}

static size_t fl_align_host(size_t x) { return (x + 127) & ~(size_t)127; }

// Shared memory bytes of each kernel (the layouts at the top of each).
static size_t fl_fwd_bytes(int hd, size_t e)
{
  const size_t ldt = hd + FL_PAD_T, ldo = hd + FL_PAD_F;
  return fl_align_host(2 * FL_COLS * ldt * e) +
         FL_WARPS * fl_align_host(16 * (ldt + FL_LDP) * e + 16 * (FL_LDS + ldo) * sizeof(float));
}
static size_t fl_kv_bytes(int hd, size_t e)
{
  const size_t ldt = hd + FL_PAD_T;
  return fl_align_host(fl_align_host(2 * FL_COLS * ldt * e) + 2 * FL_COLS * sizeof(float)) +
         FL_WARPS * fl_align_host(2 * 16 * (ldt + FL_LDP) * e + 2 * 16 * FL_LDS * sizeof(float));
}
static size_t fl_q_bytes(int hd, size_t e)
{
  const size_t ldt = hd + FL_PAD_T;
  return fl_align_host(2 * FL_COLS * ldt * e) +
         FL_WARPS * fl_align_host((2 * 16 * ldt + 16 * FL_LDP) * e + (2 * 16 * FL_LDS + 2 * 16) * sizeof(float));
}

static int fl_supported(const ptdp_attn_desc *d)
{
  const int groups = d->groups > 0 ? d->groups : d->al;
  return d->hd > 0 && d->hd % 16 == 0 && d->hd <= FL_HD_MAX && d->b > 0 && d->al > 0 && d->s >= 0 &&
         groups <= d->al && d->al % groups == 0 && (long long)d->b * d->al <= 65535;
}

int ptdp_cuk_flash_supported(const ptdp_attn_desc *d) { return fl_supported(d); }

template <typename T, int HD>
static cudaError_t fl_forward(cudaStream_t st, const ptdp_attn_desc *a, const void *qkv, void *ctx, float *lse)
{
  const fl_dims d = fl_dims_of(a);
  const size_t shm = fl_fwd_bytes(d.hd, sizeof(T));
  void (*fwd_flash)(fl_dims, const T *, T *, float *) = flash_fwd<T, HD>;
  cudaError_t e = cudaFuncSetAttribute(fwd_flash, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)shm);
  if (e != cudaSuccess) return e;
  dim3 grid((unsigned)((d.s + FL_ROWS - 1) / FL_ROWS), (unsigned)(d.b * d.al));
  fwd_flash<<<grid, FL_THREADS, shm, st>>>(d, (const T *)qkv, (T *)ctx, lse);
  return cudaGetLastError();
}

template <typename T, int HD>
static cudaError_t fl_backward(cudaStream_t st, const ptdp_attn_desc *a, const void *qkv, const void *ctx,
                               const float *lse, const void *dctx, void *dqkv, float *D)
{
  const fl_dims d = fl_dims_of(a);
  const long long rows = (long long)d.b * d.al * d.s;
  void (*rowdot_flash)(fl_dims, const T *, const T *, float *) = flash_bwd_dot<T>;
  const unsigned nrow_blocks = (unsigned)((rows + FL_WARPS - 1) / FL_WARPS);
  rowdot_flash<<<nrow_blocks, FL_THREADS, 0, st>>>(d, (const T *)ctx, (const T *)dctx, D);
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) return e;
  dim3 grid((unsigned)((d.s + FL_ROWS - 1) / FL_ROWS), (unsigned)(d.b * d.al));
  const dim3 kv_grid(grid.x, (unsigned)(d.b * d.groups)); // a block per key tile of a group
  void (*dkdv_flash)(fl_dims, const T *, const T *, const float *, const float *, T *) = flash_bwd_kv<T, HD>;
  const size_t shkv = fl_kv_bytes(d.hd, sizeof(T));
  e = cudaFuncSetAttribute(dkdv_flash, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)shkv);
  if (e != cudaSuccess) return e;
  dkdv_flash<<<kv_grid, FL_THREADS, shkv, st>>>(d, (const T *)qkv, (const T *)dctx, lse, D, (T *)dqkv);
  if ((e = cudaGetLastError()) != cudaSuccess) return e;
  void (*dq_flash)(fl_dims, const T *, const T *, const float *, const float *, T *) = flash_bwd_q<T, HD>;
  const size_t shq = fl_q_bytes(d.hd, sizeof(T));
  e = cudaFuncSetAttribute(dq_flash, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)shq);
  if (e != cudaSuccess) return e;
  dq_flash<<<grid, FL_THREADS, shq, st>>>(d, (const T *)qkv, (const T *)dctx, lse, D, (T *)dqkv);
  return cudaGetLastError();
}

// The head sizes of GPT models (64, 128) get kernels of their own, where every loop over the
// hd/16 column tiles has a constant count and the accumulators stay in registers; any other
// multiple of 16 runs the kernels with hd read at run time (HD 0).
#define FL_BY_HD(fn, T, hd) ((hd) == 64 ? fn<T, 64> : (hd) == 128 ? fn<T, 128> : fn<T, 0>)

// ---------------------------------------------------------------- mma launchers
static size_t f2_fwd_bytes(int hd, size_t e) { return (size_t)5 * F2_BN * (hd + F2_PAD) * e; } // Q, 2 x (K, V)
static size_t f2_kv_bytes(int hd, size_t e)
{
  return (size_t)6 * F2_BN * (hd + F2_PAD) * e + 4 * F2_BN * sizeof(float); // K, V, 2 x (Q, dO); 2 x (lse, D)
}
static size_t f2_q_bytes(int hd, size_t e) { return (size_t)6 * F2_BN * (hd + F2_PAD) * e; } // Q, dO, 2 x (K, V)

template <typename T, int HD>
static cudaError_t f2_forward(cudaStream_t st, const ptdp_attn_desc *a, const void *qkv, void *ctx, float *lse)
{
  const fl_dims d = fl_dims_of(a);
  const size_t shm = f2_fwd_bytes(HD, sizeof(T));
  void (*fwd_flash2)(fl_dims, const T *, T *, float *) = flash2_fwd<T, HD>;
  cudaError_t e = cudaFuncSetAttribute(fwd_flash2, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)shm);
  if (e != cudaSuccess) return e;
  dim3 grid((unsigned)((d.s + F2_BM - 1) / F2_BM), (unsigned)(d.b * d.al));
  fwd_flash2<<<grid, F2_THREADS, shm, st>>>(d, (const T *)qkv, (T *)ctx, lse);
  return cudaGetLastError();
}

template <typename T, int HD>
static cudaError_t f2_backward(cudaStream_t st, const ptdp_attn_desc *a, const void *qkv, const void *ctx,
                               const float *lse, const void *dctx, void *dqkv, float *D)
{
  const fl_dims d = fl_dims_of(a);
  const long long rows = (long long)d.b * d.al * d.s;
  void (*rowdot_flash2)(fl_dims, const T *, const T *, float *) = flash_bwd_dot<T>;
  const unsigned nrow_blocks = (unsigned)((rows + FL_WARPS - 1) / FL_WARPS);
  rowdot_flash2<<<nrow_blocks, FL_THREADS, 0, st>>>(d, (const T *)ctx, (const T *)dctx, D);
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) return e;
  dim3 grid((unsigned)((d.s + F2_BM - 1) / F2_BM), (unsigned)(d.b * d.al));
  const dim3 kv_grid(grid.x, (unsigned)(d.b * d.groups)); // a block per key tile of a group
  void (*dkdv_flash2)(fl_dims, const T *, const T *, const float *, const float *, T *) = flash2_bwd_kv<T, HD>;
  const size_t shkv = f2_kv_bytes(HD, sizeof(T));
  e = cudaFuncSetAttribute(dkdv_flash2, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)shkv);
  if (e != cudaSuccess) return e;
  dkdv_flash2<<<kv_grid, F2_THREADS, shkv, st>>>(d, (const T *)qkv, (const T *)dctx, lse, D, (T *)dqkv);
  if ((e = cudaGetLastError()) != cudaSuccess) return e;
  void (*dq_flash2)(fl_dims, const T *, const T *, const float *, const float *, T *) = flash2_bwd_q<T, HD>;
  const size_t shq = f2_q_bytes(HD, sizeof(T));
  e = cudaFuncSetAttribute(dq_flash2, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)shq);
  if (e != cudaSuccess) return e;
  dq_flash2<<<grid, F2_THREADS, shq, st>>>(d, (const T *)qkv, (const T *)dctx, lse, D, (T *)dqkv);
  return cudaGetLastError();
}

// ---------------------------------------------------------------- the choice of kernels
static ptdp_flash_kernel fl_forced = PTDP_FLASH_KERNEL_ENV;

// PTDP_FLASH_KERNEL, read once (at the first call; threads racing there read the same value).
static ptdp_flash_kernel fl_env_kernel(void)
{
  static ptdp_flash_kernel k = PTDP_FLASH_KERNEL_ENV;
  if (k != PTDP_FLASH_KERNEL_ENV) return k;
  const char *v = getenv("PTDP_FLASH_KERNEL");
  if (v && !strcmp(v, "wmma")) return k = PTDP_FLASH_KERNEL_WMMA;
  if (v && *v && strcmp(v, "mma")) fprintf(stderr, "ptdp: PTDP_FLASH_KERNEL=%s is neither mma nor wmma: mma runs\n", v);
  return k = PTDP_FLASH_KERNEL_MMA;
}

extern "C" void ptdp_cuk_flash_set_kernel(ptdp_flash_kernel k) { fl_forced = k; }
extern "C" ptdp_flash_kernel ptdp_cuk_flash_kernel(void)
{
  return fl_forced != PTDP_FLASH_KERNEL_ENV ? fl_forced : fl_env_kernel();
}

// The mma kernels where they apply (hd 64, 128), else the wmma kernels.
static int f2_applies(int hd) { return ptdp_cuk_flash_kernel() == PTDP_FLASH_KERNEL_MMA && (hd == 64 || hd == 128); }

template <typename T>
static cudaError_t fl_forward_t(cudaStream_t st, const ptdp_attn_desc *d, const void *qkv, void *ctx, float *lse)
{
  if (f2_applies(d->hd)) return (d->hd == 64 ? f2_forward<T, 64> : f2_forward<T, 128>)(st, d, qkv, ctx, lse);
  return FL_BY_HD(fl_forward, T, d->hd)(st, d, qkv, ctx, lse);
}

template <typename T>
static cudaError_t fl_backward_t(cudaStream_t st, const ptdp_attn_desc *d, const void *qkv, const void *ctx,
                                 const float *lse, const void *dctx, void *dqkv, float *drow)
{
  if (f2_applies(d->hd))
    return (d->hd == 64 ? f2_backward<T, 64> : f2_backward<T, 128>)(st, d, qkv, ctx, lse, dctx, dqkv, drow);
  return FL_BY_HD(fl_backward, T, d->hd)(st, d, qkv, ctx, lse, dctx, dqkv, drow);
}

extern "C" cudaError_t ptdp_cuk_flash_forward(cudaStream_t st, ptdp_dtype t, const ptdp_attn_desc *d, const void *qkv,
                                              void *ctx, float *lse)
{
  if (!fl_supported(d) || (t != PTDP_BF16 && t != PTDP_F16)) return cudaErrorInvalidValue;
  if (d->s == 0) return cudaSuccess;
  if (t == PTDP_BF16) return fl_forward_t<__nv_bfloat16>(st, d, qkv, ctx, lse);
  return fl_forward_t<__half>(st, d, qkv, ctx, lse);
}

extern "C" cudaError_t ptdp_cuk_flash_backward(cudaStream_t st, ptdp_dtype t, const ptdp_attn_desc *d, const void *qkv,
                                               const void *ctx, const float *lse, const void *dctx, void *dqkv,
                                               float *drow)
{
  if (!fl_supported(d) || (t != PTDP_BF16 && t != PTDP_F16)) return cudaErrorInvalidValue;
  if (d->s == 0) return cudaSuccess;
  if (t == PTDP_BF16) return fl_backward_t<__nv_bfloat16>(st, d, qkv, ctx, lse, dctx, dqkv, drow);
  return fl_backward_t<__half>(st, d, qkv, ctx, lse, dctx, dqkv, drow);
}
