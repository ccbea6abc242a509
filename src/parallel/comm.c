/* The one communication layer: checks, counts and times every message, and hands the data to
 * the communicator's transport (src/parallel/transport.h; MPI today), see ptdp/comm.h.
 *
 * Bytes are what one rank sends under the ring algorithm, for a payload of n bytes on g ranks:
 *     all-reduce       2 (g-1)/g n         (reduce-scatter then all-gather, each (g-1)/g n)
 *     all-gather       (g-1)/g n_total     n_total = g n_per_rank: each rank forwards g-1 blocks
 *     reduce-scatter   (g-1)/g n_total
 *     broadcast        n at the root, 0 elsewhere
 *     isend            n;  irecv 0 (the sender counts the message)
 * Worked example: all-reduce of a [s, b, h] = [8, 2, 16] float activation over t = 4 ranks
 * counts 2 (3/4) (8 2 16 4 bytes) = 1536 bytes on each rank; the same activation in bf16
 * (2 bytes an element) counts 768 bytes.
 * A communicator of size 1 makes no transport call (copying when send and receive differ, with
 * the attached backend's copy since the buffers are its memory), counts the call and 0 bytes.
 * Point-to-point on a size-1 communicator (a rank messaging itself) goes through the transport,
 * since only the matching receive can complete it, and counts 0 bytes: nothing leaves the rank.
 * Time blocked (blocking collectives, waits) accumulates in wait_seconds; for a staged
 * transport it includes the staging copies, which are part of the time the caller is blocked.
 * Which memory each buffer is, the transport learns from the element type (ptdp_tr_data):
 * floats, bf16 and fp16 (a ptdp_dtype, the *_t functions) are the attached backend's, doubles
 * and bcast bytes are the host's. */
#include "ptdp/comm.h"

#include "ptdp/config.h"
#include "ptdp/error.h"
#include "transport.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

const char *ptdp_comm_tag_name(ptdp_comm_tag t)
{
  static const char *names[PTDP_TAG_COUNT] = {"layer", "embed", "loss", "grad", "param", "p2p", "misc"};
  return (t >= 0 && t < PTDP_TAG_COUNT) ? names[t] : "unknown";
}

const char *ptdp_comm_group_name(int kind)
{
  static const char *names[PTDP_GROUP_COUNT] = {"world", "tp", "pp", "dp", "mp", "emb"};
  return (kind >= 0 && kind < PTDP_GROUP_COUNT) ? names[kind] : "unknown";
}

int ptdp_comm_wrap(ptdp_comm *c, MPI_Comm comm, int kind)
{
  PTDP_CHECK(kind >= 0 && kind < PTDP_GROUP_COUNT, "comm: unknown group kind %d", kind);
  memset(c, 0, sizeof *c);
  c->comm = comm;
  c->kind = kind;
  if (comm == MPI_COMM_NULL) {
    c->rank = -1; /* not a member: every operation on c is refused */
    c->size = 0;
    return PTDP_OK;
  }
  PTDP_CALL_MPI(MPI_Comm_rank(comm, &c->rank));
  PTDP_CALL_MPI(MPI_Comm_size(comm, &c->size));
  /* the group's name on its communicator, so a transport's timeout message can say "tp group" */
  if (kind != PTDP_GROUP_WORLD) PTDP_CALL_MPI(MPI_Comm_set_name(comm, ptdp_comm_group_name(kind)));
  PTDP_CALL(ptdp_transport_mpi_create(comm, &c->transport));
  return PTDP_OK;
}

int ptdp_comm_free(ptdp_comm *c)
{
  ptdp_transport_destroy(&c->transport);
  c->be = NULL;
  if (c->comm != MPI_COMM_NULL && c->comm != MPI_COMM_WORLD && c->comm != MPI_COMM_SELF &&
      c->kind != PTDP_GROUP_WORLD)
    PTDP_CALL_MPI(MPI_Comm_free(&c->comm));
  c->comm = MPI_COMM_NULL;
  c->rank = -1;
  c->size = 0;
  return PTDP_OK;
}

int ptdp_comm_attach_backend(ptdp_comm *c, ptdp_backend *be)
{
  if (c->transport) PTDP_CALL(c->transport->attach_backend(c->transport, be));
  c->be = be;
  return PTDP_OK;
}

