// LayerNorm of the CUDA backend (ptdp_backend's layernorm_forward, layernorm_backward with or
// without the residual's gradient, bias_dropout_add_layernorm), the CPU backend's formulas
// (src/backend/cpu.c) per row of h, N = rows:
//     y = (x - mean) rstd w + b,  rstd = 1 / sqrt(var + eps)
//     dx = rstd (g - mean(g) - xhat mean(g xhat)),  g = dy w,  xhat = (x - mean) rstd
//     dw += sum_rows dy xhat,  db += sum_rows dy   (cuda_colsum.cu: fixed order, no atomics)
// Templates on the storage type T (cuda_elem.h): fp32 math, one rounding per stored element, so
// a bf16/fp16 table rounds where the mixed-precision wrapper does.  The statistics are in double
// in every type: fp32 sums of h terms would do for a bf16 y, but the suite holds mean and rstd
// (fp32 outputs) to a few fp32 ulps of their own size, and a mean near zero of terms of size 3
// loses about h u relative to itself in fp32; a row pass is bound by memory, not by the double
// adds (on the H200 the one-element-a-lane kernels ran at 35-50% of the bandwidth, so they move
// 16-byte units now where they can).
// First run on an NVIDIA H200, 2026-11-26 (validation/bench/README.md): per-kernel times there.
#include "cuda_device.h"
#include "cuda_bda.h"

// ---------------------------------------------------------------- LayerNorm
// Rows up to ROW_WARP_H wide (cuda_device.h): one warp per row (WARP_ROWS rows a block), sums
// through shuffles alone: the step's LayerNorms are thousands of short rows (h 768 to 4096),
// where a block per row spent its time in barriers (ncu on an H200: 32 us for 8192 rows of 768,
// 5x the bytes' time).  Wider rows: one block per row.  Both: mean and variance in double (as
// the CPU).

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
  const long long r = (long long)blockIdx.x * WARP_ROWS + (threadIdx.x >> 5);
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
  const long long r = (long long)blockIdx.x * WARP_ROWS + (threadIdx.x >> 5);
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
  const long long r = (long long)blockIdx.x * WARP_ROWS + (threadIdx.x >> 5);
  if (r >= rows) return; // the whole warp: its lanes share the row
  ln_row_forward_vec((const vec16<T> *)(x + r * h), (const vec16<T> *)w, (const vec16<T> *)b, (vec16<T> *)(y + r * h),
                     mean, rstd, r, h, eps, (int)(threadIdx.x & 31));
}

template <typename T>
__global__ void ln_backward_dx_rows_vec(const T *dy, const T *x, const T *w, const float *mean, const float *rstd,
                                        T *dx, const T *res, long long rows, int h)
{
  constexpr int V = VEC(T);
  const long long r = (long long)blockIdx.x * WARP_ROWS + (threadIdx.x >> 5);
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
  if (h <= ROW_WARP_H && h % VEC(T) == 0 && vec_aligned(x) && vec_aligned(w) && vec_aligned(b) && vec_aligned(y))
    rows_vec_kernel<<<warp_row_blocks(rows), 32 * WARP_ROWS, 0, st>>>(xt, wt, bt, (T *)y, mean, rstd, rows, h, eps);
  else if (h <= ROW_WARP_H)
    rows_kernel<<<warp_row_blocks(rows), 32 * WARP_ROWS, 0, st>>>(xt, wt, bt, (T *)y, mean, rstd, rows, h, eps);
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
  if (h <= ROW_WARP_H && h % VEC(T) == 0 && vec_aligned(dy) && vec_aligned(x) && vec_aligned(w) && vec_aligned(dx) &&
      (!res || vec_aligned(res)))
    dx_rows_vec_kernel<<<warp_row_blocks(rows), 32 * WARP_ROWS, 0, st>>>(dyt, xt, wt, mean, rstd, (T *)dx, rt, rows,
                                                                         h);
  else if (h <= ROW_WARP_H)
    dx_rows_kernel<<<warp_row_blocks(rows), 32 * WARP_ROWS, 0, st>>>(dyt, xt, wt, mean, rstd, (T *)dx, rt, rows, h);
  else
    dx_kernel<<<(unsigned)rows, row_threads(h), 0, st>>>(dyt, xt, wt, mean, rstd, (T *)dx, rt, h);
  return ptdp_cuk_colsum(st, type_of(dyt), dy, x, mean, rstd, rows, h, part, chunks, dw, db); // cuda_colsum.cu
}

