/* The checks every kernel access goes through in the CUDA emulation (the kernels themselves,
 * their fibers and barriers, are emu_simt.cc's).
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
#include "emu_simt.h"
#include "emu_mem.h"

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <link.h>
#include <string>
#include <vector>

namespace emu {
namespace {

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

/* Ready the checks for a launch whose dynamic shared memory (R.dyn, shmem bytes) is in place:
 * PTDP_EMU_RACECHECK (read once), this host thread's TLS block, the dynamic shared memory's
 * shadow, the count of race reports. */
void check_launch(size_t shmem)
{
  static bool done;
  if (!done) {
    done = true;
    const char *rc = getenv("PTDP_EMU_RACECHECK");
    racecheck = !(rc && !strcmp(rc, "0"));
  }
  uintptr_t tp = (uintptr_t)__builtin_thread_pointer();
  if (tls_hi != tp) find_tls(); /* another host thread than last time */
  shadow_dyn.assign(shmem / 4 + 1, Shadow{});
  race_reports = 0;
}

void atomic_check(const void *p, size_t bytes, const char *what)
{
  if (!in_kernel) return;
  uintptr_t a = (uintptr_t)p;
  if (device_bytes(p) >= bytes) return;
  if (a >= tls_lo && a + bytes <= tls_hi) return;
  uintptr_t d = (uintptr_t)R.dyn.data();
  if (!R.dyn.empty() && a >= d && a + bytes <= d + R.dyn.size()) return;
  bad_access(a, bytes, true, (uintptr_t)__builtin_return_address(0),
             "an atomic on memory that is not device or shared");
}

} // namespace emu

/* ------------------------------------------------------------------ the compiler's hooks */
/* Kernel accesses checked so far: 0 after a kernel ran means a build without the hooks
 * (--enable-sanitizers), where the tests of the checks skip. */
extern "C" unsigned long ptdp_emu_hook_calls(void) { return emu::hook_calls; }

/* the kernel code's address of the access: where reports point */
#define EMU_PC ((uintptr_t)__builtin_return_address(0))
#define EMU_HOOKS(n)                                                                                   \
  extern "C" void __tsan_read##n(void *p) { emu::check(p, n, false, EMU_PC); }                         \
  extern "C" void __tsan_write##n(void *p) { emu::check(p, n, true, EMU_PC); }                         \
  extern "C" void __tsan_unaligned_read##n(void *p) { emu::check(p, n, false, EMU_PC); }               \
  extern "C" void __tsan_unaligned_write##n(void *p) { emu::check(p, n, true, EMU_PC); }
EMU_HOOKS(1)
EMU_HOOKS(2)
EMU_HOOKS(4)
EMU_HOOKS(8)
EMU_HOOKS(16)
extern "C" void __tsan_read_range(void *p, unsigned long n) { emu::check(p, n, false, EMU_PC); }
extern "C" void __tsan_write_range(void *p, unsigned long n) { emu::check(p, n, true, EMU_PC); }
extern "C" void __tsan_init() {}
extern "C" void __tsan_func_entry(void *) {}
extern "C" void __tsan_func_exit() {}
extern "C" void __tsan_vptr_update(void **, void *) {}
extern "C" void __tsan_vptr_read(void **) {}
