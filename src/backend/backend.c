/* Backends by name, and the part of their life cycle common to all: see include/ptdp/backend.h. */
#include "ptdp/backend.h"

#include "ptdp/cpu_threads.h"
#include "ptdp/cuda.h"
#include "ptdp/error.h"

#include "guard.h"

#include <stdlib.h>
#include <string.h>

static int cpu_create(const ptdp_backend_options *opt, ptdp_backend **be) { return ptdp_backend_cpu_create(be); }
static int guard_create(const ptdp_backend_options *opt, ptdp_backend **be)
{
  return ptdp_backend_guard_create(PTDP_GUARD_RESERVE, be);
}

/* uses_cpu_threads: the backend computes with OpenMP and OpenBLAS on this process's cores */
static const struct {
  const char *name;
  int (*create)(const ptdp_backend_options *opt, ptdp_backend **be);
  int uses_cpu_threads;
} backends[] = {
  {"cpu", cpu_create, 1},
  {"guard", guard_create, 1},
  {"cuda", ptdp_backend_cuda_create, 0},
};

int ptdp_backend_create(const char *name, const ptdp_backend_options *opt, ptdp_backend **be)
{
  static const ptdp_backend_options defaults = {.num_threads = 0, .ranks_on_node = 1, .report = 0,
                                                 .local_rank = 0, .device = -1};
  *be = NULL;
  if (!opt) opt = &defaults;
  size_t k = 0, n = sizeof backends / sizeof backends[0];
  while (k < n && !(name && !strcmp(name, backends[k].name))) k++;
  PTDP_CHECK(k < n, "unknown backend '%s': the backends are %s", name ? name : "(none)", PTDP_BACKEND_NAMES);
  if (backends[k].uses_cpu_threads) ptdp_cpu_threads_setup(opt->num_threads, opt->ranks_on_node, opt->report);
  PTDP_CALL(backends[k].create(opt, be));
  return 0;
}

/* A backend storing fp32 has no gemm_wgrad: its gemm with beta 1 is the same operation. */
int ptdp_backend_gemm_wgrad(ptdp_backend *be, int trans_a, int trans_b, int M, int N, int K, float alpha,
                            const float *A, int lda, const float *B, int ldb, float *C, int ldc)
{
  if (be->gemm_wgrad) PTDP_CALL(be->gemm_wgrad(be, trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, C, ldc));
  else PTDP_CALL(be->gemm(be, trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, 1.0f, C, ldc));
  return 0;
}

void ptdp_backend_destroy(ptdp_backend **be)
{
  if (!be || !*be) return;
  if ((*be)->destroy) (*be)->destroy(*be);
  free(*be);
  *be = NULL;
}
