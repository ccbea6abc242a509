// Column sums of the CUDA backend: the weight and bias gradients of LayerNorm (dw, db), of
// RMSNorm (dw) and of a bias (db), shapes as in ptdp/backend.h.  Through fixed row chunks and a
// second pass, so deterministic: the same bits on every run (no atomics).
//     part[0][chunk][c] = sum over the chunk's rows of dy xhat (or of dy where there is no x),
//     part[1][chunk][c] = sum of dy (with x),  then dw[c] += sum_chunk part[0], db[c] += ...
// xhat = (x - mean) rstd, or x rstd where mean is NULL (RMSNorm: x - 0 is x); sums in fp32.
#include "cuda_device.h"

// part[0][chunk][col] = sum over the chunk's rows of dy xhat (with_xhat) or dy; part[1] = dy
// (with_xhat only).  grid (ceil(cols / CS_COLS), chunks), block CS_COLS x CS_SLICES: slice y
// sums rows r0 + y, r0 + y + CS_SLICES, ... of its column in order, then slice 0 adds the slices
// in order (a fixed order: the same bits on every run).  One thread a column of the chunk kept
// too few loads in flight (ncu on an H200: 21 us for [8192, 768], a third of the bandwidth).
#define CS_COLS 32
#define CS_SLICES 8
template <typename T>
__global__ void colsum_partial(const T *dy, const T *x, const float *mean, const float *rstd, long long rows, int cols,
                               int chunks, float *part, int with_xhat)
{
  __shared__ float sw_s[CS_SLICES][CS_COLS], sb_s[CS_SLICES][CS_COLS];
  const int tx = threadIdx.x % CS_COLS, ty = threadIdx.x / CS_COLS, c = blockIdx.x * CS_COLS + tx;
  const long long r0 = rows * blockIdx.y / chunks, r1 = rows * (blockIdx.y + 1) / chunks;
  float sw = 0.0f, sb = 0.0f;
  if (c < cols)
    for (long long r = r0 + ty; r < r1; r += CS_SLICES) {
      float d = ptdp_ld(dy[r * cols + c]);
      if (with_xhat) sw += d * ((ptdp_ld(x[r * cols + c]) - (mean ? mean[r] : 0.0f)) * rstd[r]);
      sb += d;
    }
  sw_s[ty][tx] = sw;
  sb_s[ty][tx] = sb;
  __syncthreads();
  if (ty != 0 || c >= cols) return;
  for (int k = 1; k < CS_SLICES; k++) sw += sw_s[k][tx], sb += sb_s[k][tx];
  part[(size_t)blockIdx.y * cols + c] = with_xhat ? sw : sb;
  if (with_xhat) part[((size_t)chunks + blockIdx.y) * cols + c] = sb;
}

// The same sums, VEC(T) adjacent columns a thread in 16-byte loads (cols a multiple of VEC(T),
// dy and x aligned): each column's terms in the same order as colsum_partial's, so the same bits;
// 8 times the bytes per load and the row loop unrolled by 4 keep enough loads in flight (the
// one-element kernel ran at half the bandwidth on the H200, validation/bench/README.md).
#ifdef __CUDACC__
#define CS_UNROLL _Pragma("unroll 4")
#else
#define CS_UNROLL // (the emulation's host compiler)
#endif
template <typename T>
__global__ void colsum_partial_vec(const T *dy, const T *x, const float *mean, const float *rstd, long long rows,
                                   int cols, int chunks, float *part, int with_xhat)
{
  constexpr int V = VEC(T);
  __shared__ float sw_s[CS_SLICES][CS_COLS * V], sb_s[CS_SLICES][CS_COLS * V];
  const int tx = threadIdx.x % CS_COLS, ty = threadIdx.x / CS_COLS, c0 = (blockIdx.x * CS_COLS + tx) * V;
  const long long r0 = rows * blockIdx.y / chunks, r1 = rows * (blockIdx.y + 1) / chunks;
  float sw[V], sb[V];
  for (int i = 0; i < V; i++) sw[i] = sb[i] = 0.0f;
  if (c0 < cols) {
    CS_UNROLL
    for (long long r = r0 + ty; r < r1; r += CS_SLICES) {
      const vec16<T> d = *(const vec16<T> *)(dy + r * cols + c0);
      if (with_xhat) {
        const vec16<T> xv = *(const vec16<T> *)(x + r * cols + c0);
        const float m = mean ? mean[r] : 0.0f, rs = rstd[r];
        for (int i = 0; i < V; i++) sw[i] += ptdp_ld(d.e[i]) * ((ptdp_ld(xv.e[i]) - m) * rs);
      }
      for (int i = 0; i < V; i++) sb[i] += ptdp_ld(d.e[i]);
    }
  }
  for (int i = 0; i < V; i++) sw_s[ty][tx * V + i] = sw[i], sb_s[ty][tx * V + i] = sb[i];
  __syncthreads();
  if (ty != 0 || c0 >= cols) return;
  for (int i = 0; i < V; i++) {
    for (int k = 1; k < CS_SLICES; k++) sw[i] += sw_s[k][tx * V + i], sb[i] += sb_s[k][tx * V + i];
    part[(size_t)blockIdx.y * cols + c0 + i] = with_xhat ? sw[i] : sb[i];
    if (with_xhat) part[((size_t)chunks + blockIdx.y) * cols + c0 + i] = sb[i];
  }
}

