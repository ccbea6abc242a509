// The Llama family's kernels of the CUDA backend: RMSNorm, the rotary embedding of
// the query and key heads, SwiGLU, and the store of the grouped-query attention's fp32 key and
// value gradients (cuda_attention.c).  Formulas and orders of operations are the CPU backend's
// (src/backend/cpu.c), so the two agree to rounding:
//     RMSNorm   y = x rstd w,  rstd = 1 / sqrt(mean(x^2) + eps)                     (per row)
//               dx = rstd (g - x rstd mgx),  g = dy w,  mgx = mean(g x rstd),  dw += sum_rows dy x rstd
//     RoPE      (x_a, x_b) <- (x_a c - x_b s, x_b c + x_a s) for the pairs (a, b) of ptdp_rope_desc,
//               s negated for the inverse (the backward of a rotation)
//     SwiGLU    y = silu(g) u on rows [g | u];  dg = dy u sigma(g) (1 + g (1 - sigma(g))), du = dy silu(g)
// Kernels are templates on the storage type T (cuda_elem.h): fp32 math, each (S) output rounded
// once, as the mixed-precision wrapper does.  RMSNorm's statistics are fp32 outputs (rstd) from
// sums of squares in double, as LayerNorm's (cuda_layernorm.cu says why); rows up to 4096 wide in
// 16-byte units go a warp per row, as LayerNorm's (not yet measured on a GPU), wider or unaligned
// ones a block per row; its dw is a column sum through fixed row chunks and a second pass
// (deterministic, no atomics) by LayerNorm's column-sum kernels with a zero mean
// (ptdp_cuk_colsum, cuda_colsum.cu).
// Run on a GPU (NVIDIA H200, 2026-11-26): test_ops and test_cuda_model pass; see ptdp-gpu(7).
#include "cuda_device.h"
#include "cuda_bda.h"

// Rows up to ROW_WARP_H wide (cuda_device.h), h a multiple of VEC(T) and the arrays aligned: a
// warp per row (WARP_ROWS rows a block) in vec16 units, as LayerNorm's (cuda_layernorm.cu: a
// block per short row spent its time in barriers; an element at a time, too few bytes in
// flight).  The same per-element arithmetic as the block-per-row kernels; the double sums in
// another order (rstd equal but for a rare double rounding).

template <typename T> static bool rms_rows_vec(int h, const void *a, const void *b, const void *c, const void *d)
{
  return h <= ROW_WARP_H && h % VEC(T) == 0 && vec_aligned(a) && vec_aligned(b) && vec_aligned(c) && vec_aligned(d);
}

// row r of the warp-per-row vec16 forward, lane t of 32 over the units t, t + 32, ... of x
template <typename T>
__device__ __forceinline__ static void rms_row_forward_vec(const vec16<T> *xr, const vec16<T> *wv, vec16<T> *yr,
                                                           float *rstd, long long r, int h, float eps, int t)
{
  constexpr int V = VEC(T);
  const int nv = h / V;
  double ss = 0;
  for (int i = t; i < nv; i += 32) {
    const vec16<T> a = xr[i];
    for (int j = 0; j < V; j++) {
      const float v = ptdp_ld(a.e[j]);
      ss += (double)v * v;
    }
  }
  const float rs = 1.0f / sqrtf((float)(warp_sum(ss) / h) + eps);
  for (int i = t; i < nv; i += 32) {
    const vec16<T> a = xr[i], wa = wv[i];
    vec16<T> o;
    for (int j = 0; j < V; j++) ptdp_st(&o.e[j], ptdp_ld(a.e[j]) * rs * ptdp_ld(wa.e[j]));
    yr[i] = o;
  }
  if (t == 0) rstd[r] = rs;
}

template <typename T>
__global__ void rms_forward_rows_vec(const T *x, const T *w, T *y, float *rstd, long long rows, int h, float eps)
{
  const long long r = (long long)blockIdx.x * WARP_ROWS + (threadIdx.x >> 5);
  if (r >= rows) return; // the whole warp: its lanes share the row
  rms_row_forward_vec((const vec16<T> *)(x + r * h), (const vec16<T> *)w, (vec16<T> *)(y + r * h), rstd, r, h, eps,
                      (int)(threadIdx.x & 31));
}

