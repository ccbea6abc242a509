/* The CUDA backend (ptdp/cuda.h): the table of ptdp/backend.h on one GPU and one stream.
 *
 * Every operation is enqueued on the backend's stream, in program order, so operations need no
 * synchronisation among themselves; the host waits only in synchronize, in sumsq and
 * sumsq_many (which return numbers), in unscale_check (which returns a flag), in to_host into
 * pageable memory, when adamw_many's table cache is emptied, at free and at destroy (PTDP_CUDA_WAITS=1 counts them: ptdp-gpu(7), "Where the host waits").
 * Those waits poll (ptdp/cuda.h, "How the host waits"): the stream may hold collectives that
 * never finish, which the NCCL transport's checkers then turn into an error instead of a hang.
 * Memory is cudaMalloc'ed and zeroed on the stream at set-up.  What the steps allocate on the
 * device (the scratch, which grows during the first step, sumsq_many's and adamw_many's tables)
 * is stream-ordered, cudaMallocAsync and cudaFreeAsync on the stream: cudaMalloc and cudaFree
 * wait for the whole device, so during a step they could wait for a collective or pipeline
 * message of another stream that never completes, with no timeout (ptdp_cu_scratch).  Their
 * pinned host copies (first optimizer step only) come after a polled wait for the device.
 * Kernels live in a .cu file per concern (src/backend/local.mk lists them: cuda_layernorm.cu,
 * cuda_xent.cu, cuda_optimizer.cu, ..., cuda_llama.cu for RMSNorm, RoPE, SwiGLU), GEMMs in
 * cuda_gemm.c, the attention in cuda_attention.c, the fused attention (16-bit tables) in
 * cuda_flash.cu.
 * Storage type (ptdp_backend_options.dtype): fp32, or bf16/fp16 natively: every (S) operand of
 * ptdp/backend.h in the 16-bit type, kernels templated on it with fp32 math (cuda_elem.h),
 * GEMMs on the tensor cores with fp32 accumulation (cuda_gemm.c), so no conversion passes and
 * no fp32 copies: what the mixed-precision wrapper computes, rounded at the same places except
 * in the unfused attention (cuda_attention.c says where).  Every launch is
 * followed by cudaGetLastError (cheap, no synchronisation) and every wait checks the stream's
 * status, so a failed launch or a fault inside a kernel ends the run with CUDA's message
 * (PTDP_CALL_CUDA).  Calls whose failure cannot be returned (free, destroy) print it.
 * Run on a GPU (NVIDIA H200, 2026-11-26): test_ops and test_cuda_model pass; see ptdp-gpu(7). */
#include "ptdp/cuda.h"

#include "cuda_internal.h"

#include "ptdp/error.h"
#include "ptdp/error_gpu.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LT_WORKSPACE (32u << 20) /* cuBLASLt's workspace: 32 MiB, what its Hopper kernels ask for */
#define COLSUM_CHUNKS 64         /* row chunks of the deterministic column sums */
#define WAIT_CHECKS 64           /* checkers: the NCCL transport's, one per communicator (6 a grid,
                                    4 ring links) */
#define WAIT_TIMEOUT_S 600.0     /* Megatron's distributed-timeout-minutes default, 10 */

/* The waits' state (ptdp/cuda.h): process-wide, as the GPU is. */
static struct {
  ptdp_cuda_wait_check fn;
  void *ctx;
} checks[WAIT_CHECKS];
static int nchecks;
static double wait_timeout = WAIT_TIMEOUT_S;

int ptdp_cuda_device_count(char *why, size_t n)
{
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    if (why && n) snprintf(why, n, "cudaGetDeviceCount: %s: %s", cudaGetErrorName(e), cudaGetErrorString(e));
    cudaGetLastError(); /* clear it */
    return -1;
  }
  if (count == 0 && why && n) snprintf(why, n, "cudaGetDeviceCount: 0 devices");
  return count;
}

/* ---- waits: poll, run the checkers, sleep (ptdp/cuda.h) ---- */

