/* A test-only backend that stands in for a GPU under an MPI that is not CUDA-aware.
 *
 * Its memory is host memory (page-aligned mmap), so the test can fill and read it, but it
 * reports host_accessible = 0 (or 1, to check that then nothing is staged), and it can be
 * locked: staging_lock(be, 1) makes every allocation PROT_NONE, so a transport that hands a
 * device buffer to MPI instead of staging it faults rather than silently working.  to_host,
 * to_device and copy open the pages they copy for the duration of the copy, and count their
 * calls and bytes; synchronize counts its calls.  Only the memory operations are filled in. */
#ifndef PTDP_TEST_STAGING_BACKEND_H
#define PTDP_TEST_STAGING_BACKEND_H

#include "ptdp/backend.h"

typedef struct {
  long long to_host_calls, to_device_calls, copy_calls, sync_calls;
  double to_host_bytes, to_device_bytes, copy_bytes;
} staging_counts;

int staging_backend_create(int host_accessible, ptdp_backend **be);
/* The counters (reset them by assigning (staging_counts){0}). */
staging_counts *staging_backend_counts(ptdp_backend *be);
/* Lock (1) or unlock (0) every allocation; a no-op for a host-accessible backend, whose memory
 * MPI reads directly. */
void staging_backend_lock(ptdp_backend *be, int locked);

#endif
