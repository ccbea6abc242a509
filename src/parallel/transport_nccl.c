/* The NCCL transport: the table of transport.h with float collectives through NCCL.
 *
 * One NCCL communicator per MPI group, made from it (rank 0's ncclUniqueId broadcast over the
 * group's MPI communicator, then ncclCommInitRank), and one stream of its own, so collectives
 * overlap the backend's compute stream.  Ordering is by events, never by the host:
 *     before an operation  the comm stream waits for everything the compute stream has issued
 *                          (the buffers' producers);
 *     blocking operation   the compute stream then waits for the collective, so every later
 *                          backend operation (and the host's to_host + synchronize) sees the
 *                          result; the host returns at once;
 *     nonblocking          the request holds an event recorded after the collective: test
 *                          queries it, wait makes the compute stream wait for it.
 * What NCCL does not do here goes to an MPI transport on the same group (staged through host
 * memory for device buffers, transport_mpi.c): doubles and bytes (host memory), broadcasts of
 * host bytes, barriers, and point-to-point.  Point-to-point stays on MPI because NCCL matches
 * sends and receives by call order on one stream, with no tags: the pipeline schedules post
 * receives ahead in an order that MPI's tags make safe and NCCL's single stream would not.
 * Requests of delegated operations are the MPI transport's own (req->tr names it), so comm.c
 * waits for them there.  NOT YET RUN ON A GPU: see README, "GPUs". */
#include "transport.h"

#include "ptdp/error.h"
#include "ptdp/error_gpu.h"

#include <stdlib.h>

typedef struct {
  ncclComm_t nccl;
  cudaStream_t stream;  /* the collectives' own */
  cudaStream_t compute; /* the attached backend's */
  cudaEvent_t ready;    /* compute -> comm ordering, re-recorded per operation */
  ptdp_transport *mpi;  /* what NCCL does not carry */
} nccl_ctx;

typedef struct {
  struct ptdp_comm_request head; /* first: a ptdp_comm_req points at the whole request */
  cudaEvent_t done;
} nccl_req;

static int nccl_only(ptdp_tr_data d) { return d == PTDP_TR_DEV_F32; }

/* The comm stream waits for the work the compute stream has issued so far. */
static int begin(nccl_ctx *x)
{
  PTDP_CALL_CUDA(cudaEventRecord(x->ready, x->compute));
  PTDP_CALL_CUDA(cudaStreamWaitEvent(x->stream, x->ready, 0));
  return PTDP_OK;
}

/* After the collective: blocking, the compute stream waits for it; else a request with its event. */
static int finish(ptdp_transport *tr, ptdp_comm_req *req)
{
  nccl_ctx *x = tr->ctx;
  nccl_req *r;
  PTDP_ALLOC(r, sizeof *r);
  r->head.tr = tr;
  cudaError_t e = cudaEventCreateWithFlags(&r->done, cudaEventDisableTiming);
  if (e != cudaSuccess) free(r);
  PTDP_CALL_CUDA(e);
  PTDP_CALL_CUDA(cudaEventRecord(r->done, x->stream));
  if (req) {
    *req = &r->head;
    return PTDP_OK;
  }
  PTDP_CALL_CUDA(cudaStreamWaitEvent(x->compute, r->done, 0));
  cudaEventDestroy(r->done); /* released once it has completed */
  free(r);
  return PTDP_OK;
}

static int tn_allreduce(ptdp_transport *tr, void *buf, size_t n, ptdp_tr_data d, ptdp_tr_op op, ptdp_comm_req *req)
{
  nccl_ctx *x = tr->ctx;
  if (!nccl_only(d)) return x->mpi->allreduce(x->mpi, buf, n, d, op, req);
  PTDP_CALL(begin(x));
  PTDP_CALL_NCCL(ncclAllReduce(buf, buf, n, ncclFloat32, op == PTDP_TR_MAX ? ncclMax : ncclSum, x->nccl, x->stream));
  PTDP_CALL(finish(tr, req));
  return PTDP_OK;
}

/* recv [g, n]; NCCL's in place is ours: send == recv + rank n */
static int tn_allgather(ptdp_transport *tr, const void *send, void *recv, size_t n, ptdp_tr_data d,
                        ptdp_comm_req *req)
{
  nccl_ctx *x = tr->ctx;
  if (!nccl_only(d)) return x->mpi->allgather(x->mpi, send, recv, n, d, req);
  PTDP_CALL(begin(x));
  PTDP_CALL_NCCL(ncclAllGather(send, recv, n, ncclFloat32, x->nccl, x->stream));
  PTDP_CALL(finish(tr, req));
  return PTDP_OK;
}

/* Ours in place is send == recv with the result in the first block (MPI_IN_PLACE's meaning);
 * NCCL's in place is recv == send + rank n: reduce there, then move the block to the front. */
