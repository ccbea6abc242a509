// CUDA kernels of the backend's elementwise and row operations (shapes as in ptdp/backend.h;
// N = rows).  Each mirrors the CPU backend's formula (src/backend/cpu.c) so results agree to
// rounding: row statistics in double where the CPU sums in double, the same tanh-form GELU, the
// same counter-based dropout keys (cuda_rng.h), AdamW's bias corrections computed on the host.
// Kernels with (S) operands are templates on the storage type T (cuda_elem.h): fp32 math, one
// rounding per stored element, so a bf16/fp16 table rounds where the mixed-precision wrapper
// does.  LayerNorm keeps its double statistics in every type: fp32 sums of h terms would do for
// a bf16 y, but the suite holds mean and rstd (fp32 outputs) to a few fp32 ulps of their own
// size, and a mean near zero of terms of size 3 loses about h u relative to itself in fp32; a
// row pass is bound by memory, not by the double adds (on the H200 the one-element-a-lane
// kernels ran at 35-50% of the bandwidth, so they move 16-byte units now where they can).
// Column sums (LayerNorm dw/db, bias db) go through fixed row chunks and a second pass, so
// they are deterministic; only embedding_backward adds with atomics (rows sharing a token).
// First run on an NVIDIA H200, 2026-11-26 (validation/bench/README.md): per-kernel times there.
#include "cuda_bda.h"
#include "cuda_elem.h"
#include "cuda_internal.h"
#include "cuda_rng.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#define THREADS 256
#define GELU_K 0.7978845608028654f // sqrt(2/pi)

static unsigned grid_for(size_t n)
{
  size_t g = (n + THREADS - 1) / THREADS;
  return (unsigned)(g > 65535u * 32u ? 65535u * 32u : (g ? g : 1));
}

// grid-stride loop over [0, n)
#define FOR_EACH(i, n) for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < (n); i += (size_t)gridDim.x * blockDim.x)

// Sum of v over the block (blockDim.x a multiple of 32, <= 1024); every thread gets the total.
template <typename T> __device__ T block_sum(T v)
{
  __shared__ T part[32];
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
  __syncthreads(); // part may still be read by a previous call
  if (lane == 0) part[warp] = v;
  __syncthreads();
  T t = 0;
  for (int w = 0; w < nw; w++) t += part[w];
  return t;
}

__device__ float block_max(float v)
{
  __shared__ float part[32];
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
  __syncthreads();
  if (lane == 0) part[warp] = v;
  __syncthreads();
  float t = -INFINITY;
  for (int w = 0; w < nw; w++) t = fmaxf(t, part[w]);
  return t;
}

