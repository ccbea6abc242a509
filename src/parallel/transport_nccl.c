/* The NCCL transport: the table of transport.h with collectives on backend memory (fp32, bf16,
 * fp16) through NCCL.  NCCL sums bf16 and fp16 as transport.h says (each partial sum rounded
 * to the type), so results on more than 2 ranks may differ from the MPI transport's by the
 * order of the additions.
 *
 * One NCCL communicator per MPI group, made from it (rank 0's ncclUniqueId broadcast over the
 * group's MPI communicator, then ncclCommInitRank), and one stream of its own, so collectives
 * overlap the backend's compute stream; once open_ring has run, also a ring link per (sender,
 * direction) of the group's ring (below).  Ordering is by events, never by the host:
 *     before an operation  the comm stream waits for everything the compute stream has issued
 *                          (the buffers' producers);
 *     blocking operation   the compute stream then waits for the collective, so every later
 *                          backend operation (and the host's to_host + synchronize) sees the
 *                          result; the host returns at once;
 *     nonblocking          the request holds an event recorded after the collective: test
 *                          queries it, wait makes the compute stream wait for it.
 * What NCCL does not do here goes to an MPI transport on the same group (staged through host
 * memory for device buffers, transport_mpi.c): doubles and bytes (host memory), broadcasts of
 * host bytes, barriers, and point-to-point other than ring messages.
 *
 * Ring messages (comm.h: the pipeline's activations to rank + 1, gradients to rank - 1) go over
 * ring links: a two-rank NCCL communicator with a stream of its own for each (sender,
 * direction), four per rank, made by open_ring in one global order (and destroyed in it).  NCCL
 * matches sends and receives by call order, with no tags, and runs a stream in order: on one
 * stream per peer a receive posted ahead would hold up this rank's next send of the other
 * direction (each rank waiting for the other's send); on a link of its own each waits only for
 * messages of its own direction, which the caller posts in matching order.
 * A delegated operation is started nonblocking on the MPI transport (broadcasts and barriers
 * directly on the group's communicator) and its request wrapped in ours, so that every wait on
 * this group, MPI's included, comes through this transport.
 *
 * No hang (Megatron's distributed timeout): the host never blocks on the GPU.  Each transport
 * registers a checker (watchdog) with the CUDA backend's waits (ptdp/cuda.h), and tests its own
 * requests the same way: on every poll it reads ncclCommGetAsyncError, and once the wait timeout
 * (distributed-timeout-minutes) has passed with a collective of its own still pending it aborts
 * its communicator (ncclCommAbort) and fails with a message naming the group and the last
 * collective issued on it.  Delegated MPI operations are waited for by polling with the same
 * timeout (MPI_Wait would block forever on a dead peer): the message names the group and the
 * operation; MPI has no abort of one communicator, so the failing rank's MPI_Abort ends them.
 * NOT YET RUN ON A GPU: see ptdp-gpu(7). */
#include "transport.h"

#include "ptdp/cuda.h"
#include "ptdp/error.h"
#include "ptdp/error_gpu.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One NCCL communicator with its stream: the group's (collectives), or a ring link (point-to-
 * point in one direction between two neighbours, ptdp_transport's open_ring). */
typedef struct {
  ncclComm_t nccl;
  cudaStream_t stream;  /* its own */
  cudaStream_t compute; /* the attached backend's */
  cudaEvent_t ready;    /* compute -> this stream's ordering, re-recorded per operation */
  int watched;          /* the checker is registered */
  int aborted;          /* ncclCommAbort'ed: nccl is gone */
  char group[200];      /* "the tp group (world ranks 0 1)", for messages */
  char last[64];        /* the last operation issued: "all-reduce of 4096 floats" */
} nccl_link;

/* Ring links: [0] the messages travelling to rank + 1, [1] to rank - 1 (mod size). */
enum { RING_DIRS = 2 };
/* The rank a ring link from rank `from` of g reaches, direction index di (0: +1, 1: -1). */
static int ring_to(int g, int from, int di) { return (from + (di ? g - 1 : 1)) % g; }

typedef struct {
  nccl_link all;                  /* the group's communicator: collectives */
  nccl_link *ring_send[RING_DIRS]; /* this rank -> its neighbour in each direction */
  nccl_link *ring_recv[RING_DIRS]; /* its neighbour -> this rank, travelling that direction */
  ptdp_transport *mpi;            /* what NCCL does not carry */
  MPI_Comm comm;                  /* the group's (ptdp_comm owns it): host broadcasts and barriers */
} nccl_ctx;

