/* Kernels in the CUDA emulation: a block's threads as fibers, barriers, warp operations, and the
 * checks every kernel access goes through.
 *
 * Execution.  A launch runs its blocks one after another on the host thread that drains the
 * stream.  A block's threads are fibers with their own stacks; the switch between them saves
 * the callee-saved registers and the stack pointer (a few instructions, no system call; x86-64
 * assembly below, ucontext elsewhere).  A fiber runs until it reaches a barrier or returns:
 *     __syncthreads        waits until every thread of the block has arrived;
 *     shuffles, votes,     wait for the lanes of the warp named by the mask;
 *     __syncwarp
 * A thread that returns while others of its block (or warp) wait at a barrier, or a barrier
 * that can never complete, is an error naming the kernel (CUDA leaves both undefined).
 *
 * Checks.  The kernel files are compiled with the compiler's thread-sanitizer instrumentation,
 * which calls __tsan_readN / __tsan_writeN before each load and store; this file implements
 * those hooks (nothing of the sanitizer's own runtime is linked):
 *   global memory   the access must lie inside one live allocation (emu_mem.h), else a fault
 *                   (cudaErrorIllegalAddress) naming the kernel, the source line, the offset
 *                   and the allocation's size;
 *   shared memory   the race detector, racecheck's rule: between two barriers that order them,
 *                   a location written by one thread and read or written by another is a
 *                   hazard (RAW, WAR, WAW), reported with the kernel and both source lines;
 *                   a warp barrier orders the lanes of its warp, __syncthreads the block;
 *   anything else   the fiber's own stack, the launch's parameters and the program's static
 *                   data are allowed; any other address (host heap, another thread's stack)
 *                   is a fault: a host pointer passed to a kernel.
 * Shared memory is the host thread's TLS block (__shared__ is static thread_local, see
 * emu_device.h) plus the launch's dynamic shared buffer. */
#include "emu_device.h"
#include "emu_internal.h"
#include "emu_mem.h"

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <map>
#include <cstdarg>
#include <memory>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <link.h>
#include <string>
#include <sys/mman.h>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#define EMU_ASAN 1
#else
#define EMU_ASAN 0
#endif

emu::Fiber *emu_current = nullptr;

namespace emu {
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
#else
#include <ucontext.h>
#endif

constexpr int MAX_THREADS = 1024;
constexpr size_t STACK_BYTES = EMU_ASAN ? (256u << 10) : (64u << 10);
constexpr size_t STACK_STRIDE = STACK_BYTES + 4096;
uintptr_t stacks_lo;

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
} R;

FiberCtx fibers[MAX_THREADS]; /* static: kernel code reads its Fiber (threadIdx) as program data */
bool in_kernel = false;

void fail_block_v(cudaError_t e, const char *fmt, va_list ap)
{
  char msg[1024];
  vsnprintf(msg, sizeof msg, fmt, ap);
  if (!R.failed)
    fault(e, "kernel %s (launched at %s:%d), block (%u,%u,%u): %s", R.site->kernel, R.site->file,
          R.site->line, R.blk.idx.x, R.blk.idx.y, R.blk.idx.z, msg);
  R.failed = true;
}