// Sum of v over the warp; every lane gets the total.
template <typename T> __device__ T warp_sum(T v)
{
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// vec16, VEC and vec_aligned: cuda_elem.h

// ---------------------------------------------------------------- LayerNorm
// Rows up to LN_WARP_H wide: one warp per row (8 rows a block), sums through shuffles alone:
// the step's LayerNorms are thousands of short rows (h 768 to 4096), where a block per row spent
// its time in barriers (ncu on an H200: 32 us for 8192 rows of 768, 5x the bytes' time).
// Wider rows: one block per row.  Both: mean and variance in double (as the CPU).
#define LN_WARP_H 4096
#define LN_ROWS_PER_BLOCK 8

// y = (x - m) rs w + b for row r, the statistics summed by warp lanes (lane, lanes)
template <typename T>
__device__ __forceinline__ static void ln_row_forward(const T *xr, const T *w, const T *b, T *yr, float *mean,
                                                      float *rstd, long long r, int h, float eps, bool warp)
{
  const int t = warp ? (int)(threadIdx.x & 31) : (int)threadIdx.x, nt = warp ? 32 : (int)blockDim.x;
  double s = 0;
  for (int i = t; i < h; i += nt) s += ptdp_ld(xr[i]);
  const float m = (float)((warp ? warp_sum(s) : block_sum(s)) / h);
  double ss = 0;
  for (int i = t; i < h; i += nt) {
    float d = ptdp_ld(xr[i]) - m;
    ss += (double)d * d;
  }
  const float rs = 1.0f / sqrtf((float)((warp ? warp_sum(ss) : block_sum(ss)) / h) + eps);
  for (int i = t; i < h; i += nt) ptdp_st(&yr[i], (ptdp_ld(xr[i]) - m) * rs * ptdp_ld(w[i]) + ptdp_ld(b[i]));
  if (t == 0) {
    mean[r] = m;
    rstd[r] = rs;
  }
}

template <typename T>
__global__ void ln_forward_rows(const T *x, const T *w, const T *b, T *y, float *mean, float *rstd, long long rows,
                                int h, float eps)
{
  const long long r = (long long)blockIdx.x * LN_ROWS_PER_BLOCK + (threadIdx.x >> 5);
  if (r >= rows) return; // the whole warp: its lanes share the row
  ln_row_forward(x + r * h, w, b, y + r * h, mean, rstd, r, h, eps, true);
}

// one block per row of h
template <typename T>
__global__ void ln_forward(const T *x, const T *w, const T *b, T *y, float *mean, float *rstd, int h, float eps)
{
  const long long r = blockIdx.x;
  ln_row_forward(x + r * h, w, b, y + r * h, mean, rstd, r, h, eps, false);
}

// dx = rs (g - mean(g) - xhat mean(g xhat)), g = dy w, for row r (lanes as ln_row_forward); with a
// residual's gradient resr, dx = that + resr, the sum rounded on its own (add_k's bits in fp32)
__device__ __forceinline__ static float ln_plus(float v, float res) { return __fadd_rn(v, res); }

template <typename T>
__device__ __forceinline__ static void ln_row_backward(const T *dyr, const T *xr, const T *w, const float *mean,
                                                       const float *rstd, T *dxr, const T *resr, long long r, int h,
                                                       bool warp)
{
  const int t = warp ? (int)(threadIdx.x & 31) : (int)threadIdx.x, nt = warp ? 32 : (int)blockDim.x;
  const float m = mean[r], rs = rstd[r];
  double sg = 0, sgx = 0;
  for (int i = t; i < h; i += nt) {
    float xh = (ptdp_ld(xr[i]) - m) * rs, g = ptdp_ld(dyr[i]) * ptdp_ld(w[i]);
    sg += g;
    sgx += (double)g * xh;
  }
  float mg, mgx;
  if (warp) {
    mg = (float)(warp_sum(sg) / h);
    mgx = (float)(warp_sum(sgx) / h);
  } else {
    mg = (float)(block_sum(sg) / h);
    mgx = (float)(block_sum(sgx) / h);
  }
  for (int i = t; i < h; i += nt) {
    float xh = (ptdp_ld(xr[i]) - m) * rs;
    const float v = rs * (ptdp_ld(dyr[i]) * ptdp_ld(w[i]) - mg - xh * mgx);
    ptdp_st(&dxr[i], resr ? ln_plus(v, ptdp_ld(resr[i])) : v);
  }
}

template <typename T>
__global__ void ln_backward_dx_rows(const T *dy, const T *x, const T *w, const float *mean, const float *rstd, T *dx,
                                    const T *res, long long rows, int h)
{
  const long long r = (long long)blockIdx.x * LN_ROWS_PER_BLOCK + (threadIdx.x >> 5);
  if (r >= rows) return;
  ln_row_backward(dy + r * h, x + r * h, w, mean, rstd, dx + r * h, res ? res + r * h : res, r, h, true);
}

// The warp-per-row kernels in vec16 units (h a multiple of VEC(T), the arrays aligned): the same
// passes and per-element arithmetic, a lane's 16-byte pieces t, t + 32, ... (its sums in double
// over other elements than ln_row_forward's lane: mean and rstd equal to the last bit but for a
// rare double rounding).  One element a lane per load ran at 35-50% of the bandwidth on the H200
// (validation/bench/README.md, GPU third session).
// row r of the warp-per-row vec16 forward, lane t of 32 over the units t, t + 32, ... of x
template <typename T>
__device__ __forceinline__ static void ln_row_forward_vec(const vec16<T> *xr, const vec16<T> *wv, const vec16<T> *bv,
                                                          vec16<T> *yr, float *mean, float *rstd, long long r, int h,
                                                          float eps, int t)
{
  constexpr int V = VEC(T);
  const int nv = h / V;
  double s = 0;
  for (int i = t; i < nv; i += 32) {
    const vec16<T> a = xr[i];
    for (int j = 0; j < V; j++) s += ptdp_ld(a.e[j]);
  }
  const float m = (float)(warp_sum(s) / h);
  double ss = 0;
  for (int i = t; i < nv; i += 32) {
    const vec16<T> a = xr[i];
    for (int j = 0; j < V; j++) {
      const float d = ptdp_ld(a.e[j]) - m;
      ss += (double)d * d;
    }
  }
  const float rs = 1.0f / sqrtf((float)(warp_sum(ss) / h) + eps);
  for (int i = t; i < nv; i += 32) {
    const vec16<T> a = xr[i], wa = wv[i], ba = bv[i];
    vec16<T> o;
    for (int j = 0; j < V; j++) ptdp_st(&o.e[j], (ptdp_ld(a.e[j]) - m) * rs * ptdp_ld(wa.e[j]) + ptdp_ld(ba.e[j]));
    yr[i] = o;
  }
  if (t == 0) {
    mean[r] = m;
    rstd[r] = rs;
  }
}

template <typename T>
__global__ void ln_forward_rows_vec(const T *x, const T *w, const T *b, T *y, float *mean, float *rstd,
                                    long long rows, int h, float eps)
{
  const long long r = (long long)blockIdx.x * LN_ROWS_PER_BLOCK + (threadIdx.x >> 5);
  if (r >= rows) return; // the whole warp: its lanes share the row
  ln_row_forward_vec((const vec16<T> *)(x + r * h), (const vec16<T> *)w, (const vec16<T> *)b, (vec16<T> *)(y + r * h),
                     mean, rstd, r, h, eps, (int)(threadIdx.x & 31));
}

template <typename T>
__global__ void ln_backward_dx_rows_vec(const T *dy, const T *x, const T *w, const float *mean, const float *rstd,
                                        T *dx, const T *res, long long rows, int h)
{
  constexpr int V = VEC(T);
  const long long r = (long long)blockIdx.x * LN_ROWS_PER_BLOCK + (threadIdx.x >> 5);
  if (r >= rows) return;
  const int t = threadIdx.x & 31, nv = h / V;
  const vec16<T> *dyr = (const vec16<T> *)(dy + r * h), *xr = (const vec16<T> *)(x + r * h);
  const vec16<T> *wv = (const vec16<T> *)w;
  const float m = mean[r], rs = rstd[r];
  double sg = 0, sgx = 0;
  for (int i = t; i < nv; i += 32) {
    const vec16<T> da = dyr[i], xa = xr[i], wa = wv[i];
    for (int j = 0; j < V; j++) {
      const float xh = (ptdp_ld(xa.e[j]) - m) * rs, g = ptdp_ld(da.e[j]) * ptdp_ld(wa.e[j]);
      sg += g;
      sgx += (double)g * xh;
    }
  }
  const float mg = (float)(warp_sum(sg) / h), mgx = (float)(warp_sum(sgx) / h);
  vec16<T> *dxr = (vec16<T> *)(dx + r * h);
  const vec16<T> *rr = (const vec16<T> *)(res ? res + r * h : res);
  for (int i = t; i < nv; i += 32) {
    const vec16<T> da = dyr[i], xa = xr[i], wa = wv[i];
    vec16<T> o, ra;
    if (rr) ra = rr[i];
    for (int j = 0; j < V; j++) {
      const float xh = (ptdp_ld(xa.e[j]) - m) * rs;
      const float v = rs * (ptdp_ld(da.e[j]) * ptdp_ld(wa.e[j]) - mg - xh * mgx);
      ptdp_st(&o.e[j], rr ? ln_plus(v, ptdp_ld(ra.e[j])) : v);
    }
    dxr[i] = o;
  }
}

// one block per row
template <typename T>
__global__ void ln_backward_dx(const T *dy, const T *x, const T *w, const float *mean, const float *rstd, T *dx,
                               const T *res, int h)
{
  const long long r = blockIdx.x;
  ln_row_backward(dy + r * h, x + r * h, w, mean, rstd, dx + r * h, res ? res + r * h : res, r, h, false);
}

// part[0][chunk][col] = sum over the chunk's rows of dy xhat (with_xhat) or dy; part[1] = dy
// (LayerNorm only).  xhat = (x - mean) rstd, or x rstd where mean is NULL (RMSNorm: x - 0 is x).  grid (ceil(cols / CS_COLS), chunks), block CS_COLS x CS_SLICES: slice y
// sums rows r0 + y, r0 + y + CS_SLICES, ... of its column in order, then slice 0 adds the slices
// in order (a fixed order: the same bits on every run).  One thread a column of the chunk kept
// too few loads in flight (ncu on an H200: 21 us for [8192, 768], a third of the bandwidth).
#define CS_COLS 32
#define CS_SLICES 8
template <typename T>
__global__ void colsum_partial(const T *dy, const T *x, const float *mean, const float *rstd, long long rows, int cols,
                               int chunks, float *part, int with_xhat)
{
  __shared__ float sw_s[CS_SLICES][CS_COLS], sb_s[CS_SLICES][CS_COLS];
  const int tx = threadIdx.x % CS_COLS, ty = threadIdx.x / CS_COLS, c = blockIdx.x * CS_COLS + tx;
  const long long r0 = rows * blockIdx.y / chunks, r1 = rows * (blockIdx.y + 1) / chunks;
  float sw = 0.0f, sb = 0.0f;
  if (c < cols)
    for (long long r = r0 + ty; r < r1; r += CS_SLICES) {
      float d = ptdp_ld(dy[r * cols + c]);
      if (with_xhat) sw += d * ((ptdp_ld(x[r * cols + c]) - (mean ? mean[r] : 0.0f)) * rstd[r]);
      sb += d;
    }
  sw_s[ty][tx] = sw;
  sb_s[ty][tx] = sb;
  __syncthreads();
  if (ty != 0 || c >= cols) return;
  for (int k = 1; k < CS_SLICES; k++) sw += sw_s[k][tx], sb += sb_s[k][tx];
  part[(size_t)blockIdx.y * cols + c] = with_xhat ? sw : sb;
  if (with_xhat) part[((size_t)chunks + blockIdx.y) * cols + c] = sb;
}

// The same sums, VEC(T) adjacent columns a thread in 16-byte loads (cols a multiple of VEC(T),
// dy and x aligned): each column's terms in the same order as colsum_partial's, so the same bits;
// 8 times the bytes per load and the row loop unrolled by 4 keep enough loads in flight (the
// one-element kernel ran at half the bandwidth on the H200, validation/bench/README.md).
#ifdef __CUDACC__
#define CS_UNROLL _Pragma("unroll 4")
#else
#define CS_UNROLL // (the emulation's host compiler)
#endif
template <typename T>
__global__ void colsum_partial_vec(const T *dy, const T *x, const float *mean, const float *rstd, long long rows,
                                   int cols, int chunks, float *part, int with_xhat)
{
  constexpr int V = VEC(T);
  __shared__ float sw_s[CS_SLICES][CS_COLS * V], sb_s[CS_SLICES][CS_COLS * V];
  const int tx = threadIdx.x % CS_COLS, ty = threadIdx.x / CS_COLS, c0 = (blockIdx.x * CS_COLS + tx) * V;
  const long long r0 = rows * blockIdx.y / chunks, r1 = rows * (blockIdx.y + 1) / chunks;
  float sw[V], sb[V];
  for (int i = 0; i < V; i++) sw[i] = sb[i] = 0.0f;
  if (c0 < cols) {
    CS_UNROLL
    for (long long r = r0 + ty; r < r1; r += CS_SLICES) {
      const vec16<T> d = *(const vec16<T> *)(dy + r * cols + c0);
      if (with_xhat) {
        const vec16<T> xv = *(const vec16<T> *)(x + r * cols + c0);
        const float m = mean ? mean[r] : 0.0f, rs = rstd[r];
        for (int i = 0; i < V; i++) sw[i] += ptdp_ld(d.e[i]) * ((ptdp_ld(xv.e[i]) - m) * rs);
      }
      for (int i = 0; i < V; i++) sb[i] += ptdp_ld(d.e[i]);
    }
  }
  for (int i = 0; i < V; i++) sw_s[ty][tx * V + i] = sw[i], sb_s[ty][tx * V + i] = sb[i];
  __syncthreads();
  if (ty != 0 || c0 >= cols) return;
  for (int i = 0; i < V; i++) {
    for (int k = 1; k < CS_SLICES; k++) sw[i] += sw_s[k][tx * V + i], sb[i] += sb_s[k][tx * V + i];
    part[(size_t)blockIdx.y * cols + c0 + i] = with_xhat ? sw[i] : sb[i];
    if (with_xhat) part[((size_t)chunks + blockIdx.y) * cols + c0 + i] = sb[i];
  }
}

// colsum_partial or, where the layout allows, colsum_partial_vec (x may be null: no xhat)
template <typename T>
static void colsum_partial_launch(cudaStream_t st, const T *dy, const T *x, const float *mean, const float *rstd,
                                  long long rows, int cols, int chunks, float *part, int with_xhat)
{
  void (*part_kernel)(const T *, const T *, const float *, const float *, long long, int, int, float *, int) =
      colsum_partial<T>;
  void (*part_vec_kernel)(const T *, const T *, const float *, const float *, long long, int, int, float *, int) =
      colsum_partial_vec<T>;
  if (cols % VEC(T) == 0 && vec_aligned(dy) && (!with_xhat || vec_aligned(x))) {
    dim3 g((cols / VEC(T) + CS_COLS - 1) / CS_COLS, chunks);
    part_vec_kernel<<<g, CS_COLS * CS_SLICES, 0, st>>>(dy, x, mean, rstd, rows, cols, chunks, part, with_xhat);
  } else {
    dim3 g((cols + CS_COLS - 1) / CS_COLS, chunks);
    part_kernel<<<g, CS_COLS * CS_SLICES, 0, st>>>(dy, x, mean, rstd, rows, cols, chunks, part, with_xhat);
  }
}

// out[c] += sum over chunks of part[k][c], k in chunk order
__global__ void colsum_final(const float *part, int chunks, int cols, float *out)
{
  int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= cols) return;
  float s = 0.0f;
  for (int k = 0; k < chunks; k++) s += part[(size_t)k * cols + c];
  out[c] += s;
}

