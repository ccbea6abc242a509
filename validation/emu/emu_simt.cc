/* Kernels in the CUDA emulation: a block's threads as fibers, barriers, warp operations, and the
 * launch (the checks every kernel access goes through are emu_check.cc's).
 *
 * Execution.  A launch runs its blocks one after another on the host thread that drains the
 * stream.  A block's threads are fibers with their own stacks; the switch between them saves
 * the callee-saved registers and the stack pointer (a few instructions, no system call; x86-64
 * assembly below, ucontext elsewhere).  A fiber runs until it reaches a barrier or returns:
 *     __syncthreads        waits until every thread of the block has arrived;
 *     shuffles, votes,     wait for the lanes of the warp named by the mask;
 *     __syncwarp
 * A thread that returns while others of its block (or warp) wait at a barrier, or a barrier
 * that can never complete, is an error naming the kernel (CUDA leaves both undefined). */
#include "emu_simt.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <cstdarg>
#include <memory>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <sys/mman.h>
#include <vector>

#if EMU_ASAN
#include <sanitizer/common_interface_defs.h>
#endif

emu::Fiber *emu_current = nullptr;

namespace emu {

/* emu_simt.h's state */
Run R;
FiberCtx fibers[MAX_THREADS];
bool in_kernel = false;
uintptr_t cur_stack;
uintptr_t stacks_lo;

namespace {

/* ------------------------------------------------------------------ context switch */
#if defined(__x86_64__)
extern "C" void emu_ctx_switch(void **save_sp, void *to_sp);
asm(".text\n"
    ".globl emu_ctx_switch\n"
    ".type emu_ctx_switch,@function\n"
    "emu_ctx_switch:\n"
    "  pushq %rbp\n  pushq %rbx\n  pushq %r12\n  pushq %r13\n  pushq %r14\n  pushq %r15\n"
    "  movq %rsp, (%rdi)\n"
    "  movq %rsi, %rsp\n"
    "  popq %r15\n  popq %r14\n  popq %r13\n  popq %r12\n  popq %rbx\n  popq %rbp\n"
    "  ret\n"
    ".size emu_ctx_switch, .-emu_ctx_switch\n");
#endif

void fail_block_v(cudaError_t e, const char *fmt, va_list ap)
{
  char msg[1024];
  vsnprintf(msg, sizeof msg, fmt, ap);
  if (!R.failed)
    fault(e, "kernel %s (launched at %s:%d), block (%u,%u,%u): %s", R.site->kernel, R.site->file,
          R.site->line, R.blk.idx.x, R.blk.idx.y, R.blk.idx.z, msg);
  R.failed = true;
}

} // namespace

/* A misuse inside a block (barriers, races): cudaErrorLaunchFailure. */
void fail_block(const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  fail_block_v(cudaErrorLaunchFailure, fmt, ap);
  va_end(ap);
}

/* An access to memory the kernel may not touch: cudaErrorIllegalAddress, as a GPU reports it. */
void fail_access(const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  fail_block_v(cudaErrorIllegalAddress, fmt, ap);
  va_end(ap);
}

namespace {

/* ------------------------------------------------------------------ fibers */
void fiber_main();

void switch_to_scheduler(FiberCtx *fc)
{
#if defined(__x86_64__)
#if EMU_ASAN
  void *fake = nullptr;
  __sanitizer_start_switch_fiber(&fake, nullptr, 0);
  emu_ctx_switch(&fc->sp, R.sched_sp);
  __sanitizer_finish_switch_fiber(fake, nullptr, nullptr);
#else
  emu_ctx_switch(&fc->sp, R.sched_sp);
#endif
#else
  swapcontext(&fc->uc, &R.sched_uc);
#endif
}

void switch_to_fiber(FiberCtx *fc)
{
  emu_current = &fc->f;
  cur_stack = (uintptr_t)fc->stack;
#if defined(__x86_64__)
#if EMU_ASAN
  void *fake = nullptr;
  __sanitizer_start_switch_fiber(&fake, fc->stack, STACK_BYTES);
  emu_ctx_switch(&R.sched_sp, fc->sp);
  __sanitizer_finish_switch_fiber(fake, nullptr, nullptr);
#else
  emu_ctx_switch(&R.sched_sp, fc->sp);
#endif
#else
  swapcontext(&R.sched_uc, &fc->uc);
#endif
  emu_current = nullptr;
}

/* A fresh context for fiber fc: its first switch enters fiber_main. */
void fiber_reset(FiberCtx *fc)
{
#if defined(__x86_64__)
  uintptr_t top = ((uintptr_t)fc->stack + STACK_BYTES) & ~(uintptr_t)15;
  void **sp = (void **)top;
  *--sp = nullptr;                   /* fiber_main's return address: never used */
  *--sp = (void *)&fiber_main;       /* emu_ctx_switch's ret goes here */
  for (int i = 0; i < 6; i++) *--sp = nullptr; /* rbp rbx r12 r13 r14 r15 */
  fc->sp = sp;
#else
  getcontext(&fc->uc);
  fc->uc.uc_stack.ss_sp = fc->stack;
  fc->uc.uc_stack.ss_size = STACK_BYTES;
  fc->uc.uc_link = nullptr;
  makecontext(&fc->uc, (void (*)())fiber_main, 0);
#endif
}

void check_exit_at_barrier(FiberCtx *fc)
{
  Warp &w = R.warps[fc->warp];
  if (R.waiting_block > 0)
    fail_block("thread (%u,%u,%u) returned while %d thread(s) of its block wait at __syncthreads", fc->f.tid.x,
               fc->f.tid.y, fc->f.tid.z, R.waiting_block);
  else if (w.waiting & ~(1u << fc->lane))
    fail_block("lane %d of warp %d returned while lanes %#x of its warp wait at a warp barrier (shuffle, vote or "
               "__syncwarp)", fc->lane, fc->warp, w.waiting);
}

void fiber_main()
{
#if EMU_ASAN
  __sanitizer_finish_switch_fiber(nullptr, nullptr, nullptr);
#endif
  FiberCtx *fc = &fibers[emu_current->linear];
  R.body(R.params);
  fc->state = DONE;
  R.live--;
  R.warps[fc->warp].live &= ~(1u << fc->lane);
  check_exit_at_barrier(fc);
  switch_to_scheduler(fc);
  abort(); /* a finished fiber is never resumed */
}

FiberCtx *self()
{
  if (!in_kernel || !emu_current) {
    fault(cudaErrorLaunchFailure, "a device function (barrier, shuffle, vote) was called outside a kernel");
    abort();
  }
  return &fibers[emu_current->linear];
}

void release_block()
{
  for (int i = 0; i < R.nthreads; i++)
    if (fibers[i].state == WAIT_BLOCK) fibers[i].state = RUNNABLE;
  R.waiting_block = 0;
  R.block_epoch++;
}

void release_warp(int wi)
{
  Warp &w = R.warps[wi];
  for (int l = 0; l < 32; l++)
    if (w.waiting & (1u << l)) fibers[wi * 32 + l].state = RUNNABLE;
  w.waiting = 0;
  w.mask = 0;
  w.gen++;
  if (w.syncwarp) w.mem++;
  w.syncwarp = false;
}

/* Wait at the warp barrier with the lanes of mask. */
void warp_barrier(FiberCtx *fc, unsigned mask)
{
  Warp &w = R.warps[fc->warp];
  if (!(mask & (1u << fc->lane))) {
    fail_block("lane %d of warp %d calls a warp operation with a mask (%#x) that leaves it out", fc->lane, fc->warp,
               mask);
    return;
  }
  if (mask & ~w.live & ~(1u << fc->lane)) {
    fail_block("warp %d: mask %#x names lanes that have returned (live %#x)", fc->warp, mask, w.live);
    return;
  }
  if (!w.waiting) w.mask = mask;
  else if (w.mask != mask) {
    fail_block("warp %d: lanes wait at warp barriers with different masks (%#x and %#x)", fc->warp, w.mask, mask);
    return;
  }
  w.waiting |= 1u << fc->lane;
  fc->state = WAIT_WARP;
  if ((w.waiting & w.mask) == w.mask) release_warp(fc->warp);
  switch_to_scheduler(fc);
}

} // namespace

/* ------------------------------------------------------------------ device functions */
void syncthreads()
{
  FiberCtx *fc = self();
  if (R.warps[fc->warp].waiting) {
    fail_block("__syncthreads reached by lane %d of warp %d while lanes %#x of its warp wait at a warp barrier",
               fc->lane, fc->warp, R.warps[fc->warp].waiting);
  }
  if (R.live != R.nthreads) /* CUDA: a barrier in code that not every thread of the block runs */
    fail_block("__syncthreads reached by thread %d after %d thread(s) of the block returned", fc->f.linear,
               R.nthreads - R.live);
  fc->state = WAIT_BLOCK;
  if (++R.waiting_block == R.live) release_block();
  switch_to_scheduler(fc);
}

/* Only __syncwarp orders shared memory among the lanes (CUDA documents memory ordering for it
 * alone; racecheck reports a hazard across a shuffle).  A mixed barrier (some lanes at a
 * shuffle, some at __syncwarp) is refused by warp_barrier's mask check or counts as one. */
void syncwarp(unsigned mask)
{
  FiberCtx *fc = self();
  R.warps[fc->warp].syncwarp = true;
  warp_barrier(fc, mask);
}

void shfl(unsigned mask, const void *in, void *out, size_t bytes, int kind, int arg, int width)
{
  FiberCtx *fc = self();
  Warp &w = R.warps[fc->warp];
  if (bytes > 16 || width < 1 || width > 32 || (width & (width - 1))) {
    fail_block("shuffle of %zu bytes with width %d", bytes, width);
    memcpy(out, in, bytes);
    return;
  }
  unsigned g = w.gen & 1;
  memcpy(w.buf[g][fc->lane], in, bytes);
  warp_barrier(fc, mask);
  int lane = fc->lane, base = lane & ~(width - 1), sub = lane - base, src = lane;
  switch (kind) {
  case 0: src = base + (arg & (width - 1)); break;
  case 1: src = sub - arg >= 0 ? lane - arg : lane; break;
  case 2: src = sub + arg < width ? lane + arg : lane; break;
  default: src = base + ((sub ^ arg) & (width - 1)); break;
  }
  if (!(mask & (1u << src))) src = lane; /* a source outside the mask: undefined in CUDA; ours */
  memcpy(out, w.buf[g][src], bytes);
}

unsigned vote(unsigned mask, int pred, int kind)
{
  FiberCtx *fc = self();
  Warp &w = R.warps[fc->warp];
  unsigned g = w.gen & 1;
  w.vote_buf[g][fc->lane] = pred != 0;
  warp_barrier(fc, mask);
  unsigned ballot = 0;
  for (int l = 0; l < 32; l++)
    if ((mask & (1u << l)) && w.vote_buf[g][l]) ballot |= 1u << l;
  return kind == 0 ? ballot : kind == 1 ? ballot != 0 : ballot == mask;
}

unsigned activemask() { return R.warps[self()->warp].live; }

void *dynamic_shared() { return R.dyn.empty() ? nullptr : R.dyn.data(); }

/* ------------------------------------------------------------------ launch */
namespace {

void stacks_init()
{
  static bool done;
  if (done) return;
  done = true;
  /* each stack above a PROT_NONE page, so an overflow faults instead of corrupting a neighbour */
  size_t len = STACK_STRIDE * MAX_THREADS;
  void *p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    perror("ptdp-emu: mmap of the fiber stacks");
    abort();
  }
  stacks_lo = (uintptr_t)p;
  for (int i = 0; i < MAX_THREADS; i++) {
    char *g = (char *)p + (size_t)i * STACK_STRIDE;
    if (mprotect(g, 4096, PROT_NONE)) perror("ptdp-emu: mprotect of a stack guard page");
    fibers[i].stack = g + 4096;
  }
}

uint64_t block_counter;

/* Run one block to the end (or to its first error). */
void run_block(const uint3 &bidx)
{
  R.blk.idx = bidx;
  R.live = R.nthreads;
  R.waiting_block = 0;
  R.block_epoch = 0;
  R.block_gen = ++block_counter;
  R.fib = fibers;
  int nw = (R.nthreads + 31) / 32;
  for (int wi = 0; wi < nw; wi++) {
    Warp &w = R.warps[wi];
    int lanes = R.nthreads - wi * 32 < 32 ? R.nthreads - wi * 32 : 32;
    w.live = lanes == 32 ? 0xffffffffu : (1u << lanes) - 1;
    w.waiting = w.mask = w.gen = w.mem = 0;
    w.syncwarp = false;
  }
  if (!R.dyn.empty()) memset(R.dyn.data(), 0xff, R.dyn.size()); /* unset shared memory reads as NaN */
  const dim3 &bd = R.blk.dim;
  for (int i = 0; i < R.nthreads; i++) {
    FiberCtx &fc = fibers[i];
    fc.f.tid = uint3{(unsigned)(i % bd.x), (unsigned)((i / bd.x) % bd.y), (unsigned)(i / (bd.x * bd.y))};
    fc.f.linear = i;
    fc.f.blk = &R.blk;
    fc.state = RUNNABLE;
    fc.warp = i / 32;
    fc.lane = i % 32;
    fiber_reset(&fc);
  }
  /* round robin over the runnable fibers until all are done or none can run */
  for (;;) {
    bool ran = false;
    for (int i = 0; i < R.nthreads && !R.failed; i++) {
      if (fibers[i].state != RUNNABLE) continue;
      switch_to_fiber(&fibers[i]);
      ran = true;
    }
    if (R.failed || R.live == 0) return;
    if (!ran) {
      int wb = 0, ww = 0;
      for (int i = 0; i < R.nthreads; i++) wb += fibers[i].state == WAIT_BLOCK, ww += fibers[i].state == WAIT_WARP;
      fail_block("deadlock: %d thread(s) wait at __syncthreads and %d at warp barriers, %d returned: a barrier "
                 "that not every thread reaches",
                 wb, ww, R.nthreads - R.live);
      return;
    }
  }
}

/* PTDP_EMU_STATS=1: launches, threads and host time per kernel, printed at exit (where the
 * emulation's time goes; bench_emu.sh). */
struct Stat {
  long launches;
  double threads, seconds;
};
std::map<std::string, Stat> *stats;

void print_stats()
{
  std::vector<std::pair<std::string, Stat>> v(stats->begin(), stats->end());
  std::sort(v.begin(), v.end(), [](const auto &a, const auto &b) { return a.second.seconds > b.second.seconds; });
  fprintf(stderr, "ptdp-emu: %-28s %9s %14s %10s\n", "kernel", "launches", "threads", "seconds");
  for (auto &k : v)
    fprintf(stderr, "ptdp-emu: %-28s %9ld %14.0f %10.3f\n", k.first.c_str(), k.second.launches, k.second.threads,
            k.second.seconds);
}

cudaError_t run_kernel_timed(const Site *site, dim3 grid, dim3 block, std::vector<unsigned char> &params,
                             void (*body)(const void *), size_t shmem);

cudaError_t run_kernel(const Site *site, dim3 grid, dim3 block, std::vector<unsigned char> &params,
                       void (*body)(const void *), size_t shmem)
{
  static int want = -1;
  if (want < 0) {
    const char *e = getenv("PTDP_EMU_STATS");
    want = e && *e && strcmp(e, "0");
    if (want) {
      stats = new std::map<std::string, Stat>;
      atexit(print_stats);
    }
  }
  if (!want) return run_kernel_timed(site, grid, block, params, body, shmem);
  auto t0 = std::chrono::steady_clock::now();
  cudaError_t e = run_kernel_timed(site, grid, block, params, body, shmem);
  Stat &st = (*stats)[site->kernel];
  st.launches++;
  st.threads += (double)grid.x * grid.y * grid.z * block.x * block.y * block.z;
  st.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return e;
}

cudaError_t run_kernel_timed(const Site *site, dim3 grid, dim3 block, std::vector<unsigned char> &params,
                             void (*body)(const void *), size_t shmem)
{
  stacks_init();
  R.site = site;
  R.blk.dim = block;
  R.blk.grid = grid;
  R.nthreads = (int)(block.x * block.y * block.z);
  R.params = params.data();
  R.params_bytes = params.size();
  R.body = body;
  R.failed = false;
  R.dyn.assign(shmem, 0);
  R.blk.dyn_shared = R.dyn.empty() ? nullptr : R.dyn.data();
  check_launch(shmem);
  in_kernel = true;
  for (unsigned z = 0; z < grid.z && !R.failed; z++)
    for (unsigned y = 0; y < grid.y && !R.failed; y++)
      for (unsigned x = 0; x < grid.x && !R.failed; x++) run_block(uint3{x, y, z});
  in_kernel = false;
  return R.failed ? sticky() : cudaSuccess;
}

} // namespace

