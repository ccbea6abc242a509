/* The emulated NCCL's communicators (the semantics, as a user sees them, are in include/nccl.h;
 * their operations are in emu_nccl_ops.cc): unique ids, the rendezvous, ncclCommInitRank,
 * destroy and abort, the queries and errors, and the fault injection of the tests.
 *
 * Communicators.  ncclGetUniqueId writes {magic, creator's MPI_COMM_WORLD rank, sequence number}
 * into the id.  ncclCommInitRank: every member but the creator sends {nranks, its NCCL rank} to
 * the creator on MPI_COMM_WORLD with the id's tag (kTagBase + sequence mod kTags, so inits from
 * different ids never match each other's messages); the creator checks them (one message per
 * rank, same nranks) and answers each with the table of world ranks by NCCL rank; then the
 * members alone call MPI_Comm_create_group over that table, so the MPI rank of a member is its
 * NCCL rank.  MPI_Comm_dup would be collective over all of MPI_COMM_WORLD, which the ranks
 * outside the group never call.  The communicator returns errors (MPI_ERRORS_RETURN): an MPI
 * failure becomes the NCCL communicator's asynchronous error, as a network failure does in NCCL.
 *
 * Faults for the tests (PTDP_EMU_NCCL_FAULT=KIND:RANK:K): on MPI_COMM_WORLD rank RANK, the K-th
 * operation that passes its checks (counting from 1) either never returns (stall: the rank
 * hangs, so its peers wait for a collective it never joins) or fails as a broken network would
 * (error: it moves no data and the communicator's asynchronous error becomes ncclRemoteError).
 *
 * Abort: emu_nccl_ops.cc says what becomes of the work an aborted communicator has queued. */
#include "emu_nccl.h"

#include <algorithm>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

constexpr int kTags = 1024;                 /* ids whose rendezvous may be in flight at once */
constexpr int kTagBase = 32767 - kTags + 1; /* top of the tag range every MPI guarantees */
constexpr uint32_t kMagic = 0x4e43434cu;    /* "NCCL": an id made by this emulation */

struct IdBody {
  uint32_t magic;
  int32_t creator; /* MPI_COMM_WORLD rank of the process that called ncclGetUniqueId */
  uint32_t seq;
};
static_assert(sizeof(IdBody) <= NCCL_UNIQUE_ID_BYTES, "the id holds its body");

/* Every handle ever made, never freed (a stale handle is recognised, not reused). */
std::vector<std::unique_ptr<ncclComm>> &handles()
{
  static std::vector<std::unique_ptr<ncclComm>> h;
  return h;
}

std::string &global_last_error()
{
  static std::string s;
  return s;
}

} // namespace

namespace emu {
namespace nccl {

ncclResult_t fail(ncclResult_t r, CommState *s, const char *fmt, ...)
{
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  fprintf(stderr, "ptdp-emu: NCCL WARN %s\n", msg);
  (s ? s->last_error : global_last_error()) = msg;
  return r;
}

CommState *live(ncclComm_t comm, const char *fn)
{
  if (!comm) {
    fail(ncclInvalidArgument, nullptr, "%s: comm is NULL", fn);
    return nullptr;
  }
  for (auto &h : handles())
    if (h.get() == comm) {
      if (h->state) return h->state.get();
      fail(ncclInvalidArgument, nullptr, "%s: comm %p was destroyed or aborted", fn, (void *)comm);
      return nullptr;
    }
  fail(ncclInvalidArgument, nullptr, "%s: comm %p is not a communicator", fn, (void *)comm);
  return nullptr;
}

namespace {

/* PTDP_EMU_NCCL_FAULT, read once: kind 0 none, 1 stall, 2 error. */
struct Fault {
  int kind = 0, rank = -1;
  long k = 0;
};

const Fault &fault_plan()
{
  static Fault f;
  static bool read = false;
  if (read) return f;
  read = true;
  const char *e = getenv("PTDP_EMU_NCCL_FAULT");
  char kind[16] = "";
  if (!e || sscanf(e, "%15[a-z]:%d:%ld", kind, &f.rank, &f.k) != 3 || f.k < 1 ||
      (strcmp(kind, "stall") && strcmp(kind, "error"))) {
    if (e) fprintf(stderr, "ptdp-emu: NCCL: PTDP_EMU_NCCL_FAULT=%s ignored: expected stall|error:RANK:K\n", e);
    return f;
  }
  f.kind = strcmp(kind, "stall") ? 2 : 1;
  return f;
}

} // namespace

bool injected_fault(const char *fn)
{
  static long count = 0;
  const Fault &f = fault_plan();
  int me = -1;
  if (f.kind == 0 || ++count != f.k || MPI_Comm_rank(MPI_COMM_WORLD, &me) != MPI_SUCCESS || me != f.rank)
    return false;
  fprintf(stderr, "ptdp-emu: NCCL: PTDP_EMU_NCCL_FAULT: world rank %d %s in its operation %ld (%s)\n", me,
          f.kind == 1 ? "stalls forever" : "fails", count, fn);
  fflush(stderr);
  while (f.kind == 1) pause(); /* a hung rank: only its peers' watchdogs end the run */
  return true;
}

} // namespace nccl
} // namespace emu

