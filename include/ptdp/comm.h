/* The one communication layer: every collective and point-to-point message of ptdp goes
 * through these functions.  Two layers:
 *   ptdp_comm (this header, src/parallel/comm.c): checks arguments, counts calls and bytes per
 *     communicator and per tag, times waits, and answers communicators of size 1 itself;
 *   a transport (src/parallel/transport.h, private): a table of operations that moves the data,
 *     one instance per communicator.  MPI is the transport today (transport_mpi.c); another
 *     (NCCL) fills the same table without changing anything a caller sees.
 *
 * Memory: a communicator may have a backend attached (ptdp_comm_attach_backend).  Every float32
 * buffer given to the float functions (allreduce_sum/max, allgather, reduce_scatter and their
 * nonblocking forms, isend, irecv), and every buffer of the *_t functions, is then memory of
 * that backend; the f64 functions and bcast always take host memory.  Where the backend's
 * memory is not host-accessible (a GPU under a MPI that is not CUDA-aware) the MPI transport
 * stages each message through host buffers:
 * to_host before, to_device after (for a nonblocking receive: when it is waited for).  With no
 * backend, or a host-accessible one (the CPU backend), nothing is staged.
 *
 * Storage types (mixed precision, ptdp/backend.h).  The *_t functions take a ptdp_dtype t after
 * the count and move elements of that type (PTDP_F32, PTDP_BF16, PTDP_F16) in the attached
 * backend's memory, staged as the float ones are; counts are elements, bytes are counted with
 * t's element size (ptdp_dtype_size: a bf16 all-reduce of n elements counts 2 (g-1)/g 2n).  The
 * float functions are these with PTDP_F32.  A sum of bf16 or fp16 adds each pair of elements in
 * fp32 and rounds the sum to t (round to nearest even, ptdp/half.h), as NCCL does on a GPU:
 *   allreduce_sum_t, reduce_scatter_t (and their nonblocking forms) on g = 2 ranks give the
 *   exact sum rounded once; on g > 2 ranks each partial sum is rounded, in an order the
 *   transport chooses (MPI's or NCCL's algorithm), so the result may differ from a serial sum
 *   by up to g-1 roundings (|error| <= (g-1) u sum_r |x_r| to first order, u = 2^-8 for bf16,
 *   2^-11 for fp16) and between transports; every rank of one call gets the same bits (ring,
 *   recursive doubling and reduce-scatter + all-gather all do; test_comm16 checks it);
 *   allgather_t, isend_t, irecv_t move the bits unchanged.
 * There is no maximum of 16-bit values (cross-entropy and norm statistics stay fp32).
 *
 * Bytes are counted as what one rank sends under the bandwidth-optimal (ring) algorithm,
 * the convention of Narayanan et al. 2021 Sec. 3.2, for n bytes of payload on g ranks:
 *     all-reduce       2 (g-1)/g * n
 *     all-gather       (g-1)/g * n_total     (n_total = g * n_per_rank)
 *     reduce-scatter   (g-1)/g * n_total
 *     broadcast        n (root) / 0 (others)         send/isend  n
 * so one transformer layer with TP costs 8 b s h (g-1)/g elements per micro-batch
 * (forward + backward; the same with sequence parallelism).  Counters are doubles because
 * (g-1)/g * n need not be an integer number of bytes.  A communicator of size 1 sends nothing
 * and makes no transport call (but the call is still counted in calls); staging copies are
 * not counted (they do not leave the rank). */
#ifndef PTDP_COMM_H
#define PTDP_COMM_H

#include "ptdp/backend.h"
#include "ptdp/parallel_kinds.h" /* ptdp_comm_backend */

#include <mpi.h>
#include <stddef.h>

/* Which group of the rank grid a communicator is. */
enum { PTDP_GROUP_WORLD = 0, PTDP_GROUP_TP, PTDP_GROUP_PP, PTDP_GROUP_DP, PTDP_GROUP_MP, PTDP_GROUP_EMB,
       PTDP_GROUP_COUNT };

/* What a message is for (reported separately). */
typedef enum {
  PTDP_TAG_LAYER = 0, /* TP/SP collectives inside transformer layers */
  PTDP_TAG_EMBED,     /* vocab-parallel embedding, output layer input, tied-embedding grads */
  PTDP_TAG_LOSS,      /* vocab-parallel cross entropy reductions */
  PTDP_TAG_GRAD,      /* data-parallel gradient reduction, LayerNorm grads under SP */
  PTDP_TAG_PARAM,     /* distributed-optimizer parameter all-gather */
  PTDP_TAG_P2P,       /* pipeline sends and receives */
  PTDP_TAG_MISC,      /* norms, loss averaging, control */
  PTDP_TAG_COUNT
} ptdp_comm_tag;