extern "C" cudaError_t ptdp_cuk_layernorm_backward(cudaStream_t st, ptdp_dtype t, const void *dy, const void *x,
                                                   const void *w, const float *mean, const float *rstd, void *dx,
                                                   float *dw, float *db, long long rows, int h, float *part,
                                                   int chunks, const void *res)
{
  return PTDP_CUK_DISPATCH(t, ln_backward_launch, st, dy, x, w, mean, rstd, dx, dw, db, rows, h, part, chunks, res);
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
  const long long r = (long long)blockIdx.x * WARP_ROWS + (threadIdx.x >> 5);
  if (r >= rows) return; // the whole warp: its lanes share the row
  const int t = (int)(threadIdx.x & 31), nv = h / VEC(T);
  for (int i = t; i < nv; i += 32)
    bda_unit_vec(y, b, mask, res, (size_t)r * nv + i, r, (long long)i * VEC(T), k, keep_scale);
  ln_row_forward_vec((const vec16<T> *)(y + r * h), (const vec16<T> *)w, (const vec16<T> *)nb,
                     (vec16<T> *)(out + r * h), mean, rstd, r, h, eps, t);
}

// *fused = 0 where the layout does not allow the one pass (nothing launched then)
template <typename T>
static cudaError_t bda_ln_launch(cudaStream_t st, void *y, const void *b, uint8_t *mask, const void *res,
                                 long long rows, int h, ptdp_dropout_key k, const void *w, const void *nb, void *out,
                                 float *mean, float *rstd, float eps, int *fused)
{
  void (*bda_ln_kernel)(T *, const T *, uint8_t *, const T *, ptdp_dropout_key, float, const T *, const T *, T *, float *,
                        float *, long long, int, float) = bda_ln_rows_vec<T>;
  *fused = h <= ROW_WARP_H && h % VEC(T) == 0 && vec_aligned(y) && vec_aligned(res) && (!b || vec_aligned(b)) &&
           (k.p <= 0.0f || ((uintptr_t)mask & (uintptr_t)(VEC(T) - 1)) == 0) && vec_aligned(w) && vec_aligned(nb) &&
           vec_aligned(out);
  if (!*fused || rows <= 0) return cudaGetLastError();
  const float keep_scale = k.p > 0.0f ? 1.0f / (1.0f - k.p) : 1.0f;
  bda_ln_kernel<<<warp_row_blocks(rows), 32 * WARP_ROWS, 0, st>>>((T *)y, (const T *)b, mask, (const T *)res, k,
                                                                  keep_scale, (const T *)w, (const T *)nb, (T *)out,
                                                                  mean, rstd, rows, h, eps);
  return cudaGetLastError();
}

extern "C" cudaError_t ptdp_cuk_bias_dropout_add_layernorm(cudaStream_t st, ptdp_dtype t, void *y, const void *b,
                                                           uint8_t *mask, const void *res, long long rows, int h,
                                                           ptdp_dropout_key k, const void *w, const void *nb,
                                                           void *out, float *mean, float *rstd, float eps)
{
  int fused = 0;
  const cudaError_t e = PTDP_CUK_DISPATCH(t, bda_ln_launch, st, y, b, mask, res, rows, h, k, w, nb, out, mean, rstd,
                                          eps, &fused);
  if (e != cudaSuccess || fused) return e;
  const cudaError_t e2 = ptdp_cuk_bias_dropout_add(st, t, y, b, mask, res, rows, h, k); /* the two kernels: the same bits */
  if (e2 != cudaSuccess) return e2;
  return ptdp_cuk_layernorm_forward(st, t, y, w, nb, out, mean, rstd, rows, h, eps);
}
