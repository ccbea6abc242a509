/* The emulated NCCL (validation/emu/emu_nccl_*.cc) on 2 and 4 ranks (test_emu_nccl.sh):
 *   - communicators: all ranks; all ranks with NCCL ranks reversed (the id made by the last
 *     world rank); the even world ranks only (the odd ones never call anything);
 *   - every collective (all-reduce with every op, all-gather, reduce-scatter, broadcast from
 *     every root, reduce to the first and last rank), out of place and in place, and a ring of
 *     1 MiB sends and receives in one group, for every type ptdp may use (fp32, bf16, fp16,
 *     fp64, int32, uint8, int8), against what MPI computes from the same host data.  The values
 *     are small multiples of 1/2 (integers for the integer types), so every sum, product and
 *     average is exact in every type and summation order: results must be bit for bit equal;
 *   - the rounding of bf16 and fp16 sums: values in [1, 2) with 7 (bf16) or 10 (fp16) fraction
 *     bits, whose sums are exact in fp32 but not in the type.  The emulation rounds every
 *     partial sum, as NCCL does: on 2 ranks the result must be the exact sum rounded once to
 *     nearest even (cuda_bf16.h's and cuda_fp16.h's conversions give the reference,
 *     independently of emu_nccl_ops.cc's); on g > 2 ranks within g-1 roundings of the exact
 *     sum S of positive values: |got - S| <= gamma_{g-1} S, gamma_k = k u / (1 - k u), u = 2^-8
 *     (bf16) or 2^-11 (fp16) (Higham, Accuracy and Stability of Numerical Algorithms, 2nd ed.,
 *     Sec. 4.2: any order of summation), and the same bits on every rank;
 *   - a late peer: the stream stays busy (cudaStreamQuery: cudaErrorNotReady) until it joins;
 *   - an abort: a collective whose peer has not joined completes without writing its output,
 *     the handle is dead afterwards, and the peer's later call still completes;
 *   - every argument check, with NCCL's result code. */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../tests/expect.h"

enum { N = 1000, RING = 1 << 18 };

static int wsize;

/* ---- host values per type (bit patterns compared exactly) ---- */

typedef struct {
  ncclDataType_t t;
  const char *name;
  size_t size;
  int is_signed, is_float;
} type_desc;

static const type_desc types[] = {
    {ncclFloat32, "fp32", 4, 1, 1}, {ncclBfloat16, "bf16", 2, 1, 1}, {ncclFloat16, "fp16", 2, 1, 1},
    {ncclFloat64, "fp64", 8, 1, 1}, {ncclInt32, "int32", 4, 1, 0},   {ncclUint8, "uint8", 1, 0, 0},
    {ncclInt8, "int8", 1, 1, 0}};

/* Rank r's element i: 1 <= |x| <= 10, halves of that for float types: 4-rank sums fit int8 and
 * uint8, and sums, maxima and averages are exact in bf16 and fp16.  Never zero (a product
 * would hide an error). */
static double value(const type_desc *d, int r, size_t i)
{
  int k = (int)((r * 7 + i * 3) % 10) + 1;
  if (d->is_signed && (i + r) % 3 == 0) k = -k;
  return d->is_float ? k * 0.5 : k;
}

static uint16_t to_bf16(float f) /* exact for our values: the top half of the bits */
{
  uint32_t u;
  memcpy(&u, &f, 4);
  return (uint16_t)(u >> 16);
}

static uint16_t to_fp16(float f) /* exact for our values: normal numbers, at most 10 mantissa bits */
{
  uint32_t u;
  memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) == 0) return (uint16_t)(u >> 16);
  uint32_t sign = (u >> 16) & 0x8000u, exp = ((u >> 23) & 0xffu) - 112u, man = (u >> 13) & 0x3ffu;
  return (uint16_t)(sign | (exp << 10) | man);
}

static void store(const type_desc *d, void *p, size_t i, double v)
{
  switch (d->t) {
  case ncclFloat32: ((float *)p)[i] = (float)v; break;
  case ncclBfloat16: ((uint16_t *)p)[i] = to_bf16((float)v); break;
  case ncclFloat16: ((uint16_t *)p)[i] = to_fp16((float)v); break;
  case ncclFloat64: ((double *)p)[i] = v; break;
  case ncclInt32: ((int32_t *)p)[i] = (int32_t)v; break;
  case ncclUint8: ((uint8_t *)p)[i] = (uint8_t)v; break;
  default: ((int8_t *)p)[i] = (int8_t)v; break;
  }
}

