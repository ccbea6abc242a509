/* NCCL over MPI for the CUDA emulation (the semantics, as a user sees them, are in
 * include/nccl.h).  How it works:
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
 * Operations.  A call is checked at once (the handle live, type, op, root or peer, counts, both
 * buffers device memory of the needed extent, the in-place layouts) and kept as a Call.  Calls
 * are queued per stream as one Batch (a group's calls on one stream form one batch) with
 * emu::enqueue_async: start() copies each send buffer to host memory (bf16/fp16 widened to fp32
 * when reduced) and posts the nonblocking MPI operation; poll() tests them (MPI_Test) and, once
 * all are done, copies the results into the receive buffers.  Staging in host memory keeps MPI
 * away from device memory, which the host may touch only while queued work runs.
 *
 * Faults for the tests (PTDP_EMU_NCCL_FAULT=KIND:RANK:K): on MPI_COMM_WORLD rank RANK, the K-th
 * operation that passes its checks (counting from 1) either never returns (stall: the rank
 * hangs, so its peers wait for a collective it never joins) or fails as a broken network would
 * (error: it moves no data and the communicator's asynchronous error becomes ncclRemoteError).
 *
 * Abort.  ncclCommAbort marks the communicator's state aborted and kills the handle; a batch
 * polled afterwards completes at once without writing its receive buffers, and its calls, whose
 * MPI requests may never complete, move to a graveyard that keeps their host buffers alive for
 * as long as MPI might write them (collective requests cannot be cancelled). */
#include <nccl.h>

#include "emu_internal.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#define OMPI_SKIP_MPICXX 1 /* the C API only */
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <climits>
#include <cmath>
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
constexpr int kP2PTag = 0;                  /* ncclSend/ncclRecv on the communicator's own MPI comm */
constexpr uint32_t kMagic = 0x4e43434cu;    /* "NCCL": an id made by this emulation */

struct IdBody {
  uint32_t magic;
  int32_t creator; /* MPI_COMM_WORLD rank of the process that called ncclGetUniqueId */
  uint32_t seq;
};
static_assert(sizeof(IdBody) <= NCCL_UNIQUE_ID_BYTES, "the id holds its body");

/* What a handle refers to; queued calls hold it too, so it outlives ncclCommDestroy until the
 * last of them has run (NCCL's destroy flushes pending work). */
struct CommState {
  MPI_Comm mpi = MPI_COMM_NULL;
  int rank = 0, nranks = 0, device = 0;
  bool aborted = false;
  ncclResult_t async_error = ncclSuccess;
  std::string last_error;
  ~CommState()
  {
    int fin = 1;
    if (mpi != MPI_COMM_NULL && MPI_Finalized(&fin) == MPI_SUCCESS && !fin) MPI_Comm_free(&mpi);
  }
};

} // namespace

/* The handle (nccl.h's opaque struct ncclComm): state is null once destroyed or aborted. */
struct ncclComm {
  std::shared_ptr<CommState> state;
};