double ptdp_cuda_clock(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int ptdp_cuda_wait_check_add(ptdp_cuda_wait_check fn, void *ctx)
{
  if (nchecks == WAIT_CHECKS)
    return PTDP_FAIL(PTDP_ERR_LIB,
                           "cuda: more than %d wait checkers (internal limit)", WAIT_CHECKS);
  checks[nchecks].fn = fn;
  checks[nchecks].ctx = ctx;
  nchecks++;
  return PTDP_OK;
}

void ptdp_cuda_wait_check_remove(ptdp_cuda_wait_check fn, void *ctx)
{
  for (int i = 0; i < nchecks; i++)
    if (checks[i].fn == fn && checks[i].ctx == ctx) {
      checks[i] = checks[--nchecks];
      return;
    }
}

int ptdp_cuda_set_wait_timeout(double seconds)
{
  PTDP_CHECK(seconds > 0, "cuda: the wait timeout must be positive (got %g s)", seconds);
  wait_timeout = seconds;
  return PTDP_OK;
}

double ptdp_cuda_wait_timeout(void) { return wait_timeout; }

/* Every checker once; *pending: any of them still has work on the GPU. */
static int run_checks(double waited, int *pending)
{
  const int expired = waited >= wait_timeout;
  *pending = 0;
  for (int i = 0; i < nchecks; i++) {
    int p = 0;
    PTDP_CALL(checks[i].fn(checks[i].ctx, waited, expired, &p));
    *pending |= p;
  }
  return PTDP_OK;
}

/* cudaStreamQuery; a "not ready" it leaves as the last error is no error: cleared. */
static cudaError_t query_stream(cudaStream_t stream)
{
  cudaError_t e = cudaStreamQuery(stream);
  if (e == cudaErrorNotReady && cudaPeekAtLastError() == cudaErrorNotReady) cudaGetLastError();
  return e;
}

/* Spin for the first millisecond (short kernels), then sleep 20 us, from 0.1 s on 1 ms. */
void ptdp_cuda_pause(double waited)
{
  if (waited < 1e-3) return;
  struct timespec ts = {0, waited < 0.1 ? 20000L : 1000000L};
  nanosleep(&ts, NULL);
}

/* PTDP_CUDA_WAITS=1 (not 0): every wait counted by what it waits for, the counts printed at
 * exit, one line each (ptdp-gpu(7), "Where the host waits"): how test_emu_host_waits.sh shows
 * that an iteration waits the same number of times whatever its number of micro-batches. */
#define WAIT_KINDS 32
static struct {
  int on; /* -1 not read yet, 0 off, 1 counting */
  int n;
  const char *what[WAIT_KINDS];
  long count[WAIT_KINDS];
} waits = {.on = -1};

static void print_waits(void)
{
  long total = 0;
  for (int i = 0; i < waits.n; i++) total += waits.count[i];
  fprintf(stderr, "ptdp: cuda: host waits: %ld\n", total);
  for (int i = 0; i < waits.n; i++) fprintf(stderr, "ptdp: cuda: host waits: %ld for %s\n", waits.count[i], waits.what[i]);
}

static void count_wait(const char *what)
{
  if (waits.on < 0) {
    const char *e = getenv("PTDP_CUDA_WAITS");
    waits.on = e && *e && strcmp(e, "0") != 0;
    if (waits.on && atexit(print_waits) != 0) waits.on = 0;
  }
  if (!waits.on) return;
  int i = 0;
  while (i < waits.n && strcmp(waits.what[i], what) != 0) i++;
  if (i == waits.n) {
    if (waits.n == WAIT_KINDS) i = WAIT_KINDS - 1, what = "(other)"; /* the last row collects the rest */
    else waits.n++;
    waits.what[i] = what;
  }
  waits.count[i]++;
}

/* Until stream has drained, and with idle also until no checker has work pending (nothing that
 * a free or an allocation could wait behind).  An expired wait no checker claims goes on: say
 * so once. */
static int wait_poll(cudaStream_t stream, int idle, const char *what)
{
  count_wait(what);
  const double t0 = ptdp_cuda_clock();
  int told = 0;
  for (;;) {
    cudaError_t e = query_stream(stream);
    if (e != cudaSuccess && e != cudaErrorNotReady)
      return PTDP_FAIL(PTDP_ERR_LIB, "CUDA error %s: %s (waiting for %s)",
                             cudaGetErrorName(e), cudaGetErrorString(e), what);
    const double waited = ptdp_cuda_clock() - t0;
    int pending = 0;
    PTDP_CALL(run_checks(waited, &pending));
    if (e == cudaSuccess && !(idle && pending)) return PTDP_OK;
    if (waited >= wait_timeout && !told++)
      fprintf(stderr, "ptdp: cuda: %s has waited %.0f s for the GPU with no collective pending; still waiting\n",
              what, waited);
    ptdp_cuda_pause(waited);
  }
}

int ptdp_cuda_wait_stream(void *stream, const char *what)
{
  PTDP_CALL(wait_poll((cudaStream_t)stream, 0, what));
  return PTDP_OK;
}

/* The backend's stream drained, then the sticky error checked (a kernel's fault). */
static int wait_stream(ptdp_backend *be, const char *what)
{
  PTDP_CALL(wait_poll(((ptdp_cu_ctx *)be->ctx)->stream, 0, what));
  PTDP_CALL_CUDA(cudaGetLastError());
  return PTDP_OK;
}

/* ---- memory ---- */

/* Growing the scratch is stream-ordered (cudaFreeAsync, cudaMallocAsync on the compute stream):
 * the old block is released once the work queued before it is done, and nothing waits.  It
 * happens inside the first step's pipeline run, where a cudaFree or cudaMalloc, which wait for
 * the whole device, could wait for a pipeline message that the peer sends only after a message
 * this rank has yet to send (a deadlock, ended by the timeout).  Shapes repeat, so it happens in
 * the first step only. */
int ptdp_cu_scratch(ptdp_backend *be, size_t n, float **p)
{
  ptdp_cu_ctx *c = be->ctx;
  if (n > c->scratch_n) {
    if (c->scratch) PTDP_CALL_CUDA(cudaFreeAsync(c->scratch, c->stream));
    c->scratch = NULL;
    c->scratch_n = 0;
    cudaError_t e = cudaMallocAsync((void **)&c->scratch, n * sizeof(float), c->stream);
    if (e == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      c->scratch = NULL;
      return PTDP_FAIL(PTDP_ERR_MEM, "GPU %d out of memory growing the scratch to %zu bytes", c->device,
                       n * sizeof(float));
    }
    PTDP_CALL_CUDA(e);
    c->scratch_n = n;
  }
  *p = c->scratch;
  return PTDP_OK;
}

static int cu_alloc(ptdp_backend *be, void **p, size_t bytes)
{
  ptdp_cu_ctx *c = be->ctx;
  *p = NULL;
  if (!bytes) return PTDP_OK;
  cudaError_t e = cudaMalloc(p, bytes);
  if (e == cudaErrorMemoryAllocation) {
    size_t free_b = 0, total = 0;
    cudaGetLastError(); /* the allocation's error, reported below */
    if (cudaMemGetInfo(&free_b, &total) != cudaSuccess)
      return PTDP_FAIL(PTDP_ERR_MEM, "GPU %d out of memory allocating %zu bytes",
                             c->device, bytes);
    return PTDP_FAIL(PTDP_ERR_MEM,
                           "GPU %d out of memory allocating %zu bytes (%zu of %zu bytes free)", c->device, bytes,
                           free_b, total);
  }
  PTDP_CALL_CUDA(e);
  PTDP_CALL_CUDA(cudaMemsetAsync(*p, 0, bytes, c->stream));
  return PTDP_OK;
}

/* A release that cannot return its failure prints it (what names the object). */
static void report_cuda(cudaError_t e, const char *call, const char *what)
{
  if (e != cudaSuccess)
    fprintf(stderr, "ptdp: cuda: %s (%s) failed: %s: %s\n", call, what, cudaGetErrorName(e), cudaGetErrorString(e));
}

/* Nothing may run when cudaFree waits for the device (see ptdp_cu_scratch): a wait that fails
 * (a collective that timed out) leaves the memory allocated rather than hang in cudaFree. */
static void cu_free(ptdp_backend *be, void *p)
{
  if (!p) return;
  if (wait_poll(((ptdp_cu_ctx *)be->ctx)->stream, 1, "freeing device memory")) {
    fprintf(stderr, "ptdp: cuda: device memory %p not freed: the GPU did not become idle\n", p);
    return;
  }
  report_cuda(cudaFree(p), "cudaFree", "backend memory");
}

static int cu_memset0(ptdp_backend *be, void *p, size_t bytes)
{
  ptdp_cu_ctx *c = be->ctx;
  if (bytes) PTDP_CALL_CUDA(cudaMemsetAsync(p, 0, bytes, c->stream));
  return PTDP_OK;
}

static int cu_copy(ptdp_backend *be, void *dst, const void *src, size_t bytes)
{
  ptdp_cu_ctx *c = be->ctx;
  if (bytes && dst != src) PTDP_CALL_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, c->stream));
  return PTDP_OK;
}