// dw += the column sums of dy xhat, xhat = x rstd (mean NULL) or (x - mean) rstd: RMSNorm's weight
// gradient through LayerNorm's column sums (part: 2 chunks cols floats; the dy sums it also
// makes are left unused)
template <typename T>
static cudaError_t colsum_xhat_launch(cudaStream_t st, const void *dy, const void *x, const float *mean,
                                      const float *rstd, long long rows, int cols, float *part, int chunks, float *dw)
{
  if (rows <= 0 || cols <= 0) return cudaGetLastError();
  colsum_partial_launch<T>(st, (const T *)dy, (const T *)x, mean, rstd, rows, cols, chunks, part, 1);
  colsum_final<<<(unsigned)((cols + THREADS - 1) / THREADS), THREADS, 0, st>>>(part, chunks, cols, dw);
  return cudaGetLastError();
}

extern "C" cudaError_t ptdp_cuk_colsum_xhat(cudaStream_t st, ptdp_dtype t, const void *dy, const void *x,
                                            const float *mean, const float *rstd, long long rows, int cols,
                                            float *part, int chunks, float *dw)
{
  return PTDP_CUK_DISPATCH(t, colsum_xhat_launch, st, dy, x, mean, rstd, rows, cols, part, chunks, dw);
}

static int row_threads(int h) { return h >= 1024 ? 512 : h >= 256 ? 256 : 128; }
// blocks of the warp-per-row kernels for rows rows
static unsigned ln_row_blocks(long long rows) { return (unsigned)((rows + LN_ROWS_PER_BLOCK - 1) / LN_ROWS_PER_BLOCK); }

template <typename T>
static cudaError_t ln_forward_launch(cudaStream_t st, const void *x, const void *w, const void *b, void *y, float *mean,
                                     float *rstd, long long rows, int h, float eps)
{
  void (*kernel)(const T *, const T *, const T *, T *, float *, float *, int, float) = ln_forward<T>;
  void (*rows_kernel)(const T *, const T *, const T *, T *, float *, float *, long long, int, float) =
      ln_forward_rows<T>;
  void (*rows_vec_kernel)(const T *, const T *, const T *, T *, float *, float *, long long, int, float) =
      ln_forward_rows_vec<T>;
  const T *xt = (const T *)x, *wt = (const T *)w, *bt = (const T *)b;
  if (rows <= 0) return cudaGetLastError();
  if (h <= LN_WARP_H && h % VEC(T) == 0 && vec_aligned(x) && vec_aligned(w) && vec_aligned(b) && vec_aligned(y))
    rows_vec_kernel<<<ln_row_blocks(rows), 32 * LN_ROWS_PER_BLOCK, 0, st>>>(xt, wt, bt, (T *)y, mean, rstd, rows, h,
                                                                            eps);
  else if (h <= LN_WARP_H)
    rows_kernel<<<(unsigned)((rows + LN_ROWS_PER_BLOCK - 1) / LN_ROWS_PER_BLOCK), 32 * LN_ROWS_PER_BLOCK, 0, st>>>(
        xt, wt, bt, (T *)y, mean, rstd, rows, h, eps);
  else
    kernel<<<(unsigned)rows, row_threads(h), 0, st>>>(xt, wt, bt, (T *)y, mean, rstd, h, eps);
  return cudaGetLastError();
}

extern "C" cudaError_t ptdp_cuk_layernorm_forward(cudaStream_t st, ptdp_dtype t, const void *x, const void *w,
                                                  const void *b, void *y, float *mean, float *rstd, long long rows,
                                                  int h, float eps)
{
  return PTDP_CUK_DISPATCH(t, ln_forward_launch, st, x, w, b, y, mean, rstd, rows, h, eps);
}

template <typename T>
static cudaError_t ln_backward_launch(cudaStream_t st, const void *dy, const void *x, const void *w,
                                      const float *mean, const float *rstd, void *dx, float *dw, float *db,
                                      long long rows, int h, float *part, int chunks, const void *res)
{
  void (*dx_kernel)(const T *, const T *, const T *, const float *, const float *, T *, const T *, int) =
      ln_backward_dx<T>;
  void (*dx_rows_kernel)(const T *, const T *, const T *, const float *, const float *, T *, const T *, long long,
                         int) = ln_backward_dx_rows<T>;
  void (*dx_rows_vec_kernel)(const T *, const T *, const T *, const float *, const float *, T *, const T *, long long,
                             int) = ln_backward_dx_rows_vec<T>;
  if (rows <= 0) return cudaGetLastError();
  const T *dyt = (const T *)dy, *xt = (const T *)x, *wt = (const T *)w, *rt = (const T *)res;
  if (h <= LN_WARP_H && h % VEC(T) == 0 && vec_aligned(dy) && vec_aligned(x) && vec_aligned(w) && vec_aligned(dx) &&
      (!res || vec_aligned(res)))
    dx_rows_vec_kernel<<<ln_row_blocks(rows), 32 * LN_ROWS_PER_BLOCK, 0, st>>>(dyt, xt, wt, mean, rstd, (T *)dx, rt,
                                                                               rows, h);
  else if (h <= LN_WARP_H)
    dx_rows_kernel<<<(unsigned)((rows + LN_ROWS_PER_BLOCK - 1) / LN_ROWS_PER_BLOCK), 32 * LN_ROWS_PER_BLOCK, 0, st>>>(
        dyt, xt, wt, mean, rstd, (T *)dx, rt, rows, h);
  else
    dx_kernel<<<(unsigned)rows, row_threads(h), 0, st>>>(dyt, xt, wt, mean, rstd, (T *)dx, rt, h);
  colsum_partial_launch<T>(st, dyt, xt, mean, rstd, rows, h, chunks, part, 1);
  const unsigned gf = (unsigned)((h + THREADS - 1) / THREADS);
  colsum_final<<<gf, THREADS, 0, st>>>(part, chunks, h, dw);
  colsum_final<<<gf, THREADS, 0, st>>>(part + (size_t)chunks * h, chunks, h, db);
  return cudaGetLastError();
}

extern "C" cudaError_t ptdp_cuk_layernorm_backward(cudaStream_t st, ptdp_dtype t, const void *dy, const void *x,
                                                   const void *w, const float *mean, const float *rstd, void *dx,
                                                   float *dw, float *db, long long rows, int h, float *part,
                                                   int chunks, const void *res)
{
  return PTDP_CUK_DISPATCH(t, ln_backward_launch, st, dy, x, w, mean, rstd, dx, dw, db, rows, h, part, chunks, res);
}

// ---------------------------------------------------------------- GELU, bias, add, scale
// tanh form through the sigmoid: gelu(x) = x sigma(2u), u = k (x + 0.044715 x^3)
template <typename T> __global__ void gelu_fwd(const T *x, T *y, size_t n)
{
  FOR_EACH(i, n)
  {
    float v = ptdp_ld(x[i]), u = GELU_K * (v + 0.044715f * v * v * v);
    ptdp_st(&y[i], v / (1.0f + expf(-2.0f * u)));
  }
}

// dx may be dy (the model's habit): each element read, then written, by one thread
template <typename T> __global__ void gelu_bwd(const T *x, const T *dy, T *dx, size_t n)
{
  FOR_EACH(i, n)
  {
    float v = ptdp_ld(x[i]), u = GELU_K * (v + 0.044715f * v * v * v);
    float sg = 1.0f / (1.0f + expf(-2.0f * u)), du = GELU_K * (1.0f + 3.0f * 0.044715f * v * v);
    ptdp_st(&dx[i], ptdp_ld(dy[i]) * (sg + 2.0f * v * sg * (1.0f - sg) * du));
  }
}

template <typename T> __global__ void bias_fwd(T *y, const T *b, size_t n, int cols)
{
  FOR_EACH(i, n) ptdp_st(&y[i], ptdp_ld(y[i]) + ptdp_ld(b[i % cols]));
}

// the same in vec16 units: cols a multiple of VEC(T), y and b aligned; nv = n / VEC(T)
template <typename T> __global__ void bias_fwd_vec(T *y, const T *b, size_t nv, int cols)
{
  FOR_EACH(i, nv)
  {
    vec16<T> a = ((vec16<T> *)y)[i];
    const vec16<T> c = ((const vec16<T> *)b)[(i * VEC(T)) % cols / VEC(T)];
    for (int k = 0; k < VEC(T); k++) ptdp_st(&a.e[k], ptdp_ld(a.e[k]) + ptdp_ld(c.e[k]));
    ((vec16<T> *)y)[i] = a;
  }
}

template <typename T> __global__ void add_k(T *y, const T *x, size_t n)
{
  FOR_EACH(i, n) ptdp_st(&y[i], ptdp_ld(y[i]) + ptdp_ld(x[i]));
}

// the same in vec16 units (y, x aligned; nv = n / VEC(T), the tail by add_k)
template <typename T> __global__ void add_vec(T *y, const T *x, size_t nv)
{
  FOR_EACH(i, nv)
  {
    vec16<T> a = ((vec16<T> *)y)[i];
    const vec16<T> c = ((const vec16<T> *)x)[i];
    for (int k = 0; k < VEC(T); k++) ptdp_st(&a.e[k], ptdp_ld(a.e[k]) + ptdp_ld(c.e[k]));
    ((vec16<T> *)y)[i] = a;
  }
}

template <typename T> __global__ void scale_k(T *y, float a, size_t n)
{
  FOR_EACH(i, n) ptdp_st(&y[i], ptdp_ld(y[i]) * a);
}

__global__ void fill_k(float *y, float v, size_t n)
{
  FOR_EACH(i, n) y[i] = v;
}

template <typename T> static cudaError_t gelu_forward_launch(cudaStream_t st, const void *x, void *y, size_t n)
{
  void (*kernel)(const T *, T *, size_t) = gelu_fwd<T>;
  if (n) kernel<<<grid_for(n), THREADS, 0, st>>>((const T *)x, (T *)y, n);
  return cudaGetLastError();
}