namespace {

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

/* Print why a call fails (NCCL prints a WARN line), keep it for ncclGetLastError, return r. */
ncclResult_t fail(ncclResult_t r, CommState *s, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
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

/* The state of a live handle, or null after printing why not. */
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

/* ---- element types ---- */

struct TypeInfo {
  size_t size;          /* bytes of one element in device memory */
  bool half;            /* bf16/fp16: reduced as fp32 */
  bool bf16;
  MPI_Datatype reduce;  /* the type MPI reduces (fp32 for the halves) */
  MPI_Datatype move;    /* the type MPI moves unchanged (raw bits) */
  const char *name;
};

bool type_info(ncclDataType_t t, TypeInfo *ti)
{
  switch (t) {
  case ncclInt8: *ti = {1, false, false, MPI_INT8_T, MPI_UINT8_T, "int8"}; return true;
  case ncclUint8: *ti = {1, false, false, MPI_UINT8_T, MPI_UINT8_T, "uint8"}; return true;
  case ncclInt32: *ti = {4, false, false, MPI_INT32_T, MPI_UINT32_T, "int32"}; return true;
  case ncclUint32: *ti = {4, false, false, MPI_UINT32_T, MPI_UINT32_T, "uint32"}; return true;
  case ncclInt64: *ti = {8, false, false, MPI_INT64_T, MPI_UINT64_T, "int64"}; return true;
  case ncclUint64: *ti = {8, false, false, MPI_UINT64_T, MPI_UINT64_T, "uint64"}; return true;
  case ncclFloat16: *ti = {2, true, false, MPI_FLOAT, MPI_UINT16_T, "float16"}; return true;
  case ncclFloat32: *ti = {4, false, false, MPI_FLOAT, MPI_UINT32_T, "float32"}; return true;
  case ncclFloat64: *ti = {8, false, false, MPI_DOUBLE, MPI_UINT64_T, "float64"}; return true;
  case ncclBfloat16: *ti = {2, true, true, MPI_FLOAT, MPI_UINT16_T, "bfloat16"}; return true;
  default: return false;
  }
}

/* bf16/fp16 through the conversions of our cuda_bf16.h and cuda_fp16.h (round to nearest even,
 * CUDA's canonical NaN): the same roundings as the emulated GPU's */
float bf16_to_float(uint16_t h) { return ptdp_emu_bfloat162float_bits(h); }
uint16_t float_to_bf16(float f) { return ptdp_emu_float2bfloat16_bits(f); }
float half_to_float(uint16_t h) { return ptdp_emu_half2float_bits(h); }
uint16_t float_to_half(float f) { return ptdp_emu_float2half_bits(f); }

/* ---- one call, as queued ---- */

enum class Kind { AllReduce, AllGather, ReduceScatter, Broadcast, Reduce, Send, Recv };

struct Call {
  bool inject_error = false; /* PTDP_EMU_NCCL_FAULT=error: fail when started */
  Kind kind;
  const char *fn; /* the NCCL function, for messages */
  std::shared_ptr<CommState> comm;
  const void *send;
  void *recv;
  size_t count; /* NCCL's count argument */
  TypeInfo ti;
  ncclRedOp_t op;
  int root; /* or peer */
  std::vector<unsigned char> sbuf, rbuf;
  MPI_Request req = MPI_REQUEST_NULL;
  bool done = false;
};

bool reduces(Kind k) { return k == Kind::AllReduce || k == Kind::ReduceScatter || k == Kind::Reduce; }

/* Elements read from send and written to recv on this rank. */
size_t send_elems(const Call &c)
{
  switch (c.kind) {
  case Kind::ReduceScatter: return c.count * (size_t)c.comm->nranks;
  case Kind::Broadcast: return c.comm->rank == c.root ? c.count : 0;
  case Kind::Recv: return 0;
  default: return c.count;
  }
}

size_t recv_elems(const Call &c)
{
  switch (c.kind) {
  case Kind::AllGather: return c.count * (size_t)c.comm->nranks;
  case Kind::Reduce: return c.comm->rank == c.root ? c.count : 0;
  case Kind::Send: return 0;
  default: return c.count;
  }
}

/* Bytes of one staged element: fp32 for a reduced half, else the element itself. */
size_t stage_size(const Call &c) { return c.ti.half && reduces(c.kind) ? 4 : c.ti.size; }

/* The in-place layout of each collective (NCCL's documentation), whether the buffers overlap
 * otherwise (refused), given byte ranges [s, s + sn) and [r, r + rn). */
bool in_place(const Call &c)
{
  const char *s = (const char *)c.send, *r = (const char *)c.recv;
  const size_t blk = c.count * c.ti.size;
  switch (c.kind) {
  case Kind::AllGather: return s == r + (size_t)c.comm->rank * blk;
  case Kind::ReduceScatter: return r == s + (size_t)c.comm->rank * blk;
  default: return s == r;
  }
}

bool overlap(const void *a, size_t an, const void *b, size_t bn)
{
  const char *x = (const char *)a, *y = (const char *)b;
  return an && bn && x < y + bn && y < x + an;
}

/* One buffer: device memory holding at least n bytes (n = 0: anything, even NULL). */
ncclResult_t check_buffer(const Call &c, const void *p, size_t n, const char *which)
{
  if (n == 0) return ncclSuccess;
  if (!p) return fail(ncclInvalidArgument, c.comm.get(), "%s: %s is NULL", c.fn, which);
  const size_t have = emu::device_bytes(p);
  if (have >= n) return ncclSuccess;
  if (have == 0)
    return fail(ncclInvalidArgument, c.comm.get(), "%s: %s %p is not device memory (cudaMalloc)", c.fn, which, p);
  return fail(ncclInvalidArgument, c.comm.get(),
              "%s: %s %p has %zu bytes of device memory from there, the call needs %zu (count %zu of %s)", c.fn,
              which, p, have, n, c.count, c.ti.name);
}

ncclResult_t check_call(const Call &c)
{
  CommState *s = c.comm.get();
  if (c.count > (size_t)INT_MAX)
    return fail(ncclInvalidUsage, s, "%s: count %zu exceeds the emulation's limit INT_MAX (MPI counts)", c.fn,
                c.count);
  if (reduces(c.kind) && ((int)c.op < 0 || c.op >= ncclNumOps))
    return fail(ncclInvalidArgument, s, "%s: op %d is not a reduction NCCL defines", c.fn, (int)c.op);
  const bool rooted = c.kind == Kind::Broadcast || c.kind == Kind::Reduce;
  const bool p2p = c.kind == Kind::Send || c.kind == Kind::Recv;
  if ((rooted || p2p) && (c.root < 0 || c.root >= s->nranks))
    return fail(ncclInvalidArgument, s, "%s: %s %d outside the communicator's %d ranks", c.fn, p2p ? "peer" : "root",
                c.root, s->nranks);
  const size_t sn = send_elems(c) * c.ti.size, rn = recv_elems(c) * c.ti.size;
  ncclResult_t r = check_buffer(c, c.send, sn, "sendbuff");
  if (r == ncclSuccess) r = check_buffer(c, c.recv, rn, "recvbuff");
  if (r == ncclSuccess && overlap(c.send, sn, c.recv, rn) && !in_place(c))
    r = fail(ncclInvalidArgument, s, "%s: sendbuff %p and recvbuff %p overlap other than in place", c.fn, c.send,
             c.recv);
  return r;
}

/* ---- running a call: stage in, post, test, stage out ---- */

void stage_in(Call &c)
{
  const size_t n = send_elems(c), rn = recv_elems(c);
  c.sbuf.resize((c.kind == Kind::Broadcast ? c.count : n) * stage_size(c));
  c.rbuf.resize(rn * stage_size(c));
  if (stage_size(c) == c.ti.size) {
    if (n) memcpy(c.sbuf.data(), c.send, n * c.ti.size);
    return;
  }
  const uint16_t *h = (const uint16_t *)c.send;
  float *f = (float *)c.sbuf.data();
  for (size_t i = 0; i < n; i++) f[i] = c.ti.bf16 ? bf16_to_float(h[i]) : half_to_float(h[i]);
}

MPI_Op mpi_op(ncclRedOp_t op)
{
  switch (op) {
  case ncclProd: return MPI_PROD;
  case ncclMax: return MPI_MAX;
  case ncclMin: return MPI_MIN;
  default: return MPI_SUM; /* ncclSum, and ncclAvg before its division */
  }
}

int post(Call &c)
{
  const int n = (int)c.count;
  const MPI_Datatype rt = c.ti.reduce, mt = c.ti.move;
  const MPI_Op op = mpi_op(c.op);
  MPI_Comm m = c.comm->mpi;
  void *s = c.sbuf.data(), *r = c.rbuf.data();
  switch (c.kind) {
  case Kind::AllReduce: return MPI_Iallreduce(s, r, n, rt, op, m, &c.req);
  case Kind::AllGather: return MPI_Iallgather(s, n, mt, r, n, mt, m, &c.req);
  case Kind::ReduceScatter: return MPI_Ireduce_scatter_block(s, r, n, rt, op, m, &c.req);
  case Kind::Broadcast: return MPI_Ibcast(s, n, mt, c.root, m, &c.req);
  case Kind::Reduce: return MPI_Ireduce(s, r, n, rt, op, c.root, m, &c.req);
  case Kind::Send: return MPI_Isend(s, n, mt, c.root, kP2PTag, m, &c.req);
  case Kind::Recv: return MPI_Irecv(r, n, mt, c.root, kP2PTag, m, &c.req);
  }
  return MPI_ERR_OTHER;
}

template <typename T> void divide(void *p, size_t n, int by)
{
  T *x = (T *)p;
  for (size_t i = 0; i < n; i++) x[i] = (T)(x[i] / (T)by);
}

/* ncclAvg: the sum divided by the ranks, in the staged type (fp32 for the halves). */
void average(Call &c, void *p, size_t n)
{
  const int g = c.comm->nranks;
  if (c.ti.reduce == MPI_FLOAT) divide<float>(p, n, g);
  else if (c.ti.reduce == MPI_DOUBLE) divide<double>(p, n, g);
  else if (c.ti.reduce == MPI_INT8_T) divide<int8_t>(p, n, g);
  else if (c.ti.reduce == MPI_UINT8_T) divide<uint8_t>(p, n, g);
  else if (c.ti.reduce == MPI_INT32_T) divide<int32_t>(p, n, g);
  else if (c.ti.reduce == MPI_UINT32_T) divide<uint32_t>(p, n, g);
  else if (c.ti.reduce == MPI_INT64_T) divide<int64_t>(p, n, g);
  else divide<uint64_t>(p, n, g);
}

void stage_out(Call &c)
{
  const size_t n = recv_elems(c);
  if (n == 0) return;
  unsigned char *src = c.kind == Kind::Broadcast ? c.sbuf.data() : c.rbuf.data();
  if (reduces(c.kind) && c.op == ncclAvg) average(c, src, n);
  if (stage_size(c) == c.ti.size) {
    memmove(c.recv, src, n * c.ti.size);
    return;
  }
  const float *f = (const float *)src;
  uint16_t *h = (uint16_t *)c.recv;
  for (size_t i = 0; i < n; i++) h[i] = c.ti.bf16 ? float_to_bf16(f[i]) : float_to_half(f[i]);
}

/* An MPI failure: the communicator's asynchronous error, the call done without data. */
void mpi_failed(Call &c, int err, const char *what)
{
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(err, text, &len) != MPI_SUCCESS) snprintf(text, sizeof text, "MPI error %d", err);
  c.comm->async_error = ncclSystemError;
  fail(ncclSystemError, c.comm.get(), "%s: %s failed: %s", c.fn, what, text);
  c.done = true;
}

/* Calls whose MPI request may still write their host buffers, kept alive for it. */
std::vector<std::unique_ptr<Call>> &graveyard()
{
  static std::vector<std::unique_ptr<Call>> g;
  return g;
}

struct Batch {
  std::vector<std::unique_ptr<Call>> calls;
};

void start_call(Call &c)
{
  if (c.comm->aborted || c.comm->async_error != ncclSuccess) { /* no data moves, as NCCL's aborted kernels */
    c.done = true;
    return;
  }
  if (c.inject_error) {
    c.comm->async_error = ncclRemoteError;
    fail(ncclRemoteError, c.comm.get(), "%s: PTDP_EMU_NCCL_FAULT: the network failed (injected)", c.fn);
    c.done = true;
    return;
  }
  stage_in(c);
  int e = post(c);
  if (e != MPI_SUCCESS) mpi_failed(c, e, "posting the MPI operation");
}

/* One test of a posted call; true once it is over. */
bool poll_call(std::unique_ptr<Call> &c)
{
  if (c->done) return true;
  if (c->comm->aborted) {
    graveyard().push_back(std::move(c));
    return true;
  }
  int flag = 0;
  int e = MPI_Test(&c->req, &flag, MPI_STATUS_IGNORE);
  if (e != MPI_SUCCESS) {
    mpi_failed(*c, e, "MPI_Test");
    graveyard().push_back(std::move(c));
    return true;
  }
  if (!flag) return false;
  stage_out(*c);
  c->done = true;
  return true;
}

bool poll_batch(Batch &b)
{
  bool all = true;
  for (auto &c : b.calls)
    if (c && !poll_call(c)) all = false;
  return all;
}

/* ---- groups ---- */

struct Pending {
  cudaStream_t stream;
  std::shared_ptr<Batch> batch;
};

int group_depth = 0;
std::vector<Pending> group_pending;

ncclResult_t launch(cudaStream_t stream, std::shared_ptr<Batch> b)
{
  const char *what = b->calls.size() == 1 ? b->calls[0]->fn : "NCCL group";
  cudaError_t e = emu::enqueue_async(
      stream, what,
      [b]() {
        for (auto &c : b->calls) start_call(*c);
        return cudaSuccess;
      },
      [b](cudaError_t *err) {
        *err = cudaSuccess; /* NCCL's failures are its own (async error), never the device's */
        return poll_batch(*b);
      });
  if (e != cudaSuccess)
    return fail(ncclUnhandledCudaError, nullptr, "%s: queueing on stream %p: %s", what, (void *)stream,
                cudaGetErrorString(e));
  return ncclSuccess;
}

/* A checked call: queued now, or kept for ncclGroupEnd inside a group. */
ncclResult_t submit(std::unique_ptr<Call> c, cudaStream_t stream)
{
  if (group_depth == 0) {
    auto b = std::make_shared<Batch>();
    b->calls.push_back(std::move(c));
    return launch(stream, b);
  }
  for (auto &p : group_pending)
    if (p.stream == stream) {
      p.batch->calls.push_back(std::move(c));
      return ncclSuccess;
    }
  group_pending.push_back({stream, std::make_shared<Batch>()});
  group_pending.back().batch->calls.push_back(std::move(c));
  return ncclSuccess;
}

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

/* Whether this operation is the one to fail (error); stalls forever when it is the one to stall. */
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

/* Check and queue one operation of any kind. */
ncclResult_t operation(Kind kind, const char *fn, const void *send, void *recv, size_t count, ncclDataType_t type,
                       ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream)
{
  std::lock_guard<std::recursive_mutex> guard(emu::lock());
  CommState *s = live(comm, fn);
  if (!s) return ncclInvalidArgument;
  auto c = std::make_unique<Call>();
  c->kind = kind;
  c->fn = fn;
  c->comm = comm->state;
  c->send = send;
  c->recv = recv;
  c->count = count;
  c->op = op;
  c->root = root;
  if (!type_info(type, &c->ti))
    return fail(ncclInvalidArgument, s, "%s: datatype %d is not one the emulation reduces or moves", fn, (int)type);
  ncclResult_t r = check_call(*c);
  if (r != ncclSuccess) return r;
  c->inject_error = injected_fault(fn);
  return submit(std::move(c), stream);
}

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

ncclResult_t ncclGroupStart(void)
{
  std::lock_guard<std::recursive_mutex> guard(emu::lock());
  group_depth++;
  return ncclSuccess;
}

ncclResult_t ncclGroupEnd(void)
{
  std::lock_guard<std::recursive_mutex> guard(emu::lock());
  if (group_depth == 0) return fail(ncclInvalidUsage, nullptr, "ncclGroupEnd without ncclGroupStart");
  if (--group_depth > 0) return ncclSuccess;
  std::vector<Pending> p;
  p.swap(group_pending);
  ncclResult_t r = ncclSuccess;
  for (auto &x : p) {
    ncclResult_t e = launch(x.stream, x.batch);
    if (r == ncclSuccess) r = e;
  }
  return r;
}

ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                           ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream)
{
  return operation(Kind::AllReduce, "ncclAllReduce", sendbuff, recvbuff, count, datatype, op, 0, comm, stream);
}

