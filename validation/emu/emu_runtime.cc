/* The CUDA emulation's runtime: device memory, streams, events and the cudart API of
 * include/cuda_runtime.h (see emu_internal.h for the model of execution, emu_mem.h for memory).
 *
 * Streams.  Each stream is a queue of operations (kernels, copies, library calls, event records
 * and waits, collectives).  Nothing runs when it is queued.  At a point where the host needs
 * results (a stream or device synchronize, an event query or synchronize, a blocking copy)
 * the scheduler runs queued work until that need is met and then everything else that can
 * run, always choosing among the streams whose head may run the one enqueued most recently:
 * an operation whose dependency on another stream was not expressed (an event wait forgotten)
 * then runs before its producer, and the test that uses its result fails.  An event wait may
 * run once the event's record enqueued before the wait has run.  Collectives (emu_nccl.cc) are
 * started when they reach the head and keep their stream busy until their peers have joined.
 *
 * Errors follow CUDA: a bad argument is returned (and by cudaGetLastError once); a fault while
 * queued work runs (a kernel's out-of-bounds access, a race, a library call's bad operand) is
 * printed when it happens and is sticky: every later call returns it and queued work is
 * dropped, as after a fault on a GPU. */
#include "emu_internal.h"
#include "emu_mem.h"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <sys/mman.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace emu {

MemMap mem;

namespace {

cudaError_t last_error = cudaSuccess, sticky_error = cudaSuccess;
int current_device = 0;

struct Op {
  uint64_t seq;
  std::string what;
  std::function<cudaError_t()> fn;            /* plain: runs to completion */
  std::function<cudaError_t()> start;          /* async: started, then polled */
  std::function<bool(cudaError_t *)> poll;
  bool started = false;
  CUevent_st *wait_ev = nullptr;               /* an event wait: runnable once the record ran */
  uint64_t wait_gen = 0;
};

} // namespace
} // namespace emu

struct CUstream_st {
  std::deque<emu::Op> q;
  unsigned flags = 0;
  int priority = 0;
  bool live = true;
};

struct CUevent_st {
  uint64_t rec_gen = 0, done_gen = 0; /* records enqueued / the newest that has run */
  unsigned flags = 0;
  double t_ms = 0;
  bool live = true;
};