/* A misuse inside a block (barriers, races): cudaErrorLaunchFailure. */
void fail_block(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void fail_block(const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  fail_block_v(cudaErrorLaunchFailure, fmt, ap);
  va_end(ap);
}

/* An access to memory the kernel may not touch: cudaErrorIllegalAddress, as a GPU reports it. */
void fail_access(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void fail_access(const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  fail_block_v(cudaErrorIllegalAddress, fmt, ap);
  va_end(ap);
}

/* ------------------------------------------------------------------ source lines */
/* file:line of a code address, through addr2line on our own executable (reports only). */
std::string where(uintptr_t pc)
{
  Dl_info info;
  char buf[512];
  if (!pc || !dladdr((void *)pc, &info) || !info.dli_fname) {
    snprintf(buf, sizeof buf, "pc %#" PRIxPTR, pc);
    return buf;
  }
  uintptr_t rel = pc - 1 - (uintptr_t)info.dli_fbase;
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "addr2line -C -f -i -e '%s' %#" PRIxPTR " 2>/dev/null", info.dli_fname, rel);
  std::string out;
  if (FILE *p = popen(cmd, "r")) {
    char line[512];
    std::string fn;
    if (fgets(line, sizeof line, p)) fn = line;
    if (fgets(line, sizeof line, p)) out = line;
    pclose(p);
    while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
    while (!fn.empty() && fn.back() == '\n') fn.pop_back();
    if (!fn.empty() && fn.size() < 120) out += " (in " + fn + ")";
  }
  if (out.empty() || out[0] == '?') {
    snprintf(buf, sizeof buf, "pc %#" PRIxPTR " in %s", pc, info.dli_fname);
    return buf;
  }
  return out;
}

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

uintptr_t cur_stack; /* the running fiber's stack, for the hooks' fast path */

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

/* ------------------------------------------------------------------ race detector */
struct Shadow {
  uint64_t gen; /* block generation the entry belongs to (older: empty) */
  int16_t wtid, rtid, rtid2; /* rtid2: a reader in another warp than rtid's (rmulti_warp) */
  bool rmulti_warp;
  unsigned w_be, w_we, r_be, r_we;
  uintptr_t wpc, rpc, rpc2;
};

uintptr_t tls_lo, tls_hi;  /* this host thread's TLS block (static __shared__) */
std::vector<Shadow> shadow_tls, shadow_dyn;
bool racecheck = true;
int race_reports;

void find_tls()
{
  dl_iterate_phdr(
      [](struct dl_phdr_info *i, size_t, void *) -> int {
        if (i->dlpi_tls_modid != 1) return 0;
        for (int k = 0; k < i->dlpi_phnum; k++)
          if (i->dlpi_phdr[k].p_type == PT_TLS) {
            size_t al = i->dlpi_phdr[k].p_align ? i->dlpi_phdr[k].p_align : 1;
            size_t sz = (i->dlpi_phdr[k].p_memsz + al - 1) / al * al;
            uintptr_t tp = (uintptr_t)__builtin_thread_pointer();
            tls_hi = tp;
            tls_lo = tp - sz;
          }
        return 1;
      },
      nullptr);
  shadow_tls.assign((tls_hi - tls_lo) / 4 + 1, Shadow{});
}

bool ordered(int tid_prev, unsigned be, unsigned we, int tid_now)
{
  if (tid_prev == tid_now) return true;
  if (R.block_epoch > be) return true;
  int wp = tid_prev / 32, wn = tid_now / 32;
  return wp == wn && R.warps[wn].mem > we;
}

void report_race(const char *kind, uintptr_t addr, const char *region, uintptr_t pc_now, int tid_prev,
                 uintptr_t pc_prev)
{
  FiberCtx *fc = &fibers[emu_current->linear];
  race_reports++;
  if (race_reports > 8) return;
  std::string a = where(pc_now), b = where(pc_prev);
  fail_block("racecheck: %s hazard on %s memory at %#" PRIxPTR ": thread %d at %s, after thread %d at %s with no "
             "barrier between them",
             kind, region, addr, fc->f.linear, a.c_str(), tid_prev, b.c_str());
}

void shared_access(std::vector<Shadow> &sh, uintptr_t lo, uintptr_t a, size_t n, bool write, uintptr_t pc,
                   const char *region)
{
  if (!racecheck || R.failed) return;
  const int t = emu_current->linear;
  const unsigned be = R.block_epoch, we = R.warps[t / 32].mem;
  for (uintptr_t w = (a - lo) / 4; w <= (a + n - 1 - lo) / 4 && w < sh.size(); w++) {
    Shadow &s = sh[w];
    if (s.gen != R.block_gen) s = Shadow{R.block_gen, -1, -1, -1, false, 0, 0, 0, 0, 0, 0, 0};
    if (s.wtid >= 0 && !ordered(s.wtid, s.w_be, s.w_we, t)) {
      report_race(write ? "write-after-write" : "read-after-write", a, region, pc, s.wtid, s.wpc);
      return;
    }
    if (write) {
      bool war = s.rtid >= 0 && (s.rmulti_warp ? s.r_be == be : !ordered(s.rtid, s.r_be, s.r_we, t));
      if (war) {
        bool other = s.rmulti_warp && s.rtid == t;
        report_race("write-after-read", a, region, pc, other ? s.rtid2 : s.rtid, other ? s.rpc2 : s.rpc);
        return;
      }
      s.wtid = (int16_t)t, s.w_be = be, s.w_we = we, s.wpc = pc;
      s.rtid = -1, s.rmulti_warp = false;
    } else if (s.rmulti_warp && s.r_be == be) {
      /* readers in several warps since the last __syncthreads: only a block barrier orders a
       * later write after all of them, whoever reads again meanwhile */
    } else if (s.rtid < 0 || ordered(s.rtid, s.r_be, s.r_we, t)) {
      /* earlier reads are ordered before this one: it stands for them all */
      s.rtid = (int16_t)t, s.r_be = be, s.r_we = we, s.rpc = pc, s.rmulti_warp = false;
    } else if (s.rtid / 32 != t / 32) {
      s.rmulti_warp = true, s.rtid2 = (int16_t)t, s.rpc2 = pc;
    } else if (we > s.r_we) {
      s.r_we = we, s.rpc = pc;
    }
  }
}

/* ------------------------------------------------------------------ access classification */
extern "C" char __executable_start[], _end[];

void bad_access(uintptr_t a, size_t n, bool write, uintptr_t pc, const char *what)
{
  std::string w = where(pc);
  fail_access("%s %zu bytes at %#" PRIxPTR " (%s) at %s", write ? "writes" : "reads", n, a, what, w.c_str());
}

__attribute__((noinline)) void check_slow(uintptr_t a, size_t n, bool write, uintptr_t pc)
{
  if (R.failed) return;
  if (mem.lo && a - mem.lo < mem.len) {
    const Alloc *al = arena_find(a);
    char what[160];
    if (!al) snprintf(what, sizeof what, "device memory never allocated");
    else if (!al->live) snprintf(what, sizeof what, "a freed %zu-byte allocation", al->bytes);
    else
      snprintf(what, sizeof what, "offset %zu of a %zu-byte allocation: out of bounds", (size_t)(a - al->base),
               al->bytes);
    bad_access(a, n, write, pc, what);
    return;
  }
  if (a >= tls_lo && a + n <= tls_hi) return shared_access(shadow_tls, tls_lo, a, n, write, pc, "shared");
  uintptr_t d = (uintptr_t)R.dyn.data();
  if (!R.dyn.empty() && a >= d && a + n <= d + R.dyn.size())
    return shared_access(shadow_dyn, d, a, n, write, pc, "dynamic shared");
  if (!R.dyn.empty() && a >= d && a < d + R.dyn.size() + 4096) {
    bad_access(a, n, write, pc, "past the end of the dynamic shared memory");
    return;
  }
  FiberCtx *fc = &fibers[emu_current->linear];
  if (a >= (uintptr_t)fc->stack && a + n <= (uintptr_t)fc->stack + STACK_BYTES) return;
  uintptr_t p = (uintptr_t)R.params;
  if (a >= p && a + n <= p + R.params_bytes) {
    if (write) bad_access(a, n, write, pc, "the kernel's parameters");
    return;
  }
  if (a >= (uintptr_t)__executable_start && a + n <= (uintptr_t)_end) return; /* constants, __device__ data */
  if (pinned_bytes((void *)a) >= n) return;                                     /* mapped pinned host memory */
  if (a >= stacks_lo && a < stacks_lo + STACK_STRIDE * MAX_THREADS) {
    bad_access(a, n, write, pc, "another thread's local memory");
    return;
  }
  bad_access(a, n, write, pc, "host memory: not device memory");
}

unsigned long hook_calls;

inline void check(void *p, size_t n, bool write, uintptr_t pc)
{
  if (!in_kernel) return;
  hook_calls++;
  uintptr_t a = (uintptr_t)p;
  const Alloc *al;
  if (a - mem.lo < mem.top && (al = arena_find(a)) && al->live && a + n <= al->base + al->bytes) return;
  if (a - cur_stack < STACK_BYTES - n) return; /* the thread's own locals */
  if (a - (uintptr_t)__executable_start < (uintptr_t)(_end - __executable_start) && !write) return; /* threadIdx... */
  if (!write && a - (uintptr_t)R.params + n <= R.params_bytes) return; /* the kernel's arguments */
  if (a - tls_lo < tls_hi - tls_lo && a + n <= tls_hi && !R.failed)  /* static __shared__ */
    return shared_access(shadow_tls, tls_lo, a, n, write, pc, "shared");
  check_slow(a, n, write, pc);
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

void atomic_check(const void *p, size_t bytes, const char *what)
{
  if (!in_kernel) return;
  uintptr_t a = (uintptr_t)p;
  if (device_bytes(p) >= bytes) return;
  if (a >= tls_lo && a + bytes <= tls_hi) return;
  uintptr_t d = (uintptr_t)R.dyn.data();
  if (!R.dyn.empty() && a >= d && a + bytes <= d + R.dyn.size()) return;
  bad_access(a, bytes, true, (uintptr_t)__builtin_return_address(0), "an atomic on memory that is not device or shared");
}

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
  const char *rc = getenv("PTDP_EMU_RACECHECK");
  racecheck = !(rc && !strcmp(rc, "0"));
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
  uintptr_t tp = (uintptr_t)__builtin_thread_pointer();
  if (tls_hi != tp) find_tls(); /* another host thread than last time */
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
  shadow_dyn.assign(shmem / 4 + 1, Shadow{});
  race_reports = 0;
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

/* ------------------------------------------------------------------ the compiler's hooks */
/* Kernel accesses checked so far: 0 after a kernel ran means a build without the hooks
 * (--enable-sanitizers), where the tests of the checks skip. */
extern "C" unsigned long ptdp_emu_hook_calls(void) { return emu::hook_calls; }

#define EMU_HOOKS(n)                                                                                    \
  extern "C" void __tsan_read##n(void *p) { emu::check(p, n, false, (uintptr_t)__builtin_return_address(0)); } \
  extern "C" void __tsan_write##n(void *p) { emu::check(p, n, true, (uintptr_t)__builtin_return_address(0)); } \
  extern "C" void __tsan_unaligned_read##n(void *p) { emu::check(p, n, false, (uintptr_t)__builtin_return_address(0)); } \
  extern "C" void __tsan_unaligned_write##n(void *p) { emu::check(p, n, true, (uintptr_t)__builtin_return_address(0)); }
EMU_HOOKS(1)
EMU_HOOKS(2)
EMU_HOOKS(4)
EMU_HOOKS(8)
EMU_HOOKS(16)
extern "C" void __tsan_read_range(void *p, unsigned long n) { emu::check(p, n, false, (uintptr_t)__builtin_return_address(0)); }
extern "C" void __tsan_write_range(void *p, unsigned long n) { emu::check(p, n, true, (uintptr_t)__builtin_return_address(0)); }
extern "C" void __tsan_init() {}
extern "C" void __tsan_func_entry(void *) {}
extern "C" void __tsan_func_exit() {}
extern "C" void __tsan_vptr_update(void **, void *) {}
extern "C" void __tsan_vptr_read(void **) {}