/* n elements of rank r's values (host) */
static void *host_values(const type_desc *d, int r, size_t n)
{
  void *p = malloc(n * d->size);
  for (size_t i = 0; i < n; i++) store(d, p, i, value(d, r, i));
  return p;
}

/* ---- device buffers ---- */

static void *dev(size_t bytes)
{
  void *p = NULL;
  if (cudaMalloc(&p, bytes) != cudaSuccess) {
    fprintf(stderr, "test_emu_nccl: cudaMalloc of %zu bytes failed\n", bytes);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  return p;
}

static void up(void *d, const void *h, size_t bytes) { EXPECT(cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice) == cudaSuccess, "H2D"); }
static void down(void *h, const void *d, size_t bytes) { EXPECT(cudaMemcpy(h, d, bytes, cudaMemcpyDeviceToHost) == cudaSuccess, "D2H"); }

static void stream_sync(cudaStream_t s) { EXPECT(cudaStreamSynchronize(s) == cudaSuccess, "cudaStreamSynchronize"); }

/* ---- communicators ---- */

/* The communicator over world ranks members[0..n) (NCCL rank k is members[k]), its id made by
 * the member of NCCL rank `creator`; NULL on ranks outside it. */
static ncclComm_t make_comm(const int *members, int n, int creator)
{
  int me, rank = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  for (int k = 0; k < n; k++)
    if (members[k] == me) rank = k;
  ncclUniqueId id;
  if (me == members[creator]) EXPECT(ncclGetUniqueId(&id) == ncclSuccess, "ncclGetUniqueId");
  MPI_Bcast(&id, sizeof id, MPI_BYTE, members[creator], MPI_COMM_WORLD);
  if (rank < 0) return NULL;
  ncclComm_t c = NULL;
  EXPECT(ncclCommInitRank(&c, n, id, rank) == ncclSuccess, "ncclCommInitRank rank %d of %d", rank, n);
  int count = -1, user = -1;
  EXPECT(ncclCommCount(c, &count) == ncclSuccess && count == n, "ncclCommCount %d, expected %d", count, n);
  EXPECT(ncclCommUserRank(c, &user) == ncclSuccess && user == rank, "ncclCommUserRank %d, expected %d", user, rank);
  return c;
}

/* The MPI communicator with the same ranks in the same order, for the reference results. */
static MPI_Comm mpi_twin(const int *members, int n)
{
  MPI_Group w, g;
  MPI_Comm c;
  MPI_Comm_group(MPI_COMM_WORLD, &w);
  MPI_Group_incl(w, n, members, &g);
  MPI_Comm_create(MPI_COMM_WORLD, g, &c); /* collective over the world: every rank calls it */
  MPI_Group_free(&g);
  MPI_Group_free(&w);
  return c;
}

/* ---- references: the same host values through MPI in double, exact for our values ---- */

typedef struct {
  ncclComm_t nccl;
  MPI_Comm mpi;
  int rank, size;
  cudaStream_t s;
  const char *name;
} ctx;

static MPI_Op mpi_op(ncclRedOp_t op)
{
  return op == ncclProd ? MPI_PROD : op == ncclMax ? MPI_MAX : op == ncclMin ? MPI_MIN : MPI_SUM;
}

/* Reduction of everyone's values over MPI (ncclAvg: the sum divided, truncated for integers). */
static void *reference_reduce(const ctx *c, const type_desc *d, size_t n, ncclRedOp_t op)
{
  double *mine = malloc(n * sizeof *mine), *all = malloc(n * sizeof *all);
  for (size_t i = 0; i < n; i++) mine[i] = value(d, c->rank, i);
  MPI_Allreduce(mine, all, (int)n, MPI_DOUBLE, mpi_op(op), c->mpi);
  void *out = malloc(n * d->size);
  for (size_t i = 0; i < n; i++) {
    double v = all[i];
    if (op == ncclAvg) v = d->is_float ? v / c->size : (double)((long long)v / c->size);
    store(d, out, i, v);
  }
  free(mine);
  free(all);
  return out;
}

