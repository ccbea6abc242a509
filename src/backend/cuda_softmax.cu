// Causal softmax with dropout for the unfused attention (cuda_attention.c): one block per row
// q of one (sample, head) pair's S [s, s], the CPU's formulas (src/backend/cpu_attention.c):
//     P[q, k] = exp(S[q, k] - max) / sum    for k <= q,  0 after
//     Pd[q, k] = mask P / (1 - p),  mask[q, k] = (k <= q) && u(seed, site, layer, sample,
//                                            (head0 + head) s + q, k) >= p
// and backward  dS = P (dPd' - sum_k dPd' P),  dPd' = mask dPd / (1 - p).
// S and dPd are fp32 (the scores and dP a GEMM wrote into fp32); P, Pd and dS are of the
// storage type T (cuda_elem.h), each rounded once from its fp32 value.
// Run on a GPU (NVIDIA H200, 2026-11-26): test_ops and test_cuda_model pass; see ptdp-gpu(7).
#include "cuda_device.h"
#include "cuda_rng.h"

// Rows of samples [bi0, bi0 + nb): block t is row t of S [nb, al, s, s] (fp32 scores), row
// bi0 al s + t of probs, mask and probs_drop [b, al, s, s].  Each element's exponential is
// computed twice (for the sum, then for P) rather than kept: S may be another type than P, and
// in the fp32 path S is P (in place; every element is read and written by the same thread).
template <typename T>
__global__ void softmax_fwd(int s, int al, ptdp_dropout_key k, long long head0, int bi0, const float *S, T *probs,
                            uint8_t *mask, T *probs_drop)
{
  const long long t = blockIdx.x, g = (long long)bi0 * al * s + t; // local and global row
  const int q = (int)(t % s), hh = (int)((t / s) % al), bi = bi0 + (int)(t / ((long long)s * al));
  const float *srow = S + t * s;
  T *row = probs + g * s;
  float m = -INFINITY;
  for (int j = threadIdx.x; j <= q; j += blockDim.x) m = fmaxf(m, srow[j]);
  m = block_max(m);
  float sum = 0.0f;
  for (int j = threadIdx.x; j <= q; j += blockDim.x) sum += expf(srow[j] - m);
  const float inv = 1.0f / block_sum(sum);
  const float keep_scale = k.p > 0.0f ? 1.0f / (1.0f - k.p) : 1.0f;
  uint64_t rh = 0;
  if (k.p > 0.0f)
    rh = ptdp_cu_rng_row(k.seed, k.site, k.layer, (uint64_t)(k.sample0 + bi), (uint64_t)((head0 + hh) * s + q));
  for (int j = threadIdx.x; j < s; j += blockDim.x) {
    const float pv = j <= q ? expf(srow[j] - m) * inv : 0.0f;
    ptdp_st(&row[j], pv);
    if (k.p > 0.0f) {
      uint8_t keep = j <= q && ptdp_cu_rng_uniform(ptdp_cu_rng_at(rh, (uint64_t)j)) >= k.p;
      mask[g * s + j] = keep;
      ptdp_st(&probs_drop[g * s + j], keep ? pv * keep_scale : 0.0f);
    }
  }
}

// rows of one sample: dp [al, s, s] (fp32) to ds [al, s, s] (T; ds may be dp in fp32: each
// element read, then written, by one thread); probs and mask rows at pair (bi al + hh)
template <typename T>
__global__ void softmax_bwd(int s, int al, int bi, float p, const T *probs, const uint8_t *mask, const float *dp,
                            T *ds)
{
  const long long t = blockIdx.x; // row of [al s]
  const int q = (int)(t % s);
  const long long prow = ((long long)bi * al * s + t) * s;
  const T *pr = probs + prow;
  const float *dr = dp + t * s;
  T *out = ds + t * s;
  const float keep_scale = p > 0.0f ? 1.0f / (1.0f - p) : 1.0f;
  float dot = 0.0f;
  for (int j = threadIdx.x; j <= q; j += blockDim.x) {
    float d = dr[j];
    if (p > 0.0f) d = mask[prow + j] ? d * keep_scale : 0.0f;
    dot += d * ptdp_ld(pr[j]);
  }
  dot = block_sum(dot);
  for (int j = threadIdx.x; j < s; j += blockDim.x) {
    float d = j <= q ? dr[j] : 0.0f;
    if (p > 0.0f && j <= q) d = mask[prow + j] ? d * keep_scale : 0.0f;
    ptdp_st(&out[j], j <= q ? ptdp_ld(pr[j]) * (d - dot) : 0.0f);
  }
}

static int threads_for(int s) { return s >= 1024 ? 256 : s >= 256 ? 128 : 64; }

template <typename T>
static cudaError_t softmax_forward_launch(cudaStream_t st, const ptdp_attn_desc *d, int bi0, int nb, const float *S,
                                          void *probs, uint8_t *mask, void *probs_drop)
{
  void (*kernel)(int, int, ptdp_dropout_key, long long, int, const float *, T *, uint8_t *, T *) = softmax_fwd<T>;
  long long rows = (long long)nb * d->al * d->s;
  T *p = (T *)probs, *pd = (T *)probs_drop;
  const int s = d->s;
  if (rows > 0) kernel<<<(unsigned)rows, threads_for(s), 0, st>>>(s, d->al, d->drop, d->head0, bi0, S, p, mask, pd);
  return cudaGetLastError();
}

extern "C" cudaError_t ptdp_cuk_softmax_forward(cudaStream_t st, ptdp_dtype t, const ptdp_attn_desc *d, int bi0, int nb,
                                                const float *S, void *probs, uint8_t *mask, void *probs_drop)
{
  return PTDP_CUK_DISPATCH(t, softmax_forward_launch, st, d, bi0, nb, S, probs, mask, probs_drop);
}

template <typename T>
static cudaError_t softmax_backward_launch(cudaStream_t st, const ptdp_attn_desc *d, int bi, const void *probs,
                                           const uint8_t *mask, const float *dp, void *ds)
{
  void (*kernel)(int, int, int, float, const T *, const uint8_t *, const float *, T *) = softmax_bwd<T>;
  long long rows = (long long)d->al * d->s;
  const T *p = (const T *)probs;
  if (rows > 0) kernel<<<(unsigned)rows, threads_for(d->s), 0, st>>>(d->s, d->al, bi, d->drop.p, p, mask, dp, (T *)ds);
  return cudaGetLastError();
}

extern "C" cudaError_t ptdp_cuk_softmax_backward(cudaStream_t st, ptdp_dtype t, const ptdp_attn_desc *d, int bi,
                                                 const void *probs, const uint8_t *mask, const float *dp, void *ds)
{
  return PTDP_CUK_DISPATCH(t, softmax_backward_launch, st, d, bi, probs, mask, dp, ds);
}
