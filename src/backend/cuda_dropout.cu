// Dropout of the CUDA backend (ptdp_backend's dropout_forward, dropout_backward and
// dropout_backward_to) and the residual branch's end in one pass (bias_dropout_add:
// y = dropout(y + b) + res).  The mask of element (r, c) comes from the CPU's counter-based key
// (cuda_rng.h through bda_row, cuda_bda.h), so the masks are the CPU backend's bit for bit; kept
// elements are scaled by 1 / (1 - p).  Templates on the storage type T (cuda_elem.h), 16-byte
// units where the pointers allow.
#include "cuda_device.h"
#include "cuda_bda.h"
#include "cuda_rng.h"

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
