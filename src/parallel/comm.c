/* The one communication layer: MPI calls that count what they send (see ptdp/comm.h).
 *
 * Bytes are what one rank sends under the ring algorithm, for a payload of n bytes on g ranks:
 *     all-reduce       2 (g-1)/g n         (reduce-scatter then all-gather, each (g-1)/g n)
 *     all-gather       (g-1)/g n_total     n_total = g n_per_rank: each rank forwards g-1 blocks
 *     reduce-scatter   (g-1)/g n_total
 *     broadcast        n at the root, 0 elsewhere
 *     isend            n;  irecv 0 (the sender counts the message)
 * Worked example: all-reduce of a [s, b, h] = [8, 2, 16] float activation over t = 4 ranks
 * counts 2 (3/4) (8 2 16 4 bytes) = 1536 bytes on each rank.
 * A communicator of size 1 makes no MPI call (copying when send and receive differ), counts
 * the call and 0 bytes.  Point-to-point on a size-1 communicator (a rank messaging itself)
 * goes through MPI, since only the matching receive can complete it, and counts 0 bytes: nothing
 * leaves the rank.  Time blocked (blocking collectives, waits) accumulates in wait_seconds. */
#include "ptdp/comm.h"

#include "ptdp/error.h"

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
  return PTDP_OK;
}

int ptdp_comm_free(ptdp_comm *c)
{
  if (c->comm != MPI_COMM_NULL && c->comm != MPI_COMM_WORLD && c->comm != MPI_COMM_SELF &&
      c->kind != PTDP_GROUP_WORLD)
    PTDP_CALL_MPI(MPI_Comm_free(&c->comm));
  c->comm = MPI_COMM_NULL;
  c->rank = -1;
  c->size = 0;
  return PTDP_OK;
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
  PTDP_CHECK_LOCAL(c->comm != MPI_COMM_NULL && c->size > 0,
                   "comm: %s on the %s group, which this rank is not a member of", what,
                   ptdp_comm_group_name(c->kind));
  PTDP_CHECK_LOCAL(tag >= 0 && tag < PTDP_TAG_COUNT, "comm: %s with unknown tag %d", what, (int)tag);
  PTDP_CHECK_LOCAL(count <= (size_t)INT_MAX, "comm: %s of %zu elements exceeds MPI's int count limit %d",
                   what, count, INT_MAX);
  return PTDP_OK;
}

static void count(ptdp_comm *c, ptdp_comm_tag tag, double bytes)
{
  c->stats.calls[tag]++;
  c->stats.bytes[tag] += bytes;
}

/* Ring-algorithm bytes: all-reduce 2 (g-1)/g n; all-gather / reduce-scatter (g-1)/g n_total. */
static double ring_allreduce_bytes(int g, double n) { return 2.0 * (g - 1) / g * n; }
static double ring_gather_bytes(int g, double n_total) { return (double)(g - 1) / g * n_total; }

static int allreduce(ptdp_comm *c, void *buf, size_t n, MPI_Datatype type, size_t elem, MPI_Op op,
                     ptdp_comm_tag tag)
{
  PTDP_CALL(check_use(c, tag, n, "all-reduce"));
  if (c->size == 1) {
    count(c, tag, 0);
    return PTDP_OK;
  }
  double t0 = MPI_Wtime();
  PTDP_CALL_MPI(MPI_Allreduce(MPI_IN_PLACE, buf, (int)n, type, op, c->comm));
  c->stats.wait_seconds += MPI_Wtime() - t0;
  count(c, tag, ring_allreduce_bytes(c->size, (double)n * elem));
  return PTDP_OK;
}

int ptdp_comm_allreduce_sum(ptdp_comm *c, float *buf, size_t n, ptdp_comm_tag tag)
{
  PTDP_CALL(allreduce(c, buf, n, MPI_FLOAT, sizeof(float), MPI_SUM, tag));
  return PTDP_OK;
}

int ptdp_comm_allreduce_max(ptdp_comm *c, float *buf, size_t n, ptdp_comm_tag tag)
{
  PTDP_CALL(allreduce(c, buf, n, MPI_FLOAT, sizeof(float), MPI_MAX, tag));
  return PTDP_OK;
}

int ptdp_comm_allreduce_sum_f64(ptdp_comm *c, double *buf, size_t n, ptdp_comm_tag tag)
{
  PTDP_CALL(allreduce(c, buf, n, MPI_DOUBLE, sizeof(double), MPI_SUM, tag));
  return PTDP_OK;
}

