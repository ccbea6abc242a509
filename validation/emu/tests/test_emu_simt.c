/* The CUDA emulation proves itself: what it must compute right, and each mistake it must catch
 * (a planted mistake per check, in the kernels of emu_test_kernels.cu).
 *   right:   block sums through shuffles and shared memory (1024-thread blocks, a partial last
 *            block), votes and every shuffle kind, dynamic shared memory, the NaN pattern of a
 *            fresh allocation, events ordering two streams, stream-ordered memory (cudaFreeAsync
 *            releases when its stream gets there, cudaMallocAsync waits for nothing, cudaMalloc
 *            for all queued work);
 *   caught:  a write one element past an allocation, a host pointer given to a kernel, a shared
 *            race, a barrier one thread skips, launch limits (1025 threads, 228 KB of dynamic
 *            shared memory), a host read of device memory (SIGSEGV), a copy with the wrong kind,
 *            a missing cross-stream dependency (the consumer runs first and sees NaN), and a kernel
 *            queued before a cudaFreeAsync of its output, on another stream with no wait (it
 *            writes freed memory).
 * A fault is sticky (as on a GPU), so each planted fault runs in a forked child that reports
 * through its exit status and stderr. */
#include <cuda_runtime.h>

#include "../../tests/expect.h"
#include "emu_test.h"

#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

cudaError_t emu_t_launch_block_sum(cudaStream_t st, const float *x, float *out, int n, int threads, int *bad);
cudaError_t emu_t_launch_warp_ops(cudaStream_t st, int *out, int threads);
cudaError_t emu_t_launch_reverse(cudaStream_t st, const float *x, float *y, int blocks, int threads);
cudaError_t emu_t_launch_inc(cudaStream_t st, const float *x, float *y, int n, int over, int threads);
cudaError_t emu_t_launch_race(cudaStream_t st, float *out);
cudaError_t emu_t_launch_diverge(cudaStream_t st, float *out);
cudaError_t emu_t_launch_race_rereader(cudaStream_t st, float *out);
cudaError_t emu_t_launch_race_shfl(cudaStream_t st, float *out, int sync);
cudaError_t emu_t_launch_config(cudaStream_t st, float *x, int threads, size_t shmem);
cudaError_t emu_t_launch_big_shared(cudaStream_t st, const float *x, float *y, size_t shmem, int optin);

static float *dev_floats(const float *h, size_t n)
{
  float *d;
  CK(cudaMalloc((void **)&d, n * sizeof(float)));
  if (h) CK(cudaMemcpy(d, h, n * sizeof(float), cudaMemcpyHostToDevice));
  return d;
}

static void test_block_sum(void)
{
  const int n = 3000, threads = 1024, blocks = (n + threads - 1) / threads;
  float *h = malloc(n * sizeof(float)), out[3];
  double want[3] = {0, 0, 0};
  for (int i = 0; i < n; i++) h[i] = (float)((i * 37) % 101) - 50.0f, want[i / threads] += h[i];
  float *x = dev_floats(h, n), *o = dev_floats(NULL, blocks);
  int *bad;
  CK(cudaMalloc((void **)&bad, sizeof(int)));
  CK(cudaMemset(bad, 0, sizeof(int)));
  CK(emu_t_launch_block_sum(0, x, o, n, threads, bad));
  CK(cudaMemcpy(out, o, sizeof out, cudaMemcpyDeviceToHost));
  for (int b = 0; b < blocks; b++) EXPECT(out[b] == (float)want[b], "block %d sum %g, want %g", b, out[b], want[b]);
  free(h);
  CK(cudaFree(x));
  CK(cudaFree(o));
  CK(cudaFree(bad));
}

static void test_warp_ops(void)
{
  const int threads = 64;
  int *d, h[6 * 64];
  CK(cudaMalloc((void **)&d, sizeof h));
  CK(emu_t_launch_warp_ops(0, d, threads));
  CK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
  for (int t = 0; t < threads; t++) {
    int l = t & 31, *o = h + 6 * t;
    EXPECT((unsigned)o[0] == 0xaaaaaaaau, "ballot %#x", (unsigned)o[0]);
    EXPECT(o[1] == 1 && o[2] == 1, "any %d all %d", o[1], o[2]);
    EXPECT(o[3] == (l >= 1 ? l - 1 : l), "shfl_up lane %d: %d", l, o[3]);
    EXPECT(o[4] == (l + 2 < 32 ? l + 2 : l), "shfl_down lane %d: %d", l, o[4]);
    EXPECT(o[5] == 50, "shfl idx lane %d: %d", l, o[5]);
  }
  CK(cudaFree(d));
}