extern "C" cudaError_t ptdp_cuk_gelu_forward(cudaStream_t st, ptdp_dtype t, const void *x, void *y, size_t n)
{
  return PTDP_CUK_DISPATCH(t, gelu_forward_launch, st, x, y, n);
}

template <typename T>
static cudaError_t gelu_backward_launch(cudaStream_t st, const void *x, const void *dy, void *dx, size_t n)
{
  void (*kernel)(const T *, const T *, T *, size_t) = gelu_bwd<T>;
  if (n) kernel<<<grid_for(n), THREADS, 0, st>>>((const T *)x, (const T *)dy, (T *)dx, n);
  return cudaGetLastError();
}

extern "C" cudaError_t ptdp_cuk_gelu_backward(cudaStream_t st, ptdp_dtype t, const void *x, const void *dy, void *dx,
                                              size_t n)
{
  return PTDP_CUK_DISPATCH(t, gelu_backward_launch, st, x, dy, dx, n);
}

template <typename T>
static cudaError_t bias_forward_launch(cudaStream_t st, void *y, const void *b, size_t n, int cols)
{
  void (*kernel)(T *, const T *, size_t, int) = bias_fwd<T>;
  void (*vec_kernel)(T *, const T *, size_t, int) = bias_fwd_vec<T>;
  if (!n) return cudaGetLastError();
  if (cols % VEC(T) == 0 && vec_aligned(y) && vec_aligned(b))
    vec_kernel<<<grid_for(n / VEC(T)), THREADS, 0, st>>>((T *)y, (const T *)b, n / VEC(T), cols);
  else
    kernel<<<grid_for(n), THREADS, 0, st>>>((T *)y, (const T *)b, n, cols);
  return cudaGetLastError();
}

extern "C" cudaError_t ptdp_cuk_bias_forward(cudaStream_t st, ptdp_dtype t, void *y, const void *b, long long rows,
                                             int cols)
{
  return PTDP_CUK_DISPATCH(t, bias_forward_launch, st, y, b, (size_t)rows * cols, cols);
}

template <typename T>
static cudaError_t bias_backward_launch(cudaStream_t st, const void *dy, float *db, long long rows, int cols,
                                        float *part, int chunks)
{
  if (rows <= 0 || cols <= 0) return cudaGetLastError();
  colsum_partial_launch<T>(st, (const T *)dy, (const T *)NULL, NULL, NULL, rows, cols, chunks, part, 0);
  colsum_final<<<(unsigned)((cols + THREADS - 1) / THREADS), THREADS, 0, st>>>(part, chunks, cols, db);
  return cudaGetLastError();
}

extern "C" cudaError_t ptdp_cuk_bias_backward(cudaStream_t st, ptdp_dtype t, const void *dy, float *db, long long rows,
                                              int cols, float *part, int chunks)
{
  return PTDP_CUK_DISPATCH(t, bias_backward_launch, st, dy, db, rows, cols, part, chunks);
}

template <typename T> static cudaError_t add_launch(cudaStream_t st, void *y, const void *x, size_t n)
{
  void (*kernel)(T *, const T *, size_t) = add_k<T>;
  void (*vec_kernel)(T *, const T *, size_t) = add_vec<T>;
  size_t done = 0;
  if (vec_aligned(y) && vec_aligned(x) && n >= (size_t)VEC(T)) {
    done = n / VEC(T) * VEC(T);
    vec_kernel<<<grid_for(done / VEC(T)), THREADS, 0, st>>>((T *)y, (const T *)x, done / VEC(T));
  }
  if (n > done) kernel<<<grid_for(n - done), THREADS, 0, st>>>((T *)y + done, (const T *)x + done, n - done);
  return cudaGetLastError();
}

extern "C" cudaError_t ptdp_cuk_add(cudaStream_t st, ptdp_dtype t, void *y, const void *x, size_t n)
{
  return PTDP_CUK_DISPATCH(t, add_launch, st, y, x, n);
}

template <typename T> static cudaError_t scale_launch(cudaStream_t st, void *y, float a, size_t n)
{
  void (*kernel)(T *, float, size_t) = scale_k<T>;
  if (n) kernel<<<grid_for(n), THREADS, 0, st>>>((T *)y, a, n);
  return cudaGetLastError();
}

extern "C" cudaError_t ptdp_cuk_scale(cudaStream_t st, float *y, float a, size_t n)
{
  return scale_launch<float>(st, y, a, n);
}

extern "C" cudaError_t ptdp_cuk_scale_s(cudaStream_t st, ptdp_dtype t, void *y, float a, size_t n)
{
  return PTDP_CUK_DISPATCH(t, scale_launch, st, y, a, n);
}

extern "C" cudaError_t ptdp_cuk_fill(cudaStream_t st, float *x, float v, size_t n)
{
  if (n) fill_k<<<grid_for(n), THREADS, 0, st>>>(x, v, n);
  return cudaGetLastError();
}

// ---------------------------------------------------------------- mixed precision
// Used by mixed precision (issue 20 section 3), not yet by the model.  ptdp/half.h's rules bit
// for bit: narrowing by CUDA's round-to-nearest-even conversions (a NaN becomes 0x7fff, as
// there); widening by bits, exact, so a NaN keeps its payload whatever the hardware's cvt does.
__device__ float mp_load(const void *p, int t, size_t i)
{
  if (t == PTDP_F32) return ((const float *)p)[i];
  uint32_t x;
  const uint32_t u = ((const unsigned short *)p)[i];
  if (t == PTDP_BF16)
    x = u << 16;
  else {
    const uint32_t sign = (u & 0x8000u) << 16, e = (u >> 10) & 0x1fu, m = u & 0x3ffu;
    if (!e) return sign ? -(float)m * 0x1p-24f : (float)m * 0x1p-24f; // subnormal or zero, exact
    x = sign | (e == 0x1fu ? 0x7f800000u : (e + 112u) << 23) | (m << 13);
  }
  float f;
  memcpy(&f, &x, sizeof f);
  return f;
}

__device__ void mp_store(void *p, int t, size_t i, float v)
{
  if (t == PTDP_F32) ((float *)p)[i] = v;
  else if (t == PTDP_BF16) ((unsigned short *)p)[i] = __bfloat16_as_ushort(__float2bfloat16_rn(v));
  else ((unsigned short *)p)[i] = __half_as_ushort(__float2half_rn(v));
}

__global__ void convert_k(void *dst, int dt, const void *src, int st, size_t n)
{
  FOR_EACH(i, n) mp_store(dst, dt, i, mp_load(src, st, i));
}

// Every thread that meets a non-finite value sets the flag (an atomic: same value, no race).
__global__ void unscale_check_k(float *x, size_t n, float inv_scale, int *found)
{
  FOR_EACH(i, n)
  {
    const float v = x[i];
    if (!isfinite(v)) atomicExch(found, 1);
    x[i] = v * inv_scale;
  }
}

// fp32 to a 16-bit type, 8 elements a thread: two 16-byte loads, one 16-byte store (the weights'
// copy back after AdamW; one element a thread ran at a quarter of the bandwidth on the H200,
// validation/bench/README.md).  The same rounding as mp_store, so the same bits.
template <typename T> __global__ void convert_down_vec(T *dst, const float *src, size_t nv)
{
  FOR_EACH(i, nv)
  {
    const vec16<float> a = ((const vec16<float> *)src)[2 * i], b = ((const vec16<float> *)src)[2 * i + 1];
    vec16<T> o;
    for (int j = 0; j < 4; j++) ptdp_st(&o.e[j], a.e[j]), ptdp_st(&o.e[4 + j], b.e[j]);
    ((vec16<T> *)dst)[i] = o;
  }
}

extern "C" cudaError_t ptdp_cuk_convert(cudaStream_t st, void *dst, ptdp_dtype dt, const void *src, ptdp_dtype sty,
                                        size_t n)
{
  const size_t bytes = n * (sty == PTDP_F32 ? sizeof(float) : sizeof(unsigned short));
  if (dt == sty) return n ? cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, st) : cudaSuccess;
  size_t done = 0;
  if (sty == PTDP_F32 && n >= 8 && vec_aligned(dst) && vec_aligned(src)) {
    void (*down_bf16)(__nv_bfloat16 *, const float *, size_t) = convert_down_vec<__nv_bfloat16>;
    void (*down_f16)(__half *, const float *, size_t) = convert_down_vec<__half>;
    const size_t nv = n / 8;
    if (dt == PTDP_BF16) down_bf16<<<grid_for(nv), THREADS, 0, st>>>((__nv_bfloat16 *)dst, (const float *)src, nv);
    else down_f16<<<grid_for(nv), THREADS, 0, st>>>((__half *)dst, (const float *)src, nv);
    done = nv * 8;
  }
  if (n > done) // the rest (or all), an element a thread
    convert_k<<<grid_for(n - done), THREADS, 0, st>>>((char *)dst + done * (dt == PTDP_F32 ? 4 : 2), (int)dt,
                                                     (const char *)src + done * (sty == PTDP_F32 ? 4 : 2), (int)sty,
                                                     n - done);
  return cudaGetLastError();
}

extern "C" cudaError_t ptdp_cuk_unscale_check(cudaStream_t st, float *x, size_t n, float inv_scale, int *found)
{
  cudaError_t e = cudaMemsetAsync(found, 0, sizeof(int), st);
  if (e != cudaSuccess) return e;
  if (n) unscale_check_k<<<grid_for(n), THREADS, 0, st>>>(x, n, inv_scale, found);
  return cudaGetLastError();
}

