// Vocabulary-parallel cross entropy of the CUDA backend (ptdp_backend's xent_stats, xent_sumexp,
// xent_grad, xent_stats_local, xent_rescale, xent_fused and xent_loss), the CPU backend's
// formulas (src/backend/cpu.c) on logits [rows, vl] of the storage type, statistics fp32:
//     rowmax[r] = max_j logits,  se[r] = sum_j exp(logits - gmax[r]),
//     logits <- (softmax - onehot) scale,  loss = mean_r (log se[r] + gmax[r] - tgt[r])
// A block per row (THREADS threads, block_max and block_sum of cuda_device.h); the loss sums in
// double in a fixed tree, the same bits on every run.
#include "cuda_device.h"

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
