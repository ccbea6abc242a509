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

/* ---- How the host waits for the GPU (CUDA builds only: the backend and the NCCL transport) ----
 * Queued work may include operations of other libraries that can wait forever: an NCCL
 * collective whose peer never joins.  So the backend never blocks in cudaStreamSynchronize: its
 * waits (synchronize, to_host, sumsq, growing its scratch, free, destroy) poll the stream
 * (cudaStreamQuery, sleeping up to 1 ms between queries) and on every poll call each registered
 * checker with the seconds waited so far and expired = 1 once they exceed the wait timeout.  A
 * checker returns an error it has pushed (its communicator failed, or the timeout expired with
 * its own work still pending) to end the wait with that error, and sets *pending to 1 while it
 * has work queued on the GPU.  Expired with no checker objecting, the wait goes on: a kernel is
 * not timed out, only communication is.  The NCCL transport registers one checker per
 * communicator.  Process-wide (one GPU per process), like ptdp_comm_set_wait_sleep. */
typedef int (*ptdp_cuda_wait_check)(void *ctx, double waited, int expired, int *pending);
int ptdp_cuda_wait_check_add(ptdp_cuda_wait_check fn, void *ctx);
void ptdp_cuda_wait_check_remove(ptdp_cuda_wait_check fn, void *ctx);
/* The wait timeout in seconds (the key distributed-timeout-minutes times 60; default 600). */
int ptdp_cuda_set_wait_timeout(double seconds);
double ptdp_cuda_wait_timeout(void);
/* The waits' clock (seconds, monotonic) and their pause between two polls after `waited`
 * seconds: none for the first millisecond, then 20 us, from 0.1 s on 1 ms. */
double ptdp_cuda_clock(void);
void ptdp_cuda_pause(double waited);
/* Wait as above until stream (a cudaStream_t) has drained; what names the wait in messages. */
int ptdp_cuda_wait_stream(void *stream, const char *what);

#endif