// ---------------------------------------------------------------- dropout
// the mask of element (r, c) from the CPU's key (bda_row, cuda_bda.h): the CPU's bit for bit
template <typename T>
__global__ void dropout_fwd(T *x, uint8_t *mask, long long rows, int cols, ptdp_dropout_key k, float keep_scale)
{
  FOR_EACH(i, (size_t)rows * cols)
  {
    const long long r = (long long)(i / cols), c = (long long)(i % cols);
    const uint64_t rh = bda_row(k, r);
    uint8_t keep = ptdp_cu_rng_uniform(ptdp_cu_rng_at(rh, (uint64_t)(k.col0 + c))) >= k.p;
    mask[i] = keep;
    ptdp_st(&x[i], keep ? ptdp_ld(x[i]) * keep_scale : 0.0f);
  }
}

template <typename T>
static cudaError_t dropout_forward_launch(cudaStream_t st, void *x, uint8_t *mask, long long rows, int cols,
                                          ptdp_dropout_key k)
{
  void (*kernel)(T *, uint8_t *, long long, int, ptdp_dropout_key, float) = dropout_fwd<T>;
  size_t n = (size_t)rows * cols;
  if (k.p > 0.0f && n) kernel<<<grid_for(n), THREADS, 0, st>>>((T *)x, mask, rows, cols, k, 1.0f / (1.0f - k.p));
  return cudaGetLastError();
}

extern "C" cudaError_t ptdp_cuk_dropout_forward(cudaStream_t st, ptdp_dtype t, void *x, uint8_t *mask, long long rows,
                                                int cols, ptdp_dropout_key k)
{
  return PTDP_CUK_DISPATCH(t, dropout_forward_launch, st, x, mask, rows, cols, k);
}

extern "C" cudaError_t ptdp_cuk_dropout_backward(cudaStream_t st, ptdp_dtype t, void *dx, const uint8_t *mask, size_t n,
                                                 float p)
{
  return ptdp_cuk_dropout_backward_to(st, t, dx, dx, mask, n, p); /* in place: dst = src */
}

// dst = src mask / (1 - p) (dst may be src: dropout_backward in place), in vec16 units where dst
// and src allow, the tail an element a thread; p 0: a copy (none in place)
template <typename T> __global__ void dropout_bwd_to(T *dst, const T *src, const uint8_t *mask, size_t n, float keep_scale)
{
  FOR_EACH(i, n) ptdp_st(&dst[i], mask[i] ? ptdp_ld(src[i]) * keep_scale : 0.0f);
}

template <typename T>
__global__ void dropout_bwd_to_vec(T *dst, const T *src, const uint8_t *mask, size_t nv, float keep_scale)
{
  FOR_EACH(i, nv)
  {
    vec16<T> a = ((const vec16<T> *)src)[i];
    const uint8_t *mk = mask + i * VEC(T);
    for (int k = 0; k < VEC(T); k++) ptdp_st(&a.e[k], mk[k] ? ptdp_ld(a.e[k]) * keep_scale : 0.0f);
    ((vec16<T> *)dst)[i] = a;
  }
}

template <typename T>
static cudaError_t dropout_backward_to_launch(cudaStream_t st, void *dst, const void *src, const uint8_t *mask,
                                              size_t n, float p)
{
  if (!n) return cudaGetLastError();
  if (p <= 0.0f)
    return dst == src ? cudaGetLastError() : cudaMemcpyAsync(dst, src, n * sizeof(T), cudaMemcpyDeviceToDevice, st);
  void (*kernel)(T *, const T *, const uint8_t *, size_t, float) = dropout_bwd_to<T>;
  void (*vec_kernel)(T *, const T *, const uint8_t *, size_t, float) = dropout_bwd_to_vec<T>;
  const float keep_scale = 1.0f / (1.0f - p);
  size_t done = 0;
  if (vec_aligned(dst) && vec_aligned(src) && n >= (size_t)VEC(T)) {
    done = n / VEC(T) * VEC(T);
    vec_kernel<<<grid_for(n / VEC(T)), THREADS, 0, st>>>((T *)dst, (const T *)src, mask, n / VEC(T), keep_scale);
  }
  if (n > done)
    kernel<<<grid_for(n - done), THREADS, 0, st>>>((T *)dst + done, (const T *)src + done, mask + done, n - done,
                                                    keep_scale);
  return cudaGetLastError();
}

extern "C" cudaError_t ptdp_cuk_dropout_backward_to(cudaStream_t st, ptdp_dtype t, void *dst, const void *src,
                                                    const uint8_t *mask, size_t n, float p)
{
  return PTDP_CUK_DISPATCH(t, dropout_backward_to_launch, st, dst, src, mask, n, p);
}

// ---------------------------------------------------------------- bias + dropout + residual
// y = dropout(y + b) + r in one pass (ptdp_backend's bias_dropout_add): bda_one per element,
// bda_unit_vec per 16-byte unit (cuda_bda.h)
template <typename T>
__global__ void bias_dropout_add_k(T *y, const T *b, uint8_t *mask, const T *res, long long rows, int cols,
                                   ptdp_dropout_key k, float keep_scale)
{
  FOR_EACH(i, (size_t)rows * cols)
  {
    const long long r = (long long)(i / cols), c = (long long)(i % cols);
    uint8_t keep = 1;
    const float v = bda_one(ptdp_ld(y[i]), b, c, k.p > 0.0f ? bda_row(k, r) : 0, k, keep_scale, &keep);
    if (k.p > 0.0f) mask[i] = keep;
    ptdp_st(&y[i], __fadd_rn(v, ptdp_ld(res[i])));
  }
}

// the same in vec16 units (cols a multiple of VEC(T); y, b, res aligned, mask to VEC(T) bytes):
// a unit lies in one row, whose key is hashed once
template <typename T>
__global__ void bias_dropout_add_vec(T *y, const T *b, uint8_t *mask, const T *res, long long rows, int cols,
                                     ptdp_dropout_key k, float keep_scale)
{
  FOR_EACH(i, (size_t)rows * cols / VEC(T))
  {
    const size_t e0 = i * VEC(T);
    bda_unit_vec(y, b, mask, res, i, (long long)(e0 / cols), (long long)(e0 % cols), k, keep_scale);
  }
}

template <typename T>
static cudaError_t bias_dropout_add_launch(cudaStream_t st, void *y, const void *b, uint8_t *mask, const void *res,
                                           long long rows, int cols, ptdp_dropout_key k)
{
  void (*kernel)(T *, const T *, uint8_t *, const T *, long long, int, ptdp_dropout_key, float) = bias_dropout_add_k<T>;
  void (*vec_kernel)(T *, const T *, uint8_t *, const T *, long long, int, ptdp_dropout_key, float) =
      bias_dropout_add_vec<T>;
  const size_t n = (size_t)rows * cols;
  if (!n) return cudaGetLastError();
  const float keep_scale = k.p > 0.0f ? 1.0f / (1.0f - k.p) : 1.0f;
  const bool vec = cols % VEC(T) == 0 && vec_aligned(y) && vec_aligned(res) && (!b || vec_aligned(b)) &&
                   (k.p <= 0.0f || ((uintptr_t)mask & (uintptr_t)(VEC(T) - 1)) == 0);
  if (vec)
    vec_kernel<<<grid_for(n / VEC(T)), THREADS, 0, st>>>((T *)y, (const T *)b, mask, (const T *)res, rows, cols, k,
                                                         keep_scale);
  else
    kernel<<<grid_for(n), THREADS, 0, st>>>((T *)y, (const T *)b, mask, (const T *)res, rows, cols, k, keep_scale);
  return cudaGetLastError();
}

extern "C" cudaError_t ptdp_cuk_bias_dropout_add(cudaStream_t st, ptdp_dtype t, void *y, const void *b, uint8_t *mask,
                                                 const void *res, long long rows, int cols, ptdp_dropout_key k)
{
  return PTDP_CUK_DISPATCH(t, bias_dropout_add_launch, st, y, b, mask, res, rows, cols, k);
}

// ---------------------------------------------------------------- bias + dropout + residual + LayerNorm
// bias_dropout_add, then the LayerNorm of its result, a warp per row (ptdp_backend's
// bias_dropout_add_layernorm): each lane writes its units of y (bda_unit_vec, the bits of
// bias_dropout_add_vec) and reads back only those units for the row's LayerNorm
// (ln_row_forward_vec, the bits of ln_forward_rows_vec), so y reaches memory once and is read back
// from the cache, where the two kernels read it from memory again.
template <typename T>
__global__ void bda_ln_rows_vec(T *y, const T *b, uint8_t *mask, const T *res, ptdp_dropout_key k, float keep_scale,
                                const T *w, const T *nb, T *out, float *mean, float *rstd, long long rows, int h,
                                float eps)
{
  const long long r = (long long)blockIdx.x * LN_ROWS_PER_BLOCK + (threadIdx.x >> 5);
  if (r >= rows) return; // the whole warp: its lanes share the row
  const int t = (int)(threadIdx.x & 31), nv = h / VEC(T);
  for (int i = t; i < nv; i += 32)
    bda_unit_vec(y, b, mask, res, (size_t)r * nv + i, r, (long long)i * VEC(T), k, keep_scale);
  ln_row_forward_vec((const vec16<T> *)(y + r * h), (const vec16<T> *)w, (const vec16<T> *)nb,
                     (vec16<T> *)(out + r * h), mean, rstd, r, h, eps, t);
}