// bias_dropout_add, then the RMSNorm of its result, a warp per row (ptdp_backend's
// bias_dropout_add_rmsnorm), as cuda_layernorm.cu's LayerNorm fusion: each lane writes its units of
// y (bda_unit_vec, bias_dropout_add's bits) and reads back only those for the row's RMSNorm
// (rms_row_forward_vec, rms_forward_rows_vec's bits).
template <typename T>
__global__ void bda_rms_rows_vec(T *y, const T *b, uint8_t *mask, const T *res, ptdp_dropout_key k, float keep_scale,
                                 const T *w, T *out, float *rstd, long long rows, int h, float eps)
{
  const long long r = (long long)blockIdx.x * WARP_ROWS + (threadIdx.x >> 5);
  if (r >= rows) return;
  const int t = (int)(threadIdx.x & 31), nv = h / VEC(T);
  for (int i = t; i < nv; i += 32)
    bda_unit_vec(y, b, mask, res, (size_t)r * nv + i, r, (long long)i * VEC(T), k, keep_scale);
  rms_row_forward_vec((const vec16<T> *)(y + r * h), (const vec16<T> *)w, (vec16<T> *)(out + r * h), rstd, r, h, eps, t);
}

template <typename T>
static cudaError_t bda_rms_launch(cudaStream_t st, void *y, const void *b, uint8_t *mask, const void *res,
                                  long long rows, int h, ptdp_dropout_key k, const void *w, void *out, float *rstd,
                                  float eps, int *fused)
{
  void (*bda_rms_kernel)(T *, const T *, uint8_t *, const T *, ptdp_dropout_key, float, const T *, T *, float *,
                         long long, int, float) = bda_rms_rows_vec<T>;
  *fused = rms_rows_vec<T>(h, y, res, w, out) && (!b || vec_aligned(b)) &&
           (k.p <= 0.0f || ((uintptr_t)mask & (uintptr_t)(VEC(T) - 1)) == 0);
  if (!*fused || rows <= 0) return cudaGetLastError();
  const float keep_scale = k.p > 0.0f ? 1.0f / (1.0f - k.p) : 1.0f;
  bda_rms_kernel<<<warp_row_blocks(rows), 32 * WARP_ROWS, 0, st>>>((T *)y, (const T *)b, mask, (const T *)res, k,
                                                                   keep_scale, (const T *)w, (T *)out, rstd, rows, h,
                                                                   eps);
  return cudaGetLastError();
}

template <typename T>
__global__ void rms_backward_dx_rows_vec(const T *dy, const T *x, const T *w, const float *rstd, T *dx, const T *res,
                                         long long rows, int h)
{
  constexpr int V = VEC(T);
  const long long r = (long long)blockIdx.x * WARP_ROWS + (threadIdx.x >> 5);
  if (r >= rows) return;
  const int t = threadIdx.x & 31, nv = h / V;
  const vec16<T> *dyr = (const vec16<T> *)(dy + r * h), *xr = (const vec16<T> *)(x + r * h);
  const vec16<T> *wv = (const vec16<T> *)w, *rr = (const vec16<T> *)(res ? res + r * h : res);
  const float rs = rstd[r];
  double sgx = 0;
  for (int i = t; i < nv; i += 32) {
    const vec16<T> da = dyr[i], xa = xr[i], wa = wv[i];
    for (int j = 0; j < V; j++) sgx += (double)(ptdp_ld(da.e[j]) * ptdp_ld(wa.e[j])) * (ptdp_ld(xa.e[j]) * rs);
  }
  const float mgx = (float)(warp_sum(sgx) / h);
  vec16<T> *dxr = (vec16<T> *)(dx + r * h);
  for (int i = t; i < nv; i += 32) {
    const vec16<T> da = dyr[i], xa = xr[i], wa = wv[i];
    vec16<T> o, ra;
    if (rr) ra = rr[i];
    for (int j = 0; j < V; j++) {
      const float xv = ptdp_ld(xa.e[j]);
      const float v = rs * (ptdp_ld(da.e[j]) * ptdp_ld(wa.e[j]) - xv * rs * mgx);
      ptdp_st(&o.e[j], rr ? __fadd_rn(v, ptdp_ld(ra.e[j])) : v);
    }
    dxr[i] = o;
  }
}