int ptdp_comm_backend_resolve(ptdp_comm_backend want, int on_gpu, int nccl_built, int gpus_shared,
                              ptdp_comm_backend *out)
{
  const int possible = on_gpu && nccl_built && !gpus_shared;
  *out = PTDP_COMM_MPI;
  if (want == PTDP_COMM_MPI) return PTDP_OK;
  if (want == PTDP_COMM_AUTO) {
    if (possible) *out = PTDP_COMM_NCCL;
    return PTDP_OK;
  }
  PTDP_CHECK(on_gpu, "comm-backend = nccl needs backend = cuda");
  PTDP_CHECK(nccl_built, "comm-backend = nccl: this ptdp was built without NCCL (configure --with-nccl=DIR)");
  PTDP_CHECK(!gpus_shared, "comm-backend = nccl: some ranks share a GPU, which NCCL refuses; use comm-backend = mpi "
                           "or one rank per GPU");
  *out = PTDP_COMM_NCCL;
  return PTDP_OK;
}

/* Size 1 keeps MPI: no collective reaches its transport, and a self-message is point-to-point. */
int ptdp_comm_use_nccl(ptdp_comm *c)
{
  if (c->comm == MPI_COMM_NULL || !c->transport || c->size < 2) return PTDP_OK;
#if PTDP_HAVE_NCCL
  PTDP_CHECK(c->be && c->be->stream, "comm: NCCL on the %s group needs a GPU backend attached first",
             ptdp_comm_group_name(c->kind));
  ptdp_transport *tr;
  PTDP_CALL(ptdp_transport_nccl_create(c->comm, c->be, &tr));
  ptdp_transport_destroy(&c->transport);
  c->transport = tr;
  return PTDP_OK;
#else
  PTDP_CHECK(0, "comm: this ptdp was built without NCCL");
  return PTDP_OK;
#endif
}

void ptdp_comm_reset_stats(ptdp_comm *c) { memset(&c->stats, 0, sizeof c->stats); }

double ptdp_comm_total_bytes(const ptdp_comm *c)
{
  double s = 0;
  for (int t = 0; t < PTDP_TAG_COUNT; t++) s += c->stats.bytes[t];
  return s;
}

int ptdp_comm_report(const ptdp_comm *c, char *buf, size_t n)
{
  size_t used = 0;
  if (n == 0) return PTDP_OK;
  buf[0] = '\0';
  for (int t = 0; t < PTDP_TAG_COUNT; t++) {
    if (c->stats.calls[t] == 0 && c->stats.bytes[t] == 0) continue;
    int w = snprintf(buf + used, n - used, "  %s %s: %lld calls, %.0f bytes\n", ptdp_comm_group_name(c->kind),
                     ptdp_comm_tag_name((ptdp_comm_tag)t), c->stats.calls[t], c->stats.bytes[t]);
    if (w < 0 || (size_t)w >= n - used) break; /* truncated; buf stays terminated */
    used += (size_t)w;
  }
  return PTDP_OK;
}


/* Refuse a communicator this rank is not in, a bad tag, or a count MPI's int cannot hold. */
static int check_use(const ptdp_comm *c, ptdp_comm_tag tag, size_t count, const char *what)
{
  PTDP_CHECK_LOCAL(c->comm != MPI_COMM_NULL && c->size > 0 && c->transport,
                   "comm: %s on the %s group, which this rank is not a member of", what,
                   ptdp_comm_group_name(c->kind));
  PTDP_CHECK_LOCAL(tag >= 0 && tag < PTDP_TAG_COUNT, "comm: %s with unknown tag %d", what, (int)tag);
  PTDP_CHECK_LOCAL(count <= (size_t)INT_MAX, "comm: %s of %zu elements exceeds MPI's int count limit %d",
                   what, count, INT_MAX);
  return PTDP_OK;
}

/* The transport's kind of a storage type's elements (*d is set whatever t), t checked. */
static int dev_data(ptdp_dtype t, const char *what, ptdp_tr_data *d)
{
  *d = ptdp_tr_data_of(t);
  PTDP_CHECK_LOCAL(ptdp_dtype_size(t) != 0, "comm: %s of element type %d, which is not a ptdp_dtype", what, (int)t);
  return PTDP_OK;
}

/* Bytes of n elements of kind d, the payload every count below starts from. */
static double payload(size_t n, ptdp_tr_data d) { return (double)n * (double)ptdp_tr_data_size(d); }