template <typename T>
static cudaError_t bda_ln_launch(cudaStream_t st, void *y, const void *b, uint8_t *mask, const void *res,
                                 long long rows, int h, ptdp_dropout_key k, const void *w, const void *nb, void *out,
                                 float *mean, float *rstd, float eps)
{
  void (*bda_ln_kernel)(T *, const T *, uint8_t *, const T *, ptdp_dropout_key, float, const T *, const T *, T *, float *,
                 float *, long long, int, float) = bda_ln_rows_vec<T>;
  const bool fused = h <= LN_WARP_H && h % VEC(T) == 0 && vec_aligned(y) && vec_aligned(res) &&
                     (!b || vec_aligned(b)) && (k.p <= 0.0f || ((uintptr_t)mask & (uintptr_t)(VEC(T) - 1)) == 0) &&
                     vec_aligned(w) && vec_aligned(nb) && vec_aligned(out);
  if (!fused) { /* the two kernels: the same bits */
    const cudaError_t e = bias_dropout_add_launch<T>(st, y, b, mask, res, rows, h, k);
    if (e != cudaSuccess) return e;
    return ln_forward_launch<T>(st, y, w, nb, out, mean, rstd, rows, h, eps);
  }
  if (rows <= 0) return cudaGetLastError();
  const float keep_scale = k.p > 0.0f ? 1.0f / (1.0f - k.p) : 1.0f;
  bda_ln_kernel<<<ln_row_blocks(rows), 32 * LN_ROWS_PER_BLOCK, 0, st>>>((T *)y, (const T *)b, mask, (const T *)res, k,
                                                                 keep_scale, (const T *)w, (const T *)nb, (T *)out,
                                                                 mean, rstd, rows, h, eps);
  return cudaGetLastError();
}

extern "C" cudaError_t ptdp_cuk_bias_dropout_add_layernorm(cudaStream_t st, ptdp_dtype t, void *y, const void *b,
                                                           uint8_t *mask, const void *res, long long rows, int h,
                                                           ptdp_dropout_key k, const void *w, const void *nb,
                                                           void *out, float *mean, float *rstd, float eps)
{
  return PTDP_CUK_DISPATCH(t, bda_ln_launch, st, y, b, mask, res, rows, h, k, w, nb, out, mean, rstd, eps);
}

// ---------------------------------------------------------------- embedding
template <typename T>
__global__ void embed_fwd(const T *wte, const int32_t *tok, long long v0, long long vl, T *out, size_t n, int h)
{
  FOR_EACH(i, n)
  {
    long long r = (long long)(i / h), id = (long long)tok[r] - v0;
    ptdp_st(&out[i], (id >= 0 && id < vl) ? ptdp_ld(wte[id * h + (long long)(i % h)]) : 0.0f);
  }
}

// rows sharing a token add into one row of dwte: atomics (the order of those few additions is
// the only nondeterminism of the backend)
template <typename T>
__global__ void embed_bwd(const T *dout, const int32_t *tok, long long v0, long long vl, float *dwte, size_t n, int h)
{
  FOR_EACH(i, n)
  {
    long long r = (long long)(i / h), id = (long long)tok[r] - v0;
    if (id >= 0 && id < vl) atomicAdd(dwte + id * h + (long long)(i % h), ptdp_ld(dout[i]));
  }
}

template <typename T>
static cudaError_t embedding_forward_launch(cudaStream_t st, const void *wte, const int32_t *tok, long long v0,
                                            long long vl, void *out, long long rows, int h)
{
  void (*kernel)(const T *, const int32_t *, long long, long long, T *, size_t, int) = embed_fwd<T>;
  size_t n = (size_t)rows * h;
  if (n) kernel<<<grid_for(n), THREADS, 0, st>>>((const T *)wte, tok, v0, vl, (T *)out, n, h);
  return cudaGetLastError();
}

extern "C" cudaError_t ptdp_cuk_embedding_forward(cudaStream_t st, ptdp_dtype t, const void *wte, const int32_t *tok,
                                                  long long v0, long long vl, void *out, long long rows, int h)
{
  return PTDP_CUK_DISPATCH(t, embedding_forward_launch, st, wte, tok, v0, vl, out, rows, h);
}

template <typename T>
static cudaError_t embedding_backward_launch(cudaStream_t st, const void *dout, const int32_t *tok, long long v0,
                                             long long vl, float *dwte, long long rows, int h)
{
  void (*kernel)(const T *, const int32_t *, long long, long long, float *, size_t, int) = embed_bwd<T>;
  size_t n = (size_t)rows * h;
  if (n) kernel<<<grid_for(n), THREADS, 0, st>>>((const T *)dout, tok, v0, vl, dwte, n, h);
  return cudaGetLastError();
}

extern "C" cudaError_t ptdp_cuk_embedding_backward(cudaStream_t st, ptdp_dtype t, const void *dout, const int32_t *tok,
                                                   long long v0, long long vl, float *dwte, long long rows, int h)
{
  return PTDP_CUK_DISPATCH(t, embedding_backward_launch, st, dout, tok, v0, vl, dwte, rows, h);
}

// ---------------------------------------------------------------- cross entropy (one block per row)
// The logits of the storage type, statistics and arithmetic in fp32 (the CPU's too).  vec: every
// row in vec16 units (vl a multiple of VEC(T), the logits aligned), the three passes over the
// [rows, vl] logits being the step's largest memory traffic after the GEMMs.
template <typename T>
__global__ void xent_stats_k(const T *logits, const int32_t *target, long long v0, int vl, float *rowmax, float *tgt,
                             int vec)
{
  const long long r = blockIdx.x;
  const T *l = logits + r * vl;
  float m = -INFINITY;
  if (vec) {
    for (int j = threadIdx.x; j < vl / VEC(T); j += blockDim.x) {
      const vec16<T> a = ((const vec16<T> *)l)[j];
      for (int k = 0; k < VEC(T); k++) m = fmaxf(m, ptdp_ld(a.e[k]));
    }
  } else {
    for (int j = threadIdx.x; j < vl; j += blockDim.x) m = fmaxf(m, ptdp_ld(l[j]));
  }
  m = block_max(m);
  if (threadIdx.x == 0) {
    rowmax[r] = m;
    long long id = (long long)target[r] - v0;
    tgt[r] = (id >= 0 && id < vl) ? ptdp_ld(l[id]) : 0.0f;
  }
}

template <typename T> __global__ void xent_sumexp_k(const T *logits, const float *gmax, int vl, float *se, int vec)
{
  const long long r = blockIdx.x;
  const T *l = logits + r * vl;
  const float m = gmax[r];
  float s = 0.0f;
  if (vec) {
    for (int j = threadIdx.x; j < vl / VEC(T); j += blockDim.x) {
      const vec16<T> a = ((const vec16<T> *)l)[j];
      for (int k = 0; k < VEC(T); k++) s += expf(ptdp_ld(a.e[k]) - m);
    }
  } else {
    for (int j = threadIdx.x; j < vl; j += blockDim.x) s += expf(ptdp_ld(l[j]) - m);
  }
  s = block_sum(s);
  if (threadIdx.x == 0) se[r] = s;
}

// softmax - onehot, times scale: one product and one difference, each rounded (no FMA contraction,
// so the fused kernel below gives these bits)
__device__ __forceinline__ float xent_grad_one(float x, float m, float inv, bool hit, float scale)
{
  return __fadd_rn(__fmul_rn(expf(x - m), inv), hit ? -scale : 0.0f);
}

template <typename T>
__global__ void xent_grad_k(T *logits, const int32_t *target, long long v0, const float *gmax, const float *se, int vl,
                            float scale, int vec)
{
  const long long r = blockIdx.x;
  T *l = logits + r * vl;
  const float m = gmax[r], inv = scale / se[r];
  const long long id = (long long)target[r] - v0;
  if (vec) {
    for (int j = threadIdx.x; j < vl / VEC(T); j += blockDim.x) {
      vec16<T> a = ((vec16<T> *)l)[j];
      for (int k = 0; k < VEC(T); k++)
        ptdp_st(&a.e[k], xent_grad_one(ptdp_ld(a.e[k]), m, inv, (long long)j * VEC(T) + k == id, scale));
      ((vec16<T> *)l)[j] = a;
    }
  } else {
    for (int j = threadIdx.x; j < vl; j += blockDim.x) ptdp_st(&l[j], xent_grad_one(ptdp_ld(l[j]), m, inv, j == id, scale));
  }
}