static void test_dynamic_shared_and_poison(void)
{
  const int threads = 128, blocks = 3, n = threads * blocks;
  float h[384], y[384];
  for (int i = 0; i < n; i++) h[i] = (float)i;
  float *x = dev_floats(h, n), *d = dev_floats(NULL, n);
  CK(cudaMemcpy(y, d, sizeof y, cudaMemcpyDeviceToHost));
  EXPECT(isnan(y[0]) && isnan(y[n - 1]), "a fresh allocation reads %g %g, not the NaN pattern", y[0], y[n - 1]);
  CK(emu_t_launch_reverse(0, x, d, blocks, threads));
  CK(cudaMemcpy(y, d, sizeof y, cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; i++) {
    int b = i / threads, t = i % threads;
    EXPECT(y[i] == h[b * threads + threads - 1 - t], "reverse[%d] = %g", i, y[i]);
  }
  CK(cudaFree(x));
  CK(cudaFree(d));
}

/* Producer on stream a, consumer on stream b.  With the event wait the consumer sees the
 * producer's values; without it the emulation runs the consumer first (most recent first), so
 * it reads the NaN pattern: the missing dependency shows. */
static int streams_case(int with_wait)
{
  const int n = 256;
  float h[256], out[256];
  for (int i = 0; i < n; i++) h[i] = (float)i;
  cudaStream_t a, b;
  cudaEvent_t ev;
  CK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
  CK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
  float *x = dev_floats(h, n), *y = dev_floats(NULL, n), *z = dev_floats(NULL, n);
  CK(emu_t_launch_inc(a, x, y, n, 0, 128)); /* y = x + 1 */
  CK(cudaEventRecord(ev, a));
  if (with_wait) CK(cudaStreamWaitEvent(b, ev, 0));
  CK(emu_t_launch_inc(b, y, z, n, 0, 128)); /* z = y + 1 */
  CK(cudaStreamSynchronize(b));
  CK(cudaMemcpy(out, z, sizeof out, cudaMemcpyDeviceToHost));
  int right = 1;
  for (int i = 0; i < n; i++) right &= out[i] == h[i] + 2.0f;
  CK(cudaStreamDestroy(a));
  CK(cudaStreamDestroy(b));
  CK(cudaEventDestroy(ev));
  CK(cudaFree(x));
  CK(cudaFree(y));
  CK(cudaFree(z));
  return right;
}

/* A wait names the record that was the event's last when the wait was made: a later record of
 * the same event on another stream, which the scheduler runs first, must not stand in for it. */
static int rerecord_case(void)
{
  const int n = 128;
  float h[128], out[128];
  for (int i = 0; i < n; i++) h[i] = (float)i;
  cudaStream_t a, b, c;
  cudaEvent_t ev;
  CK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&c, cudaStreamNonBlocking));
  CK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
  float *x = dev_floats(h, n), *y = dev_floats(NULL, n), *z = dev_floats(NULL, n);
  CK(emu_t_launch_inc(a, x, y, n, 0, 128)); /* y = x + 1 */
  CK(cudaEventRecord(ev, a));               /* record 1: after the producer */
  CK(cudaStreamWaitEvent(c, ev, 0));        /* waits for record 1 */
  CK(emu_t_launch_inc(c, y, z, n, 0, 128)); /* z = y + 1 */
  CK(cudaEventRecord(ev, b));               /* record 2, on an idle stream */
  CK(cudaStreamSynchronize(c));
  CK(cudaMemcpy(out, z, sizeof out, cudaMemcpyDeviceToHost));
  int right = 1;
  for (int i = 0; i < n; i++) right &= out[i] == h[i] + 2.0f;
  CK(cudaDeviceSynchronize());
  CK(cudaStreamDestroy(a));
  CK(cudaStreamDestroy(b));
  CK(cudaStreamDestroy(c));
  CK(cudaEventDestroy(ev));
  CK(cudaFree(x));
  CK(cudaFree(y));
  CK(cudaFree(z));
  return right;
}

static cudaError_t after(cudaError_t launch)
{
  if (launch != cudaSuccess) return launch;
  return cudaDeviceSynchronize();
}

static void plant_oob(void)
{
  float *x = dev_floats(NULL, 100), *y = dev_floats(NULL, 100);
  cudaError_t e = after(emu_t_launch_inc(0, x, y, 100, 1, 64));
  exit(e == cudaErrorIllegalAddress && cudaGetLastError() == cudaErrorIllegalAddress ? 10 : 1);
}