int ptdp_comm_allreduce_max_f64(ptdp_comm *c, double *buf, size_t n, ptdp_comm_tag tag)
{
  PTDP_CALL(allreduce(c, buf, n, MPI_DOUBLE, sizeof(double), MPI_MAX, tag));
  return PTDP_OK;
}

/* All-gather: recv [g, n_per_rank], send may already be recv's own block (in place). */
static int allgather(ptdp_comm *c, const float *send, float *recv, size_t n, ptdp_comm_tag tag, ptdp_comm_req *req)
{
  PTDP_CALL(check_use(c, tag, n * (size_t)(c->size > 0 ? c->size : 1), "all-gather"));
  if (req) *req = MPI_REQUEST_NULL;
  if (c->size == 1) {
    if (send != recv) memmove(recv, send, n * sizeof(float));
    count(c, tag, 0);
    return PTDP_OK;
  }
  const void *sbuf = (send == recv + (size_t)c->rank * n) ? MPI_IN_PLACE : (const void *)send;
  if (req) {
    PTDP_CALL_MPI(MPI_Iallgather(sbuf, (int)n, MPI_FLOAT, recv, (int)n, MPI_FLOAT, c->comm, req));
  } else {
    double t0 = MPI_Wtime();
    PTDP_CALL_MPI(MPI_Allgather(sbuf, (int)n, MPI_FLOAT, recv, (int)n, MPI_FLOAT, c->comm));
    c->stats.wait_seconds += MPI_Wtime() - t0;
  }
  count(c, tag, ring_gather_bytes(c->size, (double)n * c->size * sizeof(float)));
  return PTDP_OK;
}

/* Reduce-scatter: send [g, n_per_rank] summed over ranks, block `rank` lands in recv [n].
 * send == recv means in place (recv then holds the whole input; the result is its first n). */
static int reduce_scatter(ptdp_comm *c, const float *send, float *recv, size_t n, ptdp_comm_tag tag,
                          ptdp_comm_req *req)
{
  PTDP_CALL(check_use(c, tag, n * (size_t)(c->size > 0 ? c->size : 1), "reduce-scatter"));
  if (req) *req = MPI_REQUEST_NULL;
  if (c->size == 1) {
    if (send != recv) memmove(recv, send, n * sizeof(float));
    count(c, tag, 0);
    return PTDP_OK;
  }
  const void *sbuf = (send == recv) ? MPI_IN_PLACE : (const void *)send;
  if (req) {
    PTDP_CALL_MPI(MPI_Ireduce_scatter_block(sbuf, recv, (int)n, MPI_FLOAT, MPI_SUM, c->comm, req));
  } else {
    double t0 = MPI_Wtime();
    PTDP_CALL_MPI(MPI_Reduce_scatter_block(sbuf, recv, (int)n, MPI_FLOAT, MPI_SUM, c->comm));
    c->stats.wait_seconds += MPI_Wtime() - t0;
  }
  count(c, tag, ring_gather_bytes(c->size, (double)n * c->size * sizeof(float)));
  return PTDP_OK;
}

int ptdp_comm_allgather(ptdp_comm *c, const float *send, float *recv, size_t n_per_rank, ptdp_comm_tag tag)
{
  PTDP_CALL(allgather(c, send, recv, n_per_rank, tag, NULL));
  return PTDP_OK;
}

int ptdp_comm_reduce_scatter(ptdp_comm *c, const float *send, float *recv, size_t n_per_rank,
                             ptdp_comm_tag tag)
{
  PTDP_CALL(reduce_scatter(c, send, recv, n_per_rank, tag, NULL));
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
  PTDP_CALL_MPI(MPI_Bcast(buf, (int)bytes, MPI_BYTE, root, c->comm));
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
    PTDP_CALL_MPI(MPI_Barrier(c->comm));
    c->stats.wait_seconds += MPI_Wtime() - t0;
  }
  count(c, PTDP_TAG_MISC, 0);
  return PTDP_OK;
}