/* From pageable host memory the call returns once the source has been read, so the caller may
 * reuse it at once (CUDA's documented behaviour for pageable host-to-device copies). */
static int cu_to_device(ptdp_backend *be, void *dst, const void *src, size_t bytes)
{
  ptdp_cu_ctx *c = be->ctx;
  if (bytes) PTDP_CALL_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, c->stream));
  return PTDP_OK;
}

/* Into pageable memory the copy would block the host in CUDA, behind whatever the stream
 * holds: wait for the stream by polling first, so the copy has nothing left to wait for. */
static int cu_to_host(ptdp_backend *be, void *dst, const void *src, size_t bytes)
{
  ptdp_cu_ctx *c = be->ctx;
  if (!bytes) return PTDP_OK;
  PTDP_CALL(wait_stream(be, "to_host"));
  PTDP_CALL_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, c->stream));
  return PTDP_OK;
}

static int cu_synchronize(ptdp_backend *be)
{
  PTDP_CALL(wait_stream(be, "synchronize"));
  return PTDP_OK;
}

static void aw_release(ptdp_cu_ctx *c);

/* The GPU idle first (or given up on: then the memory is left to the process's end, since
 * cudaFree would wait for the stuck work); every release's failure printed. */
static void ctx_release(ptdp_cu_ctx *c)
{
  if (c->stream && wait_poll(c->stream, 1, "destroying the CUDA backend")) {
    fprintf(stderr, "ptdp: cuda: backend destroyed with work still queued on the GPU; its memory is not freed\n");
    return;
  }
  /* what the steps allocated, stream-ordered (no device-wide wait while collectives run), first */
  if (c->scratch) report_cuda(cudaFreeAsync(c->scratch, c->stream), "cudaFreeAsync", "scratch");
  if (c->many) report_cuda(cudaFreeAsync(c->many, c->stream), "cudaFreeAsync", "sumsq_many sums");
  if (c->many_tab) report_cuda(cudaFreeAsync(c->many_tab, c->stream), "cudaFreeAsync", "sumsq_many table");
  if (c->many_part) report_cuda(cudaFreeAsync(c->many_part, c->stream), "cudaFreeAsync", "sumsq_many partial sums");
  aw_release(c);
  ptdp_cu_gemm_release(c);
  if (c->lt_work) report_cuda(cudaFree(c->lt_work), "cudaFree", "cuBLASLt workspace");
  if (c->red) report_cuda(cudaFree(c->red), "cudaFree", "sumsq partials");
  if (c->red_host) report_cuda(cudaFreeHost(c->red_host), "cudaFreeHost", "sumsq result");
  if (c->many_host) report_cuda(cudaFreeHost(c->many_host), "cudaFreeHost", "sumsq_many results");
  if (c->many_tab_host) report_cuda(cudaFreeHost(c->many_tab_host), "cudaFreeHost", "sumsq_many table");
  free(c->aw);
  free(c->aw_plan);
  cublasStatus_t st = CUBLAS_STATUS_SUCCESS;
  if (c->lt && (st = cublasLtDestroy(c->lt)) != CUBLAS_STATUS_SUCCESS)
    fprintf(stderr, "ptdp: cuda: cublasLtDestroy failed: %s\n", cublasGetStatusString(st));
  if (c->blas && (st = cublasDestroy(c->blas)) != CUBLAS_STATUS_SUCCESS)
    fprintf(stderr, "ptdp: cuda: cublasDestroy failed: %s\n", cublasGetStatusString(st));
  if (c->stream) report_cuda(cudaStreamDestroy(c->stream), "cudaStreamDestroy", "the backend's stream");
}

static void cu_destroy(ptdp_backend *be)
{
  ptdp_cu_ctx *c = be->ctx;
  if (!c) return;
  ctx_release(c);
  free(c);
  be->ctx = NULL;
}

/* ---- operations: each a kernel launch (cuda_internal.h) on the stream ---- */
#define CTX ((ptdp_cu_ctx *)be->ctx)

static int cu_layernorm_forward(ptdp_backend *be, const float *x, const float *w, const float *b, float *y,
                                float *mean, float *rstd, long long rows, int h, float eps)
{
  PTDP_CALL_CUDA(ptdp_cuk_layernorm_forward(CTX->stream, CTX->t, x, w, b, y, mean, rstd, rows, h, eps));
  return PTDP_OK;
}