static void count(ptdp_comm *c, ptdp_comm_tag tag, double bytes)
{
  c->stats.calls[tag]++;
  c->stats.bytes[tag] += bytes;
}

/* Ring-algorithm bytes: all-reduce 2 (g-1)/g n; all-gather / reduce-scatter (g-1)/g n_total. */
static double ring_allreduce_bytes(int g, double n) { return 2.0 * (g - 1) / g * n; }
static double ring_gather_bytes(int g, double n_total) { return (double)(g - 1) / g * n_total; }

/* The copy a size-1 all-gather or reduce-scatter makes: float, bf16 and fp16 buffers are the
 * attached backend's memory, so its copy moves them; host memory is moved here. */
static int local_copy(ptdp_comm *c, void *dst, const void *src, size_t bytes, ptdp_tr_data d)
{
  if (dst == src || bytes == 0) return PTDP_OK;
  if (ptdp_tr_data_device(d) && c->be)
    PTDP_CALL(c->be->copy(c->be, dst, src, bytes));
  else
    memmove(dst, src, bytes);
  return PTDP_OK;
}

/* In place on buf [n]; req NULL blocks (and counts the time as waiting). */
static int allreduce(ptdp_comm *c, void *buf, size_t n, ptdp_tr_data d, ptdp_tr_op op, ptdp_comm_tag tag,
                     ptdp_comm_req *req)
{
  if (req) *req = PTDP_COMM_REQ_NULL;
  PTDP_CALL(check_use(c, tag, n, "all-reduce"));
  if (c->size == 1) {
    count(c, tag, 0);
    return PTDP_OK;
  }
  double t0 = req ? 0 : MPI_Wtime();
  PTDP_CALL(c->transport->allreduce(c->transport, buf, n, d, op, req));
  if (!req) c->stats.wait_seconds += MPI_Wtime() - t0;
  count(c, tag, ring_allreduce_bytes(c->size, payload(n, d)));
  return PTDP_OK;
}

int ptdp_comm_allreduce_sum_t(ptdp_comm *c, void *buf, size_t n, ptdp_dtype t, ptdp_comm_tag tag)
{
  ptdp_tr_data d;
  PTDP_CALL(dev_data(t, "all-reduce", &d));
  PTDP_CALL(allreduce(c, buf, n, d, PTDP_TR_SUM, tag, NULL));
  return PTDP_OK;
}

int ptdp_comm_allreduce_sum(ptdp_comm *c, float *buf, size_t n, ptdp_comm_tag tag)
{
  PTDP_CALL(ptdp_comm_allreduce_sum_t(c, buf, n, PTDP_F32, tag));
  return PTDP_OK;
}

int ptdp_comm_allreduce_max(ptdp_comm *c, float *buf, size_t n, ptdp_comm_tag tag)
{
  PTDP_CALL(allreduce(c, buf, n, PTDP_TR_DEV_F32, PTDP_TR_MAX, tag, NULL));
  return PTDP_OK;
}

int ptdp_comm_allreduce_sum_f64(ptdp_comm *c, double *buf, size_t n, ptdp_comm_tag tag)
{
  PTDP_CALL(allreduce(c, buf, n, PTDP_TR_HOST_F64, PTDP_TR_SUM, tag, NULL));
  return PTDP_OK;
}

int ptdp_comm_allreduce_max_f64(ptdp_comm *c, double *buf, size_t n, ptdp_comm_tag tag)
{
  PTDP_CALL(allreduce(c, buf, n, PTDP_TR_HOST_F64, PTDP_TR_MAX, tag, NULL));
  return PTDP_OK;
}

/* The two block collectives, which move g n elements through a ring alike: all-gather (recv
 * [g, n], send may already be recv's own block: in place) and reduce-scatter (send [g, n] summed
 * over ranks, block `rank` lands in recv [n]; send == recv means in place, recv then holding the
 * whole input and the result its first n).  One rank: recv is send. */
typedef enum { REDUCE_SCATTER = 0, ALLGATHER = 1 } block_kind;

