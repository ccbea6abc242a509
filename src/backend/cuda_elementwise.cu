// Element-wise kernels of the CUDA backend: GELU forward and backward, bias forward and backward,
// add, scale, fill (shapes as in ptdp/backend.h).  Each mirrors the CPU backend's formula
// (src/backend/cpu.c) so results agree to rounding: the same tanh-form GELU,
//     gelu(x) = x sigma(2u),  u = k (x + 0.044715 x^3),  k = sqrt(2/pi).
// Kernels with (S) operands are templates on the storage type T (cuda_elem.h): fp32 math, one
// rounding per stored element, so a bf16/fp16 table rounds where the mixed-precision wrapper
// does; the bias and add kernels move 16-byte units where the pointers allow (an element a
// thread ran at a fraction of the H200's bandwidth, validation/bench/README.md).
#include "cuda_device.h"

#define GELU_K 0.7978845608028654f // sqrt(2/pi)

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

// db += the column sums of dy (cuda_colsum.cu: fixed row chunks, then their sum in order)
extern "C" cudaError_t ptdp_cuk_bias_backward(cudaStream_t st, ptdp_dtype t, const void *dy, float *db, long long rows,
                                              int cols, float *part, int chunks)
{
  return ptdp_cuk_colsum(st, t, dy, NULL, NULL, NULL, rows, cols, part, chunks, NULL, db);
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