static int cu_layernorm_backward_add(ptdp_backend *be, const float *dy, const float *x, const float *w,
                                     const float *mean, const float *rstd, float *dx, float *dw, float *db, long long rows,
                                     int h, const float *res)
{
  float *part = NULL;
  PTDP_CALL(ptdp_cu_scratch(be, (size_t)2 * COLSUM_CHUNKS * h, &part));
  PTDP_CALL_CUDA(ptdp_cuk_layernorm_backward(CTX->stream, CTX->t, dy, x, w, mean, rstd, dx, dw, db, rows, h, part,
                                             COLSUM_CHUNKS, res));
  return PTDP_OK;
}

static int cu_layernorm_backward(ptdp_backend *be, const float *dy, const float *x, const float *w, const float *mean,
                                 const float *rstd, float *dx, float *dw, float *db, long long rows, int h)
{
  return cu_layernorm_backward_add(be, dy, x, w, mean, rstd, dx, dw, db, rows, h, NULL);
}

static int cu_gelu_forward(ptdp_backend *be, const float *x, float *y, size_t n)
{
  PTDP_CALL_CUDA(ptdp_cuk_gelu_forward(CTX->stream, CTX->t, x, y, n));
  return PTDP_OK;
}

static int cu_gelu_backward(ptdp_backend *be, const float *x, const float *dy, float *dx, size_t n)
{
  PTDP_CALL_CUDA(ptdp_cuk_gelu_backward(CTX->stream, CTX->t, x, dy, dx, n));
  return PTDP_OK;
}

static int cu_bias_forward(ptdp_backend *be, float *y, const float *b, long long rows, int cols)
{
  PTDP_CALL_CUDA(ptdp_cuk_bias_forward(CTX->stream, CTX->t, y, b, rows, cols));
  return PTDP_OK;
}

static int cu_bias_backward(ptdp_backend *be, const float *dy, float *db, long long rows, int cols)
{
  float *part = NULL;
  PTDP_CALL(ptdp_cu_scratch(be, (size_t)COLSUM_CHUNKS * cols, &part));
  PTDP_CALL_CUDA(ptdp_cuk_bias_backward(CTX->stream, CTX->t, dy, db, rows, cols, part, COLSUM_CHUNKS));
  return PTDP_OK;
}

static int cu_add(ptdp_backend *be, float *y, const float *x, size_t n)
{
  PTDP_CALL_CUDA(ptdp_cuk_add(CTX->stream, CTX->t, y, x, n));
  return PTDP_OK;
}

static int cu_scale(ptdp_backend *be, float *y, float a, size_t n)
{
  PTDP_CALL_CUDA(ptdp_cuk_scale(CTX->stream, y, a, n));
  return PTDP_OK;
}

static int cu_dropout_forward(ptdp_backend *be, float *x, uint8_t *mask, long long rows, int cols,
                              const ptdp_dropout_key *k)
{
  PTDP_CALL_CUDA(ptdp_cuk_dropout_forward(CTX->stream, CTX->t, x, mask, rows, cols, *k));
  return PTDP_OK;
}

static int cu_dropout_backward(ptdp_backend *be, float *dx, const uint8_t *mask, size_t n, float p)
{
  PTDP_CALL_CUDA(ptdp_cuk_dropout_backward(CTX->stream, CTX->t, dx, mask, n, p));
  return PTDP_OK;
}

static int cu_dropout_backward_to(ptdp_backend *be, float *dst, const float *src, const uint8_t *mask, size_t n, float p)
{
  PTDP_CALL_CUDA(ptdp_cuk_dropout_backward_to(CTX->stream, CTX->t, dst, src, mask, n, p));
  return PTDP_OK;
}

static int cu_embedding_forward(ptdp_backend *be, const float *wte, const int32_t *tok, long long v0, long long vl,
                                float *out, long long rows, int h)
{
  PTDP_CALL_CUDA(ptdp_cuk_embedding_forward(CTX->stream, CTX->t, wte, tok, v0, vl, out, rows, h));
  return PTDP_OK;
}

static int cu_embedding_backward(ptdp_backend *be, const float *dout, const int32_t *tok, long long v0, long long vl,
                                 float *dwte, long long rows, int h)
{
  PTDP_CALL_CUDA(ptdp_cuk_embedding_backward(CTX->stream, CTX->t, dout, tok, v0, vl, dwte, rows, h));
  return PTDP_OK;
}

static int cu_xent_stats(ptdp_backend *be, const float *logits, const int32_t *target, long long v0, long long rows,
                         int vl, float *rowmax, float *tgt)
{
  PTDP_CALL_CUDA(ptdp_cuk_xent_stats(CTX->stream, CTX->t, logits, target, v0, rows, vl, rowmax, tgt));
  return PTDP_OK;
}

static int cu_xent_sumexp(ptdp_backend *be, const float *logits, const float *gmax, long long rows, int vl, float *se)
{
  PTDP_CALL_CUDA(ptdp_cuk_xent_sumexp(CTX->stream, CTX->t, logits, gmax, rows, vl, se));
  return PTDP_OK;
}

static int cu_xent_grad(ptdp_backend *be, float *logits, const int32_t *target, long long v0, const float *gmax,
                        const float *se, long long rows, int vl, float scale)
{
  PTDP_CALL_CUDA(ptdp_cuk_xent_grad(CTX->stream, CTX->t, logits, target, v0, gmax, se, rows, vl, scale));
  return PTDP_OK;
}

static int cu_bias_dropout_add(ptdp_backend *be, float *y, const float *b, uint8_t *mask, const ptdp_dropout_key *k,
                               const float *res, long long rows, int cols)
{
  PTDP_CALL_CUDA(ptdp_cuk_bias_dropout_add(CTX->stream, CTX->t, y, b, mask, res, rows, cols, *k));
  return PTDP_OK;
}

static int cu_bias_dropout_add_layernorm(ptdp_backend *be, float *y, const float *b, uint8_t *mask,
                                         const ptdp_dropout_key *k, const float *res, long long rows, int h,
                                         const float *w, const float *nb, float *out, float *mean, float *rstd,
                                         float eps)
{
  PTDP_CALL_CUDA(
      ptdp_cuk_bias_dropout_add_layernorm(CTX->stream, CTX->t, y, b, mask, res, rows, h, *k, w, nb, out, mean, rstd, eps));
  return PTDP_OK;
}