typedef struct {
  double bytes[PTDP_TAG_COUNT];
  long long calls[PTDP_TAG_COUNT];
  double wait_seconds; /* time spent blocked in ptdp_comm_wait* and blocking calls */
} ptdp_comm_stats;

typedef struct {
  MPI_Comm comm; /* MPI_COMM_NULL when this rank is not in such a group */
  int rank, size;
  int kind;                         /* PTDP_GROUP_* */
  ptdp_backend *be;                 /* whose memory float buffers are; NULL: host memory */
  struct ptdp_transport *transport; /* moves the data; NULL when not a member */
  ptdp_comm_stats stats;
} ptdp_comm;


/* The transport a run uses (pure): NCCL only on a GPU backend (on_gpu) of a build with NCCL
 * (nccl_built) where no two ranks share a GPU (NCCL refuses two ranks of one communicator on one
 * device); auto picks NCCL exactly then, else MPI.  Asking for nccl where it cannot be is a
 * PTDP_ERR_INPUT error naming the reason. */
int ptdp_comm_backend_resolve(ptdp_comm_backend want, int on_gpu, int nccl_built, int gpus_shared,
                              ptdp_comm_backend *out);

const char *ptdp_comm_tag_name(ptdp_comm_tag t);
const char *ptdp_comm_group_name(int kind);

/* Wrap an existing communicator (not duplicated; ptdp_comm_free frees it unless world). */
int ptdp_comm_wrap(ptdp_comm *c, MPI_Comm comm, int kind);
int ptdp_comm_free(ptdp_comm *c);
/* From now on float buffers given to c are memory of be (NULL: host memory).  Call it with no
 * nonblocking operation of c pending.  Accepted on a communicator this rank is not in. */
int ptdp_comm_attach_backend(ptdp_comm *c, ptdp_backend *be);
/* Move c's float messages through NCCL (a communicator made from c's MPI group, on its own
 * stream ordered after the attached backend's stream) instead of MPI; doubles, bytes and
 * point-to-point stay on MPI, except ring messages once the ring is open (below).  Collective over c; needs a backend with a CUDA stream attached
 * and a build with NCCL (else PTDP_ERR_INPUT).  A no-op on a communicator this rank is not in. */
int ptdp_comm_use_nccl(ptdp_comm *c);
void ptdp_comm_reset_stats(ptdp_comm *c);
double ptdp_comm_total_bytes(const ptdp_comm *c);

/* Blocking collectives on float32 (in place where one buffer is given). */
int ptdp_comm_allreduce_sum(ptdp_comm *c, float *buf, size_t n, ptdp_comm_tag tag);
/* The same on n elements of type t (see "Storage types" above). */
int ptdp_comm_allreduce_sum_t(ptdp_comm *c, void *buf, size_t n, ptdp_dtype t, ptdp_comm_tag tag);
int ptdp_comm_allreduce_max(ptdp_comm *c, float *buf, size_t n, ptdp_comm_tag tag);
int ptdp_comm_allreduce_sum_f64(ptdp_comm *c, double *buf, size_t n, ptdp_comm_tag tag);
int ptdp_comm_allreduce_max_f64(ptdp_comm *c, double *buf, size_t n, ptdp_comm_tag tag);
/* recv holds size * n floats, rank r's block at r * n. */
int ptdp_comm_allgather(ptdp_comm *c, const float *send, float *recv, size_t n_per_rank, ptdp_comm_tag tag);
int ptdp_comm_allgather_t(ptdp_comm *c, const void *send, void *recv, size_t n_per_rank, ptdp_dtype t,
                          ptdp_comm_tag tag);
/* The same on doubles in host memory (whatever backend is attached). */
int ptdp_comm_allgather_f64(ptdp_comm *c, const double *send, double *recv, size_t n_per_rank,
                            ptdp_comm_tag tag);
/* send holds size * n floats; recv gets the sum of every rank's block r (this rank's r). */
int ptdp_comm_reduce_scatter(ptdp_comm *c, const float *send, float *recv, size_t n_per_rank,
                             ptdp_comm_tag tag);
int ptdp_comm_reduce_scatter_t(ptdp_comm *c, const void *send, void *recv, size_t n_per_rank, ptdp_dtype t,
                               ptdp_comm_tag tag);
/* buf is host memory. */
int ptdp_comm_bcast(ptdp_comm *c, void *buf, size_t bytes, int root, ptdp_comm_tag tag);
int ptdp_comm_barrier(ptdp_comm *c);

/* A pending nonblocking operation: a pointer to a request the transport owns (with its staging
 * buffer, if any), NULL for none, so calloc'ed arrays hold no requests.  Callers treat it as
 * opaque: they initialise it to PTDP_COMM_REQ_NULL, pass its address, and wait for it through
 * ptdp_comm_wait*, which releases it and resets it to PTDP_COMM_REQ_NULL. */