/* A request: a collective's event, or an operation delegated to MPI (inner, the MPI transport's
 * request) that this transport waits for by polling. */
typedef struct {
  struct ptdp_comm_request head; /* first: a ptdp_comm_req points at the whole request */
  nccl_link *link;               /* the communicator of an NCCL operation (NULL: delegated) */
  cudaEvent_t done;
  ptdp_comm_req inner;
  double first_test; /* when the host first found it pending (0: not yet) */
  char what[80];     /* a delegated operation, for messages: "MPI all-reduce of 1 doubles" */
} nccl_req;

/* What NCCL carries: the kinds in backend memory. */
static int nccl_only(ptdp_tr_data d) { return ptdp_tr_data_device(d); }

static ncclDataType_t nccl_type(ptdp_tr_data d)
{
  return d == PTDP_TR_DEV_BF16 ? ncclBfloat16 : d == PTDP_TR_DEV_F16 ? ncclFloat16 : ncclFloat32;
}


/* A query's "not ready" is no error: not left behind as the last error. */
static cudaError_t not_ready_cleared(cudaError_t e)
{
  if (e == cudaErrorNotReady && cudaPeekAtLastError() == cudaErrorNotReady) cudaGetLastError();
  return e;
}

/* ---- the watchdog ---- */

static void abort_comm(nccl_link *x)
{
  if (x->aborted || !x->nccl) return;
  ncclResult_t r = ncclCommAbort(x->nccl);
  if (r != ncclSuccess)
    fprintf(stderr, "ptdp: nccl: ncclCommAbort on %s failed: %s\n", x->group, ncclGetErrorString(r));
  x->aborted = 1;
}

/* An asynchronous error NCCL reports (a peer or the network failed): abort, fail. */
static int async_check(nccl_link *x)
{
  ncclResult_t ae = ncclSuccess;
  PTDP_CALL_NCCL(ncclCommGetAsyncError(x->nccl, &ae));
  if (ae == ncclSuccess || ae == ncclInProgress) return PTDP_OK;
  abort_comm(x);
  ptdp_error_set_collective(0); /* this rank's own failure: it prints, the others are aborted */
  return PTDP_FAIL(PTDP_ERR_LIB,
                         "NCCL reported an error on %s during %s: %s; its NCCL communicator is aborted",
                         x->group, x->last, ncclGetErrorString(ae));
}

static int timed_out(nccl_link *x, double waited)
{
  abort_comm(x);
  ptdp_error_set_collective(0); /* this rank's own failure: it prints, the others are aborted */
  const double t = ptdp_cuda_wait_timeout();
  return PTDP_FAIL(PTDP_ERR_LIB,
                         "NCCL: the %s on %s has not completed after %.3g s (distributed-timeout-minutes %.3g): a "
                         "rank of the group never joined it or failed; its NCCL communicator is aborted",
                         x->last, x->group, waited, t / 60);
}

/* The checker (ptdp_cuda_wait_check): pending while the comm stream holds work; an error when
 * NCCL reports one, or when the wait has expired with our collective still pending. */
static int watchdog(void *ctx, double waited, int expired, int *pending)
{
  nccl_link *x = ctx;
  *pending = 0;
  if (x->aborted) return PTDP_OK; /* failed already; its queued work completes without data */
  PTDP_CALL(async_check(x));
  cudaError_t e = not_ready_cleared(cudaStreamQuery(x->stream));
  if (e != cudaSuccess && e != cudaErrorNotReady) PTDP_CALL_CUDA(e);
  *pending = e == cudaErrorNotReady;
  if (expired && *pending) return timed_out(x, waited);
  return PTDP_OK;
}

/* ---- ordering ---- */

/* The comm stream waits for the work the compute stream has issued so far; what, n and d name
 * the collective for the watchdog's messages. */
static int begin(nccl_link *x, const char *what, size_t n, ptdp_tr_data d)
{
  snprintf(x->last, sizeof x->last, "%s of %zu %s", what, n, ptdp_tr_data_name(d));
  PTDP_CHECK_LOCAL(!x->aborted, "NCCL: %s on %s, whose communicator was aborted after a failure", x->last, x->group);
  PTDP_CALL_CUDA(cudaEventRecord(x->ready, x->compute));
  PTDP_CALL_CUDA(cudaStreamWaitEvent(x->stream, x->ready, 0));
  return PTDP_OK;
}