static int cu_xent_stats_local(ptdp_backend *be, const float *logits, const int32_t *target, long long v0,
                               long long rows, int vl, float *lmax, float *lsum, float *tgt)
{
  PTDP_CALL_CUDA(ptdp_cuk_xent_stats_local(CTX->stream, CTX->t, logits, target, v0, rows, vl, lmax, lsum, tgt));
  return PTDP_OK;
}

static int cu_xent_rescale(ptdp_backend *be, float *lsum, const float *lmax, const float *gmax, long long rows)
{
  PTDP_CALL_CUDA(ptdp_cuk_xent_rescale(CTX->stream, lsum, lmax, gmax, rows));
  return PTDP_OK;
}

static int cu_xent_fused(ptdp_backend *be, float *logits, const int32_t *target, long long v0, long long rows, int vl,
                         float *rowmax, float *se, float *tgt, float scale)
{
  PTDP_CALL_CUDA(ptdp_cuk_xent_fused(CTX->stream, CTX->t, logits, target, v0, rows, vl, rowmax, se, tgt, scale));
  return PTDP_OK;
}

static int cu_xent_loss(ptdp_backend *be, const float *gmax, const float *se, const float *tgt, long long rows,
                        float *loss)
{
  PTDP_CALL_CUDA(ptdp_cuk_xent_loss(CTX->stream, gmax, se, tgt, rows, loss));
  return PTDP_OK;
}

/* adamw_many's tables: a step's buckets each have their own, the same every step, so each is
 * uploaded once (from a pinned copy that is never rewritten, so the upload waits for nothing) and
 * found again by comparing contents.  More than AW_TABLES different tables (the ranges changed
 * that often) empties the cache: after a wait, since earlier launches may still read them. */
#define AW_TABLES 1024

static void aw_release(ptdp_cu_ctx *c)
{
  for (int i = 0; i < c->aw_n; i++) {
    report_cuda(cudaFreeAsync(c->aw[i].dev, c->stream), "cudaFreeAsync", "adamw_many table");
    report_cuda(cudaFreeHost(c->aw[i].host), "cudaFreeHost", "adamw_many table");
  }
  c->aw_n = 0;
}

/* The table plan (count entries in c->aw_plan) on the device: the cached one, or a new upload. */
static int aw_table(ptdp_backend *be, int count, int blocks, const ptdp_cu_aw_table **out)
{
  ptdp_cu_ctx *c = be->ctx;
  const size_t bytes = (size_t)count * sizeof(ptdp_cuk_adamw_entry);
  for (int i = 0; i < c->aw_n; i++)
    if (c->aw[i].count == count && !memcmp(c->aw[i].host, c->aw_plan, bytes)) {
      *out = &c->aw[i];
      return PTDP_OK;
    }
  if (c->aw_n == AW_TABLES) {
    PTDP_CALL(wait_poll(c->stream, 1, "adamw_many: emptying its tables"));
    aw_release(c);
  }
  if (c->aw_n == c->aw_cap) {
    const int cap = c->aw_cap ? 2 * c->aw_cap : 8;
    ptdp_cu_aw_table *a = realloc(c->aw, (size_t)cap * sizeof *a);
    if (!a) return PTDP_FAIL(PTDP_ERR_MEM, "adamw_many: room for %d tables: out of memory", cap);
    c->aw = a;
    c->aw_cap = cap;
  }
  ptdp_cu_aw_table t = {.count = count, .blocks = blocks};
  /* pinning host memory may wait for the whole device: first a polled wait (a stalled collective
   * then ends in the timeout, not a hang); new tables come in the first step only */
  PTDP_CALL(wait_poll(c->stream, 1, "adamw_many: pinning a new table"));
  cudaError_t e = cudaMallocAsync(&t.dev, bytes, c->stream);
  if (e == cudaSuccess) e = cudaMallocHost(&t.host, bytes);
  if (e == cudaSuccess) {
    memcpy(t.host, c->aw_plan, bytes);
    e = cudaMemcpyAsync(t.dev, t.host, bytes, cudaMemcpyHostToDevice, c->stream);
  }
  if (e != cudaSuccess) {
    if (t.dev) report_cuda(cudaFreeAsync(t.dev, c->stream), "cudaFreeAsync", "adamw_many table");
    if (t.host) report_cuda(cudaFreeHost(t.host), "cudaFreeHost", "adamw_many table");
    return PTDP_FAIL(PTDP_ERR_LIB, "adamw_many: a table of %d ranges: %s: %s", count, cudaGetErrorName(e),
                     cudaGetErrorString(e));
  }
  c->aw[c->aw_n] = t;
  *out = &c->aw[c->aw_n++];
  return PTDP_OK;
}

/* The ranges' table (ptdp_cuk_adamw_entry) on the device (aw_table), then one launch.  Bias
 * corrections as cu_adamw's. */
static int cu_adamw_many(ptdp_backend *be, const ptdp_adamw_range *r, int count, ptdp_dtype t16, float gscale,
                         float lr, float b1, float b2, float eps, long long step)
{
  ptdp_cu_ctx *c = be->ctx;
  if (count <= 0) return PTDP_OK;
  for (int i = 0; i < count; i++)
    PTDP_CHECK_INTERNAL(!r[i].w16 || t16 == PTDP_BF16 || t16 == PTDP_F16,
                        "adamw_many: a 16-bit copy of type %d (bf16 or fp16)", (int)t16);
  const size_t bytes = (size_t)count * sizeof(ptdp_cuk_adamw_entry);
  _Static_assert(sizeof(ptdp_cuk_adamw_entry) == 5 * sizeof(void *) + sizeof(size_t) + 4 * sizeof(int),
                 "ptdp_cuk_adamw_entry has padding: its memcmp would see indeterminate bytes");
  if (bytes > c->aw_plan_bytes) {
    void *p = realloc(c->aw_plan, bytes);
    if (!p) return PTDP_FAIL(PTDP_ERR_MEM, "adamw_many: a table of %d ranges: out of memory", count);
    c->aw_plan = p;
    c->aw_plan_bytes = bytes;
  }
  memset(c->aw_plan, 0, bytes);
  const int blocks = ptdp_cuk_adamw_plan(r, count, c->aw_plan);
  const ptdp_cu_aw_table *t = NULL;
  PTDP_CALL(aw_table(be, count, blocks, &t));
  float bc1 = 1.0f - powf(b1, (float)step), bc2 = 1.0f - powf(b2, (float)step);
  PTDP_CALL_CUDA(ptdp_cuk_adamw_many(c->stream, t->dev, count, t->blocks, t16, gscale, lr, b1, b2, eps, bc1, bc2));
  return PTDP_OK;
}