namespace emu {
namespace {

std::vector<CUstream_st *> streams; /* every stream ever made (never freed: handles stay checkable) */
CUstream_st legacy_stream;           /* the NULL stream */
uint64_t op_seq;
std::map<uintptr_t, size_t> pinned;  /* cudaMallocHost blocks */
int open_depth;
size_t in_use;

double now_ms()
{
  using namespace std::chrono;
  return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

/* ------------------------------------------------------------------ memory */
constexpr size_t HUGE_STEP = (size_t)2 << 20;
size_t round_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

void segv_handler(int sig, siginfo_t *si, void *uc);
struct sigaction old_segv;

long n_drains, n_opens;

void print_runtime_stats()
{
  fprintf(stderr, "ptdp-emu: %zu allocations (%zu MB of address space used, %zu MB live), %zu streams, %ld drains, "
          "%ld openings of device memory\n", mem.n_allocs, mem.top >> 20, in_use >> 20, streams.size(), n_drains,
          n_opens);
}

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

/* ------------------------------------------------------------------ the scheduler */
bool runnable(CUstream_st *s)
{
  if (s->q.empty()) return false;
  Op &op = s->q.front();
  if (op.wait_ev) return op.wait_ev->done_gen >= op.wait_gen;
  return !op.started;
}

/* Operations dropped after a fault while started (a collective whose MPI request is still in
 * flight): kept, never freed, so MPI never writes into freed buffers. */
std::vector<Op> graveyard;

void drop_all()
{
  for (CUstream_st *s : streams) {
    if (!s->q.empty() && s->q.front().started) graveyard.push_back(std::move(s->q.front()));
    s->q.clear();
  }
  legacy_stream.q.clear();
}

void record_fault(cudaError_t e, const std::string &what)
{
  if (sticky_error == cudaSuccess) {
    sticky_error = e;
    fprintf(stderr, "ptdp-emu: %s failed (%s): the device's error is now sticky and its queued work is dropped\n",
            what.c_str(), cudaGetErrorName(e));
  }
  drop_all();
}

/* PTDP_EMU_TRACE=1: every operation as it runs, on stderr (which stream, in what order). */
bool tracing()
{
  static int t = -1;
  if (t < 0) {
    const char *e = getenv("PTDP_EMU_TRACE");
    t = e && *e && strcmp(e, "0");
  }
  return t;
}

/* Run the head of s (lock held, memory open). */
void run_head(CUstream_st *s)
{
  Op op = std::move(s->q.front());
  s->q.pop_front();
  if (tracing())
    fprintf(stderr, "ptdp-emu: run %s on stream %p (enqueued %llu)%s\n", op.what.c_str(), (void *)s,
            (unsigned long long)op.seq, op.start ? ", started" : "");
  if (op.wait_ev) return;
  if (op.fn) {
    cudaError_t e = op.fn();
    if (e != cudaSuccess) record_fault(e, op.what);
    return;
  }
  cudaError_t e = op.start();
  if (e != cudaSuccess) {
    record_fault(e, op.what);
    return;
  }
  op.started = true;
  s->q.push_front(std::move(op)); /* busy until its poll says done */
}

/* Poll the started collectives at the heads; true when one finished. */
bool poll_async()
{
  bool progress = false;
  for (CUstream_st *s : streams) {
    if (s->q.empty() || !s->q.front().started) continue;
    cudaError_t e = cudaSuccess;
    if (s->q.front().poll(&e)) {
      std::string what = s->q.front().what;
      s->q.pop_front();
      progress = true;
      if (e != cudaSuccess) {
        record_fault(e, what);
        return true;
      }
    }
  }
  return progress;
}

bool any_busy()
{
  for (CUstream_st *s : streams)
    if (!s->q.empty() && s->q.front().started) return true;
  return false;
}

bool any_queued()
{
  for (CUstream_st *s : streams)
    if (!s->q.empty()) return true;
  return false;
}

/* One step: the most recently enqueued runnable head runs (of the blocking streams only, when
 * blocking_only).  False when none can. */
bool step(bool blocking_only = false)
{
  CUstream_st *best = nullptr;
  for (CUstream_st *s : streams)
    if ((!blocking_only || !(s->flags & cudaStreamNonBlocking)) && runnable(s) &&
        (!best || s->q.front().seq > best->q.front().seq))
      best = s;
  if (!best) return poll_async();
  run_head(best);
  return true;
}

/* Run work until done() holds (blocking: waiting for collectives; else cudaErrorNotReady when
 * only they remain), then everything else that can run now. */
int draining; /* the scheduler is running (a kick from inside it does nothing) */

cudaError_t drain(const std::function<bool()> &done, bool blocking, bool blocking_only = false)
{
  n_drains++;
  draining++;
  struct Leave {
    ~Leave() { draining--; }
  } leave;
  device_open();
  cudaError_t rc = cudaSuccess;
  int idle = 0;
  while (sticky_error == cudaSuccess && !done()) {
    if (step(blocking_only)) {
      idle = 0;
      continue;
    }
    if (!any_busy()) {
      if (any_queued())
        fprintf(stderr, "ptdp-emu: queued work can never run: a stream waits for an event whose record cannot run\n");
      rc = any_queued() ? cudaErrorLaunchTimeout : cudaSuccess;
      break;
    }
    if (!blocking) {
      rc = cudaErrorNotReady;
      break;
    }
    if (++idle > 100) std::this_thread::sleep_for(std::chrono::microseconds(50)); /* peers are late */
  }
  while (!blocking_only && sticky_error == cudaSuccess && step()) {
  }
  device_close();
  if (sticky_error != cudaSuccess) return sticky_error;
  return rc;
}

CUstream_st *resolve(cudaStream_t s) { return s ? s : &legacy_stream; }

bool valid_stream(cudaStream_t s) { return !s || (s->live); }

/* The legacy NULL stream synchronizes with the blocking streams (created without
 * cudaStreamNonBlocking), not with the non-blocking ones ptdp's backend and transport use: run
 * the blocking streams' queued work, then the operation, at once.  Work queued on a
 * non-blocking stream is not waited for, as on a GPU. */
bool blocking_queued()
{
  for (CUstream_st *s : streams)
    if (!(s->flags & cudaStreamNonBlocking) && !s->q.empty()) return true;
  return false;
}

cudaError_t run_on_legacy(const char *what, std::function<cudaError_t()> fn)
{
  cudaError_t e = drain([] { return !blocking_queued(); }, true, true);
  if (e != cudaSuccess) return e;
  device_open();
  e = fn();
  device_close();
  if (e != cudaSuccess) record_fault(e, what);
  return sticky_error != cudaSuccess ? sticky_error : e;
}

const char *kind_name(cudaMemcpyKind k)
{
  switch (k) {
  case cudaMemcpyHostToHost: return "cudaMemcpyHostToHost";
  case cudaMemcpyHostToDevice: return "cudaMemcpyHostToDevice";
  case cudaMemcpyDeviceToHost: return "cudaMemcpyDeviceToHost";
  case cudaMemcpyDeviceToDevice: return "cudaMemcpyDeviceToDevice";
  default: return "cudaMemcpyDefault";
  }
}

/* Check a copy's pointers against its kind: the emulation knows which memory is whose. */
cudaError_t check_copy(void *dst, const void *src, size_t bytes, cudaMemcpyKind *kind)
{
  bool dd = device_bytes(dst) > 0, sd = device_bytes(src) > 0;
  if (*kind == cudaMemcpyDefault) *kind = (cudaMemcpyKind)((sd ? 2 : 0) | (dd ? 1 : 0));
  bool want_dd = *kind == cudaMemcpyHostToDevice || *kind == cudaMemcpyDeviceToDevice;
  bool want_sd = *kind == cudaMemcpyDeviceToHost || *kind == cudaMemcpyDeviceToDevice;
  if (*kind > cudaMemcpyDefault || dd != want_dd || sd != want_sd) {
    fprintf(stderr, "ptdp-emu: %s with %s destination %p and %s source %p\n", kind_name(*kind),
            dd ? "a device" : "a host", dst, sd ? "a device" : "a host", src);
    return api_error(cudaErrorInvalidMemcpyDirection);
  }
  if ((dd && !is_device_range(dst, bytes)) || (sd && !is_device_range(src, bytes))) {
    fprintf(stderr, "ptdp-emu: %s of %zu bytes runs past the end of a device allocation (dst %p: %zu bytes, src "
            "%p: %zu bytes)\n", kind_name(*kind), bytes, dst, device_bytes(dst), src, device_bytes(src));
    return api_error(cudaErrorInvalidValue);
  }
  return cudaSuccess;
}

cudaError_t memcpy_async(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind, cudaStream_t st, bool sync)
{
  if (sticky_error) return sticky_error;
  if (!valid_stream(st)) return api_error(cudaErrorInvalidResourceHandle);
  if (!bytes) return cudaSuccess;
  cudaError_t e = check_copy(dst, src, bytes, &kind);
  if (e) return e;
  /* pageable host source: read now (CUDA returns once it has been staged); pinned: when it runs */
  std::shared_ptr<std::vector<char>> staged;
  if (kind == cudaMemcpyHostToDevice && pinned_bytes(src) < bytes) {
    staged = std::make_shared<std::vector<char>>((const char *)src, (const char *)src + bytes);
    src = staged->data();
  }
  bool pageable_dst = kind == cudaMemcpyDeviceToHost && pinned_bytes(dst) < bytes;
  auto fn = [dst, src, bytes, staged]() {
    memmove(dst, src, bytes);
    return cudaSuccess;
  };
  if (!st) return run_on_legacy("cudaMemcpy", fn);
  auto done = std::make_shared<bool>(false);
  e = enqueue(st, "cudaMemcpyAsync", [fn, done]() {
    *done = true;
    return fn();
  });
  if (e) return e;
  /* to pageable host memory the call returns when the copy is done */
  if (sync || pageable_dst) return drain([done] { return *done; }, true);
  return cudaSuccess;
}

cudaError_t memset2d(void *p, size_t pitch, int value, size_t width, size_t height, cudaStream_t st)
{
  if (sticky_error) return sticky_error;
  if (!valid_stream(st)) return api_error(cudaErrorInvalidResourceHandle);
  if (!width || !height) return cudaSuccess;
  if (pitch < width) return api_error(cudaErrorInvalidPitchValue);
  if (!is_device_range(p, pitch * (height - 1) + width)) {
    fprintf(stderr, "ptdp-emu: memset of %zu x %zu bytes (pitch %zu) at %p: not inside one device allocation "
            "(%zu bytes there)\n", height, width, pitch, p, device_bytes(p));
    return api_error(cudaErrorInvalidValue);
  }
  auto fn = [p, pitch, value, width, height]() {
    for (size_t r = 0; r < height; r++) memset((char *)p + r * pitch, value, width);
    return cudaSuccess;
  };
  if (!st) return run_on_legacy("cudaMemset", fn);
  return enqueue(st, "cudaMemsetAsync", fn);
}

const cudaDeviceProp &make_props()
{
  static cudaDeviceProp p;
  snprintf(p.name, sizeof p.name, "NVIDIA H100 80GB HBM3 (ptdp emulation)");
  p.totalGlobalMem = (size_t)80 << 30;
  p.sharedMemPerBlock = 48 << 10;
  p.sharedMemPerBlockOptin = 227 << 10;
  p.regsPerBlock = 65536;
  p.warpSize = 32;
  p.maxThreadsPerBlock = 1024;
  p.maxThreadsDim[0] = 1024, p.maxThreadsDim[1] = 1024, p.maxThreadsDim[2] = 64;
  p.maxGridSize[0] = 2147483647, p.maxGridSize[1] = 65535, p.maxGridSize[2] = 65535;
  p.clockRate = 1980000;
  p.major = 9, p.minor = 0;
  p.multiProcessorCount = 132;
  p.memoryClockRate = 2619000;
  p.memoryBusWidth = 5120;
  p.l2CacheSize = 50 << 20;
  p.maxThreadsPerMultiProcessor = 2048;
  p.sharedMemPerMultiprocessor = 228 << 10;
  return p;
}

int device_count()
{
  const char *e = getenv("PTDP_EMU_DEVICES");
  return e ? atoi(e) : 1;
}

} // namespace

/* ------------------------------------------------------------------ internal interface */
/* The device runs while the host waits elsewhere (emu_mpi.cc calls this as the host enters a
 * blocking MPI call): everything that can run now runs, collectives start, nothing is waited
 * for.  Without it a rank whose host goes on to a barrier would never start a collective it
 * queued, and its peer, waiting for that collective, would wait forever; a GPU runs it. */
void kick()
{
  std::lock_guard<std::recursive_mutex> g(lock());
  if (draining || sticky_error != cudaSuccess || !any_queued()) return;
  drain([] { return true; }, false);
}

std::recursive_mutex &lock()
{
  static std::recursive_mutex m;
  return m;
}

const cudaDeviceProp &props()
{
  static const cudaDeviceProp &p = make_props();
  return p;
}

cudaError_t api_error(cudaError_t e)
{
  last_error = e;
  return e;
}

cudaError_t sticky() { return sticky_error; }

void fault(cudaError_t e, const char *fmt, ...)
{
  char msg[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  fprintf(stderr, "ptdp-emu: %s\n", msg);
  if (sticky_error == cudaSuccess) sticky_error = e;
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

cudaError_t enqueue(cudaStream_t s, const char *what, std::function<cudaError_t()> fn)
{
  std::lock_guard<std::recursive_mutex> g(lock());
  if (sticky_error) return sticky_error;
  if (!valid_stream(s)) return api_error(cudaErrorInvalidResourceHandle);
  if (!s) return run_on_legacy(what, std::move(fn));
  Op op;
  op.seq = ++op_seq;
  op.what = what;
  op.fn = std::move(fn);
  s->q.push_back(std::move(op));
  return cudaSuccess;
}

cudaError_t enqueue_async(cudaStream_t s, const char *what, std::function<cudaError_t()> start,
                          std::function<bool(cudaError_t *err)> poll)
{
  std::lock_guard<std::recursive_mutex> g(lock());
  if (sticky_error) return sticky_error;
  if (!s || !s->live) return api_error(cudaErrorInvalidResourceHandle);
  Op op;
  op.seq = ++op_seq;
  op.what = what;
  op.start = std::move(start);
  op.poll = std::move(poll);
  s->q.push_back(std::move(op));
  return cudaSuccess;
}

} // namespace emu

/* ------------------------------------------------------------------ the cudart API */
using namespace emu;
#define LOCK std::lock_guard<std::recursive_mutex> emu_g_(emu::lock())

extern "C" {

const char *cudaGetErrorName(cudaError_t e)
{
  switch (e) {
#define N(x) \
  case x: return #x;
    N(cudaSuccess) N(cudaErrorInvalidValue) N(cudaErrorMemoryAllocation) N(cudaErrorInitializationError)
    N(cudaErrorInvalidConfiguration) N(cudaErrorInvalidPitchValue) N(cudaErrorInvalidDevicePointer)
    N(cudaErrorInvalidMemcpyDirection) N(cudaErrorInvalidDeviceFunction) N(cudaErrorNoDevice) N(cudaErrorInvalidDevice)
    N(cudaErrorInvalidResourceHandle) N(cudaErrorNotReady) N(cudaErrorIllegalAddress)
    N(cudaErrorLaunchOutOfResources) N(cudaErrorLaunchTimeout) N(cudaErrorAssert) N(cudaErrorLaunchFailure)
    N(cudaErrorUnknown)
#undef N
  }
  return "cudaErrorUnknown";
}

const char *cudaGetErrorString(cudaError_t e)
{
  switch (e) {
  case cudaSuccess: return "no error";
  case cudaErrorInvalidValue: return "invalid argument";
  case cudaErrorMemoryAllocation: return "out of memory";
  case cudaErrorInitializationError: return "initialization error";
  case cudaErrorInvalidConfiguration: return "invalid configuration argument";
  case cudaErrorInvalidPitchValue: return "invalid pitch argument";
  case cudaErrorInvalidDevicePointer: return "invalid device pointer";
  case cudaErrorInvalidMemcpyDirection: return "invalid copy direction for memcpy";
  case cudaErrorInvalidDeviceFunction: return "invalid device function";
  case cudaErrorNoDevice: return "no CUDA-capable device is detected";
  case cudaErrorInvalidDevice: return "invalid device ordinal";
  case cudaErrorInvalidResourceHandle: return "invalid resource handle";
  case cudaErrorNotReady: return "device not ready";
  case cudaErrorIllegalAddress: return "an illegal memory access was encountered";
  case cudaErrorLaunchOutOfResources: return "too many resources requested for launch";
  case cudaErrorLaunchTimeout: return "the launch timed out and was terminated";
  case cudaErrorAssert: return "device-side assert triggered";
  case cudaErrorLaunchFailure: return "unspecified launch failure";
  default: return "unknown error";
  }
}

cudaError_t cudaGetLastError(void)
{
  LOCK;
  if (sticky_error) return sticky_error;
  cudaError_t e = last_error;
  last_error = cudaSuccess;
  return e;
}

cudaError_t cudaPeekAtLastError(void)
{
  LOCK;
  return sticky_error ? sticky_error : last_error;
}

cudaError_t cudaGetDeviceCount(int *count)
{
  if (!count) return api_error(cudaErrorInvalidValue);
  *count = 0;
  int n = device_count();
  if (n <= 0) return api_error(cudaErrorNoDevice);
  *count = n;
  return cudaSuccess;
}

cudaError_t cudaSetDevice(int device)
{
  LOCK;
  if (device < 0 || device >= device_count()) return api_error(cudaErrorInvalidDevice);
  current_device = device;
  arena_init();
  return sticky_error;
}

cudaError_t cudaGetDevice(int *device)
{
  if (!device) return api_error(cudaErrorInvalidValue);
  *device = current_device;
  return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp *prop, int device)
{
  if (!prop) return api_error(cudaErrorInvalidValue);
  if (device < 0 || device >= device_count()) return api_error(cudaErrorInvalidDevice);
  *prop = props();
  return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int *value, cudaDeviceAttr attr, int device)
{
  if (!value) return api_error(cudaErrorInvalidValue);
  if (device < 0 || device >= device_count()) return api_error(cudaErrorInvalidDevice);
  const cudaDeviceProp &p = props();
  switch (attr) {
  case cudaDevAttrMaxThreadsPerBlock: *value = p.maxThreadsPerBlock; break;
  case cudaDevAttrMaxSharedMemoryPerBlock: *value = (int)p.sharedMemPerBlock; break;
  case cudaDevAttrWarpSize: *value = p.warpSize; break;
  case cudaDevAttrMultiProcessorCount: *value = p.multiProcessorCount; break;
  case cudaDevAttrComputeCapabilityMajor: *value = p.major; break;
  case cudaDevAttrComputeCapabilityMinor: *value = p.minor; break;
  case cudaDevAttrMaxSharedMemoryPerBlockOptin: *value = (int)p.sharedMemPerBlockOptin; break;
  default: return api_error(cudaErrorInvalidValue);
  }
  return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize(void)
{
  LOCK;
  if (sticky_error) return sticky_error;
  return drain([] { return !any_queued(); }, true);
}

cudaError_t cudaDeviceReset(void)
{
  LOCK;
  drop_all();
  sticky_error = last_error = cudaSuccess;
  return cudaSuccess;
}

cudaError_t cudaDeviceGetStreamPriorityRange(int *least, int *greatest)
{
  if (least) *least = 0;
  if (greatest) *greatest = -5; /* as an H100 reports: lower numbers are higher priorities */
  return cudaSuccess;
}

cudaError_t cudaDriverGetVersion(int *v)
{
  if (!v) return api_error(cudaErrorInvalidValue);
  *v = CUDART_VERSION;
  return cudaSuccess;
}

cudaError_t cudaRuntimeGetVersion(int *v) { return cudaDriverGetVersion(v); }

cudaError_t cudaMalloc(void **p, size_t bytes)
{
  LOCK;
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

/* cudaFree waits for the device's queued work first (CUDA's documented behaviour). */
cudaError_t cudaFree(void *p)
{
  LOCK;
  if (!p) return cudaSuccess;
  cudaError_t e = drain([] { return !any_queued(); }, true);
  size_t bytes = device_bytes(p);
  if (mem.use_malloc) {
    auto it = malloc_allocs.find((uintptr_t)p);
    if (it == malloc_allocs.end()) return api_error(cudaErrorInvalidValue);
    malloc_allocs.erase(it);
    free(p);
  } else if (arena_free(p) != cudaSuccess) {
    fprintf(stderr, "ptdp-emu: cudaFree(%p): not the start of a live device allocation\n", p);
    return api_error(cudaErrorInvalidValue);
  }
  in_use -= bytes;
  return e;
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

cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind)
{
  LOCK;
  return memcpy_async(dst, src, bytes, kind, nullptr, true);
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind, cudaStream_t s)
{
  LOCK;
  return memcpy_async(dst, src, bytes, kind, s, false);
}

cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height,
                              cudaMemcpyKind kind, cudaStream_t s)
{
  LOCK;
  if (dpitch < width || spitch < width) return api_error(cudaErrorInvalidPitchValue);
  for (size_t r = 0; r < height; r++) {
    cudaError_t e = memcpy_async((char *)dst + r * dpitch, (const char *)src + r * spitch, width, kind, s, false);
    if (e) return e;
  }
  return cudaSuccess;
}

cudaError_t cudaMemset(void *p, int value, size_t bytes)
{
  LOCK;
  return memset2d(p, bytes, value, bytes, 1, nullptr);
}

cudaError_t cudaMemsetAsync(void *p, int value, size_t bytes, cudaStream_t s)
{
  LOCK;
  return memset2d(p, bytes, value, bytes, 1, s);
}

cudaError_t cudaMemset2DAsync(void *p, size_t pitch, int value, size_t width, size_t height, cudaStream_t s)
{
  LOCK;
  return memset2d(p, pitch, value, width, height, s);
}

cudaError_t cudaStreamCreateWithPriority(cudaStream_t *s, unsigned int flags, int priority)
{
  LOCK;
  if (!s || flags > cudaStreamNonBlocking) return api_error(cudaErrorInvalidValue);
  CUstream_st *st = new CUstream_st;
  st->flags = flags;
  st->priority = priority;
  streams.push_back(st);
  *s = st;
  return cudaSuccess;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned int flags)
{
  return cudaStreamCreateWithPriority(s, flags, 0);
}

cudaError_t cudaStreamCreate(cudaStream_t *s) { return cudaStreamCreateWithPriority(s, 0, 0); }

/* Work already queued still runs (CUDA's rule); the handle is dead at once. */
cudaError_t cudaStreamDestroy(cudaStream_t s)
{
  LOCK;
  if (!s || !s->live) return api_error(cudaErrorInvalidResourceHandle);
  s->live = false;
  return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t s)
{
  LOCK;
  if (!valid_stream(s)) return api_error(cudaErrorInvalidResourceHandle);
  if (sticky_error) return sticky_error;
  if (!s) return drain([] { return !any_queued(); }, true);
  return drain([s] { return s->q.empty(); }, true);
}

cudaError_t cudaStreamQuery(cudaStream_t s)
{
  LOCK;
  if (!valid_stream(s)) return api_error(cudaErrorInvalidResourceHandle);
  if (sticky_error) return sticky_error;
  if (!s) return drain([] { return !any_queued(); }, false);
  return drain([s] { return s->q.empty(); }, false);
}

cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned int flags)
{
  LOCK;
  if (!valid_stream(s) || !e || !e->live) return api_error(cudaErrorInvalidResourceHandle);
  if (flags) return api_error(cudaErrorInvalidValue);
  if (sticky_error) return sticky_error;
  if (!e->rec_gen) return cudaSuccess; /* never recorded: nothing to wait for */
  if (!s) return drain([e, g = e->rec_gen] { return e->done_gen >= g; }, true);
  Op op;
  op.seq = ++op_seq;
  op.what = "cudaStreamWaitEvent";
  op.wait_ev = e;
  op.wait_gen = e->rec_gen;
  s->q.push_back(std::move(op));
  return cudaSuccess;
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned int flags)
{
  LOCK;
  if (!e || flags > (cudaEventBlockingSync | cudaEventDisableTiming)) return api_error(cudaErrorInvalidValue);
  CUevent_st *ev = new CUevent_st;
  ev->flags = flags;
  *e = ev;
  return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t *e) { return cudaEventCreateWithFlags(e, 0); }

cudaError_t cudaEventDestroy(cudaEvent_t e)
{
  LOCK;
  if (!e || !e->live) return api_error(cudaErrorInvalidResourceHandle);
  e->live = false; /* kept: queued waits may still name it */
  return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s)
{
  LOCK;
  if (!e || !e->live || !valid_stream(s)) return api_error(cudaErrorInvalidResourceHandle);
  if (sticky_error) return sticky_error;
  uint64_t g = ++e->rec_gen;
  return enqueue(s, "cudaEventRecord", [e, g]() {
    e->done_gen = std::max(e->done_gen, g);
    e->t_ms = now_ms();
    return cudaSuccess;
  });
}

cudaError_t cudaEventQuery(cudaEvent_t e)
{
  LOCK;
  if (!e || !e->live) return api_error(cudaErrorInvalidResourceHandle);
  if (sticky_error) return sticky_error;
  return drain([e, g = e->rec_gen] { return e->done_gen >= g; }, false);
}

cudaError_t cudaEventSynchronize(cudaEvent_t e)
{
  LOCK;
  if (!e || !e->live) return api_error(cudaErrorInvalidResourceHandle);
  if (sticky_error) return sticky_error;
  return drain([e, g = e->rec_gen] { return e->done_gen >= g; }, true);
}

cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b)
{
  LOCK;
  if (!ms || !a || !b || !a->live || !b->live) return api_error(cudaErrorInvalidResourceHandle);
  if ((a->flags | b->flags) & cudaEventDisableTiming) return api_error(cudaErrorInvalidResourceHandle);
  if (!a->rec_gen || !b->rec_gen) return api_error(cudaErrorInvalidResourceHandle);
  if (a->done_gen < a->rec_gen || b->done_gen < b->rec_gen) return api_error(cudaErrorNotReady);
  *ms = (float)(b->t_ms - a->t_ms);
  return cudaSuccess;
}

} /* extern "C" */