/* After the operation on link x: blocking, the compute stream waits for it; else a request
 * with its event. */
static int finish(ptdp_transport *tr, nccl_link *x, ptdp_comm_req *req)
{
  nccl_req *r;
  PTDP_CALLOC(r, 1, sizeof *r);
  r->head.tr = tr;
  r->link = x;
  cudaError_t e = cudaEventCreateWithFlags(&r->done, cudaEventDisableTiming);
  if (e != cudaSuccess) free(r);
  PTDP_CALL_CUDA(e);
  e = cudaEventRecord(r->done, x->stream);
  if (e == cudaSuccess && !req) e = cudaStreamWaitEvent(x->compute, r->done, 0);
  if (e != cudaSuccess || !req) {
    cudaError_t d = cudaEventDestroy(r->done); /* released once it has completed */
    free(r);
    PTDP_CALL_CUDA(e);
    PTDP_CALL_CUDA(d);
    return PTDP_OK;
  }
  *req = &r->head;
  return PTDP_OK;
}

/* ---- what MPI carries (transport_mpi.c), waited for by polling with the same timeout ----
 * MPI cannot be aborted, but the wait can end: past the timeout the run fails naming the group
 * and the operation (its request is left to MPI_Abort), where MPI_Wait would block forever. */


static int mpi_timed_out(nccl_ctx *x, const char *what, double waited)
{
  ptdp_error_set_collective(0); /* this rank's own failure: it prints, the others are aborted */
  return PTDP_FAIL(PTDP_ERR_LIB,
                         "the %s on %s has not completed after %.3g s (distributed-timeout-minutes %.3g): a rank "
                         "of the group never joined it or failed",
                         what, x->all.group, waited, ptdp_cuda_wait_timeout() / 60);
}

/* One test of a delegated request, timed from its first test. */
static int delegated_test(nccl_ctx *x, nccl_req *r, int *done)
{
  *done = 1;
  if (r->inner == PTDP_COMM_REQ_NULL) return PTDP_OK;
  PTDP_CALL(x->mpi->test(x->mpi, r->inner, done));
  if (*done) return PTDP_OK;
  const double t = ptdp_cuda_clock();
  if (r->first_test == 0) r->first_test = t;
  if (t - r->first_test >= ptdp_cuda_wait_timeout()) return mpi_timed_out(x, r->what, t - r->first_test);
  return PTDP_OK;
}

static int delegated_wait(nccl_ctx *x, nccl_req *r)
{
  const double t0 = ptdp_cuda_clock();
  for (int done = 0;;) {
    PTDP_CALL(delegated_test(x, r, &done));
    if (done) return PTDP_OK;
    ptdp_cuda_pause(ptdp_cuda_clock() - t0);
  }
}

/* A delegated operation's request, started by the MPI transport into inner: returned wrapped
 * (req), or waited for here (req NULL: a blocking call); the format names the operation in
 * messages.  A failed wait keeps the request: MPI may still write its buffers. */
static int delegated(ptdp_transport *tr, ptdp_comm_req inner, ptdp_comm_req *req, const char *fmt, ...)
  __attribute__((format(printf, 4, 5)));
static int delegated(ptdp_transport *tr, ptdp_comm_req inner, ptdp_comm_req *req, const char *fmt, ...)
{
  nccl_ctx *x = tr->ctx;
  nccl_req *r = calloc(1, sizeof *r);
  if (!r) {
    if (inner != PTDP_COMM_REQ_NULL) PTDP_CALL(x->mpi->wait(x->mpi, inner)); /* no memory: wait as MPI would */
    if (inner != PTDP_COMM_REQ_NULL) x->mpi->req_free(x->mpi, inner);
    return PTDP_FAIL(PTDP_ERR_MEM, "out of memory for a request");
  }
  r->head.tr = tr;
  r->inner = inner;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(r->what, sizeof r->what, fmt, ap);
  va_end(ap);
  if (req) {
    *req = &r->head;
    return PTDP_OK;
  }
  PTDP_CALL(delegated_wait(x, r));
  if (inner != PTDP_COMM_REQ_NULL) x->mpi->req_free(x->mpi, inner);
  free(r);
  return PTDP_OK;
}

