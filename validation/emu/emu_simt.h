/* Private to the kernels of the CUDA emulation (emu_simt.cc: fibers, blocks, barriers, the
 * launch) and the checks of their accesses (emu_check.cc: the compiler's hooks, the race
 * detector): the block being run and its fibers, which the hooks read on every load and store,
 * and the errors of a block. */
#ifndef PTDP_EMU_SIMT_H
#define PTDP_EMU_SIMT_H

#include "emu_device.h"
#include "emu_internal.h"

#include <cstddef>
#include <cstdint>
#include <vector>

#if !defined(__x86_64__)
#include <ucontext.h>
#endif

#if defined(__SANITIZE_ADDRESS__)
#define EMU_ASAN 1
#else
#define EMU_ASAN 0
#endif

namespace emu {

constexpr int MAX_THREADS = 1024;
constexpr size_t STACK_BYTES = EMU_ASAN ? (256u << 10) : (64u << 10);
constexpr size_t STACK_STRIDE = STACK_BYTES + 4096;
extern uintptr_t stacks_lo; /* the fibers' stacks, STACK_STRIDE apart (emu_simt.cc) */

enum State { RUNNABLE, WAIT_BLOCK, WAIT_WARP, DONE };

struct FiberCtx {
  Fiber f;
  void *sp;
  char *stack;
  State state;
  int warp, lane;
  unsigned shfl_gen; /* the warp generation this lane's pending exchange uses */
#if !defined(__x86_64__)
  ucontext_t uc;
#endif
};

struct Warp {
  unsigned live;    /* lanes not yet returned */
  unsigned waiting; /* lanes at the warp barrier */
  unsigned mask;    /* the barrier's participants (first arrival's mask, live lanes only) */
  unsigned gen;     /* completed warp barriers (shuffles, votes, __syncwarp): the exchange buffers */
  unsigned mem;     /* completed __syncwarp barriers: what orders shared memory in the warp */
  bool syncwarp;    /* the barrier now gathering is a __syncwarp */
  unsigned char buf[2][32][16];
  unsigned vote_buf[2][32];
};

/* The block being run, and everything the hooks need about the launch. */
struct Run {
  const Site *site;
  Block blk;
  int nthreads, live, waiting_block;
  unsigned block_epoch;
  FiberCtx *fib;
  Warp warps[MAX_THREADS / 32];
  void *sched_sp;
#if !defined(__x86_64__)
  ucontext_t sched_uc;
#endif
  const void *params;
  size_t params_bytes;
  std::vector<unsigned char> dyn;
  bool failed;
  uint64_t block_gen;
  void (*body)(const void *);
};
extern Run R;

extern FiberCtx fibers[MAX_THREADS]; /* static: kernel code reads its Fiber (threadIdx) as program data */
extern bool in_kernel;
extern uintptr_t cur_stack; /* the running fiber's stack, for the hooks' fast path */

/* A misuse inside a block (barriers, races): cudaErrorLaunchFailure. */
void fail_block(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* An access to memory the kernel may not touch: cudaErrorIllegalAddress, as a GPU reports it. */
void fail_access(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Ready the checks for a launch whose dynamic shared memory (R.dyn, shmem bytes) is in place
 * (emu_check.cc). */
void check_launch(size_t shmem);

} // namespace emu

#endif
