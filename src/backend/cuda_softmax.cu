// Causal softmax with dropout for the unfused attention (cuda_attention.c): one block per row
// q of one (sample, head) pair's S [s, s], the CPU's formulas (src/backend/cpu_attention.c):
//     P[q, k] = exp(S[q, k] - max) / sum    for k <= q,  0 after
//     Pd[q, k] = mask P / (1 - p),  mask[q, k] = (k <= q) && u(seed, site, layer, sample,
//                                            (head0 + head) s + q, k) >= p
// and backward  dS = P (dPd' - sum_k dPd' P),  dPd' = mask dPd / (1 - p).
// NOT YET RUN ON A GPU: see README, "GPUs".
#include "cuda_internal.h"
#include "cuda_rng.h"

#include <math.h>

__device__ static float row_reduce(float v, int is_max)
{
  __shared__ float part[32];
  for (int o = 16; o > 0; o >>= 1) {
    float u = __shfl_xor_sync(0xffffffffu, v, o);
    v = is_max ? fmaxf(v, u) : v + u;
  }
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
  __syncthreads();
  if (lane == 0) part[warp] = v;
  __syncthreads();
  float t = is_max ? -INFINITY : 0.0f;
  for (int w = 0; w < nw; w++) t = is_max ? fmaxf(t, part[w]) : t + part[w];
  return t;
}

__global__ void softmax_fwd(int s, int al, ptdp_dropout_key k, long long head0, float *probs, uint8_t *mask,
                            float *probs_drop)
{
  const long long t = blockIdx.x;            // row of [b al s]
  const int q = (int)(t % s), hh = (int)((t / s) % al), bi = (int)(t / ((long long)s * al));
  float *row = probs + t * s;
  float m = -INFINITY;
  for (int j = threadIdx.x; j <= q; j += blockDim.x) m = fmaxf(m, row[j]);
  m = row_reduce(m, 1);
  float sum = 0.0f;
  for (int j = threadIdx.x; j <= q; j += blockDim.x) {
    float e = expf(row[j] - m);
    row[j] = e;
    sum += e;
  }
  const float inv = 1.0f / row_reduce(sum, 0);
  for (int j = threadIdx.x; j < s; j += blockDim.x) row[j] = j <= q ? row[j] * inv : 0.0f;
  if (k.p > 0.0f) {
    const float keep_scale = 1.0f / (1.0f - k.p);
    uint64_t rh = ptdp_cu_rng_row(k.seed, k.site, k.layer, (uint64_t)(k.sample0 + bi), (uint64_t)((head0 + hh) * s + q));
    for (int j = threadIdx.x; j < s; j += blockDim.x) {
      uint8_t keep = j <= q && ptdp_cu_rng_uniform(ptdp_cu_rng_at(rh, (uint64_t)j)) >= k.p;
      mask[t * s + j] = keep;
      probs_drop[t * s + j] = keep ? row[j] * keep_scale : 0.0f;
    }
  }
}

// rows of one sample: dp [al, s, s]; probs and mask rows at pair (bi al + hh)
__global__ void softmax_bwd(int s, int al, int bi, float p, const float *probs, const uint8_t *mask, float *dp)
{
  const long long t = blockIdx.x; // row of [al s]
  const int q = (int)(t % s);
  const long long prow = ((long long)bi * al * s + t) * s;
  const float *pr = probs + prow;
  float *dr = dp + t * s;
  const float keep_scale = p > 0.0f ? 1.0f / (1.0f - p) : 1.0f;
  float dot = 0.0f;
  for (int j = threadIdx.x; j <= q; j += blockDim.x) {
    float d = dr[j];
    if (p > 0.0f) d = mask[prow + j] ? d * keep_scale : 0.0f;
    dr[j] = d;
    dot += d * pr[j];
  }
  dot = row_reduce(dot, 0);
  for (int j = threadIdx.x; j < s; j += blockDim.x) dr[j] = j <= q ? pr[j] * (dr[j] - dot) : 0.0f;
}

static int threads_for(int s) { return s >= 1024 ? 256 : s >= 256 ? 128 : 64; }

extern "C" cudaError_t ptdp_cuk_softmax_forward(cudaStream_t st, const ptdp_attn_desc *d, float *probs, uint8_t *mask,
                                                float *probs_drop)
{
  long long rows = (long long)d->b * d->al * d->s;
  if (rows > 0)
    softmax_fwd<<<(unsigned)rows, threads_for(d->s), 0, st>>>(d->s, d->al, d->drop, d->head0, probs, mask, probs_drop);
  return cudaGetLastError();
}

extern "C" cudaError_t ptdp_cuk_softmax_backward(cudaStream_t st, const ptdp_attn_desc *d, int bi, const float *probs,
                                                 const uint8_t *mask, float *dp)
{
  long long rows = (long long)d->al * d->s;
  if (rows > 0) softmax_bwd<<<(unsigned)rows, threads_for(d->s), 0, st>>>(d->s, d->al, bi, d->drop.p, probs, mask, dp);
  return cudaGetLastError();
}