/* A host MPI request on the group's communicator (broadcast, barrier), waited for by polling. */
static int mpi_request_wait(nccl_ctx *x, MPI_Request *mr, const char *what)
{
  const double t0 = ptdp_cuda_clock();
  for (;;) {
    int done = 0;
    PTDP_CALL_MPI(MPI_Test(mr, &done, MPI_STATUS_IGNORE));
    if (done) return PTDP_OK;
    const double waited = ptdp_cuda_clock() - t0;
    if (waited >= ptdp_cuda_wait_timeout()) return mpi_timed_out(x, what, waited);
    ptdp_cuda_pause(waited);
  }
}

/* ---- the table ---- */

static int tn_allreduce(ptdp_transport *tr, void *buf, size_t n, ptdp_tr_data d, ptdp_tr_op op, ptdp_comm_req *req)
{
  nccl_ctx *x = tr->ctx;
  if (!nccl_only(d)) {
    ptdp_comm_req inner = PTDP_COMM_REQ_NULL;
    PTDP_CALL(x->mpi->allreduce(x->mpi, buf, n, d, op, &inner));
    return delegated(tr, inner, req, "MPI all-reduce%s of %zu %s", op == PTDP_TR_MAX ? " (max)" : "", n,
                     ptdp_tr_data_name(d));
  }
  if (op == PTDP_TR_MAX && d != PTDP_TR_DEV_F32) { /* as the MPI transport: comm.h offers none */
    ptdp_error_set_collective(0);
    return PTDP_FAIL(PTDP_ERR_INTERNAL,
                           "the NCCL transport reduces %s by sum only", ptdp_tr_data_name(d));
  }
  nccl_link *L = &x->all;
  PTDP_CALL(begin(L, op == PTDP_TR_MAX ? "all-reduce (max)" : "all-reduce", n, d));
  PTDP_CALL_NCCL(ncclAllReduce(buf, buf, n, nccl_type(d), op == PTDP_TR_MAX ? ncclMax : ncclSum, L->nccl, L->stream));
  PTDP_CALL(finish(tr, L, req));
  return PTDP_OK;
}

/* A block collective (gather: all-gather, else reduce-scatter) of data NCCL does not move: the
 * MPI transport's, started nonblocking and returned wrapped in our request. */
static int delegated_blocks(ptdp_transport *tr, int gather, const void *send, void *recv, size_t n, ptdp_tr_data d,
                            ptdp_comm_req *req)
{
  ptdp_transport *mpi = ((nccl_ctx *)tr->ctx)->mpi;
  ptdp_comm_req inner = PTDP_COMM_REQ_NULL;
  PTDP_CALL((gather ? mpi->allgather : mpi->reduce_scatter)(mpi, send, recv, n, d, &inner));
  return delegated(tr, inner, req, "MPI %s of %zu %s", gather ? "all-gather" : "reduce-scatter", n * (size_t)tr->size,
                   ptdp_tr_data_name(d));
}

/* recv [g, n]; NCCL's in place is ours: send == recv + rank n */
static int tn_allgather(ptdp_transport *tr, const void *send, void *recv, size_t n, ptdp_tr_data d,
                        ptdp_comm_req *req)
{
  nccl_ctx *x = tr->ctx;
  if (!nccl_only(d)) return delegated_blocks(tr, 1, send, recv, n, d, req);
  nccl_link *L = &x->all;
  PTDP_CALL(begin(L, "all-gather", n * (size_t)tr->size, d));
  PTDP_CALL_NCCL(ncclAllGather(send, recv, n, nccl_type(d), L->nccl, L->stream));
  PTDP_CALL(finish(tr, L, req));
  return PTDP_OK;
}

/* Ours in place is send == recv with the result in the first block (MPI_IN_PLACE's meaning);
 * NCCL's in place is recv == send + rank n: reduce there, then move the block to the front. */
