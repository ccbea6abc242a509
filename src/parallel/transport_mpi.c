/* The MPI transport: the table of transport.h on one MPI communicator.
 *
 * Unstaged (no backend, or a host-accessible one such as the CPU backend) each operation is
 * the one MPI call comm.c made before transports existed, on the caller's buffers, with
 * MPI_IN_PLACE exactly where the caller is in place, so every result is bit-identical; what is
 * added is an indirect call and, per nonblocking operation, one small malloc for the request.
 *
 * Staged (a backend with host_accessible == 0, buffers of backend memory only): Debian's Open MPI is not
 * CUDA-aware, so MPI may only see host memory.  An operation fetches what it sends into a host
 * buffer (be->to_host, then be->synchronize, because MPI reads the buffer right after), makes
 * the same MPI call on host buffers (in place where the caller is), and delivers what it
 * received (be->to_device, then be->synchronize, because the host buffer is reused or freed
 * right after).  Blocking operations share one scratch buffer, grown to the largest message;
 * a nonblocking operation owns a buffer allocated with its request and delivers when test or
 * wait first sees it complete.  Staging per operation, n elements per rank on g ranks:
 *     all-reduce       fetch n,     deliver n
 *     all-gather       fetch n,     deliver g n   (recv [g, n] whole; send apart unless in place)
 *     reduce-scatter   fetch g n,   deliver n
 *     broadcast        fetch n at the root, deliver n elsewhere
 *     isend            fetch n;     irecv: deliver n at completion
 *
 * bf16 and fp16 travel as 16-bit integers (MPI has no such floating types); their sums use an
 * MPI_Op of our own per type (sum16_ops below), created on a transport's first 16-bit reduction
 * and freed with the transport.
 * Errors end the program (ptdp/error.h), so error paths do not release a request begun. */
#include "transport.h"

#include "ptdp/error.h"
#include "ptdp/half.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct {
  MPI_Comm comm;  /* not owned: ptdp_comm frees it */
  ptdp_backend *be;
  int stage;      /* 1: backend memory (DEV_* buffers) is memory MPI must not touch */
  char *scratch;  /* host buffer of blocking staged operations */
  size_t scratch_bytes;
  MPI_Op sum_bf16, sum_f16; /* MPI_OP_NULL until the first 16-bit reduction */
} mpi_ctx;

/* A staged result still on the host: bytes of host go to dev (bytes 0: nothing). */
typedef struct {
  void *dev;
  const void *host;
  size_t bytes;
} delivery;

typedef struct {
  struct ptdp_comm_request head; /* first, so a ptdp_comm_req points at the whole request */
  MPI_Request mpi;
  delivery out;
} mpi_req;

/* The request rounded up to 64 bytes; its staging buffer follows in the same allocation. */
#define REQ_HEADER ((sizeof(mpi_req) + 63) / 64 * 64)

static MPI_Datatype mpi_type(ptdp_tr_data d)
{
  switch (d) {
  case PTDP_TR_DEV_F32: return MPI_FLOAT;
  case PTDP_TR_HOST_F64: return MPI_DOUBLE;
  case PTDP_TR_HOST_BYTE: return MPI_BYTE;
  case PTDP_TR_DEV_BF16: return MPI_UINT16_T; /* the bits, moved unchanged */
  case PTDP_TR_DEV_F16: return MPI_UINT16_T;
  }
  return MPI_DATATYPE_NULL;
}

/* ---- sums of bf16 and fp16 (sum16_ops) ----
 * MPI reduces 16-bit floats with a commutative user-defined operation: inout[i] = in[i] +
 * inout[i], added in fp32 and rounded once to the type (round to nearest even, ptdp/half.h).
 * The fp32 add does not change that rounding: fp32's 24 significand bits are at least 2p + 2
 * for bf16 (p = 8) and fp16 (p = 11), so rounding the fp32 sum to the type gives the exact sum
 * rounded once (no double-rounding error).  On g = 2 ranks a sum is therefore correctly
 * rounded.  With g > 2 MPI adds the g contributions in an order of its own (its algorithm, the
 * number of ranks, the message size) and each partial sum is rounded: the result depends on
 * that order, within (g-1) roundings of the exact sum (|error| <= gamma_{g-1} sum |x_r|,
 * gamma_k = k u / (1 - k u), u = 2^-p), which is why the model's bf16 equivalence tests carry a
 * tolerance.  NCCL's ring does the same (every partial sum stored in the type). */