using namespace emu::nccl;

namespace {

/* ---- communicators ---- */

/* The creator's side of the rendezvous: the world ranks of all members by NCCL rank, or an
 * error (status != 0) sent to every member alike. */
ncclResult_t gather_members(int nranks, int rank, int tag, std::vector<int> &world)
{
  int me;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  world.assign(nranks, -1);
  world[rank] = me;
  int status = 0;
  std::vector<std::pair<int, int>> from; /* (world rank, NCCL rank) */
  for (int i = 1; i < nranks; i++) {
    int msg[2];
    MPI_Status st;
    if (MPI_Recv(msg, 2, MPI_INT, MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, &st) != MPI_SUCCESS)
      return fail(ncclSystemError, nullptr, "ncclCommInitRank: receiving a member's rank failed");
    from.push_back({st.MPI_SOURCE, msg[1]});
    if (msg[0] != nranks || msg[1] < 0 || msg[1] >= nranks || world[msg[1]] != -1)
      status = 1;
    else
      world[msg[1]] = st.MPI_SOURCE;
  }
  std::vector<int> reply(nranks + 1);
  reply[0] = status;
  std::copy(world.begin(), world.end(), reply.begin() + 1);
  for (auto &f : from)
    if (MPI_Send(reply.data(), nranks + 1, MPI_INT, f.first, tag, MPI_COMM_WORLD) != MPI_SUCCESS)
      return fail(ncclSystemError, nullptr, "ncclCommInitRank: answering world rank %d failed", f.first);
  if (status)
    return fail(ncclInvalidUsage, nullptr, "ncclCommInitRank: the members disagree on nranks %d or repeat a rank",
                nranks);
  return ncclSuccess;
}

/* A member's side: tell the creator, receive the table. */
ncclResult_t join_creator(int creator, int nranks, int rank, int tag, std::vector<int> &world)
{
  int msg[2] = {nranks, rank};
  if (MPI_Send(msg, 2, MPI_INT, creator, tag, MPI_COMM_WORLD) != MPI_SUCCESS)
    return fail(ncclSystemError, nullptr, "ncclCommInitRank: sending to the id's creator (world rank %d) failed",
                creator);
  std::vector<int> reply(nranks + 1);
  if (MPI_Recv(reply.data(), nranks + 1, MPI_INT, creator, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE) != MPI_SUCCESS)
    return fail(ncclSystemError, nullptr, "ncclCommInitRank: receiving from world rank %d failed", creator);
  if (reply[0])
    return fail(ncclInvalidUsage, nullptr, "ncclCommInitRank: the members disagree on nranks %d or repeat a rank",
                nranks);
  world.assign(reply.begin() + 1, reply.end());
  return ncclSuccess;
}

/* The MPI communicator over the members, MPI rank = NCCL rank. */
ncclResult_t make_mpi_comm(const std::vector<int> &world, int tag, MPI_Comm *out)
{
  MPI_Group all, members;
  if (MPI_Comm_group(MPI_COMM_WORLD, &all) != MPI_SUCCESS ||
      MPI_Group_incl(all, (int)world.size(), world.data(), &members) != MPI_SUCCESS)
    return fail(ncclSystemError, nullptr, "ncclCommInitRank: MPI group of the members failed");
  int e = MPI_Comm_create_group(MPI_COMM_WORLD, members, tag, out);
  MPI_Group_free(&members);
  MPI_Group_free(&all);
  if (e != MPI_SUCCESS || *out == MPI_COMM_NULL)
    return fail(ncclSystemError, nullptr, "ncclCommInitRank: MPI_Comm_create_group failed");
  MPI_Comm_set_errhandler(*out, MPI_ERRORS_RETURN);
  return ncclSuccess;
}

ncclResult_t check_init(ncclComm_t *comm, int nranks, const IdBody &id, int rank)
{
  int init = 0, world = 0;
  if (!comm) return fail(ncclInvalidArgument, nullptr, "ncclCommInitRank: comm is NULL");
  if (MPI_Initialized(&init) != MPI_SUCCESS || !init)
    return fail(ncclSystemError, nullptr, "ncclCommInitRank: MPI is not initialized (the emulation runs over MPI)");
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  if (id.magic != kMagic || id.creator < 0 || id.creator >= world)
    return fail(ncclInvalidArgument, nullptr, "ncclCommInitRank: the unique id was not made by ncclGetUniqueId");
  if (nranks < 1 || nranks > world)
    return fail(ncclInvalidArgument, nullptr, "ncclCommInitRank: nranks %d (MPI_COMM_WORLD has %d)", nranks, world);
  if (rank < 0 || rank >= nranks)
    return fail(ncclInvalidArgument, nullptr, "ncclCommInitRank: rank %d outside 0..%d", rank, nranks - 1);
  if (group_depth > 0)
    return fail(ncclInvalidUsage, nullptr, "ncclCommInitRank inside ncclGroupStart/End is not emulated");
  int me;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  if (nranks == 1 && me != id.creator) /* the creator must be a member: here it cannot be */
    return fail(ncclInvalidUsage, nullptr, "ncclCommInitRank: the id's creator (world rank %d) is not the "
                "communicator's only member; the emulation needs the creator to be a member", id.creator);
  return ncclSuccess;
}

} // namespace

