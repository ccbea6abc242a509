/* Backends by name, and the part of their life cycle common to all: see include/ptdp/backend.h. */
#include "ptdp/backend.h"

#include "ptdp/cpu_threads.h"
#include "ptdp/cuda.h"
#include "ptdp/error.h"
#include "ptdp/options.h"

#include "guard.h"

#include <assert.h>
#include <stdlib.h>

static int cpu_create(const ptdp_backend_options *opt, ptdp_backend **be) { return ptdp_backend_cpu_create(be); }
static int guard_create(const ptdp_backend_options *opt, ptdp_backend **be)
{
  return ptdp_backend_guard_create(PTDP_GUARD_RESERVE, be);
}

/* Indexed by ptdp_backend_kind (the names: PTDP_BACKEND_CHOICES).  uses_cpu_threads: the backend
 * computes with OpenMP and OpenBLAS on this process's cores. */
static const struct {
  int (*create)(const ptdp_backend_options *opt, ptdp_backend **be);
  int uses_cpu_threads;
} backends[] = {
  [PTDP_BACKEND_CPU] = {cpu_create, 1},
  [PTDP_BACKEND_GUARD] = {guard_create, 1},
  [PTDP_BACKEND_CUDA] = {ptdp_backend_cuda_create, 0},
};

int ptdp_backend_create_kind(ptdp_backend_kind kind, const ptdp_backend_options *opt, ptdp_backend **be)
{
  static const ptdp_backend_options defaults = {.num_threads = 0, .ranks_on_node = 1, .report = 0,
                                                 .local_rank = 0, .device = -1};
  *be = NULL;
  if (!opt) opt = &defaults;
  assert((size_t)kind < sizeof backends / sizeof backends[0]);
  if (backends[kind].uses_cpu_threads) ptdp_cpu_threads_setup(opt->num_threads, opt->ranks_on_node, opt->report);
  PTDP_CALL(backends[kind].create(opt, be));
  return ptdp_backend_check_ops(*be);
}

int ptdp_backend_use_flash(const ptdp_backend *be, ptdp_attention_backend choice, const ptdp_attn_desc *d,
                           int *flash)
{
  const int has = be->flash_forward && be->flash_backward;
  const int takes = has && (!be->flash_supports || be->flash_supports(be, d));
  *flash = choice == PTDP_ATTN_FLASH || (choice == PTDP_ATTN_AUTO && takes && be->stream);
  PTDP_CHECK(has || !*flash,
             "attention-backend = flash: the %s backend has no fused attention in %s (use unfused or auto%s)",
             be->name, ptdp_dtype_name(be->dtype), be->stream ? "; on cuda it needs bf16 or fp16" : "");
  /* refused for the groups alone: the same shape without them would be taken */
  ptdp_attn_desc ungrouped = *d;
  ungrouped.groups = 0;
  const int grouped = d->groups > 0 && d->groups != d->al && has && be->flash_supports &&
                      be->flash_supports(be, &ungrouped);
  PTDP_CHECK(takes || !*flash || !grouped,
             "attention-backend = flash: the %s backend's fused attention does not take grouped queries "
             "(%d heads in %d groups): use unfused or auto", be->name, d->al, d->groups);
  PTDP_CHECK(takes || !*flash,
             "attention-backend = flash: the %s backend's fused attention does not take heads of %d (a multiple "
             "of 16 up to 128) or %d x %d (sample, head) pairs: use unfused or auto", be->name, d->hd, d->b, d->al);
  return 0;
}

int ptdp_backend_check_ops(const ptdp_backend *be)
{
#define CHECK_OP(P, op) PTDP_CHECK_INTERNAL(be->op, "the %s backend has no operation %s", be->name, #op);
  PTDP_BACKEND_OPS(CHECK_OP, unused)
#undef CHECK_OP
  /* optional operations that are used only as pairs: a table with one alone is a backend's
   * mistake the model would not report (it would take the fallback, or refuse the architecture) */
#define CHECK_WITH(a, b)                                                                                 \
  PTDP_CHECK_INTERNAL(!be->a == !be->b, "the %s backend has the operation %s without %s", be->name,     \
                      be->a ? #a : #b, be->a ? #b : #a);
  CHECK_WITH(flash_forward, flash_backward)
  CHECK_WITH(xent_stats_local, xent_rescale)
  CHECK_WITH(rmsnorm_forward, rmsnorm_backward)
  CHECK_WITH(swiglu_forward, swiglu_backward)
#undef CHECK_WITH
  return 0;
}

int ptdp_backend_create(const char *name, const ptdp_backend_options *opt, ptdp_backend **be)
{
  *be = NULL;
  const int kind = name ? ptdp_options_choice_index(PTDP_BACKEND_CHOICES, name) : -1;
  PTDP_CHECK(kind >= 0, "unknown backend '%s': the backends are %s", name ? name : "(none)", PTDP_BACKEND_CHOICES);
  return ptdp_backend_create_kind((ptdp_backend_kind)kind, opt, be);
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