static void sum_bf16(void *in, void *inout, int *len, MPI_Datatype *type)
{
  const uint16_t *a = in;
  uint16_t *b = inout;
  (void)type;
  for (int i = 0; i < *len; i++) b[i] = ptdp_float_to_bf16(ptdp_bf16_to_float(a[i]) + ptdp_bf16_to_float(b[i]));
}

static void sum_f16(void *in, void *inout, int *len, MPI_Datatype *type)
{
  const uint16_t *a = in;
  uint16_t *b = inout;
  (void)type;
  for (int i = 0; i < *len; i++) b[i] = ptdp_float_to_f16(ptdp_f16_to_float(a[i]) + ptdp_f16_to_float(b[i]));
}

/* The MPI_Op of one 16-bit sum, created on first use. */
static int sum16_op(MPI_Op *op, MPI_User_function *fn)
{
  if (*op == MPI_OP_NULL) PTDP_CALL_MPI(MPI_Op_create(fn, 1, op));
  return PTDP_OK;
}

/* The reduction of op on kind d.  A maximum of 16-bit values is nothing comm.h offers: asking
 * for one is a mistake in ptdp, not in the input. */
static int mpi_op(mpi_ctx *x, ptdp_tr_op op, ptdp_tr_data d, MPI_Op *out)
{
  const int half = d == PTDP_TR_DEV_BF16 || d == PTDP_TR_DEV_F16;
  if (half && op != PTDP_TR_SUM) {
    ptdp_error_set_collective(0);
    return PTDP_FAIL(PTDP_ERR_INTERNAL,
                           "the MPI transport reduces %s by sum only", ptdp_tr_data_name(d));
  }
  if (d == PTDP_TR_DEV_BF16) {
    PTDP_CALL(sum16_op(&x->sum_bf16, sum_bf16));
    *out = x->sum_bf16;
  } else if (d == PTDP_TR_DEV_F16) {
    PTDP_CALL(sum16_op(&x->sum_f16, sum_f16));
    *out = x->sum_f16;
  } else {
    *out = op == PTDP_TR_MAX ? MPI_MAX : MPI_SUM;
  }
  return PTDP_OK;
}

static int staged(const mpi_ctx *x, ptdp_tr_data d) { return x->stage && ptdp_tr_data_device(d); }

static int fetch(mpi_ctx *x, void *host, const void *dev, size_t bytes)
{
  PTDP_CALL(x->be->to_host(x->be, host, dev, bytes));
  PTDP_CALL(x->be->synchronize(x->be));
  return PTDP_OK;
}

static int deliver(mpi_ctx *x, delivery out)
{
  if (out.bytes == 0) return PTDP_OK;
  PTDP_CALL(x->be->to_device(x->be, out.dev, out.host, out.bytes));
  PTDP_CALL(x->be->synchronize(x->be));
  return PTDP_OK;
}

/* Host space of one operation: with req (nonblocking) a new request owning `bytes` of buffer,
 * else the scratch buffer (and *r = NULL).  *host is NULL when bytes is 0. */
static int begin(ptdp_transport *tr, ptdp_comm_req *req, size_t bytes, char **host, mpi_req **r)
{
  mpi_ctx *x = tr->ctx;
  *host = NULL;
  *r = NULL;
  if (req) {
    mpi_req *q;
    PTDP_ALLOC(q, REQ_HEADER + bytes);
    q->head.tr = tr;
    q->mpi = MPI_REQUEST_NULL;
    q->out = (delivery){NULL, NULL, 0};
    if (bytes) *host = (char *)q + REQ_HEADER;
    *r = q;
    return PTDP_OK;
  }
  if (bytes > x->scratch_bytes) {
    free(x->scratch);
    x->scratch = NULL;
    x->scratch_bytes = 0;
    PTDP_ALLOC(x->scratch, bytes);
    x->scratch_bytes = bytes;
  }
  if (bytes) *host = x->scratch;
  return PTDP_OK;
}