static int tn_reduce_scatter(ptdp_transport *tr, const void *send, void *recv, size_t n, ptdp_tr_data d,
                             ptdp_comm_req *req)
{
  nccl_ctx *x = tr->ctx;
  if (!nccl_only(d)) return delegated_blocks(tr, 0, send, recv, n, d, req);
  nccl_link *L = &x->all;
  PTDP_CALL(begin(L, "reduce-scatter", n * (size_t)tr->size, d));
  const size_t blk = n * ptdp_tr_data_size(d);
  if (send == recv && tr->rank > 0) {
    char *mine = (char *)recv + (size_t)tr->rank * blk;
    PTDP_CALL_NCCL(ncclReduceScatter(send, mine, n, nccl_type(d), ncclSum, L->nccl, L->stream));
    PTDP_CALL_CUDA(cudaMemcpyAsync(recv, mine, blk, cudaMemcpyDeviceToDevice, L->stream));
  } else {
    PTDP_CALL_NCCL(ncclReduceScatter(send, recv, n, nccl_type(d), ncclSum, L->nccl, L->stream));
  }
  PTDP_CALL(finish(tr, L, req));
  return PTDP_OK;
}

/* Host bytes (what comm.c broadcasts) directly, polled; anything else through the MPI transport. */
static int tn_bcast(ptdp_transport *tr, void *buf, size_t n, ptdp_tr_data d, int root)
{
  nccl_ctx *x = tr->ctx;
  if (d != PTDP_TR_HOST_BYTE) return x->mpi->bcast(x->mpi, buf, n, d, root);
  MPI_Request mr;
  char what[80];
  snprintf(what, sizeof what, "MPI broadcast of %zu bytes from rank %d", n, root);
  PTDP_CALL_MPI(MPI_Ibcast(buf, (int)n, MPI_BYTE, root, x->comm, &mr));
  PTDP_CALL(mpi_request_wait(x, &mr, what));
  return PTDP_OK;
}

static int tn_barrier(ptdp_transport *tr)
{
  nccl_ctx *x = tr->ctx;
  MPI_Request mr;
  PTDP_CALL_MPI(MPI_Ibarrier(x->comm, &mr));
  PTDP_CALL(mpi_request_wait(x, &mr, "MPI barrier"));
  return PTDP_OK;
}

/* The ring link a message of direction ring (+1, -1) travels, or NULL when NCCL does not carry
 * it (not a ring message, the ring not opened, host data). */
static nccl_link *ring_link(nccl_ctx *x, int send, int ring, ptdp_tr_data d)
{
  if (!ring || !nccl_only(d)) return NULL;
  return (send ? x->ring_send : x->ring_recv)[ring > 0 ? 0 : 1];
}

static int tn_isend(ptdp_transport *tr, const void *buf, size_t n, ptdp_tr_data d, int peer, int tag, int ring,
                    ptdp_comm_req *req)
{
  nccl_ctx *x = tr->ctx;
  nccl_link *L = ring_link(x, 1, ring, d);
  if (L) { /* the link's only other rank, 1: this rank made it as the sender (open_ring) */
    PTDP_CALL(begin(L, "send", n, d));
    PTDP_CALL_NCCL(ncclSend(buf, n, nccl_type(d), 1, L->nccl, L->stream));
    PTDP_CALL(finish(tr, L, req));
    return PTDP_OK;
  }
  ptdp_comm_req inner = PTDP_COMM_REQ_NULL;
  PTDP_CALL(x->mpi->isend(x->mpi, buf, n, d, peer, tag, ring, &inner));
  return delegated(tr, inner, req, "MPI send of %zu %s to rank %d (tag %d)", n, ptdp_tr_data_name(d), peer, tag);
}

static int tn_irecv(ptdp_transport *tr, void *buf, size_t n, ptdp_tr_data d, int peer, int tag, int ring,
                    ptdp_comm_req *req)
{
  nccl_ctx *x = tr->ctx;
  nccl_link *L = ring_link(x, 0, ring, d);
  if (L) { /* from the link's rank 0, the sender */
    PTDP_CALL(begin(L, "receive", n, d));
    PTDP_CALL_NCCL(ncclRecv(buf, n, nccl_type(d), 0, L->nccl, L->stream));
    PTDP_CALL(finish(tr, L, req));
    return PTDP_OK;
  }
  ptdp_comm_req inner = PTDP_COMM_REQ_NULL;
  PTDP_CALL(x->mpi->irecv(x->mpi, buf, n, d, peer, tag, ring, &inner));
  return delegated(tr, inner, req, "MPI receive of %zu %s from rank %d (tag %d)", n, ptdp_tr_data_name(d), peer, tag);
}