/* Everyone's values concatenated by rank, through MPI_Allgather of the host bytes. */
static void *reference_gather(const ctx *c, const type_desc *d, size_t n)
{
  void *mine = host_values(d, c->rank, n), *all = malloc(n * d->size * c->size);
  MPI_Allgather(mine, (int)(n * d->size), MPI_BYTE, all, (int)(n * d->size), MPI_BYTE, c->mpi);
  free(mine);
  return all;
}

static void expect_bytes(const void *got, const void *want, size_t bytes, const ctx *c, const type_desc *d,
                         const char *what)
{
  EXPECT(memcmp(got, want, bytes) == 0, "%s %s on %s: result differs from MPI's", what, d->name, c->name);
}

/* ---- the collectives ---- */

static const ncclRedOp_t ops[] = {ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg};
static const char *op_names[] = {"sum", "prod", "max", "min", "avg"};

static void test_allreduce(const ctx *c, const type_desc *d, int in_place)
{
  const size_t bytes = N * d->size;
  void *h = host_values(d, c->rank, N), *got = malloc(bytes);
  void *sd = dev(bytes), *rd = in_place ? sd : dev(bytes);
  for (int k = 0; k < 5; k++) {
    if (ops[k] == ncclProd && d->t != ncclFloat32 && d->t != ncclFloat64)
      continue; /* 5^4 = 625 needs 10 mantissa bits (bf16 has 8); 10^4 overflows the 8-bit types */
    up(sd, h, bytes);
    EXPECT(ncclAllReduce(sd, rd, N, d->t, ops[k], c->nccl, c->s) == ncclSuccess, "ncclAllReduce");
    stream_sync(c->s);
    down(got, rd, bytes);
    void *want = reference_reduce(c, d, N, ops[k]);
    char what[64];
    snprintf(what, sizeof what, "all-reduce %s%s", op_names[k], in_place ? " in place" : "");
    expect_bytes(got, want, bytes, c, d, what);
    free(want);
  }
  cudaFree(sd);
  if (!in_place) cudaFree(rd);
  free(h);
  free(got);
}

/* In place: send is recv's block of this rank. */
static void test_allgather(const ctx *c, const type_desc *d, int in_place)
{
  const size_t blk = N * d->size, all = blk * c->size;
  void *h = host_values(d, c->rank, N), *got = malloc(all), *want = reference_gather(c, d, N);
  char *rd = dev(all), *sd = in_place ? rd + c->rank * blk : dev(blk);
  up(sd, h, blk);
  EXPECT(ncclAllGather(sd, rd, N, d->t, c->nccl, c->s) == ncclSuccess, "ncclAllGather");
  stream_sync(c->s);
  down(got, rd, all);
  expect_bytes(got, want, all, c, d, in_place ? "all-gather in place" : "all-gather");
  cudaFree(rd);
  if (!in_place) cudaFree(sd);
  free(h);
  free(got);
  free(want);
}

/* Every rank sends [g, N] (rank r's values repeated per block, shifted by the block); in place
 * the result is recv == send + rank N. */
static void test_reduce_scatter(const ctx *c, const type_desc *d, int in_place)
{
  const size_t blk = N * d->size, all = blk * c->size;
  char *h = malloc(all);
  for (int b = 0; b < c->size; b++)
    for (size_t i = 0; i < N; i++) store(d, h + b * blk, i, value(d, c->rank, i + (size_t)b * 5));
  double *mine = malloc(N * c->size * sizeof *mine), *sum = malloc(N * sizeof *sum);
  for (int b = 0; b < c->size; b++)
    for (size_t i = 0; i < N; i++) mine[b * N + i] = value(d, c->rank, i + (size_t)b * 5);
  MPI_Reduce_scatter_block(mine, sum, N, MPI_DOUBLE, MPI_SUM, c->mpi);
  char *want = malloc(blk), *got = malloc(blk);
  for (size_t i = 0; i < N; i++) store(d, want, i, sum[i]);
  char *sd = dev(all), *rd = in_place ? sd + c->rank * blk : dev(blk);
  up(sd, h, all);
  EXPECT(ncclReduceScatter(sd, rd, N, d->t, ncclSum, c->nccl, c->s) == ncclSuccess, "ncclReduceScatter");
  stream_sync(c->s);
  down(got, rd, blk);
  expect_bytes(got, want, blk, c, d, in_place ? "reduce-scatter in place" : "reduce-scatter");
  cudaFree(sd);
  if (!in_place) cudaFree(rd);
  free(h), free(mine), free(sum), free(want), free(got);
}

