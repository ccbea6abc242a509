// The optimizer's kernels of the CUDA backend (ptdp_backend's adamw, adamw_many, sumsq and
// sumsq_many), all fp32 (the master weights, moments and main gradients):
//     AdamW (Loshchilov & Hutter)  m = b1 m + (1 - b1) g,  v = b2 v + (1 - b2) g^2,
//                                  p -= lr ((m / bc1) / (sqrt(v / bc2) + eps) + wd p)
// with the bias corrections bc1, bc2 computed on the host (the CPU backend's order of
// operations, src/backend/cpu.c); the sum of squares of the gradient norm in double through a
// fixed block count and a second pass, so the same bits on every run.  The *_many forms take every
// tensor in one launch (a table of ranges; the launches per tensor were a visible part of a GPT
// 125M step on an H200).
#include "cuda_device.h"

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