static int block_collective(ptdp_comm *c, block_kind gather, const void *send, void *recv, size_t n, ptdp_tr_data d,
                            ptdp_comm_tag tag, ptdp_comm_req *req)
{
  if (req) *req = PTDP_COMM_REQ_NULL;
  PTDP_CALL(check_use(c, tag, n * (size_t)(c->size > 0 ? c->size : 1), gather ? "all-gather" : "reduce-scatter"));
  if (c->size == 1) {
    PTDP_CALL(local_copy(c, recv, send, n * ptdp_tr_data_size(d), d));
    count(c, tag, 0);
    return PTDP_OK;
  }
  double t0 = req ? 0 : MPI_Wtime();
  ptdp_transport *tr = c->transport;
  PTDP_CALL((gather ? tr->allgather : tr->reduce_scatter)(tr, send, recv, n, d, req));
  if (!req) c->stats.wait_seconds += MPI_Wtime() - t0;
  count(c, tag, ring_gather_bytes(c->size, payload(n * (size_t)c->size, d)));
  return PTDP_OK;
}

/* The same of n elements of the device type t per rank (req NULL: blocking). */
static int block_collective_t(ptdp_comm *c, block_kind gather, const void *send, void *recv, size_t n, ptdp_dtype t,
                              ptdp_comm_tag tag, ptdp_comm_req *req)
{
  ptdp_tr_data d;
  if (req) *req = PTDP_COMM_REQ_NULL;
  PTDP_CALL(dev_data(t, gather ? "all-gather" : "reduce-scatter", &d));
  return block_collective(c, gather, send, recv, n, d, tag, req);
}

int ptdp_comm_allgather_t(ptdp_comm *c, const void *send, void *recv, size_t n_per_rank, ptdp_dtype t,
                          ptdp_comm_tag tag)
{
  return block_collective_t(c, ALLGATHER, send, recv, n_per_rank, t, tag, NULL);
}

int ptdp_comm_allgather(ptdp_comm *c, const float *send, float *recv, size_t n_per_rank, ptdp_comm_tag tag)
{
  PTDP_CALL(ptdp_comm_allgather_t(c, send, recv, n_per_rank, PTDP_F32, tag));
  return PTDP_OK;
}

int ptdp_comm_allgather_f64(ptdp_comm *c, const double *send, double *recv, size_t n_per_rank,
                            ptdp_comm_tag tag)
{
  return block_collective(c, ALLGATHER, send, recv, n_per_rank, PTDP_TR_HOST_F64, tag, NULL);
}

int ptdp_comm_reduce_scatter_t(ptdp_comm *c, const void *send, void *recv, size_t n_per_rank, ptdp_dtype t,
                               ptdp_comm_tag tag)
{
  return block_collective_t(c, REDUCE_SCATTER, send, recv, n_per_rank, t, tag, NULL);
}

int ptdp_comm_reduce_scatter(ptdp_comm *c, const float *send, float *recv, size_t n_per_rank,
                             ptdp_comm_tag tag)
{
  PTDP_CALL(ptdp_comm_reduce_scatter_t(c, send, recv, n_per_rank, PTDP_F32, tag));
  return PTDP_OK;
}

int ptdp_comm_bcast(ptdp_comm *c, void *buf, size_t bytes, int root, ptdp_comm_tag tag)
{
  PTDP_CALL(check_use(c, tag, bytes, "broadcast"));
  PTDP_CHECK_LOCAL(root >= 0 && root < c->size, "comm: broadcast root %d outside the %s group of size %d",
                   root, ptdp_comm_group_name(c->kind), c->size);
  if (c->size == 1) {
    count(c, tag, 0);
    return PTDP_OK;
  }
  double t0 = MPI_Wtime();
  PTDP_CALL(c->transport->bcast(c->transport, buf, bytes, PTDP_TR_HOST_BYTE, root));
  c->stats.wait_seconds += MPI_Wtime() - t0;
  count(c, tag, c->rank == root ? (double)bytes : 0.0);
  return PTDP_OK;
}

/* Counted as a MISC call with 0 bytes. */
int ptdp_comm_barrier(ptdp_comm *c)
{
  PTDP_CALL(check_use(c, PTDP_TAG_MISC, 0, "barrier"));
  if (c->size > 1) {
    double t0 = MPI_Wtime();
    PTDP_CALL(c->transport->barrier(c->transport));
    c->stats.wait_seconds += MPI_Wtime() - t0;
  }
  count(c, PTDP_TAG_MISC, 0);
  return PTDP_OK;
}