static void test_broadcast(const ctx *c, const type_desc *d, int root, int in_place)
{
  const size_t bytes = N * d->size;
  void *h = host_values(d, c->rank, N), *want = host_values(d, c->rank, N), *got = malloc(bytes);
  MPI_Bcast(want, (int)bytes, MPI_BYTE, root, c->mpi);
  void *sd = dev(bytes), *rd = in_place ? sd : dev(bytes);
  up(sd, h, bytes);
  EXPECT(ncclBroadcast(sd, rd, N, d->t, root, c->nccl, c->s) == ncclSuccess, "ncclBroadcast");
  stream_sync(c->s);
  down(got, rd, bytes);
  expect_bytes(got, want, bytes, c, d, in_place ? "broadcast in place" : "broadcast");
  cudaFree(sd);
  if (!in_place) cudaFree(rd);
  free(h), free(want), free(got);
}

/* Reduce to root: only the root's output is written; elsewhere recvbuff is NULL. */
static void test_reduce(const ctx *c, const type_desc *d, int root)
{
  const size_t bytes = N * d->size;
  void *h = host_values(d, c->rank, N), *got = malloc(bytes), *want = reference_reduce(c, d, N, ncclMax);
  void *sd = dev(bytes), *rd = c->rank == root ? dev(bytes) : NULL;
  up(sd, h, bytes);
  EXPECT(ncclReduce(sd, rd, N, d->t, ncclMax, root, c->nccl, c->s) == ncclSuccess, "ncclReduce");
  stream_sync(c->s);
  if (rd) {
    down(got, rd, bytes);
    expect_bytes(got, want, bytes, c, d, "reduce max");
    cudaFree(rd);
  }
  cudaFree(sd);
  free(h), free(got), free(want);
}

/* A ring in one group: each rank sends RING elements to the next and receives the previous
 * one's.  1 MiB of fp32 needs its receive posted before the send can complete (MPI's
 * rendezvous), so the group's calls must progress together. */
static void test_ring(const ctx *c, const type_desc *d)
{
  const size_t bytes = (size_t)RING * d->size;
  const int next = (c->rank + 1) % c->size, prev = (c->rank + c->size - 1) % c->size;
  void *h = host_values(d, c->rank, RING), *want = host_values(d, prev, RING), *got = malloc(bytes);
  void *sd = dev(bytes), *rd = dev(bytes);
  up(sd, h, bytes);
  EXPECT(ncclGroupStart() == ncclSuccess, "ncclGroupStart");
  EXPECT(ncclSend(sd, RING, d->t, next, c->nccl, c->s) == ncclSuccess, "ncclSend");
  EXPECT(ncclRecv(rd, RING, d->t, prev, c->nccl, c->s) == ncclSuccess, "ncclRecv");
  EXPECT(ncclGroupEnd() == ncclSuccess, "ncclGroupEnd");
  stream_sync(c->s);
  down(got, rd, bytes);
  expect_bytes(got, want, bytes, c, d, "send/recv ring");
  cudaFree(sd), cudaFree(rd);
  free(h), free(want), free(got);
}