// ---- t = 1: the three in one pass (ptdp_backend's xent_fused).  A block per row, as above, with
// the row held in registers between the passes: each thread keeps its vec16 units (NV of them at
// most: the row's vl / VEC(T) units dealt as the kernels above deal them, unit j to thread
// j % THREADS), so the logits are read from memory once and written once, where the three
// kernels read them three times.  The max, the sum (same order: each thread's units in turn,
// then block_sum) and the gradient are the three kernels' arithmetic, so the same bits.
#ifdef __CUDACC__
#define XENT_UNROLL _Pragma("unroll") // a[] stays in registers only when every loop over it is unrolled
#else
#define XENT_UNROLL // (the emulation's host compiler)
#endif
template <typename T, int NV>
__global__ void __launch_bounds__(THREADS) xent_fused_k(T *logits, const int32_t *target, long long v0, int vl,
                                                        float *rowmax, float *se, float *tgt, float scale)
{
  const long long r = blockIdx.x;
  vec16<T> *l = (vec16<T> *)(logits + r * vl);
  const int nu = vl / VEC(T);
  const long long id = (long long)target[r] - v0;
  float tg = 0.0f;
  if (threadIdx.x == 0 && id >= 0 && id < vl) tg = ptdp_ld(logits[r * vl + id]); // before any write
  vec16<T> a[NV];
  float m = -INFINITY;
XENT_UNROLL
  for (int u = 0; u < NV; u++) {
    const int j = (int)threadIdx.x + u * THREADS;
    if (j < nu) {
      a[u] = l[j];
      for (int k = 0; k < VEC(T); k++) m = fmaxf(m, ptdp_ld(a[u].e[k]));
    }
  }
  m = block_max(m);
  float s = 0.0f;
XENT_UNROLL
  for (int u = 0; u < NV; u++) {
    const int j = (int)threadIdx.x + u * THREADS;
    if (j < nu)
      for (int k = 0; k < VEC(T); k++) s += expf(ptdp_ld(a[u].e[k]) - m);
  }
  s = block_sum(s);
  const float inv = scale / s;
XENT_UNROLL
  for (int u = 0; u < NV; u++) {
    const int j = (int)threadIdx.x + u * THREADS;
    if (j < nu) {
      for (int k = 0; k < VEC(T); k++)
        ptdp_st(&a[u].e[k], xent_grad_one(ptdp_ld(a[u].e[k]), m, inv, (long long)j * VEC(T) + k == id, scale));
      l[j] = a[u];
    }
  }
  if (threadIdx.x == 0) rowmax[r] = m, se[r] = s, tgt[r] = tg;
}

// whether the logits go in vec16 units
static int xent_vec(const void *logits, int vl, int elem) { return vec_aligned(logits) && vl % (16 / elem) == 0; }

template <typename T>
static cudaError_t xent_stats_launch(cudaStream_t st, const void *logits, const int32_t *target, long long v0,
                                     long long rows, int vl, float *rowmax, float *tgt)
{
  void (*kernel)(const T *, const int32_t *, long long, int, float *, float *, int) = xent_stats_k<T>;
  if (rows > 0)
    kernel<<<(unsigned)rows, THREADS, 0, st>>>((const T *)logits, target, v0, vl, rowmax, tgt,
                                               xent_vec(logits, vl, (int)sizeof(T)));
  return cudaGetLastError();
}

extern "C" cudaError_t ptdp_cuk_xent_stats(cudaStream_t st, ptdp_dtype t, const void *logits, const int32_t *target,
                                           long long v0, long long rows, int vl, float *rowmax, float *tgt)
{
  return PTDP_CUK_DISPATCH(t, xent_stats_launch, st, logits, target, v0, rows, vl, rowmax, tgt);
}

template <typename T>
static cudaError_t xent_sumexp_launch(cudaStream_t st, const void *logits, const float *gmax, long long rows, int vl,
                                      float *se)
{
  void (*kernel)(const T *, const float *, int, float *, int) = xent_sumexp_k<T>;
  if (rows > 0)
    kernel<<<(unsigned)rows, THREADS, 0, st>>>((const T *)logits, gmax, vl, se, xent_vec(logits, vl, (int)sizeof(T)));
  return cudaGetLastError();
}

extern "C" cudaError_t ptdp_cuk_xent_sumexp(cudaStream_t st, ptdp_dtype t, const void *logits, const float *gmax,
                                            long long rows, int vl, float *se)
{
  return PTDP_CUK_DISPATCH(t, xent_sumexp_launch, st, logits, gmax, rows, vl, se);
}

template <typename T>
static cudaError_t xent_grad_launch(cudaStream_t st, void *logits, const int32_t *target, long long v0,
                                    const float *gmax, const float *se, long long rows, int vl, float scale)
{
  void (*kernel)(T *, const int32_t *, long long, const float *, const float *, int, float, int) = xent_grad_k<T>;
  if (rows > 0)
    kernel<<<(unsigned)rows, THREADS, 0, st>>>((T *)logits, target, v0, gmax, se, vl, scale,
                                               xent_vec(logits, vl, (int)sizeof(T)));
  return cudaGetLastError();
}

extern "C" cudaError_t ptdp_cuk_xent_grad(cudaStream_t st, ptdp_dtype t, void *logits, const int32_t *target,
                                          long long v0, const float *gmax, const float *se, long long rows, int vl,
                                          float scale)
{
  return PTDP_CUK_DISPATCH(t, xent_grad_launch, st, logits, target, v0, gmax, se, rows, vl, scale);
}

// ---- t > 1: the slice's statistics in one read (ptdp_backend's xent_stats_local).  Each thread
// keeps an online max and sum over its elements (the sum scaled down when the max grows), then
// the block takes the max of the maxima and the sum of each thread's sum scaled to it.
__device__ __forceinline__ void xent_online(float &m, float &s, float x)
{
  if (x > m) { // the first element: m = -inf, s = 0 * 0 + 1
    s = s * expf(m - x) + 1.0f;
    m = x;
  } else {
    s += expf(x - m);
  }
}

template <typename T>
__global__ void xent_stats_local_k(const T *logits, const int32_t *target, long long v0, int vl, float *lmax,
                                   float *lsum, float *tgt, int vec)
{
  const long long r = blockIdx.x;
  const T *l = logits + r * vl;
  float m = -INFINITY, s = 0.0f;
  if (vec) {
    for (int j = threadIdx.x; j < vl / VEC(T); j += blockDim.x) {
      const vec16<T> a = ((const vec16<T> *)l)[j];
      for (int k = 0; k < VEC(T); k++) xent_online(m, s, ptdp_ld(a.e[k]));
    }
  } else {
    for (int j = threadIdx.x; j < vl; j += blockDim.x) xent_online(m, s, ptdp_ld(l[j]));
  }
  const float M = block_max(m);
  s = block_sum(m == -INFINITY ? 0.0f : s * expf(m - M)); // a thread without elements adds 0
  if (threadIdx.x == 0) {
    lmax[r] = M;
    lsum[r] = s;
    const long long id = (long long)target[r] - v0;
    tgt[r] = (id >= 0 && id < vl) ? ptdp_ld(l[id]) : 0.0f;
  }
}

template <typename T>
static cudaError_t xent_stats_local_launch(cudaStream_t st, const void *logits, const int32_t *target, long long v0,
                                           long long rows, int vl, float *lmax, float *lsum, float *tgt)
{
  void (*kernel)(const T *, const int32_t *, long long, int, float *, float *, float *, int) = xent_stats_local_k<T>;
  if (rows > 0)
    kernel<<<(unsigned)rows, THREADS, 0, st>>>((const T *)logits, target, v0, vl, lmax, lsum, tgt,
                                               xent_vec(logits, vl, (int)sizeof(T)));
  return cudaGetLastError();
}

extern "C" cudaError_t ptdp_cuk_xent_stats_local(cudaStream_t st, ptdp_dtype t, const void *logits,
                                                 const int32_t *target, long long v0, long long rows, int vl,
                                                 float *lmax, float *lsum, float *tgt)
{
  return PTDP_CUK_DISPATCH(t, xent_stats_local_launch, st, logits, target, v0, rows, vl, lmax, lsum, tgt);
}

__global__ void xent_rescale_k(float *lsum, const float *lmax, const float *gmax, long long rows)
{
  FOR_EACH(r, (size_t)rows) lsum[r] = lmax[r] == -INFINITY ? 0.0f : lsum[r] * expf(lmax[r] - gmax[r]);
}

extern "C" cudaError_t ptdp_cuk_xent_rescale(cudaStream_t st, float *lsum, const float *lmax, const float *gmax,
                                             long long rows)
{
  if (rows > 0) xent_rescale_k<<<grid_for((size_t)rows), THREADS, 0, st>>>(lsum, lmax, gmax, rows);
  return cudaGetLastError();
}

// register-held rows up to XENT_NV_SMALL or XENT_NV_LARGE units a thread (bf16: 16384 and 51200
// logits, GPT-2's padded 50304 among them; fp32 half that); longer rows, or rows not in vec16
// units, run the three kernels.  ptxas 13.0 for sm_90: 235 registers and no spills for bf16's
// large set (32 units: 255 registers and spills), 96 for its small one.
#define XENT_NV_SMALL 8
#define XENT_NV_LARGE 25

template <typename T>
static cudaError_t xent_fused_launch(cudaStream_t st, void *logits, const int32_t *target, long long v0, long long rows,
                                     int vl, float *rowmax, float *se, float *tgt, float scale)
{
  if (rows <= 0) return cudaGetLastError();
  const long long nu = vl / VEC(T);
  if (xent_vec(logits, vl, (int)sizeof(T)) && nu <= (long long)THREADS * XENT_NV_LARGE) {
    void (*small)(T *, const int32_t *, long long, int, float *, float *, float *, float) =
        xent_fused_k<T, XENT_NV_SMALL>;
    void (*large)(T *, const int32_t *, long long, int, float *, float *, float *, float) =
        xent_fused_k<T, XENT_NV_LARGE>;
    if (nu <= (long long)THREADS * XENT_NV_SMALL)
      small<<<(unsigned)rows, THREADS, 0, st>>>((T *)logits, target, v0, vl, rowmax, se, tgt, scale);
    else
      large<<<(unsigned)rows, THREADS, 0, st>>>((T *)logits, target, v0, vl, rowmax, se, tgt, scale);
    return cudaGetLastError();
  }
  cudaError_t e = xent_stats_launch<T>(st, logits, target, v0, rows, vl, rowmax, tgt);
  if (e == cudaSuccess) e = xent_sumexp_launch<T>(st, logits, rowmax, rows, vl, se);
  if (e == cudaSuccess) e = xent_grad_launch<T>(st, logits, target, v0, rowmax, se, rows, vl, scale);
  return e;
}