/* ---- the API ---- */

extern "C" {

ncclResult_t ncclGetVersion(int *version)
{
  if (!version) return fail(ncclInvalidArgument, nullptr, "ncclGetVersion: version is NULL");
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId *uniqueId)
{
  static uint32_t seq = 0;
  int init = 0;
  if (!uniqueId) return fail(ncclInvalidArgument, nullptr, "ncclGetUniqueId: uniqueId is NULL");
  if (MPI_Initialized(&init) != MPI_SUCCESS || !init)
    return fail(ncclSystemError, nullptr, "ncclGetUniqueId: MPI is not initialized (the emulation runs over MPI)");
  IdBody b = {kMagic, 0, seq++};
  MPI_Comm_rank(MPI_COMM_WORLD, &b.creator);
  memset(uniqueId, 0, sizeof *uniqueId);
  memcpy(uniqueId->internal, &b, sizeof b);
  return ncclSuccess;
}

ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank)
{
  IdBody id;
  memcpy(&id, commId.internal, sizeof id);
  ncclResult_t r = check_init(comm, nranks, id, rank);
  if (r != ncclSuccess) return r;
  *comm = nullptr;
  const int tag = kTagBase + (int)(id.seq % kTags);
  int me;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  std::vector<int> world;
  if (me == id.creator)
    r = gather_members(nranks, rank, tag, world);
  else
    r = join_creator(id.creator, nranks, rank, tag, world);
  auto s = std::make_shared<CommState>();
  if (r == ncclSuccess) r = make_mpi_comm(world, tag, &s->mpi);
  if (r != ncclSuccess) return r;
  s->rank = rank;
  s->nranks = nranks;
  if (cudaGetDevice(&s->device) != cudaSuccess) s->device = 0;
  std::lock_guard<std::recursive_mutex> guard(emu::lock());
  handles().push_back(std::make_unique<ncclComm>());
  handles().back()->state = s;
  *comm = handles().back().get();
  return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm)
{
  std::lock_guard<std::recursive_mutex> guard(emu::lock());
  if (!live(comm, "ncclCommDestroy")) return ncclInvalidArgument;
  comm->state.reset(); /* queued calls keep the state (and its MPI communicator) until they ran */
  return ncclSuccess;
}

ncclResult_t ncclCommAbort(ncclComm_t comm)
{
  std::lock_guard<std::recursive_mutex> guard(emu::lock());
  CommState *s = live(comm, "ncclCommAbort");
  if (!s) return ncclInvalidArgument;
  s->aborted = true;
  comm->state.reset();
  return ncclSuccess;
}

ncclResult_t ncclCommCount(const ncclComm_t comm, int *count)
{
  std::lock_guard<std::recursive_mutex> guard(emu::lock());
  CommState *s = live(comm, "ncclCommCount");
  if (!s) return ncclInvalidArgument;
  if (!count) return fail(ncclInvalidArgument, s, "ncclCommCount: count is NULL");
  *count = s->nranks;
  return ncclSuccess;
}

ncclResult_t ncclCommUserRank(const ncclComm_t comm, int *rank)
{
  std::lock_guard<std::recursive_mutex> guard(emu::lock());
  CommState *s = live(comm, "ncclCommUserRank");
  if (!s) return ncclInvalidArgument;
  if (!rank) return fail(ncclInvalidArgument, s, "ncclCommUserRank: rank is NULL");
  *rank = s->rank;
  return ncclSuccess;
}

ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int *device)
{
  std::lock_guard<std::recursive_mutex> guard(emu::lock());
  CommState *s = live(comm, "ncclCommCuDevice");
  if (!s) return ncclInvalidArgument;
  if (!device) return fail(ncclInvalidArgument, s, "ncclCommCuDevice: device is NULL");
  *device = s->device;
  return ncclSuccess;
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *asyncError)
{
  std::lock_guard<std::recursive_mutex> guard(emu::lock());
  CommState *s = live(comm, "ncclCommGetAsyncError");
  if (!s) return ncclInvalidArgument;
  if (!asyncError) return fail(ncclInvalidArgument, s, "ncclCommGetAsyncError: asyncError is NULL");
  *asyncError = s->async_error;
  return ncclSuccess;
}

const char *ncclGetErrorString(ncclResult_t result)
{
  switch (result) {
  case ncclSuccess: return "no error";
  case ncclUnhandledCudaError: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
  case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
  case ncclInternalError: return "internal error - please report this issue to the NCCL developers";
  case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
  case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
  case ncclRemoteError: return "remote process exited or there was a network error";
  case ncclInProgress: return "NCCL operation in progress";
  default: return "unknown result code";
  }
}

const char *ncclGetLastError(ncclComm_t comm)
{
  std::lock_guard<std::recursive_mutex> guard(emu::lock());
  for (auto &h : handles())
    if (h.get() == comm && h->state) return h->state->last_error.c_str();
  return global_last_error().c_str();
}

} // extern "C"