/* Sum of bf16 or fp16 values that needs rounding: exact in fp32, rounded once to the type. */
static void test_rounding(const ctx *c, int bf16)
{
  const int frac = bf16 ? 128 : 1024;
  uint16_t *h = malloc(N * sizeof *h), *got = malloc(N * sizeof *got), *want = malloc(N * sizeof *want);
  double *mine = malloc(N * sizeof *mine), *sum = malloc(N * sizeof *sum);
  for (int i = 0; i < N; i++) {
    float v = 1.0f + (float)((i * 37 + c->rank * 101 + i / 7) % frac) / (float)frac;
    mine[i] = v;
    h[i] = bf16 ? __bfloat16_as_ushort(__float2bfloat16_rn(v)) : __half_as_ushort(__float2half_rn(v));
  }
  MPI_Allreduce(mine, sum, N, MPI_DOUBLE, MPI_SUM, c->mpi);
  int rounded = 0;
  for (int i = 0; i < N; i++) {
    want[i] = bf16 ? __bfloat16_as_ushort(__float2bfloat16_rn((float)sum[i]))
                   : __half_as_ushort(__float2half_rn((float)sum[i]));
    rounded += (bf16 ? __bfloat162float(__ushort_as_bfloat16(want[i])) : __half2float(__ushort_as_half(want[i]))) !=
               (float)sum[i];
  }
  EXPECT(c->size < 4 || rounded > N / 4, "rounding test: only %d of %d sums need rounding", rounded, N);
  uint16_t *d = dev(N * sizeof *d);
  up(d, h, N * sizeof *d);
  EXPECT(ncclAllReduce(d, d, N, bf16 ? ncclBfloat16 : ncclFloat16, ncclSum, c->nccl, c->s) == ncclSuccess,
         "ncclAllReduce");
  stream_sync(c->s);
  down(got, d, N * sizeof *d);
  int bad = 0;
  if (c->size == 2) {
    for (int i = 0; i < N; i++) bad += got[i] != want[i];
    EXPECT(!bad, "%s sums on %s: %d of %d differ from the exact sum rounded once", bf16 ? "bf16" : "fp16", c->name,
           bad, N);
  } else {
    const double u = bf16 ? 0x1p-8 : 0x1p-11, k = c->size - 1, gamma = k * u / (1 - k * u);
    for (int i = 0; i < N; i++) {
      double g = bf16 ? __bfloat162float(__ushort_as_bfloat16(got[i])) : __half2float(__ushort_as_half(got[i]));
      bad += fabs(g - sum[i]) > gamma * sum[i];
    }
    EXPECT(!bad, "%s sums on %s: %d of %d are further than %d roundings from the exact sum", bf16 ? "bf16" : "fp16",
           c->name, bad, N, c->size - 1);
    uint16_t *first = malloc(N * sizeof *first);
    memcpy(first, got, N * sizeof *got);
    MPI_Bcast(first, N, MPI_UINT16_T, 0, c->mpi);
    EXPECT(memcmp(first, got, N * sizeof *got) == 0, "%s sums on %s: ranks got different bits",
           bf16 ? "bf16" : "fp16", c->name);
    free(first);
  }
  cudaFree(d);
  free(h), free(got), free(want), free(mine), free(sum);
}

static void test_all_collectives(const ctx *c)
{
  for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
    const type_desc *d = &types[k];
    for (int in_place = 0; in_place < 2; in_place++) {
      test_allreduce(c, d, in_place);
      test_allgather(c, d, in_place);
      test_reduce_scatter(c, d, in_place);
      for (int root = 0; root < c->size; root++) test_broadcast(c, d, root, in_place);
    }
    test_reduce(c, d, 0);
    test_reduce(c, d, c->size - 1);
    test_ring(c, d);
  }
}

/* ---- a late peer, an abort ---- */

static void spin_ms(int ms)
{
  struct timespec t = {0, 1000000L * ms};
  nanosleep(&t, NULL);
}

/* NCCL rank 0 issues first and finds its stream busy; the others join after a barrier. */
static void test_late_peer(const ctx *c)
{
  float *h = malloc(N * sizeof *h), *got = malloc(N * sizeof *got);
  for (int i = 0; i < N; i++) h[i] = (float)(c->rank + i);
  float *d = dev(N * sizeof *d);
  up(d, h, N * sizeof *d);
  if (c->rank == 0) {
    EXPECT(ncclAllReduce(d, d, N, ncclFloat32, ncclSum, c->nccl, c->s) == ncclSuccess, "ncclAllReduce");
    cudaError_t e = cudaSuccess;
    for (int k = 0; k < 20; k++, spin_ms(5)) e = cudaStreamQuery(c->s);
    EXPECT(e == cudaErrorNotReady, "late peer: cudaStreamQuery gave %s, expected cudaErrorNotReady",
           cudaGetErrorName(e));
  }
  MPI_Barrier(c->mpi);
  if (c->rank != 0) EXPECT(ncclAllReduce(d, d, N, ncclFloat32, ncclSum, c->nccl, c->s) == ncclSuccess, "ncclAllReduce");
  stream_sync(c->s);
  down(got, d, N * sizeof *d);
  int bad = 0;
  for (int i = 0; i < N; i++) bad += got[i] != (float)(c->size * (c->size - 1) / 2 + c->size * i);
  EXPECT(!bad, "late peer: %d wrong sums", bad);
  cudaFree(d);
  free(h), free(got);
}

