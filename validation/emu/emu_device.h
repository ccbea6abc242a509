/* The device side of the CUDA emulation: what a kernel source (.cu, translated by translate.sh)
 * sees.  Included first in every translated kernel file.
 *
 * A block's threads are fibers on one host thread (emu_simt.cc); a kernel's code runs as it is
 * written, with these meanings:
 *   __global__ __device__ __host__    nothing (host functions)
 *   __shared__                        static thread_local: one copy per host thread, and blocks
 *                                     run one at a time on a host thread, so one copy per block;
 *                                     the race detector knows the range (the TLS block)
 *   threadIdx blockIdx blockDim gridDim   the running fiber's
 *   __syncthreads __syncwarp, shuffles, votes   barriers of the block or warp (emu_simt.cc)
 *   atomics                           plain read-modify-write (one host thread runs the block)
 * Every load and store the kernel code makes passes through the compiler's thread-sanitizer
 * hooks, which emu_check.cc implements: the bounds check of global memory and the race detector
 * of shared memory. */
#ifndef PTDP_EMU_DEVICE_H
#define PTDP_EMU_DEVICE_H

#include <cuda_runtime.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <math.h>
#include <tuple>
#include <type_traits>
#include <utility>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__ static thread_local
#define __constant__ static
#define __managed__
#define __restrict__ __restrict
#define __launch_bounds__(...)
#define __align__(n) alignas(n)

namespace emu {

/* The fiber running kernel code now (a process global: kernels run only under emu::lock). */
struct Fiber {
  uint3 tid;         /* threadIdx */
  int linear;        /* its linear index in the block */
  struct Block *blk; /* the block it belongs to */
};
struct Block {
  uint3 idx; /* blockIdx */
  dim3 dim;  /* blockDim */
  dim3 grid; /* gridDim */
  void *dyn_shared;
};

/* One launch site: the kernel's name and where it is launched (for messages). */
struct Site {
  const char *kernel, *file;
  int line;
};

/* Queue a launch: run(params) executes one thread's body; params (size bytes, trivially
 * copyable, CUDA's rule for kernel arguments) are copied now. */
cudaError_t launch(const Site &site, const void *kernel, dim3 grid, dim3 block, size_t shmem, cudaStream_t st,
                   void (*run)(const void *params), const void *params, size_t size);

void syncthreads();
void syncwarp(unsigned mask);
/* Warp exchange: each lane in mask offers `bytes` at *in and receives lane src's offer in *out
 * (src outside the mask or width: its own).  kind: 0 idx, 1 up, 2 down, 3 xor. */
void shfl(unsigned mask, const void *in, void *out, size_t bytes, int kind, int arg, int width);
unsigned vote(unsigned mask, int pred, int kind); /* kind: 0 ballot, 1 any, 2 all */
unsigned activemask();
void *dynamic_shared();
/* Atomics: check the address (device or shared memory) and apply op; return the old value. */
void atomic_check(const void *p, size_t bytes, const char *what);

} // namespace emu

extern emu::Fiber *emu_current;

#define threadIdx (emu_current->tid)
#define blockIdx (emu_current->blk->idx)
#define blockDim (emu_current->blk->dim)
#define gridDim (emu_current->blk->grid)
#define warpSize 32

static inline void __syncthreads() { emu::syncthreads(); }
static inline void __syncwarp(unsigned mask = 0xffffffffu) { emu::syncwarp(mask); }
static inline void __threadfence() {}
static inline void __threadfence_block() {}
static inline unsigned __activemask() { return emu::activemask(); }
static inline unsigned __ballot_sync(unsigned m, int p) { return emu::vote(m, p, 0); }
static inline int __any_sync(unsigned m, int p) { return (int)emu::vote(m, p, 1); }
static inline int __all_sync(unsigned m, int p) { return (int)emu::vote(m, p, 2); }
static inline void *emu_dynamic_shared() { return emu::dynamic_shared(); }