/* After the MPI call: hand the request to the caller (it delivers at completion), or, when
 * blocking, deliver now. */
static int finish(ptdp_transport *tr, mpi_req *r, ptdp_comm_req *req, delivery out)
{
  if (r) {
    r->out = out;
    *req = &r->head;
    return PTDP_OK;
  }
  PTDP_CALL(deliver(tr->ctx, out));
  return PTDP_OK;
}

/* One buffer of an operation as MPI sees it: the caller's, or its host copy when staged. */
typedef struct {
  void *b;      /* what MPI reads or writes */
  char *h;      /* the host copy, staged (NULL otherwise, or when empty) */
  mpi_req *r;   /* with a request: the one owning h */
  size_t bytes; /* of the buffer */
  int st;       /* staged */
} one_buffer;

/* begin() for one buffer of n elements of d: staged, its host copy, filled from buf when MPI
 * sends it (send).  MPI writes g->b only where buf is the caller's writable buffer. */
static int stage(ptdp_transport *tr, ptdp_comm_req *req, const void *buf, size_t n, ptdp_tr_data d, int send,
                 one_buffer *g)
{
  mpi_ctx *x = tr->ctx;
  g->bytes = n * ptdp_tr_data_size(d);
  g->st = staged(x, d);
  PTDP_CALL(begin(tr, req, g->st ? g->bytes : 0, &g->h, &g->r));
  g->b = g->st ? g->h : (void *)buf;
  if (g->st && send) PTDP_CALL(fetch(x, g->h, buf, g->bytes));
  return PTDP_OK;
}

/* What a staged buffer that MPI wrote gives back to the caller's buf at completion. */
static delivery given_back(const one_buffer *g, void *buf)
{
  return g->st ? (delivery){buf, g->h, g->bytes} : (delivery){NULL, NULL, 0};
}

static int tmpi_allreduce(ptdp_transport *tr, void *buf, size_t n, ptdp_tr_data d, ptdp_tr_op op,
                          ptdp_comm_req *req)
{
  mpi_ctx *x = tr->ctx;
  MPI_Op mop = MPI_OP_NULL; /* set by mpi_op */
  one_buffer g = {0}; /* set by stage */
  PTDP_CALL(mpi_op(x, op, d, &mop));
  PTDP_CALL(stage(tr, req, buf, n, d, 1, &g));
  if (g.r)
    PTDP_CALL_MPI(MPI_Iallreduce(MPI_IN_PLACE, g.b, (int)n, mpi_type(d), mop, x->comm, &g.r->mpi));
  else
    PTDP_CALL_MPI(MPI_Allreduce(MPI_IN_PLACE, g.b, (int)n, mpi_type(d), mop, x->comm));
  PTDP_CALL(finish(tr, g.r, req, given_back(&g, buf)));
  return PTDP_OK;
}

/* The MPI call of a block collective (gather: all-gather, else reduce-scatter), nonblocking when r. */
static int block_call(mpi_ctx *x, int gather, const void *s, void *rv, int n, MPI_Datatype T, MPI_Op mop, mpi_req *r)
{
  if (gather && r) PTDP_CALL_MPI(MPI_Iallgather(s, n, T, rv, n, T, x->comm, &r->mpi));
  else if (gather) PTDP_CALL_MPI(MPI_Allgather(s, n, T, rv, n, T, x->comm));
  else if (r) PTDP_CALL_MPI(MPI_Ireduce_scatter_block(s, rv, n, T, mop, x->comm, &r->mpi));
  else PTDP_CALL_MPI(MPI_Reduce_scatter_block(s, rv, n, T, mop, x->comm));
  return PTDP_OK;
}

/* The block collectives, n elements per rank: all-gather (recv [g, n]; in place when send is
 * recv's own block) and reduce-scatter (send [g, n] summed, block `rank` into recv [n]; in place
 * when send == recv, the result in its first block), in place passed as MPI_IN_PLACE.  Staged,
 * both hold [g, n] at h and, unless in place, the one block more after it. */