/* On a fresh world communicator NCCL rank 0 issues an all-reduce the others do not join yet,
 * aborts it, and finds its stream free and its output untouched; the others then issue theirs,
 * which completes against rank 0's orphaned MPI operation. */
static void test_abort(const int *members, int n)
{
  ncclComm_t comm = make_comm(members, n, 0);
  int rank = -1;
  ncclCommUserRank(comm, &rank);
  cudaStream_t s;
  cudaStreamCreate(&s);
  float *h = malloc(N * sizeof *h), *got = malloc(N * sizeof *got);
  for (int i = 0; i < N; i++) h[i] = 3.0f;
  float *d = dev(N * sizeof *d);
  up(d, h, N * sizeof *d);
  if (rank == 0) {
    EXPECT(ncclAllReduce(d, d, N, ncclFloat32, ncclSum, comm, s) == ncclSuccess, "ncclAllReduce");
    EXPECT(cudaStreamQuery(s) == cudaErrorNotReady, "abort: the stream should wait for the peers");
    EXPECT(ncclCommAbort(comm) == ncclSuccess, "ncclCommAbort");
    stream_sync(s);
    down(got, d, N * sizeof *d);
    EXPECT(got[0] == 3.0f && got[N - 1] == 3.0f, "abort: output written (%g) by an aborted collective", got[0]);
    int count = 0;
    EXPECT(ncclCommCount(comm, &count) == ncclInvalidArgument, "an aborted handle must be refused");
    ncclResult_t ae;
    EXPECT(ncclCommGetAsyncError(comm, &ae) == ncclInvalidArgument, "an aborted handle must be refused");
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank != 0) {
    EXPECT(ncclAllReduce(d, d, N, ncclFloat32, ncclSum, comm, s) == ncclSuccess, "ncclAllReduce");
    stream_sync(s);
    down(got, d, N * sizeof *d);
    EXPECT(got[0] == 3.0f * n, "abort: the peers' all-reduce gave %g, expected %g", got[0], 3.0f * n);
    EXPECT(ncclCommDestroy(comm) == ncclSuccess, "ncclCommDestroy");
  }
  cudaFree(d);
  cudaStreamDestroy(s);
  free(h), free(got);
}

/* ---- argument checks: each refused with NCCL's code, nothing queued ---- */