static void plant_host_pointer(void)
{
  float *host = calloc(100, sizeof(float)); /* heap: a host pointer (static data would pass: __constant__) */
  float *y = dev_floats(NULL, 100);
  exit(after(emu_t_launch_inc(0, host, y, 100, 0, 64)) == cudaErrorIllegalAddress ? 10 : 1);
}

static void plant_race(void)
{
  float *o = dev_floats(NULL, 4);
  exit(after(emu_t_launch_race(0, o)) == cudaErrorLaunchFailure ? 10 : 1);
}

static void plant_race_rereader(void)
{
  float *o = dev_floats(NULL, 64);
  exit(after(emu_t_launch_race_rereader(0, o)) == cudaErrorLaunchFailure ? 10 : 1);
}

static void plant_race_shfl(void)
{
  float *o = dev_floats(NULL, 1);
  exit(after(emu_t_launch_race_shfl(0, o, 0)) == cudaErrorLaunchFailure ? 10 : 1);
}

static void race_shfl_synced(void)
{
  float *o = dev_floats(NULL, 1), h;
  cudaError_t e = after(emu_t_launch_race_shfl(0, o, 1));
  if (e == cudaSuccess) e = cudaMemcpy(&h, o, sizeof h, cudaMemcpyDeviceToHost);
  exit(e == cudaSuccess && h == 3.0f ? 10 : 1);
}

static void plant_diverge(void)
{
  float *o = dev_floats(NULL, 64);
  exit(after(emu_t_launch_diverge(0, o)) == cudaErrorLaunchFailure ? 10 : 1);
}

static void plant_host_read(void)
{
  float *x = dev_floats(NULL, 16);
  volatile float v = x[3]; /* host code reading device memory */
  (void)v;
  exit(1);
}

unsigned long ptdp_emu_hook_calls(void);
static void plant_free_async_early(void);

static void test_faults(void)
{
  int saw;
  EXPECT(emu_child(plant_diverge, "thread(s) of the block returned", &saw) == 10 && saw, "a skipped __syncthreads is not reported");
#if defined(__SANITIZE_ADDRESS__) /* --enable-sanitizers: ASan's checks replace the hooks */
  EXPECT(ptdp_emu_hook_calls() == 0, "a sanitizer build whose kernels call the access hooks");
  printf("note: kernels run without the access hooks in this build: bounds, host-pointer, race and host-read "
         "checks skipped (AddressSanitizer checks the accesses instead)\n");
  return;
#else /* a build whose kernels lost their instrumentation must fail, not skip */
  EXPECT(ptdp_emu_hook_calls() > 0, "the kernels ran without the access hooks: no bounds or race checks");
#endif
  EXPECT(emu_child(plant_oob, "offset 400 of a 400-byte allocation: out of bounds", &saw) == 10 && saw,
         "a write one past the end of an allocation is not reported as an illegal address");
  EXPECT(emu_child(plant_oob, "emu_test_kernels.cu:", &saw) == 10 && saw, "the report does not name the source line");
  EXPECT(emu_child(plant_host_pointer, "host memory: not device memory", &saw) == 10 && saw,
         "a host pointer passed to a kernel is not caught");
  EXPECT(emu_child(plant_race, "read-after-write hazard on shared memory", &saw) == 10 && saw,
         "the shared-memory race is not reported");
  EXPECT(emu_child(plant_race_rereader, "write-after-read hazard on shared memory", &saw) == 10 && saw,
         "a write racing with another warp's read is missed when the first warp reads again");
  EXPECT(emu_child(plant_race_shfl, "read-after-write hazard on shared memory", &saw) == 10 && saw,
         "a shuffle is taken for a memory barrier");
  EXPECT(emu_child(race_shfl_synced, "", &saw) == 10, "__syncwarp does not order shared memory in the warp");
  EXPECT(emu_child(plant_host_read, "host code touched emulated device memory", &saw) == 128 + SIGSEGV && saw,
         "a host read of device memory does not die of SIGSEGV with a message");
  EXPECT(emu_child(plant_free_async_early, "", &saw) == 10,
         "a kernel writing memory another stream freed (cudaFreeAsync, no wait) is not an illegal address");
}

/* Free device bytes as the emulation counts them. */
static size_t free_bytes(void)
{
  size_t f = 0, t = 0;
  CK(cudaMemGetInfo(&f, &t));
  return f;
}

/* cudaFreeAsync keeps the block until its stream reaches the free; cudaMallocAsync runs nothing
 * queued; cudaMalloc runs all of it first (CUDA: it synchronizes the device).  A kernel queued on
 * the same stream before the free writes its output safely. */
