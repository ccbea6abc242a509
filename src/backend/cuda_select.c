/* What every build knows about the CUDA backend (ptdp/cuda.h): whether it is compiled in, and
 * the pure choice of a rank's GPU.  Without CUDA, the entry points fail with a message saying
 * so, which is what `backend = cuda` prints on such a build. */
#include "ptdp/cuda.h"

#include "ptdp/config.h"
#include "ptdp/error.h"

#include <stdio.h>

int ptdp_cuda_built(void) { return PTDP_HAVE_CUDA; }
int ptdp_nccl_built(void) { return PTDP_HAVE_NCCL; }

int ptdp_cuda_pick_device(int device, int local_rank, int count)
{
  if (device >= 0) return device;
  if (count <= 0) return -1;
  return (local_rank < 0 ? 0 : local_rank) % count;
}

#if !PTDP_HAVE_CUDA
int ptdp_cuda_device_count(char *why, size_t n)
{
  if (why && n) snprintf(why, n, "this ptdp was built without CUDA");
  return -1;
}

/* Nothing waits on a GPU in a build without one. */
int ptdp_cuda_set_wait_timeout(double seconds)
{
  (void)seconds;
  return PTDP_OK;
}

int ptdp_backend_cuda_create(const ptdp_backend_options *opt, ptdp_backend **be)
{
  *be = NULL;
  PTDP_CHECK(0, "backend = cuda: this ptdp was built without CUDA (configure found no CUDA toolkit with nvcc, "
                "cuBLAS and cuBLASLt: see config.log; configure --with-cuda=DIR); use backend = cpu");
  return PTDP_OK;
}
#endif
