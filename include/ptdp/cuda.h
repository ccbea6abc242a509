/* The CUDA backend (src/backend/cuda*.{c,cu}): one GPU per rank, every operation of
 * ptdp/backend.h on one stream, GEMMs through cuBLASLt with fp32 accumulation.
 *
 * These functions exist in every build.  Built without CUDA (configure found no toolkit),
 * ptdp_backend_cuda_create fails with a message saying so and ptdp_cuda_device_count gives -1;
 * the pure helpers below need no GPU and are what the host-side tests pin down. */
#ifndef PTDP_CUDA_H
#define PTDP_CUDA_H

#include "ptdp/backend.h"

/* 1 when the CUDA backend (resp. the NCCL transport) is compiled in. */
int ptdp_cuda_built(void);
int ptdp_nccl_built(void);

/* GPUs visible to this process: -1 when built without CUDA or when the runtime reports an
 * error (no driver, no device); the runtime's message then goes into why[n] (if why). */
int ptdp_cuda_device_count(char *why, size_t n);

/* The GPU of a rank (pure).  device >= 0 (the key): that one; -1: local_rank mod count, so
 * ranks of one node spread over its GPUs and share them round-robin when there are more ranks
 * than GPUs.  Worked example: 4 GPUs, 8 ranks on the node: local ranks 0..7 get 0 1 2 3 0 1 2 3. */
int ptdp_cuda_pick_device(int device, int local_rank, int count);

/* The CUDA backend on the GPU ptdp_cuda_pick_device gives for opt (NULL: local rank 0, auto). */
int ptdp_backend_cuda_create(const ptdp_backend_options *opt, ptdp_backend **be);

#endif