namespace {
std::map<const void *, size_t> dyn_optin; /* cudaFuncSetAttribute(MaxDynamicSharedMemorySize) */
}

cudaError_t launch(const Site &site, const void *kernel, dim3 grid, dim3 block, size_t shmem, cudaStream_t st,
                   void (*run)(const void *params), const void *params, size_t size)
{
  const cudaDeviceProp &p = props();
  unsigned long long threads = (unsigned long long)block.x * block.y * block.z;
  if (!threads || !grid.x || !grid.y || !grid.z || threads > (unsigned)p.maxThreadsPerBlock ||
      block.x > (unsigned)p.maxThreadsDim[0] || block.y > (unsigned)p.maxThreadsDim[1] ||
      block.z > (unsigned)p.maxThreadsDim[2] || grid.x > (unsigned)p.maxGridSize[0] ||
      grid.y > (unsigned)p.maxGridSize[1] || grid.z > (unsigned)p.maxGridSize[2]) {
    fprintf(stderr, "ptdp-emu: launch of %s at %s:%d: invalid configuration grid (%u,%u,%u) block (%u,%u,%u)\n",
            site.kernel, site.file, site.line, grid.x, grid.y, grid.z, block.x, block.y, block.z);
    return api_error(cudaErrorInvalidConfiguration);
  }
  if (shmem > p.sharedMemPerBlockOptin) {
    fprintf(stderr, "ptdp-emu: launch of %s at %s:%d: %zu bytes of dynamic shared memory, more than the %zu a block "
            "may have\n", site.kernel, site.file, site.line, shmem, (size_t)p.sharedMemPerBlockOptin);
    return api_error(cudaErrorInvalidValue);
  }
  auto optin = dyn_optin.find(kernel);
  size_t allowed = optin != dyn_optin.end() ? optin->second : p.sharedMemPerBlock;
  if (shmem > allowed) {
    fprintf(stderr, "ptdp-emu: launch of %s at %s:%d: %zu bytes of dynamic shared memory, more than %zu: above "
            "48 KB a kernel needs cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, n) "
            "first\n", site.kernel, site.file, site.line, shmem, allowed);
    return api_error(cudaErrorInvalidValue);
  }
  auto pk = std::make_shared<std::vector<unsigned char>>((const unsigned char *)params,
                                                          (const unsigned char *)params + size);
  Site s = site;
  return enqueue(st, site.kernel, [s, grid, block, shmem, run, pk]() {
    return run_kernel(&s, grid, block, *pk, run, shmem);
  });
}

} // namespace emu

extern "C" cudaError_t cudaFuncSetAttribute(const void *func, cudaFuncAttribute attr, int value)
{
  std::lock_guard<std::recursive_mutex> g(emu::lock());
  if (!func) return emu::api_error(cudaErrorInvalidDeviceFunction);
  if (attr != cudaFuncAttributeMaxDynamicSharedMemorySize || value < 0 ||
      (size_t)value > emu::props().sharedMemPerBlockOptin)
    return emu::api_error(cudaErrorInvalidValue);
  emu::dyn_optin[func] = (size_t)value;
  return cudaSuccess;
}