int ptdp_comm_iallreduce_sum_t(ptdp_comm *c, void *buf, size_t n, ptdp_dtype t, ptdp_comm_tag tag,
                               ptdp_comm_req *req)
{
  ptdp_tr_data d;
  *req = PTDP_COMM_REQ_NULL;
  PTDP_CALL(dev_data(t, "all-reduce", &d));
  PTDP_CALL(allreduce(c, buf, n, d, PTDP_TR_SUM, tag, req));
  return PTDP_OK;
}

int ptdp_comm_iallreduce_sum(ptdp_comm *c, float *buf, size_t n, ptdp_comm_tag tag, ptdp_comm_req *req)
{
  PTDP_CALL(ptdp_comm_iallreduce_sum_t(c, buf, n, PTDP_F32, tag, req));
  return PTDP_OK;
}

int ptdp_comm_ireduce_scatter_t(ptdp_comm *c, const void *send, void *recv, size_t n_per_rank, ptdp_dtype t,
                                ptdp_comm_tag tag, ptdp_comm_req *req)
{
  return block_collective_t(c, REDUCE_SCATTER, send, recv, n_per_rank, t, tag, req);
}

int ptdp_comm_ireduce_scatter(ptdp_comm *c, const float *send, float *recv, size_t n_per_rank,
                              ptdp_comm_tag tag, ptdp_comm_req *req)
{
  PTDP_CALL(ptdp_comm_ireduce_scatter_t(c, send, recv, n_per_rank, PTDP_F32, tag, req));
  return PTDP_OK;
}

int ptdp_comm_iallgather_t(ptdp_comm *c, const void *send, void *recv, size_t n_per_rank, ptdp_dtype t,
                           ptdp_comm_tag tag, ptdp_comm_req *req)
{
  return block_collective_t(c, ALLGATHER, send, recv, n_per_rank, t, tag, req);
}

int ptdp_comm_iallgather(ptdp_comm *c, const float *send, float *recv, size_t n_per_rank,
                         ptdp_comm_tag tag, ptdp_comm_req *req)
{
  PTDP_CALL(ptdp_comm_iallgather_t(c, send, recv, n_per_rank, PTDP_F32, tag, req));
  return PTDP_OK;
}

/* A point-to-point message: to or from peer, ring 0, or the ring neighbour of direction ring. */
static int p2p(ptdp_comm *c, int send, void *buf, size_t n, ptdp_dtype t, int peer, int ring, int mpitag,
               ptdp_comm_tag tag, ptdp_comm_req *req)
{
  ptdp_tr_data d;
  const char *what = send ? "send" : "receive";
  *req = PTDP_COMM_REQ_NULL;
  PTDP_CALL(dev_data(t, what, &d));
  PTDP_CALL(check_use(c, tag, n, what));
  if (ring) peer = ((c->rank + (send ? ring : -ring)) % c->size + c->size) % c->size;
  PTDP_CHECK_LOCAL(peer >= 0 && peer < c->size, "comm: %s %s rank %d outside the %s group of size %d", what,
                   send ? "to" : "from", peer, ptdp_comm_group_name(c->kind), c->size);
  if (send) PTDP_CALL(c->transport->isend(c->transport, buf, n, d, peer, mpitag, ring, req));
  else PTDP_CALL(c->transport->irecv(c->transport, buf, n, d, peer, mpitag, ring, req));
  count(c, tag, send && c->size > 1 ? payload(n, d) : 0.0);
  return PTDP_OK;
}

int ptdp_comm_isend_t(ptdp_comm *c, const void *buf, size_t n, ptdp_dtype t, int peer, int mpitag,
                      ptdp_comm_tag tag, ptdp_comm_req *req)
{
  PTDP_CALL(p2p(c, 1, (void *)buf, n, t, peer, 0, mpitag, tag, req));
  return PTDP_OK;
}

int ptdp_comm_isend(ptdp_comm *c, const float *buf, size_t n, int peer, int mpitag, ptdp_comm_tag tag,
                    ptdp_comm_req *req)
{
  PTDP_CALL(ptdp_comm_isend_t(c, buf, n, PTDP_F32, peer, mpitag, tag, req));
  return PTDP_OK;
}

