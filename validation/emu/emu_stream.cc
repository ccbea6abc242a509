/* Streams, events and the scheduler of the emulated runtime (the model: emu_internal.h), and
 * their cudart calls: copies, memsets, streams, events.
 *
 * Each stream is a queue of operations (kernels, copies, library calls, event records and waits,
 * collectives).  Nothing runs when it is queued.  At a point where the host needs results (a
 * stream or device synchronize, an event query or synchronize, a blocking copy, cudaFree) the
 * scheduler runs queued work until that need is met and then everything else that can run,
 * always choosing among the streams whose head may run the one enqueued most recently: an
 * operation whose dependency on another stream was not expressed (an event wait forgotten) then
 * runs before its producer, and the test that uses its result fails.  An event wait may run once
 * the event's record enqueued before the wait has run.  Collectives (emu_nccl_ops.cc) are started
 * when they reach the head and keep their stream busy until their peers have joined.  A fault
 * while queued work runs is sticky: every later call returns it and queued work is dropped, as
 * after a fault on a GPU. */
#include "emu_runtime.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>

namespace emu {

std::vector<CUstream_st *> streams; /* every stream ever made (never freed: handles stay checkable) */
long n_drains;

static CUstream_st legacy_stream; /* the NULL stream */
static uint64_t op_seq;

double now_ms()
{
  using namespace std::chrono;
  return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

bool runnable(CUstream_st *s)
{
  if (s->q.empty()) return false;
  Op &op = s->q.front();
  if (op.wait_ev) return op.wait_ev->done(op.wait_gen);
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

cudaError_t drain(const std::function<bool()> &done, bool blocking, bool blocking_only)
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

using namespace emu;
#define LOCK std::lock_guard<std::recursive_mutex> emu_g_(emu::lock())

extern "C" {

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
  if (!s) return drain([e, g = e->rec_gen] { return e->done(g); }, true);
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
    e->ran(g);
    e->t_ms = now_ms();
    return cudaSuccess;
  });
}

cudaError_t cudaEventQuery(cudaEvent_t e)
{
  LOCK;
  if (!e || !e->live) return api_error(cudaErrorInvalidResourceHandle);
  if (sticky_error) return sticky_error;
  return drain([e, g = e->rec_gen] { return e->done(g); }, false);
}

cudaError_t cudaEventSynchronize(cudaEvent_t e)
{
  LOCK;
  if (!e || !e->live) return api_error(cudaErrorInvalidResourceHandle);
  if (sticky_error) return sticky_error;
  return drain([e, g = e->rec_gen] { return e->done(g); }, true);
}

cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b)
{
  LOCK;
  if (!ms || !a || !b || !a->live || !b->live) return api_error(cudaErrorInvalidResourceHandle);
  if ((a->flags | b->flags) & cudaEventDisableTiming) return api_error(cudaErrorInvalidResourceHandle);
  if (!a->rec_gen || !b->rec_gen) return api_error(cudaErrorInvalidResourceHandle);
  if (!a->done(a->rec_gen) || !b->done(b->rec_gen)) return api_error(cudaErrorNotReady);
  *ms = (float)(b->t_ms - a->t_ms);
  return cudaSuccess;
}

} /* extern "C" */