static void test_stream_ordered_memory(void)
{
  const int n = 1 << 18; /* 1 MiB of floats: far more than the allocations below */
  cudaStream_t a;
  CK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
  float *x = dev_floats(NULL, (size_t)n), *y;
  CK(cudaMallocAsync((void **)&y, (size_t)n * sizeof(float), a));
  CK(emu_t_launch_inc(a, x, y, n, 0, 256)); /* y = x + 1, then y freed after it */
  const size_t f0 = free_bytes();
  CK(cudaFreeAsync(y, a));
  EXPECT(free_bytes() == f0, "cudaFreeAsync released its block before its stream got there");
  void *z, *w;
  CK(cudaMallocAsync(&z, 4096, a));
  const size_t f1 = free_bytes();
  EXPECT(f1 < f0, "cudaMallocAsync of 4 KB did not take memory, or ran the queued free");
  CK(cudaMalloc(&w, 4096));
  EXPECT(free_bytes() > f1, "cudaMalloc did not run the queued cudaFreeAsync (1 MiB) first");
  EXPECT(cudaStreamSynchronize(a) == cudaSuccess, "the kernel queued before cudaFreeAsync faulted");
  CK(cudaFreeAsync(z, a));
  CK(cudaFree(w));
  CK(cudaFree(x));
  CK(cudaStreamDestroy(a));
}

/* The plant: the output freed on another stream with no wait for the kernel writing it. */
static void plant_free_async_early(void)
{
  const int n = 1024;
  cudaStream_t a, b;
  CK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
  float *x = dev_floats(NULL, (size_t)n), *y = dev_floats(NULL, (size_t)n);
  CK(emu_t_launch_inc(a, x, y, n, 0, 256));
  CK(cudaFreeAsync(y, b));
  exit(cudaDeviceSynchronize() == cudaErrorIllegalAddress ? 10 : 1);
}

static void test_api_checks(void)
{
  float *x = dev_floats(NULL, 16), h[16];
  EXPECT(emu_t_launch_config(0, x, 1025, 0) == cudaErrorInvalidConfiguration, "1025 threads a block accepted");
  EXPECT(emu_t_launch_config(0, x, 32, 228u << 10) == cudaErrorInvalidValue, "228 KB of dynamic shared memory accepted");
  EXPECT(cudaGetLastError() == cudaSuccess, "cudaGetLastError does not clear a launch error");
  float *x32 = dev_floats(NULL, 32), *y = dev_floats(NULL, 32);
  EXPECT(emu_t_launch_big_shared(0, x32, y, 64u << 10, 0) == cudaErrorInvalidValue,
         "64 KB of dynamic shared memory accepted without cudaFuncSetAttribute");
  cudaGetLastError();
  EXPECT(emu_t_launch_big_shared(0, x32, y, 64u << 10, 64 << 10) == cudaSuccess,
         "64 KB of dynamic shared memory refused after cudaFuncSetAttribute");
  CK(cudaFree(x32));
  CK(cudaFree(y));
  EXPECT(cudaMemcpy(h, x, sizeof h, cudaMemcpyHostToDevice) == cudaErrorInvalidMemcpyDirection,
         "a copy whose kind contradicts its pointers is accepted");
  EXPECT(cudaMemcpy(h, x, 17 * sizeof(float), cudaMemcpyDeviceToHost) == cudaErrorInvalidValue,
         "a copy past the end of an allocation is accepted");
  cudaGetLastError();
  cudaDeviceProp p;
  CK(cudaGetDeviceProperties(&p, 0));
  EXPECT(p.major == 9 && p.minor == 0 && p.multiProcessorCount == 132, "not an H100: cc %d.%d, %d SMs", p.major,
         p.minor, p.multiProcessorCount);
  CK(cudaFree(x));
}

int main(void)
{
  CK(cudaSetDevice(0));
  test_block_sum();
  test_warp_ops();
  test_dynamic_shared_and_poison();
  EXPECT(streams_case(1), "with the event wait the consumer stream does not see the producer's result");
  EXPECT(!streams_case(0), "without the event wait the consumer still saw the result: a missing dependency hides");
  EXPECT(rerecord_case(), "a later record of the event on another stream released a wait for an earlier one");
  test_api_checks();
  test_stream_ordered_memory();
  test_faults();
  printf("test_emu_simt: %d passed, %d failed\n", n_pass, n_fail);
  return n_fail ? 1 : 0;
}
