// The token embedding of the CUDA backend (ptdp_backend's embedding_forward and
// embedding_backward), for a vocabulary-parallel slice [v0, v0 + vl) of wte [vl, h]:
//     out[r] = wte[tok[r] - v0] where the token is in the slice, else 0,
//     dwte[tok[r] - v0] += dout[r]   (fp32; atomics, see embed_bwd)
#include "cuda_device.h"

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