int ptdp_comm_iallreduce_sum(ptdp_comm *c, float *buf, size_t n, ptdp_comm_tag tag, ptdp_comm_req *req)
{
  *req = MPI_REQUEST_NULL;
  PTDP_CALL(check_use(c, tag, n, "all-reduce"));
  if (c->size == 1) {
    count(c, tag, 0);
    return PTDP_OK;
  }
  PTDP_CALL_MPI(MPI_Iallreduce(MPI_IN_PLACE, buf, (int)n, MPI_FLOAT, MPI_SUM, c->comm, req));
  count(c, tag, ring_allreduce_bytes(c->size, (double)n * sizeof(float)));
  return PTDP_OK;
}

int ptdp_comm_ireduce_scatter(ptdp_comm *c, const float *send, float *recv, size_t n_per_rank,
                              ptdp_comm_tag tag, ptdp_comm_req *req)
{
  PTDP_CALL(reduce_scatter(c, send, recv, n_per_rank, tag, req));
  return PTDP_OK;
}

int ptdp_comm_iallgather(ptdp_comm *c, const float *send, float *recv, size_t n_per_rank,
                         ptdp_comm_tag tag, ptdp_comm_req *req)
{
  PTDP_CALL(allgather(c, send, recv, n_per_rank, tag, req));
  return PTDP_OK;
}

int ptdp_comm_isend(ptdp_comm *c, const float *buf, size_t n, int peer, int mpitag, ptdp_comm_tag tag,
                    ptdp_comm_req *req)
{
  *req = MPI_REQUEST_NULL;
  PTDP_CALL(check_use(c, tag, n, "send"));
  PTDP_CHECK_LOCAL(peer >= 0 && peer < c->size, "comm: send to rank %d outside the %s group of size %d", peer,
                   ptdp_comm_group_name(c->kind), c->size);
  PTDP_CALL_MPI(MPI_Isend(buf, (int)n, MPI_FLOAT, peer, mpitag, c->comm, req));
  count(c, tag, c->size == 1 ? 0.0 : (double)n * sizeof(float));
  return PTDP_OK;
}

int ptdp_comm_irecv(ptdp_comm *c, float *buf, size_t n, int peer, int mpitag, ptdp_comm_tag tag,
                    ptdp_comm_req *req)
{
  *req = MPI_REQUEST_NULL;
  PTDP_CALL(check_use(c, tag, n, "receive"));
  PTDP_CHECK_LOCAL(peer >= 0 && peer < c->size, "comm: receive from rank %d outside the %s group of size %d",
                   peer, ptdp_comm_group_name(c->kind), c->size);
  PTDP_CALL_MPI(MPI_Irecv(buf, (int)n, MPI_FLOAT, peer, mpitag, c->comm, req));
  count(c, tag, 0);
  return PTDP_OK;
}

/* How waits wait: MPI_Wait polls the network at full speed, the right thing on a cluster.
 * When more ranks than cores share a node, a polling rank takes the CPU a computing rank
 * needs; then waits test and sleep this long between tests (process-wide setting). */
static int wait_sleep_us = 0;

void ptdp_comm_set_wait_sleep(int microseconds) { wait_sleep_us = microseconds > 0 ? microseconds : 0; }

static int wait_polling(int count_, ptdp_comm_req *reqs)
{
  for (;;) {
    int done = 0;
    PTDP_CALL_MPI(MPI_Testall(count_, reqs, &done, MPI_STATUSES_IGNORE));
    if (done) return PTDP_OK;
    struct timespec ts = {0, 1000L * wait_sleep_us};
    nanosleep(&ts, NULL);
  }
}

int ptdp_comm_wait(ptdp_comm *c, ptdp_comm_req *req)
{
  if (*req == MPI_REQUEST_NULL) return PTDP_OK;
  double t0 = MPI_Wtime();
  if (wait_sleep_us > 0)
    PTDP_CALL(wait_polling(1, req));
  else
    PTDP_CALL_MPI(MPI_Wait(req, MPI_STATUS_IGNORE));
  c->stats.wait_seconds += MPI_Wtime() - t0;
  return PTDP_OK;
}

int ptdp_comm_waitall(ptdp_comm *c, int count_, ptdp_comm_req *reqs)
{
  if (count_ <= 0) return PTDP_OK;
  double t0 = MPI_Wtime();
  if (wait_sleep_us > 0)
    PTDP_CALL(wait_polling(count_, reqs));
  else
    PTDP_CALL_MPI(MPI_Waitall(count_, reqs, MPI_STATUSES_IGNORE));
  c->stats.wait_seconds += MPI_Wtime() - t0;
  return PTDP_OK;
}