/* bias corrections on the host with powf, as the CPU backend computes them */
static int cu_adamw(ptdp_backend *be, float *p, const float *g, float *m, float *v, size_t n, float lr, float b1,
                    float b2, float eps, float wd, long long step)
{
  float bc1 = 1.0f - powf(b1, (float)step), bc2 = 1.0f - powf(b2, (float)step);
  PTDP_CALL_CUDA(ptdp_cuk_adamw(CTX->stream, p, g, m, v, n, lr, b1, b2, eps, wd, bc1, bc2));
  return PTDP_OK;
}

/* The interface returns a double, not an error code: a CUDA failure (or a collective that
 * timed out ahead of it on the stream) is reported and turned into NaN, which the optimizer's
 * finiteness check of the norm then stops on. */
static double cu_sumsq(ptdp_backend *be, const float *x, size_t n)
{
  ptdp_cu_ctx *c = be->ctx;
  cudaError_t e = ptdp_cuk_sumsq(c->stream, x, n, c->red, c->red + PTDP_CUK_RED_BLOCKS);
  if (e == cudaSuccess) e = cudaMemcpyAsync(c->red_host, c->red + PTDP_CUK_RED_BLOCKS, sizeof(double),
                                            cudaMemcpyDeviceToHost, c->stream);
  if (e != cudaSuccess) {
    PTDP_FAIL(PTDP_ERR_LIB, "CUDA error %s: %s (in sumsq)", cudaGetErrorName(e),
                    cudaGetErrorString(e));
    return NAN;
  }
  if (wait_stream(be, "sumsq")) return NAN;
  return *c->red_host;
}

/* Room for count arrays' sums and table on the device and in pinned memory (kept between calls;
 * the previous call has waited for its copies, so the pinned table is free to refill). */
static int many_room(ptdp_cu_ctx *c, int count)
{
  if (count <= c->many_cap) return PTDP_OK;
  PTDP_CALL(wait_poll(c->stream, 1, "sumsq_many: pinning its tables")); /* as adamw_many's tables */
  if (c->many) PTDP_CALL_CUDA(cudaFreeAsync(c->many, c->stream));
  if (c->many_host) PTDP_CALL_CUDA(cudaFreeHost(c->many_host));
  if (c->many_tab) PTDP_CALL_CUDA(cudaFreeAsync(c->many_tab, c->stream));
  if (c->many_tab_host) PTDP_CALL_CUDA(cudaFreeHost(c->many_tab_host));
  c->many = c->many_host = NULL;
  c->many_tab = c->many_tab_host = NULL;
  c->many_cap = 0;
  PTDP_CALL_CUDA(cudaMallocAsync((void **)&c->many, (size_t)count * sizeof(double), c->stream));
  PTDP_CALL_CUDA(cudaMallocHost((void **)&c->many_host, (size_t)count * sizeof(double)));
  PTDP_CALL_CUDA(cudaMallocAsync(&c->many_tab, (size_t)count * sizeof(ptdp_cuk_sumsq_entry), c->stream));
  PTDP_CALL_CUDA(cudaMallocHost(&c->many_tab_host, (size_t)count * sizeof(ptdp_cuk_sumsq_entry)));
  c->many_cap = count;
  return PTDP_OK;
}

/* Room for blocks partial sums on the device. */
static int many_part_room(ptdp_cu_ctx *c, int blocks)
{
  if (blocks <= c->many_part_cap) return PTDP_OK;
  if (c->many_part) PTDP_CALL_CUDA(cudaFreeAsync(c->many_part, c->stream));
  c->many_part = NULL;
  c->many_part_cap = 0;
  PTDP_CALL_CUDA(cudaMallocAsync((void **)&c->many_part, (size_t)blocks * sizeof(double), c->stream));
  c->many_part_cap = blocks;
  return PTDP_OK;
}

/* The arrays' table to the device, sumsq's blocks for all of them in one launch and their finals
 * in another (ptdp_cuk_sumsq_many: each sum sumsq's bits), one copy back and one wait. */
static int cu_sumsq_many(ptdp_backend *be, const float *const *x, const size_t *n, int count, double *out)
{
  ptdp_cu_ctx *c = be->ctx;
  if (count <= 0) return PTDP_OK;
  PTDP_CALL(many_room(c, count));
  ptdp_cuk_sumsq_entry *tab = c->many_tab_host;
  const int blocks = ptdp_cuk_sumsq_plan(x, n, count, tab);
  PTDP_CALL(many_part_room(c, blocks));
  PTDP_CALL_CUDA(cudaMemcpyAsync(c->many_tab, tab, (size_t)count * sizeof *tab, cudaMemcpyHostToDevice, c->stream));
  PTDP_CALL_CUDA(ptdp_cuk_sumsq_many(c->stream, c->many_tab, count, blocks, c->many_part, c->many));
  PTDP_CALL_CUDA(cudaMemcpyAsync(c->many_host, c->many, (size_t)count * sizeof(double), cudaMemcpyDeviceToHost,
                                 c->stream));
  PTDP_CALL(wait_stream(be, "sumsq_many"));
  memcpy(out, c->many_host, (size_t)count * sizeof(double));
  return PTDP_OK;
}

