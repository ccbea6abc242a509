/* Private to the emulated NCCL (emu_nccl_comm.cc, emu_nccl_ops.cc): a communicator's state,
 * the handle, and the helpers both files use.  The semantics, as a user sees them, are in
 * include/nccl.h; how the emulation works, in the header comments of the two files. */
#ifndef PTDP_EMU_NCCL_PRIVATE_H
#define PTDP_EMU_NCCL_PRIVATE_H

#include <nccl.h>

#include "emu_internal.h"

#define OMPI_SKIP_MPICXX 1 /* the C API only */
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <memory>
#include <string>

namespace emu {
namespace nccl {

/* What a handle refers to; queued calls hold it too, so it outlives ncclCommDestroy until the
 * last of them has run (NCCL's destroy flushes pending work). */
struct CommState {
  MPI_Comm mpi = MPI_COMM_NULL;
  MPI_Op sum_bf16 = MPI_OP_NULL, sum_f16 = MPI_OP_NULL; /* emu_nccl_ops.cc's sums of halves, made on first use */
  int rank = 0, nranks = 0, device = 0;
  bool aborted = false;
  ncclResult_t async_error = ncclSuccess;
  std::string last_error;
  ~CommState()
  {
    int fin = 1;
    if (MPI_Finalized(&fin) != MPI_SUCCESS || fin) return;
    if (mpi != MPI_COMM_NULL) MPI_Comm_free(&mpi);
    if (sum_bf16 != MPI_OP_NULL) MPI_Op_free(&sum_bf16); /* pending operations keep it alive */
    if (sum_f16 != MPI_OP_NULL) MPI_Op_free(&sum_f16);
  }
};

/* Print why a call fails (NCCL prints a WARN line), keep it for ncclGetLastError, return r. */
ncclResult_t fail(ncclResult_t r, CommState *s, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* The state of a live handle, or null after printing why not. */
CommState *live(ncclComm_t comm, const char *fn);

/* PTDP_EMU_NCCL_FAULT (emu_nccl_comm.cc says how it is set): whether this operation is the
 * one to fail (error); stalls forever when it is the one to stall. */
bool injected_fault(const char *fn);

/* The nesting depth of ncclGroupStart (emu_nccl_ops.cc); ncclCommInitRank refuses a group. */
extern int group_depth;

} // namespace nccl
} // namespace emu

/* The handle (nccl.h's opaque struct ncclComm): state is null once destroyed or aborted. */
struct ncclComm {
  std::shared_ptr<emu::nccl::CommState> state;
};

#endif
