/* The emulated runtime's errors and device: CUDA's error names and strings, the last and the
 * sticky error, the properties of the emulated H100, device selection and synchronization.
 * Errors follow CUDA: a bad argument is returned (and by cudaGetLastError once); a fault while
 * queued work runs is printed when it happens and sticky. */
#include "emu_runtime.h"

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace emu {

cudaError_t last_error = cudaSuccess, sticky_error = cudaSuccess;

namespace {

int current_device = 0;

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

} // namespace

/* PTDP_EMU_DEVICES: how many GPUs the node has (default 1). */
int device_count()
{
  const char *e = getenv("PTDP_EMU_DEVICES");
  return e ? atoi(e) : 1;
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

} // namespace emu

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

} /* extern "C" */