static int cu_convert(ptdp_backend *be, void *dst, ptdp_dtype dt, const void *src, ptdp_dtype st, size_t n)
{
  PTDP_CALL_CUDA(ptdp_cuk_convert(CTX->stream, dst, dt, src, st, n));
  return PTDP_OK;
}

/* The flag lives in the first slot of the sumsq partials (as an int) and comes back through the
 * same pinned word: both are free between operations, which run in order on the one stream. */
static int cu_unscale_check(ptdp_backend *be, float *x, size_t n, float inv_scale, int *found)
{
  ptdp_cu_ctx *c = be->ctx;
  int *flag = (int *)c->red, *flag_host = (int *)c->red_host;
  PTDP_CALL_CUDA(ptdp_cuk_unscale_check(c->stream, x, n, inv_scale, flag));
  PTDP_CALL_CUDA(cudaMemcpyAsync(flag_host, flag, sizeof(int), cudaMemcpyDeviceToHost, c->stream));
  PTDP_CALL(wait_stream(be, "unscale_check"));
  *found = *flag_host;
  return PTDP_OK;
}

/* The Llama family's optional operations (cuda_llama.cu).  RMSNorm's dw goes through column-sum
 * partials in the scratch, as LayerNorm's. */
static int cu_rmsnorm_forward(ptdp_backend *be, const float *x, const float *w, float *y, float *rstd, long long rows,
                              int h, float eps)
{
  PTDP_CALL_CUDA(ptdp_cuk_rmsnorm_forward(CTX->stream, CTX->t, x, w, y, rstd, rows, h, eps));
  return PTDP_OK;
}

static int cu_bias_dropout_add_rmsnorm(ptdp_backend *be, float *y, const float *b, uint8_t *mask,
                                       const ptdp_dropout_key *k, const float *res, long long rows, int h,
                                       const float *w, float *out, float *rstd, float eps)
{
  PTDP_CALL_CUDA(ptdp_cuk_bias_dropout_add_rmsnorm(CTX->stream, CTX->t, y, b, mask, res, rows, h, *k, w, out, rstd, eps));
  return PTDP_OK;
}

static int cu_rmsnorm_backward_add(ptdp_backend *be, const float *dy, const float *x, const float *w, const float *rstd,
                                   float *dx, float *dw, long long rows, int h, const float *res)
{
  float *part = NULL; /* LayerNorm's column sums: dw's partials and the dy sums beside them */
  PTDP_CALL(ptdp_cu_scratch(be, (size_t)2 * COLSUM_CHUNKS * h, &part));
  PTDP_CALL_CUDA(
      ptdp_cuk_rmsnorm_backward(CTX->stream, CTX->t, dy, x, w, rstd, dx, dw, rows, h, part, COLSUM_CHUNKS, res));
  return PTDP_OK;
}

static int cu_rmsnorm_backward(ptdp_backend *be, const float *dy, const float *x, const float *w, const float *rstd,
                               float *dx, float *dw, long long rows, int h)
{
  return cu_rmsnorm_backward_add(be, dy, x, w, rstd, dx, dw, rows, h, NULL);
}

static int cu_rope(ptdp_backend *be, float *qkv, const ptdp_rope_desc *d, const float *table, int inverse)
{
  PTDP_CALL_CUDA(ptdp_cuk_rope(CTX->stream, CTX->t, qkv, d, table, inverse));
  return PTDP_OK;
}

static int cu_swiglu_forward(ptdp_backend *be, const float *x, float *y, long long rows, int f)
{
  PTDP_CALL_CUDA(ptdp_cuk_swiglu_forward(CTX->stream, CTX->t, x, y, rows, f));
  return PTDP_OK;
}

static int cu_swiglu_backward(ptdp_backend *be, const float *x, const float *dy, float *dx, long long rows, int f)
{
  PTDP_CALL_CUDA(ptdp_cuk_swiglu_backward(CTX->stream, CTX->t, x, dy, dx, rows, f));
  return PTDP_OK;
}

/* Operations of the table under other names (PTDP_BACKEND_FILL pastes prefix_op). */
#define cu_gemm ptdp_cu_gemm
#define cu_attention_forward ptdp_cu_attention_forward
#define cu_attention_backward ptdp_cu_attention_backward

/* Fused attention (cuda_flash.cu: wmma on 16-bit operands, so 16-bit tables only; grouped-query
 * attention included, both sets of kernels).  A head size the kernels do not cover is the user's
 * model: refused with the way out. */
static int flash_covers(const ptdp_attn_desc *d)
{
  PTDP_CHECK(ptdp_cuk_flash_supported(d),
             "attention-backend flash on the cuda backend needs a head size that is a multiple of 16 up to 128 "
             "(this model: %d), at most 65535 samples x local heads (%d x %d) and local heads a multiple of the "
             "local query groups (%d); use --attention-backend unfused",
             d->hd, d->b, d->al, d->groups);
  return PTDP_OK;
}

static int cu_flash_forward(ptdp_backend *be, const ptdp_attn_desc *d, const float *qkv, float *ctx, float *lse)
{
  PTDP_CALL(flash_covers(d));
  PTDP_CALL_CUDA(ptdp_cuk_flash_forward(CTX->stream, CTX->t, d, qkv, ctx, lse));
  return PTDP_OK;
}

/* The backward's row sums D = rowsum(dctx * ctx) [b, al, s] live in the backend's scratch. */
static int cu_flash_backward(ptdp_backend *be, const ptdp_attn_desc *d, const float *qkv, const float *ctx,
                             const float *lse, const float *dctx, float *dqkv)
{
  float *drow;
  PTDP_CALL(flash_covers(d));
  PTDP_CALL(ptdp_cu_scratch(be, (size_t)d->b * d->al * d->s, &drow));
  PTDP_CALL_CUDA(ptdp_cuk_flash_backward(CTX->stream, CTX->t, d, qkv, ctx, lse, dctx, dqkv, drow));
  return PTDP_OK;
}