typedef struct ptdp_comm_request *ptdp_comm_req;
#define PTDP_COMM_REQ_NULL ((ptdp_comm_req)NULL)

/* Nonblocking: *req is PTDP_COMM_REQ_NULL after a size-1 call.  The buffers belong to the
 * operation until it is waited for (a staged receive reaches buf only then). */
int ptdp_comm_iallreduce_sum(ptdp_comm *c, float *buf, size_t n, ptdp_comm_tag tag, ptdp_comm_req *req);
int ptdp_comm_ireduce_scatter(ptdp_comm *c, const float *send, float *recv, size_t n_per_rank,
                              ptdp_comm_tag tag, ptdp_comm_req *req);
int ptdp_comm_iallgather(ptdp_comm *c, const float *send, float *recv, size_t n_per_rank,
                         ptdp_comm_tag tag, ptdp_comm_req *req);
int ptdp_comm_isend(ptdp_comm *c, const float *buf, size_t n, int peer, int mpitag, ptdp_comm_tag tag,
                    ptdp_comm_req *req);
int ptdp_comm_irecv(ptdp_comm *c, float *buf, size_t n, int peer, int mpitag, ptdp_comm_tag tag,
                    ptdp_comm_req *req);
/* The same on n elements of type t. */
int ptdp_comm_iallreduce_sum_t(ptdp_comm *c, void *buf, size_t n, ptdp_dtype t, ptdp_comm_tag tag,
                               ptdp_comm_req *req);
int ptdp_comm_ireduce_scatter_t(ptdp_comm *c, const void *send, void *recv, size_t n_per_rank, ptdp_dtype t,
                                ptdp_comm_tag tag, ptdp_comm_req *req);
int ptdp_comm_iallgather_t(ptdp_comm *c, const void *send, void *recv, size_t n_per_rank, ptdp_dtype t,
                           ptdp_comm_tag tag, ptdp_comm_req *req);
int ptdp_comm_isend_t(ptdp_comm *c, const void *buf, size_t n, ptdp_dtype t, int peer, int mpitag,
                      ptdp_comm_tag tag, ptdp_comm_req *req);
int ptdp_comm_irecv_t(ptdp_comm *c, void *buf, size_t n, ptdp_dtype t, int peer, int mpitag, ptdp_comm_tag tag,
                      ptdp_comm_req *req);
/* Ring messages (the pipeline's).  A send travels in direction ring (+1 or -1) to rank
 * (rank + ring) mod size; a receive takes a message that travelled in direction ring, from rank
 * (rank - ring) mod size.  Callers post them so that they match in order: the k-th receive of
 * a direction a rank posts is the k-th send of that direction its neighbour posts to it, with
 * the same mpitag.  Until the ring is open they are point-to-point messages like the others
 * (matched by mpitag, staged through the host by the MPI transport).  ptdp_comm_open_ring is
 * collective over c (every rank, the same number of times; later calls return at once); on
 * the NCCL transport it makes an NCCL communicator, with a stream of its own, for each (sender,
 * direction) of the ring: four per rank.  Then ring messages in backend memory go through
 * NCCL in posting order on their link's stream, after the work the compute stream has issued,
 * and a wait makes later compute wait, not the host (unless ptdp_comm_set_wait_sleep is on,
 * whose waits test until done): neither the host, nor the other direction, nor the collectives
 * wait for them.  On the MPI transport it does nothing. */
int ptdp_comm_open_ring(ptdp_comm *c);
int ptdp_comm_isend_ring_t(ptdp_comm *c, const void *buf, size_t n, ptdp_dtype t, int ring, int mpitag,
                           ptdp_comm_tag tag, ptdp_comm_req *req);
int ptdp_comm_irecv_ring_t(ptdp_comm *c, void *buf, size_t n, ptdp_dtype t, int ring, int mpitag,
                           ptdp_comm_tag tag, ptdp_comm_req *req);
/* Wait (time counted in stats.wait_seconds); each request waited for is released and set to
 * PTDP_COMM_REQ_NULL (waiting for PTDP_COMM_REQ_NULL returns at once).  With
 * ptdp_comm_set_wait_sleep(us > 0), waits test and sleep us microseconds between tests instead
 * of polling (oversubscribed nodes). */
void ptdp_comm_set_wait_sleep(int microseconds);
int ptdp_comm_wait(ptdp_comm *c, ptdp_comm_req *req);
int ptdp_comm_waitall(ptdp_comm *c, int count, ptdp_comm_req *reqs);

/* One line per tag with calls or bytes: "  <group> <tag>: <calls> calls, <bytes> bytes".
 * Writes at most n chars (always terminated); returns PTDP_OK. */
int ptdp_comm_report(const ptdp_comm *c, char *buf, size_t n);

#endif
