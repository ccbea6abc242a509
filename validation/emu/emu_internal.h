/* The CUDA emulation's internal interface (C++), shared by its parts:
 *   emu_memory.cc   device memory and its cudart calls
 *   emu_stream.cc   streams, events, the scheduler, copies (emu_runtime.h: what the three share)
 *   emu_cudart.cc   errors, the emulated device, the rest of include/cuda_runtime.h
 *   emu_mpi.cc      the device keeps running while the host waits in MPI
 *   emu_simt.cc     kernels: blocks of fibers, barriers, shuffles, the launch (emu_simt.h:
 *                   the running block, shared with emu_check.cc)
 *   emu_check.cc    the compiler hooks: the bounds check of every kernel access and the
 *                   shared-memory race detector
 *   emu_cublas*.cc  cuBLAS and cuBLASLt on the host's CBLAS
 *   emu_nccl_*.cc   NCCL over MPI: communicators (_comm), operations (_ops); emu_nccl.h between
 * Nothing here is ptdp's: the emulation is a test harness (validation/), linked only into test
 * programs and the emulated trainer; it never enters libptdp.a or an installed program.
 *
 * The model of execution.  Work is queued per stream and runs only when the host needs it: a
 * synchronize, an event query or wait, a blocking copy, a host read of results.  Then the
 * scheduler runs the heads of the streams whose dependencies are met, most recently enqueued
 * first, so work that lacks a dependency runs too early and shows.  Device memory is readable
 * by the host only while queued work runs (emu::device_open); everywhere else a host access
 * faults.  One global lock (emu::lock) serialises everything. */
#ifndef PTDP_EMU_INTERNAL_H
#define PTDP_EMU_INTERNAL_H

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>

namespace emu {

/* Everything that touches emulated device state holds this (recursive: a library call made
 * while queued work runs takes it again). */
std::recursive_mutex &lock();

/* Queue host work on a stream (NULL: the legacy default stream).  fn runs when the stream is
 * drained, in stream order, with device memory open; it returns cudaSuccess or an error, which
 * becomes the device's sticky error (CUDA's behaviour for a fault inside a kernel) with `what`
 * in the message printed once.  Returns cudaErrorInvalidResourceHandle for a destroyed stream. */
cudaError_t enqueue(cudaStream_t s, const char *what, std::function<cudaError_t()> fn);
/* A stream handle a call may use: the legacy NULL stream or a live created one. */
bool valid_stream(cudaStream_t s);

/* Queue an operation that completes later (a collective waiting for its peers): start runs
 * when it reaches the head of its stream, then poll is called (lock held, device open) until
 * it returns true; while it returns false the stream is busy (cudaStreamQuery says
 * cudaErrorNotReady) and other streams may run.  A non-cudaSuccess status from start or
 * through *err of poll is sticky like enqueue's. */
cudaError_t enqueue_async(cudaStream_t s, const char *what, std::function<cudaError_t()> start,
                          std::function<bool(cudaError_t *err)> poll);

/* Run whatever queued work can run now (collectives are started, not waited for): the device
 * making progress while the host waits in MPI (emu_mpi.cc).  A no-op inside the scheduler. */
void kick();

/* Device memory.  device_bytes: how many bytes of one live allocation start at p (0 when p is
 * not inside a live device allocation).  is_device_range: [p, p + n) inside one allocation. */
size_t device_bytes(const void *p);
inline bool is_device_range(const void *p, size_t n) { return n == 0 || device_bytes(p) >= n; }
/* Pinned host memory from cudaMallocHost (its bytes from p, 0 if not pinned). */
size_t pinned_bytes(const void *p);

/* Open device memory to the host (nesting) and close it again; queued work runs inside. */
void device_open();
void device_close();

/* Record a fault found while queued work runs (a kernel's out-of-bounds access, a library
 * call's bad pointer): printed at once to stderr as "ptdp-emu: " + message, then the device's
 * sticky error (every later call returns it, as after a fault on a GPU). */
void fault(cudaError_t e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Set the error cudaGetLastError returns (a bad argument to an API call). */
cudaError_t api_error(cudaError_t e);

/* The device's sticky error (cudaSuccess while none). */
cudaError_t sticky();

/* Properties of the emulated device: an H100 SXM (cc 9.0, 132 SMs, 227 KB of shared memory a
 * block, 1024 threads a block). */
const cudaDeviceProp &props();

} // namespace emu

#endif