int ptdp_comm_irecv_t(ptdp_comm *c, void *buf, size_t n, ptdp_dtype t, int peer, int mpitag, ptdp_comm_tag tag,
                      ptdp_comm_req *req)
{
  PTDP_CALL(p2p(c, 0, buf, n, t, peer, 0, mpitag, tag, req));
  return PTDP_OK;
}

int ptdp_comm_irecv(ptdp_comm *c, float *buf, size_t n, int peer, int mpitag, ptdp_comm_tag tag,
                    ptdp_comm_req *req)
{
  PTDP_CALL(ptdp_comm_irecv_t(c, buf, n, PTDP_F32, peer, mpitag, tag, req));
  return PTDP_OK;
}

int ptdp_comm_isend_ring_t(ptdp_comm *c, const void *buf, size_t n, ptdp_dtype t, int ring, int mpitag,
                           ptdp_comm_tag tag, ptdp_comm_req *req)
{
  *req = PTDP_COMM_REQ_NULL;
  PTDP_CHECK_INTERNAL(ring == 1 || ring == -1, "comm: ring direction %d (want +1 or -1)", ring);
  PTDP_CALL(p2p(c, 1, (void *)buf, n, t, -1, ring, mpitag, tag, req));
  return PTDP_OK;
}

int ptdp_comm_irecv_ring_t(ptdp_comm *c, void *buf, size_t n, ptdp_dtype t, int ring, int mpitag,
                           ptdp_comm_tag tag, ptdp_comm_req *req)
{
  *req = PTDP_COMM_REQ_NULL;
  PTDP_CHECK_INTERNAL(ring == 1 || ring == -1, "comm: ring direction %d (want +1 or -1)", ring);
  PTDP_CALL(p2p(c, 0, buf, n, t, -1, ring, mpitag, tag, req));
  return PTDP_OK;
}

int ptdp_comm_open_ring(ptdp_comm *c)
{
  if (!c->transport || c->size < 2 || !c->transport->open_ring) return PTDP_OK;
  PTDP_CALL(c->transport->open_ring(c->transport));
  return PTDP_OK;
}

/* How waits wait: MPI_Wait polls the network at full speed, the right thing on a cluster.
 * When more ranks than cores share a node, a polling rank takes the CPU a computing rank
 * needs; then waits test and sleep this long between tests (process-wide setting). */
static int wait_sleep_us = 0;

void ptdp_comm_set_wait_sleep(int microseconds) { wait_sleep_us = microseconds > 0 ? microseconds : 0; }

/* A completed request goes back to the transport that made it. */
static void release(ptdp_comm_req *req)
{
  ptdp_transport *tr = (*req)->tr;
  tr->req_free(tr, *req);
  *req = PTDP_COMM_REQ_NULL;
}

static int wait_blocking(int count_, ptdp_comm_req *reqs)
{
  for (int i = 0; i < count_; i++) {
    if (reqs[i] == PTDP_COMM_REQ_NULL) continue;
    PTDP_CALL(reqs[i]->tr->wait(reqs[i]->tr, reqs[i]));
    release(&reqs[i]);
  }
  return PTDP_OK;
}

static int wait_polling(int count_, ptdp_comm_req *reqs)
{
  for (;;) {
    int pending = 0;
    for (int i = 0; i < count_; i++) {
      if (reqs[i] == PTDP_COMM_REQ_NULL) continue;
      int done = 0;
      PTDP_CALL(reqs[i]->tr->test(reqs[i]->tr, reqs[i], &done));
      if (done)
        release(&reqs[i]);
      else
        pending = 1;
    }
    if (!pending) return PTDP_OK;
    struct timespec ts = {0, 1000L * wait_sleep_us};
    nanosleep(&ts, NULL);
  }
}

int ptdp_comm_wait(ptdp_comm *c, ptdp_comm_req *req)
{
  if (*req == PTDP_COMM_REQ_NULL) return PTDP_OK;
  PTDP_CALL(ptdp_comm_waitall(c, 1, req));
  return PTDP_OK;
}

int ptdp_comm_waitall(ptdp_comm *c, int count_, ptdp_comm_req *reqs)
{
  if (count_ <= 0) return PTDP_OK;
  double t0 = MPI_Wtime();
  if (wait_sleep_us > 0)
    PTDP_CALL(wait_polling(count_, reqs));
  else
    PTDP_CALL(wait_blocking(count_, reqs));
  c->stats.wait_seconds += MPI_Wtime() - t0;
  return PTDP_OK;
}