/* Pending: the watchdog runs (the host is waiting for this request), timed from the first test. */
static int tn_test(ptdp_transport *tr, ptdp_comm_req req, int *done)
{
  nccl_ctx *x = tr->ctx;
  nccl_req *r = (nccl_req *)req;
  if (!r->done) return delegated_test(x, r, done);
  nccl_link *L = r->link;
  PTDP_CHECK_LOCAL(!L->aborted, "NCCL: a request on %s, whose communicator was aborted after a failure", L->group);
  cudaError_t e = not_ready_cleared(cudaEventQuery(r->done));
  *done = e == cudaSuccess;
  if (e != cudaSuccess && e != cudaErrorNotReady) PTDP_CALL_CUDA(e);
  if (*done) return PTDP_OK;
  const double t = ptdp_cuda_clock();
  if (r->first_test == 0) r->first_test = t;
  int pending = 0;
  PTDP_CALL(watchdog(L, t - r->first_test, t - r->first_test >= ptdp_cuda_wait_timeout(), &pending));
  return PTDP_OK;
}

/* An NCCL operation: later compute waits for it, the host does not.  Delegated: polled here. */
static int tn_wait(ptdp_transport *tr, ptdp_comm_req req)
{
  nccl_ctx *x = tr->ctx;
  nccl_req *r = (nccl_req *)req;
  if (!r->done) return delegated_wait(x, r);
  PTDP_CALL_CUDA(cudaStreamWaitEvent(r->link->compute, r->done, 0));
  return PTDP_OK;
}

static void report_cuda(cudaError_t e, const char *call)
{
  if (e != cudaSuccess)
    fprintf(stderr, "ptdp: nccl transport: %s failed: %s: %s\n", call, cudaGetErrorName(e), cudaGetErrorString(e));
}

static void tn_req_free(ptdp_transport *tr, ptdp_comm_req req)
{
  nccl_ctx *x = tr->ctx;
  nccl_req *r = (nccl_req *)req;
  if (r->done) report_cuda(cudaEventDestroy(r->done), "cudaEventDestroy");
  if (r->inner != PTDP_COMM_REQ_NULL) x->mpi->req_free(x->mpi, r->inner);
  free(r);
}

static int tn_attach_backend(ptdp_transport *tr, ptdp_backend *be)
{
  nccl_ctx *x = tr->ctx;
  PTDP_CHECK(be && be->stream, "comm: the NCCL transport needs a GPU backend (one with a CUDA stream)");
  PTDP_CALL(x->mpi->attach_backend(x->mpi, be));
  x->all.compute = (cudaStream_t)be->stream;
  for (int i = 0; i < RING_DIRS; i++) {
    if (x->ring_send[i]) x->ring_send[i]->compute = x->all.compute;
    if (x->ring_recv[i]) x->ring_recv[i]->compute = x->all.compute;
  }
  return PTDP_OK;
}

/* Queued operations finish first (a polled wait, the watchdog on); if they cannot, the
 * communicator is aborted instead of destroyed, which would wait for them. */
static void link_destroy(nccl_link *x)
{
  if (!x) return;
  int stuck = x->stream && ptdp_cuda_wait_stream(x->stream, "destroying an NCCL transport");
  if (x->watched) ptdp_cuda_wait_check_remove(watchdog, x);
  x->watched = 0;
  if (stuck) abort_comm(x);
  if (x->nccl && !x->aborted) {
    ncclResult_t r = ncclCommDestroy(x->nccl);
    if (r != ncclSuccess) fprintf(stderr, "ptdp: nccl: ncclCommDestroy on %s failed: %s\n", x->group,
                                  ncclGetErrorString(r));
  }
  x->nccl = NULL;
  if (x->ready) report_cuda(cudaEventDestroy(x->ready), "cudaEventDestroy");
  if (x->stream) report_cuda(cudaStreamDestroy(x->stream), "cudaStreamDestroy");
  x->ready = NULL;
  x->stream = NULL;
}

/* The ring links in the order open_ring made them (ncclCommDestroy may wait for the link's other
 * rank: in one global order no cycle of waits forms, where each rank's own order would), then
 * the group's communicator. */
