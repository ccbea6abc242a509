// Kernels that exercise the CUDA emulation itself (validation/emu/tests/test_emu_simt.c): each
// feature a kernel of ours may use, and each mistake the emulation must catch.  Compiled with
// nvcc these are ordinary CUDA; in `make check` they go through translate.sh like the backend's.
#include <cuda_runtime.h>
#include <stdint.h>

// Block sum by warp shuffles and a shared array, the pattern of cuda_device.h's block_sum;
// out[block] = sum of x over the block's slice.  Also checks the built-in variables.
__global__ void emu_t_block_sum(const float *x, float *out, int n, int *bad)
{
  __shared__ float part[32];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float v = i < n ? x[i] : 0.0f;
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = v;
  __syncthreads();
  if (threadIdx.x == 0) {
    float t = 0.0f;
    for (int w = 0; w < (int)(blockDim.x >> 5); w++) t += part[w];
    out[blockIdx.x] = t;
  }
  if (gridDim.x * blockDim.x < (unsigned)n) atomicAdd(bad, 1);
}

// Votes and shuffles up/down/idx: lane l of each warp writes what the warp computed.
__global__ void emu_t_warp_ops(int *out)
{
  int lane = threadIdx.x & 31;
  unsigned ballot = __ballot_sync(0xffffffffu, lane & 1);
  int any = __any_sync(0xffffffffu, lane == 7), all = __all_sync(0xffffffffu, lane < 32);
  int up = __shfl_up_sync(0xffffffffu, lane, 1), down = __shfl_down_sync(0xffffffffu, lane, 2);
  int idx = __shfl_sync(0xffffffffu, lane * 10, 5);
  int *o = out + 6 * threadIdx.x;
  o[0] = (int)ballot, o[1] = any, o[2] = all, o[3] = up, o[4] = down, o[5] = idx;
}

// Dynamic shared memory: reverse each block's slice through it.
__global__ void emu_t_reverse(const float *x, float *y)
{
  extern __shared__ float buf[];
  int t = threadIdx.x, b = blockIdx.x * blockDim.x;
  buf[t] = x[b + t];
  __syncthreads();
  y[b + t] = buf[blockDim.x - 1 - t];
}

// y[i] = x[i] + 1 for i < n, and (the planted mistake when over > 0) one write past the end.
__global__ void emu_t_inc(const float *x, float *y, int n, int over)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] + 1.0f;
  if (over && i == n - 1) y[n] = 0.0f;
}

// A shared-memory race: every thread writes part[0] and thread 1 reads it with no barrier.
__global__ void emu_t_race(float *out)
{
  __shared__ float part[4];
  if (threadIdx.x == 0) part[0] = 1.0f;
  if (threadIdx.x == 1) out[0] = part[0];
}

// Readers in two warps, then warp 0 reads again after a warp barrier and thread 0 writes: the
// write races with warp 1's read (only __syncthreads would order it).
__global__ void emu_t_race_rereader(float *out)
{
  __shared__ float s;
  if (threadIdx.x == 0) s = 1.0f;
  __syncthreads();
  float v = s;
  __syncwarp();
  if (threadIdx.x < 32) v += s;
  __syncwarp();
  if (threadIdx.x == 0) s = 2.0f;
  out[threadIdx.x] = v;
}

// A shuffle is no memory barrier: lane 0 writes, the warp shuffles, lane 1 reads (a hazard);
// with sync = 1 a __syncwarp orders them (no hazard).
__global__ void emu_t_race_shfl(float *out, int sync)
{
  __shared__ float s[32];
  if (threadIdx.x == 0) s[0] = 3.0f;
  float v = __shfl_sync(0xffffffffu, (float)threadIdx.x, 0);
  if (sync) __syncwarp();
  if (threadIdx.x == 1) out[0] = s[0] + v;
}

// A barrier not every thread reaches: thread 0 returns early.
__global__ void emu_t_diverge(float *out)
{
  if (threadIdx.x == 0) return;
  __syncthreads();
  out[threadIdx.x] = 1.0f;
}

extern "C" {
cudaError_t emu_t_launch_block_sum(cudaStream_t st, const float *x, float *out, int n, int threads, int *bad)
{
  emu_t_block_sum<<<(n + threads - 1) / threads, threads, 0, st>>>(x, out, n, bad);
  return cudaGetLastError();
}
cudaError_t emu_t_launch_warp_ops(cudaStream_t st, int *out, int threads)
{
  emu_t_warp_ops<<<1, threads, 0, st>>>(out);
  return cudaGetLastError();
}
cudaError_t emu_t_launch_reverse(cudaStream_t st, const float *x, float *y, int blocks, int threads)
{
  emu_t_reverse<<<blocks, threads, threads * sizeof(float), st>>>(x, y);
  return cudaGetLastError();
}
cudaError_t emu_t_launch_inc(cudaStream_t st, const float *x, float *y, int n, int over, int threads)
{
  emu_t_inc<<<(n + threads - 1) / threads, threads, 0, st>>>(x, y, n, over);
  return cudaGetLastError();
}
cudaError_t emu_t_launch_race(cudaStream_t st, float *out)
{
  emu_t_race<<<1, 64, 0, st>>>(out);
  return cudaGetLastError();
}
cudaError_t emu_t_launch_race_rereader(cudaStream_t st, float *out)
{
  emu_t_race_rereader<<<1, 64, 0, st>>>(out);
  return cudaGetLastError();
}
cudaError_t emu_t_launch_race_shfl(cudaStream_t st, float *out, int sync)
{
  emu_t_race_shfl<<<1, 32, 0, st>>>(out, sync);
  return cudaGetLastError();
}
cudaError_t emu_t_launch_diverge(cudaStream_t st, float *out)
{
  emu_t_diverge<<<1, 64, 0, st>>>(out);
  return cudaGetLastError();
}
cudaError_t emu_t_launch_config(cudaStream_t st, float *x, int threads, size_t shmem)
{
  emu_t_inc<<<1, threads, shmem, st>>>(x, x, 1, 0);
  return cudaGetLastError();
}
// Dynamic shared memory above 48 KB: refused until the kernel opts in (optin > 0: that many bytes).
cudaError_t emu_t_launch_big_shared(cudaStream_t st, const float *x, float *y, size_t shmem, int optin)
{
  if (optin > 0) {
    cudaError_t e = cudaFuncSetAttribute(emu_t_reverse, cudaFuncAttributeMaxDynamicSharedMemorySize, optin);
    if (e != cudaSuccess) return e;
  }
  emu_t_reverse<<<1, 32, shmem, st>>>(x, y);
  return cudaGetLastError();
}
}