static int tmpi_blocks(ptdp_transport *tr, int gather, const void *send, void *recv, size_t n, ptdp_tr_data d,
                       ptdp_comm_req *req)
{
  mpi_ctx *x = tr->ctx;
  const size_t blk = n * ptdp_tr_data_size(d), all = blk * (size_t)tr->size;
  const int in_place = gather ? (const char *)send == (char *)recv + (size_t)tr->rank * blk : send == recv;
  const int st = staged(x, d);
  const void *s = in_place ? MPI_IN_PLACE : send;
  void *rv = recv;
  char *h;
  mpi_req *r;
  delivery out = {NULL, NULL, 0};
  MPI_Op mop = MPI_OP_NULL;
  if (!gather) PTDP_CALL(mpi_op(x, PTDP_TR_SUM, d, &mop));
  PTDP_CALL(begin(tr, req, st ? all + (in_place ? 0 : blk) : 0, &h, &r));
  if (st && gather) { /* recv [g, n] at h; a separate send block after it */
    char *hs = in_place ? h + (size_t)tr->rank * blk : h + all;
    PTDP_CALL(fetch(x, hs, send, blk));
    if (!in_place) s = hs;
    rv = h;
    out = (delivery){recv, h, all};
  } else if (st) { /* send [g, n] at h (the result lands in its first block when in place), recv after */
    PTDP_CALL(fetch(x, h, send, all));
    if (!in_place) s = h;
    rv = in_place ? h : h + all;
    out = (delivery){recv, rv, blk};
  }
  PTDP_CALL(block_call(x, gather, s, rv, (int)n, mpi_type(d), mop, r));
  PTDP_CALL(finish(tr, r, req, out));
  return PTDP_OK;
}

static int tmpi_allgather(ptdp_transport *tr, const void *send, void *recv, size_t n, ptdp_tr_data d,
                          ptdp_comm_req *req)
{
  return tmpi_blocks(tr, 1, send, recv, n, d, req);
}

static int tmpi_reduce_scatter(ptdp_transport *tr, const void *send, void *recv, size_t n, ptdp_tr_data d,
                               ptdp_comm_req *req)
{
  return tmpi_blocks(tr, 0, send, recv, n, d, req);
}

static int tmpi_bcast(ptdp_transport *tr, void *buf, size_t n, ptdp_tr_data d, int root)
{
  mpi_ctx *x = tr->ctx;
  const int sender = tr->rank == root;
  one_buffer g = {0}; /* set by stage */
  PTDP_CALL(stage(tr, NULL, buf, n, d, sender, &g));
  PTDP_CALL_MPI(MPI_Bcast(g.b, (int)n, mpi_type(d), root, x->comm));
  PTDP_CALL(finish(tr, NULL, NULL, sender ? (delivery){NULL, NULL, 0} : given_back(&g, buf)));
  return PTDP_OK;
}

static int tmpi_barrier(ptdp_transport *tr)
{
  mpi_ctx *x = tr->ctx;
  PTDP_CALL_MPI(MPI_Barrier(x->comm));
  return PTDP_OK;
}

static int tmpi_isend(ptdp_transport *tr, const void *buf, size_t n, ptdp_tr_data d, int peer, int tag,
                      int ring, ptdp_comm_req *req)
{
  (void)ring; /* matched by tag like any other message */
  mpi_ctx *x = tr->ctx;
  one_buffer g = {0}; /* set by stage */
  PTDP_CALL(stage(tr, req, buf, n, d, 1, &g));
  PTDP_CALL_MPI(MPI_Isend(g.b, (int)n, mpi_type(d), peer, tag, x->comm, &g.r->mpi));
  PTDP_CALL(finish(tr, g.r, req, (delivery){NULL, NULL, 0}));
  return PTDP_OK;
}