// ---------------------------------------------------------------- RMSNorm
// one block per row of h
template <typename T>
__global__ void rms_forward(const T *x, const T *w, T *y, float *rstd, int h, float eps)
{
  const long long r = blockIdx.x;
  const T *xr = x + r * h;
  T *yr = y + r * h;
  double ss = 0;
  for (int i = threadIdx.x; i < h; i += blockDim.x) {
    const float v = ptdp_ld(xr[i]);
    ss += (double)v * v;
  }
  const float rs = 1.0f / sqrtf((float)(block_sum(ss) / h) + eps);
  for (int i = threadIdx.x; i < h; i += blockDim.x) ptdp_st(&yr[i], ptdp_ld(xr[i]) * rs * ptdp_ld(w[i]));
  if (threadIdx.x == 0) rstd[r] = rs;
}

// dx per row (one block each): the sum of g xhat in double, as the CPU; with the residual's
// gradient res, dx = that + res, the sum rounded on its own (add's bits in fp32)
template <typename T>
__global__ void rms_backward_dx(const T *dy, const T *x, const T *w, const float *rstd, T *dx, const T *res, int h)
{
  const long long r = blockIdx.x;
  const T *dyr = dy + r * h, *xr = x + r * h;
  const float rs = rstd[r];
  double sgx = 0;
  for (int i = threadIdx.x; i < h; i += blockDim.x)
    sgx += (double)(ptdp_ld(dyr[i]) * ptdp_ld(w[i])) * (ptdp_ld(xr[i]) * rs);
  const float mgx = (float)(block_sum(sgx) / h);
  for (int i = threadIdx.x; i < h; i += blockDim.x) {
    const float xv = ptdp_ld(xr[i]);
    const float v = rs * (ptdp_ld(dyr[i]) * ptdp_ld(w[i]) - xv * rs * mgx);
    ptdp_st(&dx[r * h + i], res ? __fadd_rn(v, ptdp_ld(res[r * h + i])) : v);
  }
}

template <typename T>
static cudaError_t rms_forward_launch(cudaStream_t st, const void *x, const void *w, void *y, float *rstd,
                                      long long rows, int h, float eps)
{
  void (*kernel)(const T *, const T *, T *, float *, int, float) = rms_forward<T>;
  void (*rows_kernel)(const T *, const T *, T *, float *, long long, int, float) = rms_forward_rows_vec<T>;
  if (rows <= 0) return cudaGetLastError();
  if (rms_rows_vec<T>(h, x, w, y, y))
    rows_kernel<<<warp_row_blocks(rows), 32 * WARP_ROWS, 0, st>>>((const T *)x, (const T *)w, (T *)y, rstd, rows, h,
                                                                  eps);
  else
    kernel<<<(unsigned)rows, row_threads(h), 0, st>>>((const T *)x, (const T *)w, (T *)y, rstd, h, eps);
  return cudaGetLastError();
}

extern "C" cudaError_t ptdp_cuk_rmsnorm_forward(cudaStream_t st, ptdp_dtype t, const void *x, const void *w, void *y,
                                                float *rstd, long long rows, int h, float eps)
{
  return PTDP_CUK_DISPATCH(t, rms_forward_launch, st, x, w, y, rstd, rows, h, eps);
}

extern "C" cudaError_t ptdp_cuk_bias_dropout_add_rmsnorm(cudaStream_t st, ptdp_dtype t, void *y, const void *b,
                                                         uint8_t *mask, const void *res, long long rows, int h,
                                                         ptdp_dropout_key k, const void *w, void *out, float *rstd,
                                                         float eps)
{
  int fused = 0;
  const cudaError_t e = PTDP_CUK_DISPATCH(t, bda_rms_launch, st, y, b, mask, res, rows, h, k, w, out, rstd, eps, &fused);
  if (e != cudaSuccess || fused) return e;
  const cudaError_t e2 = ptdp_cuk_bias_dropout_add(st, t, y, b, mask, res, rows, h, k); /* the two kernels: the same bits */
  if (e2 != cudaSuccess) return e2;
  return ptdp_cuk_rmsnorm_forward(st, t, y, w, out, rstd, rows, h, eps);
}

