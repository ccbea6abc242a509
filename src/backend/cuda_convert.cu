// Conversions between storage types and the loss scaler's unscale on the CUDA backend
// (ptdp_backend's convert and unscale_check).  convert copies a tensor between fp32, bf16 and
// fp16 with ptdp/half.h's rules bit for bit (mp_load, mp_store: cuda_device.h); the model calls
// it for the 16-bit copies of its weights and gradients (src/model/gpt.c).  unscale_check
// multiplies the fp32 gradients by 1 / scale and flags any inf or NaN it met, for the dynamic
// loss scaler (src/optim/optimizer.c, Megatron's _amp_foreach_non_finite_check_and_unscale_).
#include "cuda_device.h"

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