static int tmpi_irecv(ptdp_transport *tr, void *buf, size_t n, ptdp_tr_data d, int peer, int tag,
                      int ring, ptdp_comm_req *req)
{
  (void)ring;
  mpi_ctx *x = tr->ctx;
  one_buffer g = {0}; /* set by stage */
  PTDP_CALL(stage(tr, req, buf, n, d, 0, &g));
  PTDP_CALL_MPI(MPI_Irecv(g.b, (int)n, mpi_type(d), peer, tag, x->comm, &g.r->mpi));
  PTDP_CALL(finish(tr, g.r, req, given_back(&g, buf)));
  return PTDP_OK;
}

/* A request MPI reports complete: deliver what it staged, once. */
static int complete(mpi_ctx *x, mpi_req *r)
{
  PTDP_CALL(deliver(x, r->out));
  r->out.bytes = 0;
  return PTDP_OK;
}

static int tmpi_test(ptdp_transport *tr, ptdp_comm_req req, int *done)
{
  mpi_req *r = (mpi_req *)req;
  PTDP_CALL_MPI(MPI_Test(&r->mpi, done, MPI_STATUS_IGNORE));
  if (*done) PTDP_CALL(complete(tr->ctx, r));
  return PTDP_OK;
}

static int tmpi_wait(ptdp_transport *tr, ptdp_comm_req req)
{
  mpi_req *r = (mpi_req *)req;
  PTDP_CALL_MPI(MPI_Wait(&r->mpi, MPI_STATUS_IGNORE));
  PTDP_CALL(complete(tr->ctx, r));
  return PTDP_OK;
}

static void tmpi_req_free(ptdp_transport *tr, ptdp_comm_req req) { free(req); }

static int tmpi_attach_backend(ptdp_transport *tr, ptdp_backend *be)
{
  mpi_ctx *x = tr->ctx;
  int stage = be && !be->host_accessible;
  PTDP_CHECK(!stage || (be->to_host && be->to_device && be->synchronize),
             "comm: backend '%s' is not host-accessible and lacks to_host, to_device or synchronize",
             be->name ? be->name : "?");
  x->be = be;
  x->stage = stage;
  return PTDP_OK;
}

/* Operations still in flight keep a freed MPI_Op alive (MPI's rule); after MPI_Finalize
 * there is nothing left to free. */
static void free_op(MPI_Op *op)
{
  int fin = 1;
  if (*op != MPI_OP_NULL && MPI_Finalized(&fin) == MPI_SUCCESS && !fin && MPI_Op_free(op) != MPI_SUCCESS)
    fprintf(stderr, "ptdp: comm: MPI_Op_free failed\n");
  *op = MPI_OP_NULL;
}

static void tmpi_destroy(ptdp_transport *tr)
{
  mpi_ctx *x = tr->ctx;
  if (x) {
    free_op(&x->sum_bf16);
    free_op(&x->sum_f16);
    free(x->scratch);
  }
  free(x);
  tr->ctx = NULL;
}

int ptdp_transport_mpi_create(MPI_Comm comm, ptdp_transport **out)
{
  ptdp_transport *tr;
  mpi_ctx *x;
  *out = NULL;
  PTDP_CALLOC(tr, 1, sizeof *tr);
  PTDP_CALLOC(x, 1, sizeof *x);
  x->comm = comm;
  x->sum_bf16 = MPI_OP_NULL;
  x->sum_f16 = MPI_OP_NULL;
  tr->name = "mpi";
  tr->ctx = x;
  PTDP_CALL_MPI(MPI_Comm_rank(comm, &tr->rank));
  PTDP_CALL_MPI(MPI_Comm_size(comm, &tr->size));
  tr->attach_backend = tmpi_attach_backend;
  tr->allreduce = tmpi_allreduce;
  tr->allgather = tmpi_allgather;
  tr->reduce_scatter = tmpi_reduce_scatter;
  tr->bcast = tmpi_bcast;
  tr->barrier = tmpi_barrier;
  tr->isend = tmpi_isend;
  tr->irecv = tmpi_irecv;
  tr->test = tmpi_test;
  tr->wait = tmpi_wait;
  tr->req_free = tmpi_req_free;
  tr->destroy = tmpi_destroy;
  *out = tr;
  return PTDP_OK;
}