template <typename T>
static cudaError_t rms_backward_launch(cudaStream_t st, const void *dy, const void *x, const void *w,
                                       const float *rstd, void *dx, float *dw, long long rows, int h, float *part,
                                       int chunks, const void *res)
{
  void (*dx_kernel)(const T *, const T *, const T *, const float *, T *, const T *, int) = rms_backward_dx<T>;
  if (rows <= 0) return cudaGetLastError();
  const T *dyt = (const T *)dy, *xt = (const T *)x, *wt = (const T *)w;
  void (*dx_rows_kernel)(const T *, const T *, const T *, const float *, T *, const T *, long long, int) =
      rms_backward_dx_rows_vec<T>;
  if (rms_rows_vec<T>(h, dy, x, w, dx) && (!res || vec_aligned(res)))
    dx_rows_kernel<<<warp_row_blocks(rows), 32 * WARP_ROWS, 0, st>>>(dyt, xt, wt, rstd, (T *)dx, (const T *)res, rows,
                                                                     h);
  else
    dx_kernel<<<(unsigned)rows, row_threads(h), 0, st>>>(dyt, xt, wt, rstd, (T *)dx, (const T *)res, h);
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) return e;
  return ptdp_cuk_colsum(st, type_of((const T *)NULL), dy, x, NULL, rstd, rows, h, part, chunks, dw, NULL);
}

extern "C" cudaError_t ptdp_cuk_rmsnorm_backward(cudaStream_t st, ptdp_dtype t, const void *dy, const void *x,
                                                 const void *w, const float *rstd, void *dx, float *dw,
                                                 long long rows, int h, float *part, int chunks, const void *res)
{
  return PTDP_CUK_DISPATCH(t, rms_backward_launch, st, dy, x, w, rstd, dx, dw, rows, h, part, chunks, res);
}

// ---------------------------------------------------------------- RoPE
// One thread per turned pair: index i = ((r groups + g) turned + j) half + k over rows r, groups
// g, the group's turned heads j (its queries, then its key) and the pairs k of the first rd
// entries; each pair read and written by its own thread (in place).
template <typename T>
__global__ void rope_kernel(T *qkv, ptdp_rope_desc d, const float *table, float sign, size_t n)
{
  const int half = d.rd / 2, turned = d.heads_per_group + 1;
  FOR_EACH(i, n)
  {
    const int k = (int)(i % half);
    const size_t hj = i / half;
    const int j = (int)(hj % turned), g = (int)(hj / turned % d.groups);
    const long long r = (long long)(hj / turned / d.groups);
    T *x = qkv + r * d.ld + ((long long)g * (d.heads_per_group + 2) + j) * d.hd;
    const float *cs = table + (d.pos0 + r / d.b) * d.rd + 2 * k;
    const int a = d.interleaved ? 2 * k : k, b = d.interleaved ? 2 * k + 1 : k + half;
    const float c = cs[0], sn = sign * cs[1], x1 = ptdp_ld(x[a]), x2 = ptdp_ld(x[b]);
    ptdp_st(&x[a], x1 * c - x2 * sn);
    ptdp_st(&x[b], x2 * c + x1 * sn);
  }
}

template <typename T>
static cudaError_t rope_launch(cudaStream_t st, void *qkv, const ptdp_rope_desc *d, const float *table, int inverse)
{
  void (*kernel)(T *, ptdp_rope_desc, const float *, float, size_t) = rope_kernel<T>;
  const size_t n = (size_t)d->rows * d->groups * (d->heads_per_group + 1) * (d->rd / 2);
  if (n > 0) kernel<<<grid_for(n), THREADS, 0, st>>>((T *)qkv, *d, table, inverse ? -1.0f : 1.0f, n);
  return cudaGetLastError();
}

extern "C" cudaError_t ptdp_cuk_rope(cudaStream_t st, ptdp_dtype t, void *qkv, const ptdp_rope_desc *d,
                                     const float *table, int inverse)
{
  return PTDP_CUK_DISPATCH(t, rope_launch, st, qkv, d, table, inverse);
}