/* A 16-bit table has gemm_wgrad (16-bit A, B into the fp32 main gradient) and the fused
 * attention; an fp32 one has neither (its gemm with beta 1 is the same operation; FlashAttention
 * has no fp32 path, so --attention-backend auto runs the unfused attention there). */
/* The head sizes, counts and groups the fused kernels take (cuda_flash.cu; grouped-query attention's rows
 * [groups][al/groups + 2][hd] included); auto runs the others unfused. */
static int cu_flash_supports(const ptdp_backend *be, const ptdp_attn_desc *d)
{
  return ptdp_cuk_flash_supported(d);
}

static void fill_table(ptdp_backend *be, ptdp_dtype t)
{
  be->name = "cuda";
  be->host_accessible = 0;
  be->dtype = t;
  PTDP_BACKEND_FILL(be, cu);
  be->sumsq_many = cu_sumsq_many; /* optional, every storage type */
  be->adamw_many = cu_adamw_many;   /* optional too */
  be->xent_loss = cu_xent_loss;
  be->bias_dropout_add = cu_bias_dropout_add; /* optional */
  be->bias_dropout_add_layernorm = cu_bias_dropout_add_layernorm; /* optional */
  be->xent_fused = cu_xent_fused;
  be->xent_stats_local = cu_xent_stats_local;
  be->xent_rescale = cu_xent_rescale;
  be->dropout_backward_to = cu_dropout_backward_to;
  be->layernorm_backward_add = cu_layernorm_backward_add;
  be->rmsnorm_backward_add = cu_rmsnorm_backward_add;
  be->bias_dropout_add_rmsnorm = cu_bias_dropout_add_rmsnorm;
  if (t != PTDP_F32) {
    be->gemm_wgrad = ptdp_cu_gemm_wgrad;
    be->flash_forward = cu_flash_forward;
    be->flash_backward = cu_flash_backward;
    be->flash_supports = cu_flash_supports;
  }
}

/* The Llama family (optional ops, every storage type): RMSNorm, RoPE, SwiGLU (cuda_llama.cu) and
 * the unfused attention's grouped queries (cuda_attention.c). */
static void fill_llama(ptdp_backend *be)
{
  be->grouped_attention = 1;
  PTDP_BACKEND_FILL_LLAMA(be, cu);
}

/* The GEMMs with fused epilogues (optional ops, every storage type; cuda_gemm.c). */
static void fill_epilogues(ptdp_backend *be)
{
  be->gemm_bias = ptdp_cu_gemm_bias;
  be->gemm_bias_gelu = ptdp_cu_gemm_bias_gelu;
  be->gemm_dgelu_bgrad = ptdp_cu_gemm_dgelu_bgrad;
}

/* The GPU, its stream, the cuBLAS(Lt) handles and the fixed buffers.  The batched GEMMs' math
 * mode: fp32 pedantic (no TF32); with 16-bit storage the default (tensor cores on the 16-bit
 * products, accumulated in fp32: CUBLAS_COMPUTE_32F) without reduced-precision split-K sums. */
static int ctx_setup(ptdp_cu_ctx *c, int device)
{
  const cublasMath_t math = c->t == PTDP_F32
                                ? CUBLAS_PEDANTIC_MATH
                                : (cublasMath_t)(CUBLAS_DEFAULT_MATH | CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION);
  c->device = device;
  PTDP_CALL_CUDA(cudaSetDevice(device));
  PTDP_CALL_CUDA(cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking));
  PTDP_CALL_CUBLAS(cublasCreate(&c->blas));
  PTDP_CALL_CUBLAS(cublasSetStream(c->blas, c->stream));
  PTDP_CALL_CUBLAS(cublasSetMathMode(c->blas, math));
  PTDP_CALL_CUBLAS(cublasLtCreate(&c->lt));
  c->lt_work_bytes = LT_WORKSPACE;
  PTDP_CALL_CUDA(cudaMalloc(&c->lt_work, c->lt_work_bytes));
  PTDP_CALL_CUDA(cudaMalloc((void **)&c->red, (PTDP_CUK_RED_BLOCKS + 1) * sizeof(double)));
  PTDP_CALL_CUDA(cudaMallocHost((void **)&c->red_host, sizeof(double)));
  return PTDP_OK;
}

int ptdp_backend_cuda_create(const ptdp_backend_options *opt, ptdp_backend **out)
{
  static const ptdp_backend_options defaults = {.ranks_on_node = 1, .local_rank = 0, .device = -1};
  *out = NULL;
  if (!opt) opt = &defaults;
  char why[256] = "";
  int count = ptdp_cuda_device_count(why, sizeof why);
  PTDP_CHECK_LOCAL(count > 0, "backend = cuda: no usable GPU on this node (%s); use backend = cpu", why);
  int device = ptdp_cuda_pick_device(opt->device, opt->local_rank, count);
  PTDP_CHECK_LOCAL(device >= 0 && device < count, "device = %d: this node has %d GPU(s) (0 to %d)", device, count,
                   count - 1);
  PTDP_CHECK(opt->dtype == PTDP_F32 || opt->dtype == PTDP_BF16 || opt->dtype == PTDP_F16,
             "cuda: storage type %d is none of fp32, bf16, fp16", (int)opt->dtype);
  ptdp_backend *be;
  ptdp_cu_ctx *c;
  PTDP_CALLOC(be, 1, sizeof *be);
  PTDP_CALLOC(c, 1, sizeof *c);
  be->ctx = c;
  c->t = opt->dtype;
  fill_table(be, c->t);
  fill_epilogues(be);
  fill_llama(be);
  int err = ctx_setup(c, device);
  if (err) {
    cu_destroy(be);
    free(be);
    return ptdp_error_trace(err, __FILE__, __LINE__, __func__);
  }
  be->stream = c->stream;
  *out = be;
  return PTDP_OK;
}
