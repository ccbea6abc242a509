/* Emulated device memory (emu_mem.h says how it is laid out and checked) and its cudart calls:
 * cudaMalloc, cudaFree, cudaMallocAsync, cudaFreeAsync, cudaMallocHost, cudaFreeHost,
 * cudaMemGetInfo.  cudaMalloc and cudaFree synchronize the device, as CUDA's programming guide
 * says they may ("causes the GPU to synchronize across all executing CUDA streams"): they wait
 * for all queued work, collectives included, so a program that allocates while a collective or
 * message waits for a peer that waits for it hangs here as it would on a GPU.  The stream-ordered
 * pair waits for nothing: cudaMallocAsync's memory is reserved at once (a fresh block: nothing
 * queued can touch it), cudaFreeAsync's is released when its stream reaches it.  The
 * reservation is closed to the host (PROT_NONE) except while queued work runs (device_open/
 * device_close); a host access to it faults, and the SIGSEGV handler says so before the process
 * dies of the signal. */
#include "emu_runtime.h"

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <sys/mman.h>
#include <unistd.h>

namespace emu {

MemMap mem;
size_t in_use;
long n_opens;

namespace {

std::map<uintptr_t, size_t> pinned; /* cudaMallocHost blocks */
int open_depth;

constexpr size_t HUGE_STEP = (size_t)2 << 20;
size_t round_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

void segv_handler(int sig, siginfo_t *si, void *uc);
struct sigaction old_segv;

void print_runtime_stats()
{
  fprintf(stderr, "ptdp-emu: %zu allocations (%zu MB of address space used, %zu MB live), %zu streams, %ld drains, "
          "%ld openings of device memory\n", mem.n_allocs, mem.top >> 20, in_use >> 20, streams.size(), n_drains,
          n_opens);
}

/* A host access to device memory: say so, then die of the signal as before. */
void segv_handler(int sig, siginfo_t *si, void *uc)
{
  uintptr_t a = (uintptr_t)si->si_addr;
  if (mem.lo && a - mem.lo < mem.len) {
    char msg[256];
    const Alloc *al = arena_find(a);
    int n = snprintf(msg, sizeof msg,
                     "ptdp-emu: host code touched emulated device memory at %#lx (%s%zu-byte allocation): only "
                     "CUDA calls may read or write device memory\n",
                     (unsigned long)a, al ? (al->live ? "a live " : "a freed ") : "no ", al ? al->bytes : (size_t)0);
    if (write(2, msg, (size_t)n) < 0) {
    }
  }
  sigaction(SIGSEGV, &old_segv, nullptr);
  raise(sig);
}

void protect(int prot)
{
  size_t n = round_up(mem.top, HUGE_STEP);
  if (n && mprotect((void *)mem.lo, n, prot)) {
    perror("ptdp-emu: mprotect of device memory");
    abort();
  }
}

cudaError_t arena_alloc(void **p, size_t bytes)
{
  size_t span = round_up(bytes, (size_t)1 << PAGE_SHIFT);
  if (mem.top + span > mem.len) return cudaErrorMemoryAllocation;
  if (mem.n_allocs == mem.cap_allocs) {
    size_t cap = mem.cap_allocs ? 2 * mem.cap_allocs : 1024;
    Alloc *a = (Alloc *)realloc(mem.allocs, cap * sizeof(Alloc));
    if (!a) return cudaErrorMemoryAllocation;
    mem.allocs = a, mem.cap_allocs = cap;
  }
  uintptr_t base = mem.lo + mem.top;
  mem.allocs[mem.n_allocs] = Alloc{base, bytes, true};
  uint32_t id = (uint32_t)++mem.n_allocs;
  for (size_t pg = mem.top >> PAGE_SHIFT; pg < (mem.top + span) >> PAGE_SHIFT; pg++) mem.page[pg] = id;
  mem.top += span;
  device_open();
  memset((void *)base, 0xff, bytes); /* the NaN pattern: an output nobody writes shows */
  device_close();
  *p = (void *)base;
  return cudaSuccess;
}

cudaError_t arena_free(void *p)
{
  const Alloc *c = arena_find((uintptr_t)p);
  if (!c || !c->live || c->base != (uintptr_t)p) return cudaErrorInvalidValue;
  Alloc *a = const_cast<Alloc *>(c);
  a->live = false;
  size_t span = round_up(a->bytes, (size_t)1 << PAGE_SHIFT);
  madvise((void *)a->base, span, MADV_DONTNEED); /* memory back; the addresses are never reused */
  return cudaSuccess;
}

std::map<uintptr_t, size_t> malloc_allocs; /* ASan builds */

} // namespace

void arena_init()
{
  if (mem.lo || mem.use_malloc) return;
  const char *st = getenv("PTDP_EMU_STATS");
  if (st && *st && strcmp(st, "0")) atexit(print_runtime_stats);
#if defined(__SANITIZE_ADDRESS__)
  mem.use_malloc = true;
  return;
#endif
  for (size_t gb : {64, 16, 4}) {
    size_t len = gb << 30;
    void *p = mmap(nullptr, len + HUGE_STEP, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) continue;
    size_t pages = len >> PAGE_SHIFT;
    void *pt = mmap(nullptr, pages * sizeof(uint32_t), PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (pt == MAP_FAILED) {
      munmap(p, len + HUGE_STEP);
      continue;
    }
    mem.lo = round_up((uintptr_t)p, HUGE_STEP);
    mem.len = len;
    mem.page = (uint32_t *)pt;
    madvise((void *)mem.lo, len, MADV_HUGEPAGE); /* fewer page-table entries to flip at open/close */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = segv_handler;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGSEGV, &sa, &old_segv);
    return;
  }
  fprintf(stderr, "ptdp-emu: cannot reserve address space for device memory\n");
  abort();
}

size_t device_bytes(const void *p)
{
  uintptr_t a = (uintptr_t)p;
  if (mem.use_malloc) {
    auto it = malloc_allocs.upper_bound(a);
    if (it == malloc_allocs.begin()) return 0;
    --it;
    return a < it->first + it->second ? it->first + it->second - a : 0;
  }
  const Alloc *al = arena_find(a);
  return al && al->live && a < al->base + al->bytes ? al->base + al->bytes - a : 0;
}

size_t pinned_bytes(const void *p)
{
  uintptr_t a = (uintptr_t)p;
  auto it = pinned.upper_bound(a);
  if (it == pinned.begin()) return 0;
  --it;
  return a < it->first + it->second ? it->first + it->second - a : 0;
}

void device_open()
{
  if (open_depth++ == 0 && mem.lo) protect(PROT_READ | PROT_WRITE), n_opens++;
}

void device_close()
{
  if (--open_depth == 0 && mem.lo) protect(PROT_NONE);
}

} // namespace emu