static int tn_reduce_scatter(ptdp_transport *tr, const void *send, void *recv, size_t n, ptdp_tr_data d,
                             ptdp_comm_req *req)
{
  nccl_ctx *x = tr->ctx;
  if (!nccl_only(d)) return x->mpi->reduce_scatter(x->mpi, send, recv, n, d, req);
  PTDP_CALL(begin(x));
  if (send == recv && tr->rank > 0) {
    float *mine = (float *)recv + (size_t)tr->rank * n;
    PTDP_CALL_NCCL(ncclReduceScatter(send, mine, n, ncclFloat32, ncclSum, x->nccl, x->stream));
    PTDP_CALL_CUDA(cudaMemcpyAsync(recv, mine, n * sizeof(float), cudaMemcpyDeviceToDevice, x->stream));
  } else {
    PTDP_CALL_NCCL(ncclReduceScatter(send, recv, n, ncclFloat32, ncclSum, x->nccl, x->stream));
  }
  PTDP_CALL(finish(tr, req));
  return PTDP_OK;
}

static int tn_bcast(ptdp_transport *tr, void *buf, size_t n, ptdp_tr_data d, int root)
{
  nccl_ctx *x = tr->ctx;
  return x->mpi->bcast(x->mpi, buf, n, d, root);
}

static int tn_barrier(ptdp_transport *tr)
{
  nccl_ctx *x = tr->ctx;
  return x->mpi->barrier(x->mpi);
}

static int tn_isend(ptdp_transport *tr, const void *buf, size_t n, ptdp_tr_data d, int peer, int tag,
                    ptdp_comm_req *req)
{
  nccl_ctx *x = tr->ctx;
  return x->mpi->isend(x->mpi, buf, n, d, peer, tag, req);
}

static int tn_irecv(ptdp_transport *tr, void *buf, size_t n, ptdp_tr_data d, int peer, int tag, ptdp_comm_req *req)
{
  nccl_ctx *x = tr->ctx;
  return x->mpi->irecv(x->mpi, buf, n, d, peer, tag, req);
}

static int tn_test(ptdp_transport *tr, ptdp_comm_req req, int *done)
{
  nccl_req *r = (nccl_req *)req;
  cudaError_t e = cudaEventQuery(r->done);
  *done = e == cudaSuccess;
  if (e != cudaSuccess && e != cudaErrorNotReady) PTDP_CALL_CUDA(e);
  if (e == cudaErrorNotReady) cudaGetLastError(); /* not an error: clear it */
  return PTDP_OK;
}

/* Later compute waits for the collective; the host does not. */
static int tn_wait(ptdp_transport *tr, ptdp_comm_req req)
{
  nccl_ctx *x = tr->ctx;
  nccl_req *r = (nccl_req *)req;
  PTDP_CALL_CUDA(cudaStreamWaitEvent(x->compute, r->done, 0));
  return PTDP_OK;
}

static void tn_req_free(ptdp_transport *tr, ptdp_comm_req req)
{
  nccl_req *r = (nccl_req *)req;
  cudaEventDestroy(r->done);
  free(r);
}

static int tn_attach_backend(ptdp_transport *tr, ptdp_backend *be)
{
  nccl_ctx *x = tr->ctx;
  PTDP_CHECK(be && be->stream, "comm: the NCCL transport needs a GPU backend (one with a CUDA stream)");
  PTDP_CALL(x->mpi->attach_backend(x->mpi, be));
  x->compute = (cudaStream_t)be->stream;
  return PTDP_OK;
}

static void tn_destroy(ptdp_transport *tr)
{
  nccl_ctx *x = tr->ctx;
  if (!x) return;
  if (x->stream) cudaStreamSynchronize(x->stream);
  if (x->nccl) ncclCommDestroy(x->nccl);
  if (x->ready) cudaEventDestroy(x->ready);
  if (x->stream) cudaStreamDestroy(x->stream);
  ptdp_transport_destroy(&x->mpi);
  free(x);
  tr->ctx = NULL;
}

/* The NCCL communicator of comm's group: rank 0 makes the id, MPI carries it. */
static int nccl_setup(nccl_ctx *x, MPI_Comm comm, int rank, int size)
{
  ncclUniqueId id;
  if (rank == 0) PTDP_CALL_NCCL(ncclGetUniqueId(&id));
  PTDP_CALL_MPI(MPI_Bcast(&id, (int)sizeof id, MPI_BYTE, 0, comm));
  int lo, hi; /* collectives go first: the highest priority the device offers */
  PTDP_CALL_CUDA(cudaDeviceGetStreamPriorityRange(&lo, &hi));
  PTDP_CALL_CUDA(cudaStreamCreateWithPriority(&x->stream, cudaStreamNonBlocking, hi));
  PTDP_CALL_CUDA(cudaEventCreateWithFlags(&x->ready, cudaEventDisableTiming));
  PTDP_CALL_NCCL(ncclCommInitRank(&x->nccl, size, id, rank));
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