static void test_arguments(const ctx *c)
{
  float *d = dev(N * sizeof(float)), *host = malloc(N * sizeof(float));
  ncclComm_t k = c->nccl;
  cudaStream_t s = c->s;
  EXPECT(ncclAllReduce(d, d, N, ncclFloat32, ncclSum, NULL, s) == ncclInvalidArgument, "NULL comm");
  EXPECT(ncclAllReduce(d, d, N, (ncclDataType_t)99, ncclSum, k, s) == ncclInvalidArgument, "type 99");
  EXPECT(ncclAllReduce(d, d, N, ncclFloat8e4m3, ncclSum, k, s) == ncclInvalidArgument, "fp8");
  EXPECT(ncclAllReduce(d, d, N, ncclFloat32, (ncclRedOp_t)9, k, s) == ncclInvalidArgument, "op 9");
  EXPECT(ncclAllReduce(host, d, N, ncclFloat32, ncclSum, k, s) == ncclInvalidArgument, "host sendbuff");
  EXPECT(ncclAllReduce(d, host, N, ncclFloat32, ncclSum, k, s) == ncclInvalidArgument, "host recvbuff");
  EXPECT(ncclAllReduce(d, d, N + 1, ncclFloat32, ncclSum, k, s) == ncclInvalidArgument, "buffer too short");
  EXPECT(ncclAllReduce(d, d + 1, N - 1, ncclFloat32, ncclSum, k, s) == ncclInvalidArgument, "overlap");
  EXPECT(ncclAllGather(d, d, N / c->size, ncclFloat32, k, s) == (c->rank ? ncclInvalidArgument : ncclSuccess),
         "all-gather with send == recv is in place on rank 0 only");
  EXPECT(ncclBroadcast(d, d, N, ncclFloat32, c->size, k, s) == ncclInvalidArgument, "root out of range");
  EXPECT(ncclSend(d, N, ncclFloat32, -1, k, s) == ncclInvalidArgument, "peer -1");
  EXPECT(ncclAllReduce(d, d, (size_t)INT_MAX + 1, ncclFloat32, ncclSum, k, s) == ncclInvalidUsage, "count > INT_MAX");
  EXPECT(ncclAllReduce(NULL, NULL, 0, ncclFloat32, ncclSum, k, s) == ncclSuccess, "count 0 with NULL buffers");
  EXPECT(ncclGroupEnd() == ncclInvalidUsage, "ncclGroupEnd without ncclGroupStart");
  ncclUniqueId bad;
  memset(&bad, 0x5a, sizeof bad);
  ncclComm_t x = NULL;
  EXPECT(ncclCommInitRank(&x, c->size, bad, c->rank) == ncclInvalidArgument, "an id not from ncclGetUniqueId");
  ncclResult_t ae = ncclInternalError;
  EXPECT(ncclCommGetAsyncError(k, &ae) == ncclSuccess && ae == ncclSuccess, "no asynchronous error");
  /* rank 0's all-gather above was valid and is queued: the others join it in place */
  if (c->rank != 0)
    EXPECT(ncclAllGather(d + c->rank * (N / c->size), d, N / c->size, ncclFloat32, k, s) == ncclSuccess,
           "all-gather in place");
  stream_sync(s);
  cudaFree(d);
  free(host);
}

static void run_on(const int *members, int n, int creator, const char *name)
{
  ncclComm_t nc = make_comm(members, n, creator);
  MPI_Comm mc = mpi_twin(members, n);
  if (!nc) return;
  ctx c = {.nccl = nc, .mpi = mc, .size = n, .name = name};
  ncclCommUserRank(nc, &c.rank);
  cudaStreamCreateWithFlags(&c.s, cudaStreamNonBlocking);
  test_all_collectives(&c);
  test_rounding(&c, 1);
  test_rounding(&c, 0);
  test_late_peer(&c);
  EXPECT(ncclCommDestroy(nc) == ncclSuccess, "ncclCommDestroy");
  EXPECT(ncclCommDestroy(nc) == ncclInvalidArgument, "a destroyed handle must be refused");
  cudaStreamDestroy(c.s);
  MPI_Comm_free(&mc);
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
  MPI_Comm_size(MPI_COMM_WORLD, &wsize);
  cudaSetDevice(0);
  int all[64], rev[64], even[32], ne = 0;
  for (int r = 0; r < wsize; r++) {
    all[r] = r;
    rev[r] = wsize - 1 - r;
    if (r % 2 == 0) even[ne++] = r;
  }
  run_on(all, wsize, 0, "all ranks");
  run_on(rev, wsize, 0, "all ranks reversed");
  if (ne > 1) run_on(even, ne, ne - 1, "even ranks");
  ncclComm_t nc = make_comm(all, wsize, 0);
  MPI_Comm twin = mpi_twin(all, wsize);
  ctx c = {.nccl = nc, .mpi = twin, .size = wsize, .rank = wrank, .name = "all ranks"};
  cudaStreamCreate(&c.s);
  test_arguments(&c);
  ncclCommDestroy(nc);
  cudaStreamDestroy(c.s);
  MPI_Comm_free(&twin);
  test_abort(all, wsize);
  int fails = n_fail;
  MPI_Allreduce(MPI_IN_PLACE, &fails, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (wrank == 0) printf("test_emu_nccl on %d ranks: %d checks on rank 0, %d failures on all ranks\n", wsize, n_pass + n_fail, fails);
  MPI_Finalize();
  return fails ? 1 : 0;
}