using namespace emu;
#define LOCK std::lock_guard<std::recursive_mutex> emu_g_(emu::lock())

extern "C" {

namespace {

/* A block of device memory, poisoned (0xff bytes) so that a read before a write shows. */
cudaError_t reserve(void **p, size_t bytes)
{
  if (!p) return api_error(cudaErrorInvalidValue);
  *p = nullptr;
  if (sticky_error) return sticky_error;
  arena_init();
  if (!bytes) return cudaSuccess;
  cudaError_t e;
  if (mem.use_malloc) {
    void *q = nullptr;
    e = posix_memalign(&q, 256, bytes) ? cudaErrorMemoryAllocation : cudaSuccess;
    if (!e) {
      memset(q, 0xff, bytes);
      malloc_allocs[(uintptr_t)q] = bytes;
      *p = q;
    }
  } else {
    e = arena_alloc(p, bytes);
  }
  if (e) return api_error(e);
  in_use += bytes;
  return cudaSuccess;
}

/* Whether p starts a live device allocation. */
bool live_block(void *p)
{
  if (mem.use_malloc) return malloc_allocs.count((uintptr_t)p) != 0;
  const Alloc *al = mem.lo ? arena_find((uintptr_t)p) : nullptr;
  return al && al->live && al->base == (uintptr_t)p;
}

cudaError_t release(void *p, const char *fn)
{
  size_t bytes = device_bytes(p);
  if (mem.use_malloc) {
    auto it = malloc_allocs.find((uintptr_t)p);
    if (it == malloc_allocs.end()) return api_error(cudaErrorInvalidValue);
    malloc_allocs.erase(it);
    free(p);
  } else if (arena_free(p) != cudaSuccess) {
    fprintf(stderr, "ptdp-emu: %s(%p): not the start of a live device allocation\n", fn, p);
    return api_error(cudaErrorInvalidValue);
  }
  in_use -= bytes;
  return cudaSuccess;
}

} // namespace

/* cudaMalloc waits for the device's queued work first, as cudaFree does. */
cudaError_t cudaMalloc(void **p, size_t bytes)
{
  LOCK;
  if (p && bytes && !sticky_error) {
    cudaError_t e = drain([] { return !any_queued(); }, true);
    if (e) return e;
  }
  return reserve(p, bytes);
}

cudaError_t cudaMallocAsync(void **p, size_t bytes, cudaStream_t s)
{
  LOCK;
  if (!valid_stream(s)) return api_error(cudaErrorInvalidResourceHandle);
  return reserve(p, bytes);
}

/* cudaFree waits for the device's queued work first (CUDA's documented behaviour). */
cudaError_t cudaFree(void *p)
{
  LOCK;
  if (!p) return cudaSuccess;
  cudaError_t e = drain([] { return !any_queued(); }, true);
  cudaError_t r = release(p, "cudaFree");
  return r ? r : e;
}

cudaError_t cudaFreeAsync(void *p, cudaStream_t s)
{
  LOCK;
  if (!p) return cudaSuccess;
  if (!valid_stream(s)) return api_error(cudaErrorInvalidResourceHandle);
  if (!live_block(p)) {
    fprintf(stderr, "ptdp-emu: cudaFreeAsync(%p): not the start of a live device allocation\n", p);
    return api_error(cudaErrorInvalidValue);
  }
  return enqueue(s, "cudaFreeAsync", [p] { return release(p, "cudaFreeAsync"); });
}

cudaError_t cudaMallocHost(void **p, size_t bytes)
{
  LOCK;
  if (!p) return api_error(cudaErrorInvalidValue);
  *p = nullptr;
  if (!bytes) return cudaSuccess;
  void *q = nullptr;
  if (posix_memalign(&q, 4096, bytes)) return api_error(cudaErrorMemoryAllocation);
  memset(q, 0xff, bytes);
  pinned[(uintptr_t)q] = bytes;
  *p = q;
  return cudaSuccess;
}

cudaError_t cudaHostAlloc(void **p, size_t bytes, unsigned int flags) { return cudaMallocHost(p, bytes); }

cudaError_t cudaFreeHost(void *p)
{
  LOCK;
  if (!p) return cudaSuccess;
  auto it = pinned.find((uintptr_t)p);
  if (it == pinned.end()) return api_error(cudaErrorInvalidValue);
  cudaError_t e = drain([] { return !any_queued(); }, true);
  pinned.erase(it);
  free(p);
  return e;
}

cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total_bytes)
{
  LOCK;
  size_t total = props().totalGlobalMem;
  if (free_bytes) *free_bytes = total > in_use ? total - in_use : 0;
  if (total_bytes) *total_bytes = total;
  return sticky_error;
}

} /* extern "C" */