/* not instrumented: its locals are the emulation's, not the kernel's (and it is hot) */
template <typename T>
__attribute__((no_sanitize_thread)) static inline T emu_shfl(unsigned m, T v, int kind, int arg, int width)
{
  static_assert(std::is_trivially_copyable<T>::value, "shuffle of a non-trivial type");
  T out;
  emu::shfl(m, &v, &out, sizeof(T), kind, arg, width);
  return out;
}
template <typename T> static inline T __shfl_sync(unsigned m, T v, int src, int w = 32)
{
  return emu_shfl(m, v, 0, src, w);
}
template <typename T> static inline T __shfl_up_sync(unsigned m, T v, unsigned d, int w = 32)
{
  return emu_shfl(m, v, 1, (int)d, w);
}
template <typename T> static inline T __shfl_down_sync(unsigned m, T v, unsigned d, int w = 32)
{
  return emu_shfl(m, v, 2, (int)d, w);
}
template <typename T> static inline T __shfl_xor_sync(unsigned m, T v, int lm, int w = 32)
{
  return emu_shfl(m, v, 3, lm, w);
}

/* Atomics: the block's threads are fibers of one host thread and switch only at barriers, so a
 * read-modify-write is atomic as written; the check names a bad address. */
template <typename T, typename F> static inline T emu_atomic(T *p, F f)
{
  emu::atomic_check(p, sizeof(T), "atomic");
  T old;
  std::memcpy(&old, p, sizeof(T));
  T nv = f(old);
  std::memcpy(p, &nv, sizeof(T));
  return old;
}
template <typename T> static inline T atomicAdd(T *p, T v) { return emu_atomic(p, [v](T o) { return (T)(o + v); }); }
template <typename T> static inline T atomicSub(T *p, T v) { return emu_atomic(p, [v](T o) { return (T)(o - v); }); }
template <typename T> static inline T atomicMax(T *p, T v) { return emu_atomic(p, [v](T o) { return o > v ? o : v; }); }
template <typename T> static inline T atomicMin(T *p, T v) { return emu_atomic(p, [v](T o) { return o < v ? o : v; }); }
template <typename T> static inline T atomicExch(T *p, T v) { return emu_atomic(p, [v](T) { return v; }); }
template <typename T> static inline T atomicCAS(T *p, T cmp, T v)
{
  return emu_atomic(p, [cmp, v](T o) { return o == cmp ? v : o; });
}

/* Intrinsics with their documented meaning (the fast-math ones at full precision here: the
 * hardware's approximations are one of the things only a GPU shows). */
#define __expf(x) expf(x)
#define __logf(x) logf(x)
static inline float __fdividef(float a, float b) { return a / b; }
static inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
static inline double rsqrt(double x) { return 1.0 / sqrt(x); }
static inline float __fmaf_rn(float a, float b, float c) { return fmaf(a, b, c); }
/* one rounding each, never contracted (the emulation is built without FMA contraction; x86-64's
 * baseline has no FMA) */
static inline float __fadd_rn(float a, float b) { return a + b; }
static inline float __fmul_rn(float a, float b) { return a * b; }
static inline float __saturatef(float x) { return x < 0.0f ? 0.0f : x > 1.0f ? 1.0f : x; }
template <typename T> static inline T __ldg(const T *p) { return *p; }

/* kernel<<<grid, block, shmem, stream>>>(args) becomes PTDP_EMU_LAUNCH(kernel, grid, block,
 * shmem, stream)(args): the arguments are converted to the kernel's parameter types (as CUDA
 * does), packed, and queued. */
template <typename F> struct EmuLaunch;
template <typename... P> struct EmuLaunch<void (*)(P...)> {
  using Fn = void (*)(P...);
  struct Pack {
    Fn fn;
    std::tuple<typename std::decay<P>::type...> args;
  };
  emu::Site site;
  Fn fn;
  dim3 grid, block;
  size_t shmem;
  cudaStream_t st;
  static void run(const void *p)
  {
    const Pack *k = static_cast<const Pack *>(p);
    std::apply(k->fn, k->args);
  }
  /* parameters by value, so each argument converts at the call site as in a CUDA launch (a
   * NULL or 0 becomes the null pointer) */
  void operator()(typename std::decay<P>::type... a) const
  {
    Pack k{fn, std::tuple<typename std::decay<P>::type...>(a...)};
    emu::launch(site, (const void *)fn, grid, block, shmem, st, &EmuLaunch::run, &k, sizeof k);
  }
};
template <typename... P>
static inline EmuLaunch<void (*)(P...)> emu_make_launch(const char *name, const char *file, int line, void (*fn)(P...),
                                                        dim3 g, dim3 b, size_t shmem = 0, cudaStream_t st = 0)
{
  return EmuLaunch<void (*)(P...)>{{name, file, line}, fn, g, b, shmem, st};
}
#define PTDP_EMU_LAUNCH(k, ...) emu_make_launch(#k, __FILE__, __LINE__, k, __VA_ARGS__)

#endif