static void tn_destroy(ptdp_transport *tr)
{
  nccl_ctx *x = tr->ctx;
  if (!x) return;
  const int g = tr->size, r = tr->rank;
  for (int from = 0; from < g; from++)
    for (int di = 0; di < RING_DIRS; di++) {
      nccl_link **L = from == r ? &x->ring_send[di] : ring_to(g, from, di) == r ? &x->ring_recv[di] : NULL;
      if (!L || !*L) continue;
      link_destroy(*L);
      free(*L);
      *L = NULL;
    }
  link_destroy(&x->all);
  ptdp_transport_destroy(&x->mpi);
  free(x);
  tr->ctx = NULL;
}

/* "the NAME group (world ranks a b c)": the MPI communicator's name (comm.c names its groups)
 * and its members, for the watchdog's messages. */
static int name_group(nccl_link *x, MPI_Comm comm, int size)
{
  char name[MPI_MAX_OBJECT_NAME] = "", ranks[96] = "";
  int len = 0;
  PTDP_CALL_MPI(MPI_Comm_get_name(comm, name, &len));
  MPI_Group g, w;
  PTDP_CALL_MPI(MPI_Comm_group(comm, &g));
  PTDP_CALL_MPI(MPI_Comm_group(MPI_COMM_WORLD, &w));
  size_t used = 0;
  for (int i = 0; i < size && used + 16 < sizeof ranks; i++) {
    int wr = -1;
    PTDP_CALL_MPI(MPI_Group_translate_ranks(g, 1, &i, w, &wr));
    used += (size_t)snprintf(ranks + used, sizeof ranks - used, i ? " %d" : "%d", wr);
  }
  if (used + 16 >= sizeof ranks) snprintf(ranks + used, sizeof ranks - used, " ...");
  PTDP_CALL_MPI(MPI_Group_free(&g));
  PTDP_CALL_MPI(MPI_Group_free(&w));
  snprintf(x->group, sizeof x->group, "the %s%sgroup (world ranks %s)", name, len ? " " : "", ranks);
  snprintf(x->last, sizeof x->last, "no collective yet");
  return PTDP_OK;
}

/* A link's stream (the highest priority the device offers: communication goes first), its
 * event, its NCCL communicator (nranks, id, rank) and its watchdog. */
static int link_setup(nccl_link *x, int nranks, ncclUniqueId id, int rank)
{
  int lo, hi;
  PTDP_CALL_CUDA(cudaDeviceGetStreamPriorityRange(&lo, &hi));
  PTDP_CALL_CUDA(cudaStreamCreateWithPriority(&x->stream, cudaStreamNonBlocking, hi));
  PTDP_CALL_CUDA(cudaEventCreateWithFlags(&x->ready, cudaEventDisableTiming));
  PTDP_CALL_NCCL(ncclCommInitRank(&x->nccl, nranks, id, rank));
  PTDP_CALL(ptdp_cuda_wait_check_add(watchdog, x));
  x->watched = 1;
  return PTDP_OK;
}

/* The NCCL communicator of comm's group: rank 0 makes the id, MPI carries it. */
static int nccl_setup(nccl_ctx *x, MPI_Comm comm, int rank, int size)
{
  ncclUniqueId id;
  PTDP_CALL(name_group(&x->all, comm, size));
  if (rank == 0) PTDP_CALL_NCCL(ncclGetUniqueId(&id));
  PTDP_CALL_MPI(MPI_Bcast(&id, (int)sizeof id, MPI_BYTE, 0, comm));
  PTDP_CALL(link_setup(&x->all, size, id, rank));
  return PTDP_OK;
}

/* The tag of the ids sent while the ring opens (above the pipeline's message tags, driver.c). */
enum { RING_ID_TAG = 32001 };

/* A link's first message, one float (0) from its sender, waited for (polled, the watchdog on). */
static int first_message(nccl_link *L, float *one, int sender)
{
  snprintf(L->last, sizeof L->last, "first message (1 float, opening the link)");
  PTDP_CALL_CUDA(cudaMemsetAsync(one, 0, sizeof *one, L->stream));
  if (sender) PTDP_CALL_NCCL(ncclSend(one, 1, ncclFloat32, 1, L->nccl, L->stream));
  else PTDP_CALL_NCCL(ncclRecv(one, 1, ncclFloat32, 0, L->nccl, L->stream));
  PTDP_CALL(ptdp_cuda_wait_stream(L->stream, "opening a ring link"));
  return PTDP_OK;
}

