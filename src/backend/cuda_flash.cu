// Fused causal (flash) attention for 16-bit storage (bf16, fp16) on the tensor cores through the
// wmma API: the function of ptdp_cpu_flash_forward/backward (src/backend/cpu_attention.c) without
// the s x s scores in global memory.  Shapes as in ptdp/backend.h: qkv [N, 3 hl] with each token
// row [al][3][hd] and rows (pos, sample), ctx [N, al hd], lse [b, al, s] fp32.
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
// (ptxas, sm_90: no stack frame but 32 bytes of spills in the bf16 dK/dV kernel at 255
// registers); others read hd at run time and keep the dK/dV/dQ accumulators in local memory.
// Shared memory per block (rows padded: FL_PAD_T), hd 128: forward 110 KiB, dK/dV 120.5 KiB, dQ
// 111.5 KiB (hd 64: 70, 88.5, 79.5), above the default 48 KiB (cudaFuncSetAttribute).
// NOT YET RUN ON A GPU: correctness is proven in the emulation (validation/emu/tests/
// test_emu_flash.c); speed, compute-sanitizer and tuning need one.
#include "cuda_internal.h"
#include "cuda_rng.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <math.h>
#include <mma.h>

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
  long long head0;
  ptdp_dropout_key drop;
  float scale;
  long long ld, ldc; // row strides of qkv (b 3 hl) and of ctx (b hl), in elements
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

// ---------------------------------------------------------------- forward
template <typename T, int HD>
__global__ void __launch_bounds__(FL_THREADS) flash_fwd(fl_dims d, const T *qkv, T *ctx, float *lse)
{
  const int hd = HD ? HD : d.hd, hl = d.al * hd;
  const int qt = gridDim.x - 1 - blockIdx.x; // the longest rows first
  const int bi = blockIdx.y / d.al, hh = blockIdx.y % d.al;
  const int w = threadIdx.x / 32, lane = threadIdx.x % 32, r = lane / 2, half = lane % 2;
  const int q0 = qt * FL_ROWS, qw0 = q0 + 16 * w, q = qw0 + r;
  const T *Q = qkv + (long long)bi * 3 * hl + (long long)hh * 3 * hd, *K = Q + hd, *V = Q + 2 * hd;
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
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
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

// dK, dV: one block per (key tile, pair); each warp 16 keys, over the query tiles that see them.
template <typename T, int HD>
__global__ void __launch_bounds__(FL_THREADS) flash_bwd_kv(fl_dims d, const T *qkv, const T *dctx, const float *lse,
                                                           const float *D, T *dqkv)
{
  const int hd = HD ? HD : d.hd, hl = d.al * hd;
  const int kt = blockIdx.x, bi = blockIdx.y / d.al, hh = blockIdx.y % d.al;
  const int w = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int k0 = kt * FL_ROWS, kw0 = k0 + 16 * w;
  const long long qoff = (long long)bi * 3 * hl + (long long)hh * 3 * hd;
  const T *Q = qkv + qoff, *K = Q + hd, *V = Q + 2 * hd;
  const T *dO = dctx + (long long)bi * hl + (long long)hh * hd;
  const float *L = lse + ((long long)bi * d.al + hh) * d.s, *Dr = D + ((long long)bi * d.al + hh) * d.s;
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
  __syncwarp();
  T *dK = dqkv + qoff + hd, *dV = dK + hd;
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
  const long long qoff = (long long)bi * 3 * hl + (long long)hh * 3 * hd;
  const T *Q = qkv + qoff, *K = Q + hd, *V = Q + 2 * hd;
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

// ---------------------------------------------------------------- launchers
// (through function pointers, which the emulation's reports and PTDP_EMU_STATS name)
static fl_dims fl_dims_of(const ptdp_attn_desc *a)
{
  fl_dims d;
  d.b = a->b, d.s = a->s, d.al = a->al, d.hd = a->hd, d.head0 = a->head0, d.drop = a->drop;
  d.scale = 1.0f / sqrtf((float)a->hd);
  d.ld = 3LL * a->b * a->al * a->hd;
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
  return d->hd > 0 && d->hd % 16 == 0 && d->hd <= FL_HD_MAX && d->b > 0 && d->al > 0 && d->s >= 0 &&
         (long long)d->b * d->al <= 65535;
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
  void (*dkdv_flash)(fl_dims, const T *, const T *, const float *, const float *, T *) = flash_bwd_kv<T, HD>;
  const size_t shkv = fl_kv_bytes(d.hd, sizeof(T));
  e = cudaFuncSetAttribute(dkdv_flash, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)shkv);
  if (e != cudaSuccess) return e;
  dkdv_flash<<<grid, FL_THREADS, shkv, st>>>(d, (const T *)qkv, (const T *)dctx, lse, D, (T *)dqkv);
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

extern "C" cudaError_t ptdp_cuk_flash_forward(cudaStream_t st, ptdp_dtype t, const ptdp_attn_desc *d, const void *qkv,
                                              void *ctx, float *lse)
{
  if (!fl_supported(d) || (t != PTDP_BF16 && t != PTDP_F16)) return cudaErrorInvalidValue;
  if (d->s == 0) return cudaSuccess;
  if (t == PTDP_BF16) return FL_BY_HD(fl_forward, __nv_bfloat16, d->hd)(st, d, qkv, ctx, lse);
  return FL_BY_HD(fl_forward, __half, d->hd)(st, d, qkv, ctx, lse);
}

extern "C" cudaError_t ptdp_cuk_flash_backward(cudaStream_t st, ptdp_dtype t, const ptdp_attn_desc *d, const void *qkv,
                                               const void *ctx, const float *lse, const void *dctx, void *dqkv,
                                               float *drow)
{
  if (!fl_supported(d) || (t != PTDP_BF16 && t != PTDP_F16)) return cudaErrorInvalidValue;
  if (d->s == 0) return cudaSuccess;
  if (t == PTDP_BF16) return FL_BY_HD(fl_backward, __nv_bfloat16, d->hd)(st, d, qkv, ctx, lse, dctx, dqkv, drow);
  return FL_BY_HD(fl_backward, __half, d->hd)(st, d, qkv, ctx, lse, dctx, dqkv, drow);
}