ncclResult_t ncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount, ncclDataType_t datatype,
                           ncclComm_t comm, cudaStream_t stream)
{
  return operation(Kind::AllGather, "ncclAllGather", sendbuff, recvbuff, sendcount, datatype, ncclSum, 0, comm,
                   stream);
}

ncclResult_t ncclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount, ncclDataType_t datatype,
                               ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream)
{
  return operation(Kind::ReduceScatter, "ncclReduceScatter", sendbuff, recvbuff, recvcount, datatype, op, 0, comm,
                   stream);
}

ncclResult_t ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root,
                           ncclComm_t comm, cudaStream_t stream)
{
  return operation(Kind::Broadcast, "ncclBroadcast", sendbuff, recvbuff, count, datatype, ncclSum, root, comm,
                   stream);
}

ncclResult_t ncclReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                        int root, ncclComm_t comm, cudaStream_t stream)
{
  return operation(Kind::Reduce, "ncclReduce", sendbuff, recvbuff, count, datatype, op, root, comm, stream);
}

ncclResult_t ncclSend(const void *sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                      cudaStream_t stream)
{
  return operation(Kind::Send, "ncclSend", sendbuff, nullptr, count, datatype, ncclSum, peer, comm, stream);
}

ncclResult_t ncclRecv(void *recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                      cudaStream_t stream)
{
  return operation(Kind::Recv, "ncclRecv", nullptr, recvbuff, count, datatype, ncclSum, peer, comm, stream);
}

} // extern "C"