// ---------------------------------------------------------------- SwiGLU
// rows [gate (f) | up (f)] of x to y [rows, f]: y = silu(g) u, silu(g) = g sigma(g) (the CPU's
// g / (1 + e^-g) u); backward dg = dy u sigma (1 + g (1 - sigma)), du = dy silu(g).  One thread
// per (row, i) pair, grid-stride.
template <typename T> __global__ void swiglu_fwd(const T *x, T *y, int f, size_t n)
{
  FOR_EACH(i, n)
  {
    const size_t r = i / f, c = i % f;
    const float g = ptdp_ld(x[r * 2 * f + c]), u = ptdp_ld(x[r * 2 * f + f + c]);
    ptdp_st(&y[i], g / (1.0f + expf(-g)) * u);
  }
}

template <typename T> __global__ void swiglu_bwd(const T *x, const T *dy, T *dx, int f, size_t n)
{
  FOR_EACH(i, n)
  {
    const size_t r = i / f, c = i % f;
    const float g = ptdp_ld(x[r * 2 * f + c]), u = ptdp_ld(x[r * 2 * f + f + c]), d = ptdp_ld(dy[i]);
    const float sg = 1.0f / (1.0f + expf(-g));
    ptdp_st(&dx[r * 2 * f + c], d * u * sg * (1.0f + g * (1.0f - sg)));
    ptdp_st(&dx[r * 2 * f + f + c], d * g * sg);
  }
}

template <typename T>
static cudaError_t swiglu_forward_launch(cudaStream_t st, const void *x, void *y, long long rows, int f)
{
  void (*kernel)(const T *, T *, int, size_t) = swiglu_fwd<T>;
  const size_t n = (size_t)rows * f;
  if (n > 0) kernel<<<grid_for(n), THREADS, 0, st>>>((const T *)x, (T *)y, f, n);
  return cudaGetLastError();
}

extern "C" cudaError_t ptdp_cuk_swiglu_forward(cudaStream_t st, ptdp_dtype t, const void *x, void *y, long long rows,
                                               int f)
{
  return PTDP_CUK_DISPATCH(t, swiglu_forward_launch, st, x, y, rows, f);
}

template <typename T>
static cudaError_t swiglu_backward_launch(cudaStream_t st, const void *x, const void *dy, void *dx, long long rows,
                                          int f)
{
  void (*kernel)(const T *, const T *, T *, int, size_t) = swiglu_bwd<T>;
  const size_t n = (size_t)rows * f;
  if (n > 0) kernel<<<grid_for(n), THREADS, 0, st>>>((const T *)x, (const T *)dy, (T *)dx, f, n);
  return cudaGetLastError();
}

extern "C" cudaError_t ptdp_cuk_swiglu_backward(cudaStream_t st, ptdp_dtype t, const void *x, const void *dy, void *dx,
                                                long long rows, int f)
{
  return PTDP_CUK_DISPATCH(t, swiglu_backward_launch, st, x, dy, dx, rows, f);
}

// ---------------------------------------------------------------- grouped attention's dK, dV
// src [G, s, hd] fp32 (a group's gradient summed over its query heads) to the storage type at
// dst + q ld + g gs + c: one rounding per element, as the wrapper's fp32 sum then its store.
template <typename T>
__global__ void group_store(const float *src, T *dst, int s, int hd, long long ld, long long gs, size_t n)
{
  FOR_EACH(i, n)
  {
    const int c = (int)(i % hd), q = (int)(i / hd % s);
    const long long g = (long long)(i / hd / s);
    ptdp_st(&dst[q * ld + g * gs + c], src[i]);
  }
}

template <typename T>
static cudaError_t group_store_launch(cudaStream_t st, const float *src, void *dst, int groups, int s, int hd,
                                      long long ld, long long gs)
{
  void (*kernel)(const float *, T *, int, int, long long, long long, size_t) = group_store<T>;
  const size_t n = (size_t)groups * s * hd;
  if (n > 0) kernel<<<grid_for(n), THREADS, 0, st>>>(src, (T *)dst, s, hd, ld, gs, n);
  return cudaGetLastError();
}

extern "C" cudaError_t ptdp_cuk_group_store(cudaStream_t st, ptdp_dtype t, const float *src, void *dst, int groups,
                                            int s, int hd, long long ld, long long gs)
{
  return PTDP_CUK_DISPATCH(t, group_store_launch, st, src, dst, groups, s, hd, ld, gs);
}