extern "C" cudaError_t ptdp_cuk_xent_fused(cudaStream_t st, ptdp_dtype t, void *logits, const int32_t *target,
                                           long long v0, long long rows, int vl, float *rowmax, float *se, float *tgt,
                                           float scale)
{
  return PTDP_CUK_DISPATCH(t, xent_fused_launch, st, logits, target, v0, rows, vl, rowmax, se, tgt, scale);
}

// The micro-batch's mean loss on the device (ptdp_backend's xent_loss): one block, each thread
// summing its rows (stride THREADS) in double, then block_sum's fixed tree: the same bits every
// run, within double rounding of the CPU's row-order sum (so the float almost always equal).
__global__ void xent_loss_k(const float *gmax, const float *se, const float *tgt, long long rows, float *loss)
{
  double s = 0;
  for (long long r = threadIdx.x; r < rows; r += blockDim.x) s += log((double)se[r]) + gmax[r] - tgt[r];
  s = block_sum(s);
  if (threadIdx.x == 0) *loss = (float)(s / (double)rows);
}

extern "C" cudaError_t ptdp_cuk_xent_loss(cudaStream_t st, const float *gmax, const float *se, const float *tgt,
                                          long long rows, float *loss)
{
  xent_loss_k<<<1, THREADS, 0, st>>>(gmax, se, tgt, rows, loss);
  return cudaGetLastError();
}

// ---------------------------------------------------------------- AdamW, sum of squares
// the whole flat buffer in one launch
__global__ void adamw_k(float *p, const float *g, float *m, float *v, size_t n, float lr, float b1, float b2,
                        float eps, float wd, float bc1, float bc2)
{
  FOR_EACH(i, n)
  {
    float gi = g[i];
    float mi = b1 * m[i] + (1.0f - b1) * gi, vi = b2 * v[i] + (1.0f - b2) * gi * gi;
    m[i] = mi;
    v[i] = vi;
    p[i] -= lr * ((mi / bc1) / (sqrtf(vi / bc2) + eps) + wd * p[i]);
  }
}

extern "C" cudaError_t ptdp_cuk_adamw(cudaStream_t st, float *p, const float *g, float *m, float *v, size_t n,
                                      float lr, float b1, float b2, float eps, float wd, float bc1, float bc2)
{
  if (n) adamw_k<<<grid_for(n), THREADS, 0, st>>>(p, g, m, v, n, lr, b1, b2, eps, wd, bc1, bc2);
  return cudaGetLastError();
}

// The entry of tab (count of them, b0 ascending) whose blocks hold block g: the last with b0 <= g.
template <typename E> __device__ __forceinline__ static int entry_of_block(const E *tab, int count, int g)
{
  int lo = 0, hi = count - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (tab[mid].b0 <= g) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

// Every tensor's AdamW in one launch (one launch per tensor was 148 launches and 1.25 ms of a
// GPT 125M step on an H200; the clipping's scale pass, 0.36 ms more, is folded in as gscale).
// Block g belongs to the range whose blocks hold g (a binary search in tab, as sumsq_many's) and
// strides over that range alone; each element's arithmetic is adamw_k's on g times gscale.
__global__ void adamw_many_k(const ptdp_cuk_adamw_entry *tab, int count, int t16, float gscale, float lr, float b1,
                             float b2, float eps, float bc1, float bc2)
{
  const ptdp_cuk_adamw_entry e = tab[entry_of_block(tab, count, (int)blockIdx.x)];
  const size_t bi = blockIdx.x - (unsigned)e.b0, stride = (size_t)e.nb * blockDim.x;
  for (size_t i = bi * blockDim.x + threadIdx.x; i < e.n; i += stride) {
    const float gi = e.g[i] * gscale;
    const float mi = b1 * e.m[i] + (1.0f - b1) * gi, vi = b2 * e.v[i] + (1.0f - b2) * gi * gi;
    e.m[i] = mi;
    e.v[i] = vi;
    const float pi = e.p[i] - lr * ((mi / bc1) / (sqrtf(vi / bc2) + eps) + e.wd * e.p[i]);
    e.p[i] = pi;
    if (e.w16) mp_store(e.w16, t16, i, pi); // the copy back to the stored weights
  }
}

// A range's blocks: about 4 elements a thread, at most 4096 blocks (then a grid-stride loop).
static int adamw_blocks(size_t n)
{
  const size_t b = (n + 4 * THREADS - 1) / (4 * THREADS);
  return (int)(b < 1 ? 1 : b > 4096 ? 4096 : b);
}

extern "C" int ptdp_cuk_adamw_plan(const ptdp_adamw_range *r, int count, ptdp_cuk_adamw_entry *tab)
{
  int blocks = 0;
  for (int i = 0; i < count; i++) {
    const ptdp_cuk_adamw_entry e = {r[i].p, r[i].g, r[i].m, r[i].v, r[i].w16, r[i].n, r[i].wd, blocks,
                                    adamw_blocks(r[i].n), 0};
    tab[i] = e;
    blocks += e.nb;
  }
  return blocks;
}

extern "C" cudaError_t ptdp_cuk_adamw_many(cudaStream_t st, const ptdp_cuk_adamw_entry *tab, int count, int blocks,
                                           ptdp_dtype t16, float gscale, float lr, float b1, float b2, float eps,
                                           float bc1, float bc2)
{
  if (count <= 0) return cudaSuccess;
  adamw_many_k<<<(unsigned)blocks, THREADS, 0, st>>>(tab, count, (int)t16, gscale, lr, b1, b2, eps, bc1, bc2);
  return cudaGetLastError();
}

// two passes, fixed block count: the same sum (bits) on every run
__global__ void sumsq_partial(const float *x, size_t n, double *part)
{
  double s = 0;
  FOR_EACH(i, n) s += (double)x[i] * x[i];
  s = block_sum(s);
  if (threadIdx.x == 0) part[blockIdx.x] = s;
}

__global__ void sumsq_final(const double *part, int np, double *out)
{
  double s = 0;
  for (int i = threadIdx.x; i < np; i += blockDim.x) s += part[i];
  s = block_sum(s);
  if (threadIdx.x == 0) *out = s;
}

// blocks: one per THREADS elements up to PTDP_CUK_RED_BLOCKS, a function of n alone (so the
// same sum on every run); a small tensor does not start a thousand idle blocks
static int sumsq_blocks(size_t n)
{
  size_t want = (n + THREADS - 1) / THREADS;
  return want >= PTDP_CUK_RED_BLOCKS ? PTDP_CUK_RED_BLOCKS : want ? (int)want : 1;
}

// Many arrays in one launch each way (a step's gradient norm was two launches per tensor, 296
// for GPT 125M: about 1.5 ms of a 27 ms step on an H200).  Block g of the partial pass is block
// g - b0 of the array whose blocks hold g (a binary search in tab), summing exactly what
// sumsq_partial's block of that index sums; block i of the final pass is sumsq_final for array i.
__global__ void sumsq_many_partial(const ptdp_cuk_sumsq_entry *tab, int count, double *part)
{
  const ptdp_cuk_sumsq_entry e = tab[entry_of_block(tab, count, (int)blockIdx.x)];
  const size_t bi = blockIdx.x - (unsigned)e.b0, stride = (size_t)e.nb * blockDim.x;
  double s = 0;
  for (size_t i = bi * blockDim.x + threadIdx.x; i < e.n; i += stride) s += (double)e.x[i] * e.x[i];
  s = block_sum(s);
  if (threadIdx.x == 0) part[blockIdx.x] = s;
}

__global__ void sumsq_many_final(const ptdp_cuk_sumsq_entry *tab, const double *part, double *out)
{
  const ptdp_cuk_sumsq_entry e = tab[blockIdx.x];
  double s = 0;
  for (int i = threadIdx.x; i < e.nb; i += blockDim.x) s += part[e.b0 + i];
  s = block_sum(s);
  if (threadIdx.x == 0) out[blockIdx.x] = s;
}

extern "C" int ptdp_cuk_sumsq_plan(const float *const *x, const size_t *n, int count, ptdp_cuk_sumsq_entry *tab)
{
  int blocks = 0;
  for (int i = 0; i < count; i++) {
    const ptdp_cuk_sumsq_entry e = {x[i], n[i], blocks, sumsq_blocks(n[i])};
    tab[i] = e;
    blocks += tab[i].nb;
  }
  return blocks;
}

extern "C" cudaError_t ptdp_cuk_sumsq_many(cudaStream_t st, const ptdp_cuk_sumsq_entry *tab, int count, int blocks,
                                           double *part, double *out)
{
  if (count <= 0) return cudaSuccess;
  sumsq_many_partial<<<(unsigned)blocks, THREADS, 0, st>>>(tab, count, part);
  sumsq_many_final<<<(unsigned)count, THREADS, 0, st>>>(tab, part, out);
  return cudaGetLastError();
}

extern "C" cudaError_t ptdp_cuk_sumsq(cudaStream_t st, const float *x, size_t n, double *part, double *out)
{
  int blocks = sumsq_blocks(n);
  sumsq_partial<<<blocks, THREADS, 0, st>>>(x, n, part);
  sumsq_final<<<1, THREADS, 0, st>>>(part, blocks, out);
  return cudaGetLastError();
}
