/* The emulated NCCL's operations (the semantics, as a user sees them, are in include/nccl.h;
 * the communicators are in emu_nccl_comm.cc): the argument checks, the collectives and
 * send/recv queued on their streams, their start and poll, groups.  How it works:
 *
 * Operations.  A call is checked at once (the handle live, type, op, root or peer, counts, both
 * buffers device memory of the needed extent, the in-place layouts) and kept as a Call.  Calls
 * are queued per stream as one Batch (a group's calls on one stream form one batch) with
 * emu::enqueue_async: start() copies each send buffer to host memory (bf16/fp16 widened to fp32
 * when reduced other than by ncclSum) and posts the nonblocking MPI operation; poll() tests them
 * (MPI_Test) and, once all are done, copies the results into the receive buffers.  Staging in
 * host memory keeps MPI away from device memory, which the host may touch only while queued
 * work runs.
 *
 * Sums of bf16 and fp16 round every partial sum, as NCCL's ring does (its buffers hold the
 * type): they travel as 16-bit patterns reduced by an MPI_Op of the communicator's own that adds
 * two elements in fp32 and rounds the sum to the type (round to nearest even) -- the same
 * arithmetic as ptdp's MPI transport (src/parallel/transport_mpi.c), so on 2 ranks both give the
 * exact sum rounded once, and on more ranks each gives a result within g-1 roundings that
 * depends on MPI's order of additions.  The other reductions of halves (prod, max, min, avg)
 * reduce in fp32 and round once (max and min are exact either way).
 *
 * Abort.  ncclCommAbort marks the communicator's state aborted and kills the handle; a batch
 * polled afterwards completes at once without writing its receive buffers, and its calls, whose
 * MPI requests may never complete, move to a graveyard that keeps their host buffers alive for
 * as long as MPI might write them (collective requests cannot be cancelled). */
#include "emu_nccl.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

using namespace emu::nccl;

int emu::nccl::group_depth = 0;

namespace {

constexpr int kP2PTag = 0; /* ncclSend/ncclRecv on the communicator's own MPI comm */

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

/* A sum of halves: moved as 16-bit patterns, every partial sum rounded (half_sum). */
bool rounds_each(const Call &c) { return c.ti.half && reduces(c.kind) && c.op == ncclSum; }

/* Bytes of one staged element: fp32 for a half reduced in fp32, else the element itself. */
size_t stage_size(const Call &c) { return c.ti.half && reduces(c.kind) && !rounds_each(c) ? 4 : c.ti.size; }

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

/* inout[i] = in[i] + inout[i] on 16-bit patterns: added in fp32 (exact for two such values up
 * to one rounding, fp32 having at least 2p + 2 bits), rounded once to the type. */
void sum_bf16(void *in, void *inout, int *len, MPI_Datatype *)
{
  const uint16_t *a = (const uint16_t *)in;
  uint16_t *b = (uint16_t *)inout;
  for (int i = 0; i < *len; i++) b[i] = float_to_bf16(bf16_to_float(a[i]) + bf16_to_float(b[i]));
}

void sum_half(void *in, void *inout, int *len, MPI_Datatype *)
{
  const uint16_t *a = (const uint16_t *)in;
  uint16_t *b = (uint16_t *)inout;
  for (int i = 0; i < *len; i++) b[i] = float_to_half(half_to_float(a[i]) + half_to_float(b[i]));
}

/* The communicator's sum of c's half type, created on first use (freed with the state). */
int half_sum(Call &c, MPI_Op *op)
{
  MPI_Op &mine = c.ti.bf16 ? c.comm->sum_bf16 : c.comm->sum_f16;
  if (mine == MPI_OP_NULL) {
    int e = MPI_Op_create(c.ti.bf16 ? sum_bf16 : sum_half, 1, &mine);
    if (e != MPI_SUCCESS) return e;
  }
  *op = mine;
  return MPI_SUCCESS;
}

int post(Call &c)
{
  const int n = (int)c.count;
  const bool each = rounds_each(c);
  const MPI_Datatype rt = each ? c.ti.move : c.ti.reduce, mt = c.ti.move;
  MPI_Op op = mpi_op(c.op);
  if (each) {
    int e = half_sum(c, &op);
    if (e != MPI_SUCCESS) return e;
  }
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

} // namespace

/* ---- the API ---- */

extern "C" {

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