/* One link: messages from rank `from` to rank `from + dir` (mod g), dir index di (0: +1, 1: -1).
 * The sender makes the id and sends it to the receiver; both join a communicator of the two,
 * the sender as its rank 0.  Only its two ranks call this. */
static int open_link(ptdp_transport *tr, int from, int di)
{
  nccl_ctx *x = tr->ctx;
  const int g = tr->size, to = ring_to(g, from, di), sender = tr->rank == from;
  nccl_link *L;
  PTDP_CALLOC(L, 1, sizeof *L);
  (sender ? x->ring_send : x->ring_recv)[di] = L;
  snprintf(L->group, sizeof L->group, "the ring link %d -> %d (%s) of %.120s", from, to,
           di ? "to rank - 1" : "to rank + 1", x->all.group);
  snprintf(L->last, sizeof L->last, "no message yet");
  L->compute = x->all.compute;
  ncclUniqueId id;
  if (sender) {
    PTDP_CALL_NCCL(ncclGetUniqueId(&id));
    PTDP_CALL_MPI(MPI_Send(&id, (int)sizeof id, MPI_BYTE, to, RING_ID_TAG, x->comm));
  } else {
    PTDP_CALL_MPI(MPI_Recv(&id, (int)sizeof id, MPI_BYTE, from, RING_ID_TAG, x->comm, MPI_STATUS_IGNORE));
  }
  PTDP_CALL(link_setup(L, 2, id, sender ? 0 : 1));
  /* One float across at once: NCCL connects a peer on its first message, and both ranks are
   * here now, where they may not be at a first message during the pipeline. */
  float *one = NULL;
  PTDP_CALL_CUDA(cudaMallocAsync((void **)&one, sizeof *one, L->stream));
  const int err = first_message(L, one, sender);
  const cudaError_t fe = cudaFreeAsync(one, L->stream);
  PTDP_CALL(err);
  PTDP_CALL_CUDA(fe);
  return PTDP_OK;
}

/* The ring's links, made in one order on every rank (from 0 .. g-1, then +1 before -1); each
 * rank makes the four it is in.  No cycle of waits: a rank blocked in link k waits for a rank
 * still making an earlier link, so the earliest unfinished link has both its ranks. */
static int tn_open_ring(ptdp_transport *tr)
{
  nccl_ctx *x = tr->ctx;
  if (x->ring_send[0]) return PTDP_OK;
  const int g = tr->size, r = tr->rank;
  for (int from = 0; from < g; from++)
    for (int di = 0; di < RING_DIRS; di++) {
      if (r == from || r == ring_to(g, from, di)) PTDP_CALL(open_link(tr, from, di));
    }
  return PTDP_OK;
}

static void fill_table(ptdp_transport *tr)
{
  tr->name = "nccl";
  tr->attach_backend = tn_attach_backend;
  tr->allreduce = tn_allreduce;
  tr->allgather = tn_allgather;
  tr->reduce_scatter = tn_reduce_scatter;
  tr->bcast = tn_bcast;
  tr->barrier = tn_barrier;
  tr->isend = tn_isend;
  tr->irecv = tn_irecv;
  tr->open_ring = tn_open_ring;
  tr->test = tn_test;
  tr->wait = tn_wait;
  tr->req_free = tn_req_free;
  tr->destroy = tn_destroy;
}

int ptdp_transport_nccl_create(MPI_Comm comm, ptdp_backend *be, ptdp_transport **out)
{
  ptdp_transport *tr;
  nccl_ctx *x;
  *out = NULL;
  PTDP_CALLOC(tr, 1, sizeof *tr);
  PTDP_CALLOC(x, 1, sizeof *x);
  tr->ctx = x;
  fill_table(tr);
  x->comm = comm;
  int err = ptdp_transport_mpi_create(comm, &x->mpi);
  if (!err) {
    tr->rank = x->mpi->rank;
    tr->size = x->mpi->size;
    err = nccl_setup(x, comm, tr->rank, tr->size);
  }
  if (!err) err = tn_attach_backend(tr, be);
  if (err) {
    ptdp_transport_destroy(&tr);
    return ptdp_error_trace(err, __FILE__, __LINE__, __func__);
  }
  *out = tr;
  return PTDP_OK;
}