// colsum_partial or, where the layout allows, colsum_partial_vec (x may be null: no xhat)
template <typename T>
static void colsum_partial_launch(cudaStream_t st, const T *dy, const T *x, const float *mean, const float *rstd,
                                  long long rows, int cols, int chunks, float *part, int with_xhat)
{
  void (*part_kernel)(const T *, const T *, const float *, const float *, long long, int, int, float *, int) =
      colsum_partial<T>;
  void (*part_vec_kernel)(const T *, const T *, const float *, const float *, long long, int, int, float *, int) =
      colsum_partial_vec<T>;
  if (cols % VEC(T) == 0 && vec_aligned(dy) && (!with_xhat || vec_aligned(x))) {
    dim3 g((cols / VEC(T) + CS_COLS - 1) / CS_COLS, chunks);
    part_vec_kernel<<<g, CS_COLS * CS_SLICES, 0, st>>>(dy, x, mean, rstd, rows, cols, chunks, part, with_xhat);
  } else {
    dim3 g((cols + CS_COLS - 1) / CS_COLS, chunks);
    part_kernel<<<g, CS_COLS * CS_SLICES, 0, st>>>(dy, x, mean, rstd, rows, cols, chunks, part, with_xhat);
  }
}

// out[c] += sum over chunks of part[k][c], k in chunk order
__global__ void colsum_final(const float *part, int chunks, int cols, float *out)
{
  int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= cols) return;
  float s = 0.0f;
  for (int k = 0; k < chunks; k++) s += part[(size_t)k * cols + c];
  out[c] += s;
}

// dw += the column sums of dy xhat where x is given, db += those of dy where db is given (part:
// 2 chunks cols floats with x, chunks cols without)
template <typename T>
static cudaError_t colsum_launch(cudaStream_t st, const void *dy, const void *x, const float *mean, const float *rstd,
                                 long long rows, int cols, float *part, int chunks, float *dw, float *db)
{
  if (rows <= 0 || cols <= 0) return cudaGetLastError();
  const int with_xhat = x != NULL;
  colsum_partial_launch<T>(st, (const T *)dy, (const T *)x, mean, rstd, rows, cols, chunks, part, with_xhat);
  const unsigned gf = (unsigned)((cols + THREADS - 1) / THREADS);
  if (with_xhat) colsum_final<<<gf, THREADS, 0, st>>>(part, chunks, cols, dw);
  if (db) colsum_final<<<gf, THREADS, 0, st>>>(with_xhat ? part + (size_t)chunks * cols : part, chunks, cols, db);
  return cudaGetLastError();
}

extern "C" cudaError_t ptdp_cuk_colsum(cudaStream_t st, ptdp_dtype t, const void *dy, const void *x, const float *mean,
                                       const float *rstd, long long rows, int cols, float *part, int chunks, float *dw,
                                       float *db)
{
  return PTDP_CUK_DISPATCH(t, colsum_launch, st, dy, x, mean, rstd, rows, cols, part, chunks, dw, db);
}
