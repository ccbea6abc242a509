/* The transport table under the communication layer (private to src/parallel).
 *
 * ptdp_comm (comm.c) checks arguments, counts calls and bytes, times waits and short-circuits
 * communicators of size 1; a transport moves the data.  One transport instance serves one
 * communicator: it is a table of operations plus a context (its group, its attached backend,
 * its buffers), as a ptdp_backend is for compute.  The MPI transport (transport_mpi.c) is the
 * default; the NCCL transport (transport_nccl.c) fills the same table for GPU backends, so
 * callers of comm.h never change.
 *
 * What comm.c guarantees a transport: the communicator has size g > 1 (size 1 never reaches it,
 * except point-to-point, where a rank may message itself), counts fit an int, a peer or root is
 * inside the group.  What a transport guarantees comm.c: the numbers MPI would give, and every
 * request it returns is released by req_free once test or wait has seen it complete.
 *
 * Where buffers live is part of each element type (the contract of comm.h): float32, bf16 and
 * fp16 buffers are memory of the attached backend, doubles and bytes are host memory.  A
 * transport that cannot reach backend memory directly stages it through host buffers.  Sums
 * of bf16 and fp16 add each pair of elements in fp32 and round the sum to the type (round to
 * nearest even, ptdp/half.h), as NCCL does; there is no maximum of them. */
#ifndef PTDP_PARALLEL_TRANSPORT_H
#define PTDP_PARALLEL_TRANSPORT_H

#include "ptdp/backend.h"
#include "ptdp/comm.h"

#include <mpi.h>
#include <stddef.h>

/* Element type and memory of a buffer. */
typedef enum {
  PTDP_TR_DEV_F32 = 0, /* float32 in the attached backend's memory (host memory when none) */
  PTDP_TR_HOST_F64,    /* double in host memory */
  PTDP_TR_HOST_BYTE,   /* bytes in host memory */
  PTDP_TR_DEV_BF16,    /* bfloat16 (16-bit patterns) in the attached backend's memory, as DEV_F32 */
  PTDP_TR_DEV_F16      /* IEEE binary16 in the attached backend's memory, as DEV_F32 */
} ptdp_tr_data;

typedef enum { PTDP_TR_SUM = 0, PTDP_TR_MAX } ptdp_tr_op;

/* Bytes of one element of a data kind. */
size_t ptdp_tr_data_size(ptdp_tr_data d);
/* 1 for the kinds in the attached backend's memory (DEV_*), 0 for host memory. */
int ptdp_tr_data_device(ptdp_tr_data d);
/* The kind of a storage type's elements in backend memory (DEV_F32, DEV_BF16, DEV_F16). */
ptdp_tr_data ptdp_tr_data_of(ptdp_dtype t);
/* "floats", "bf16 values", ...: the plural for messages. */
const char *ptdp_tr_data_name(ptdp_tr_data d);

typedef struct ptdp_transport ptdp_transport;

/* The head every transport's request starts with: whoever holds a ptdp_comm_req can find the
 * transport that owns it (comm.c waits through req->tr, not through the communicator). */
struct ptdp_comm_request {
  ptdp_transport *tr;
};

/* Collectives take req: NULL blocks until done; otherwise the operation is started, *req is
 * the new request, and the buffers must stay untouched until it is waited for.  Counts n are
 * elements of the data kind; "per rank" blocks as in comm.h. */
struct ptdp_transport {
  const char *name;
  void *ctx;
  int size, rank; /* of the group */
  /* DEV_* buffers from now on are memory of be (NULL: host memory).  No request may be pending. */
  int (*attach_backend)(ptdp_transport *tr, ptdp_backend *be);
  /* In place on buf [n].  PTDP_TR_MAX only on DEV_F32 and HOST_F64 (else an internal error). */
  int (*allreduce)(ptdp_transport *tr, void *buf, size_t n, ptdp_tr_data d, ptdp_tr_op op, ptdp_comm_req *req);
  /* recv [g, n]; send == recv + rank n means in place. */
  int (*allgather)(ptdp_transport *tr, const void *send, void *recv, size_t n, ptdp_tr_data d, ptdp_comm_req *req);
  /* Sum of send [g, n] over ranks, block rank into recv [n]; send == recv means in place. */
  int (*reduce_scatter)(ptdp_transport *tr, const void *send, void *recv, size_t n, ptdp_tr_data d,
                        ptdp_comm_req *req);
  int (*bcast)(ptdp_transport *tr, void *buf, size_t n, ptdp_tr_data d, int root); /* blocking */
  int (*barrier)(ptdp_transport *tr);
  /* Point-to-point, matched by tag.  ring (+1, -1: a message travelling to rank + ring mod g, so
   * peer is that rank for a send and rank - ring for a receive; 0: any other) lets a transport
   * whose open_ring has run carry it on that ring link instead, matched in posting order
   * (comm.h, ptdp_comm_open_ring). */
  int (*isend)(ptdp_transport *tr, const void *buf, size_t n, ptdp_tr_data d, int peer, int tag, int ring,
               ptdp_comm_req *req);
  int (*irecv)(ptdp_transport *tr, void *buf, size_t n, ptdp_tr_data d, int peer, int tag, int ring,
               ptdp_comm_req *req);
  /* Collective, once per group: set up what ring messages travel by (NULL: nothing to set up,
   * ring messages go as the others). */
  int (*open_ring)(ptdp_transport *tr);
  /* *done = 1 once req has completed, its results in place (a staged receive copied back). */
  int (*test)(ptdp_transport *tr, ptdp_comm_req req, int *done);
  /* Block until req has completed, results in place. */
  int (*wait)(ptdp_transport *tr, ptdp_comm_req req);
  /* Release a completed request and whatever it owns (its staging buffer). */
  void (*req_free)(ptdp_transport *tr, ptdp_comm_req req);
  /* Release the context (not the group's MPI communicator: ptdp_comm owns that). */
  void (*destroy)(ptdp_transport *tr);
};

/* The MPI transport on comm (size > 0), which it uses but does not free. */
int ptdp_transport_mpi_create(MPI_Comm comm, ptdp_transport **tr);
/* The NCCL transport on comm's group (collective over comm), collectives on backend memory on its own stream
 * ordered after be's (transport_nccl.c; built with NCCL only). */
int ptdp_transport_nccl_create(MPI_Comm comm, ptdp_backend *be, ptdp_transport **tr);
/* destroy, then free the table; *tr = NULL.  NULL-safe. */
void ptdp_transport_destroy(ptdp_transport **tr);

#endif
