/* The NCCL transport (src/parallel/transport_nccl.c) on the emulated CUDA backend and NCCL, on
 * 2 ranks, through the comm layer (comm.c) as the model calls it.  Two modes:
 *
 *   order   Each input is made on the compute stream by a kernel (be->add: x = v + 1) right
 *           before the collective, so the collective is correct only if the comm stream waits
 *           for the compute stream: all-reduce (blocking; nonblocking waited for by wait and by
 *           test), all-gather, reduce-scatter out of place and in place (ranks > 0 move their
 *           block on the comm stream).  Values are small integers: sums are exact, results are
 *           compared exactly.  Built twice: with the real transport, which must pass, and
 *           (EMU_NCCL_MUTANT) with a build-time copy whose begin() lost that wait, which must
 *           fail: the emulation runs the most recently enqueued stream first, so the
 *           collective then reads its input before the kernel has written it.
 *
 *   hang T HOW  Rank 1 never joins rank 0's operation (a peer that died or hangs); rank 0
 *           waits with the wait timeout set to T seconds.  HOW: sync, an NCCL all-reduce waited
 *           for by be->synchronize; test, a nonblocking one whose request is polled with test
 *           (the comm layer's other way of waiting); mpi, an all-reduce of doubles (host memory:
 *           delegated to MPI); recv, a receive (delegated to MPI) from rank 1.  The wait must
 *           end with the error naming the group ("tp", as the test names the MPI communicator)
 *           and the operation, and the program exit non-zero (test_emu_nccl_hang.sh checks the
 *           message and the time, under `timeout`). */
#include "ptdp/backend.h"
#include "ptdp/comm.h"
#include "ptdp/cuda.h"
#include "ptdp/error.h"
#include "transport.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../tests/expect.h"

#ifdef EMU_NCCL_MUTANT
int ptdp_transport_nccl_mutant_create(MPI_Comm comm, ptdp_backend *be, ptdp_transport **tr);
#define TRANSPORT_CREATE ptdp_transport_nccl_mutant_create
#define VARIANT "mutant (begin() without the comm stream's wait)"
#else
#define TRANSPORT_CREATE ptdp_transport_nccl_create
#define VARIANT "real"
#endif

enum { N = 4096 };

static int g_rank, g_size;

static void die(int err)
{
  if (err) ptdp_error_exit(err);
}

/* The tp group over all ranks, its collectives through the transport under test. */
static void setup(ptdp_backend **be, ptdp_comm *c)
{
  die(ptdp_backend_create("cuda", NULL, be));
  MPI_Comm dup;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  MPI_Comm_set_name(dup, "tp");
  die(ptdp_comm_wrap(c, dup, PTDP_GROUP_TP));
  die(ptdp_comm_attach_backend(c, *be));
  ptdp_transport *tr = NULL;
  die(TRANSPORT_CREATE(c->comm, *be, &tr));
  ptdp_transport_destroy(&c->transport);
  c->transport = tr;
}

static float *dev(ptdp_backend *be, size_t n)
{
  void *p = NULL;
  die(be->alloc(be, &p, n * sizeof(float)));
  return p;
}

/* Rank r's element i (small integers: sums over ranks are exact). */
static float v(int r, size_t i) { return (float)((r * 13 + i * 7) % 50); }

/* x[0..n) = v(rank, first + i) + 1, the + 1 by a kernel on the compute stream (the producer). */
static void produce(ptdp_backend *be, float *x, const float *one, size_t n, size_t first)
{
  float *h = malloc(n * sizeof *h);
  for (size_t i = 0; i < n; i++) h[i] = v(g_rank, first + i);
  die(be->to_device(be, x, h, n * sizeof *h));
  die(be->add(be, x, one, n));
  free(h);
}

static void fetch(ptdp_backend *be, float *h, const float *x, size_t n)
{
  die(be->to_host(be, h, x, n * sizeof *h));
  die(be->synchronize(be));
}

/* sum over ranks of (v(r, first + i) + 1) */
static float summed(size_t first, size_t i)
{
  float s = 0;
  for (int r = 0; r < g_size; r++) s += v(r, first + i) + 1.0f;
  return s;
}

static void expect_sums(const float *h, size_t n, size_t first, const char *what)
{
  size_t bad = 0, at = 0;
  for (size_t i = 0; i < n; i++)
    if (h[i] != summed(first, i) && bad++ == 0) at = i;
  EXPECT(bad == 0, "%s: %zu of %zu sums wrong (first at %zu: %g, expected %g)", what, bad, n, at, h[at],
         summed(first, at));
}

static void order_allreduce(ptdp_backend *be, ptdp_comm *c, float *x, const float *one, float *h)
{
  produce(be, x, one, N, 0);
  die(ptdp_comm_allreduce_sum(c, x, N, PTDP_TAG_LAYER));
  fetch(be, h, x, N);
  expect_sums(h, N, 0, "all-reduce");
  for (int polling = 0; polling < 2; polling++) {
    ptdp_comm_set_wait_sleep(polling ? 20 : 0); /* wait: the transport's wait, or test polled */
    ptdp_comm_req req;
    produce(be, x, one, N, 0);
    die(ptdp_comm_iallreduce_sum(c, x, N, PTDP_TAG_GRAD, &req));
    die(ptdp_comm_wait(c, &req));
    fetch(be, h, x, N);
    expect_sums(h, N, 0, polling ? "nonblocking all-reduce, test polled" : "nonblocking all-reduce, wait");
  }
  ptdp_comm_set_wait_sleep(0);
}

static void order_allgather(ptdp_backend *be, ptdp_comm *c, float *x, const float *one, float *h)
{
  const size_t n = N / g_size;
  float *all = dev(be, N);
  produce(be, x, one, n, 0);
  die(ptdp_comm_allgather(c, x, all, n, PTDP_TAG_LAYER));
  fetch(be, h, all, N);
  size_t bad = 0;
  for (int r = 0; r < g_size; r++)
    for (size_t i = 0; i < n; i++) bad += h[r * n + i] != v(r, i) + 1.0f;
  EXPECT(bad == 0, "all-gather: %zu of %d values wrong", bad, N);
  be->free(be, all);
}

/* send [g, n]: block b holds v(rank, b n + i) + 1; this rank's result block is rank's sum. */
static void order_reduce_scatter(ptdp_backend *be, ptdp_comm *c, float *x, const float *one, float *h, int in_place)
{
  const size_t n = N / g_size;
  float *out = in_place ? x : dev(be, n);
  produce(be, x, one, N, 0);
  die(ptdp_comm_reduce_scatter(c, x, out, n, PTDP_TAG_GRAD));
  fetch(be, h, out, n);
  expect_sums(h, n, (size_t)g_rank * n, in_place ? "reduce-scatter in place" : "reduce-scatter");
  if (!in_place) be->free(be, out);
}

static int run_order(void)
{
  ptdp_backend *be;
  ptdp_comm c;
  setup(&be, &c);
  float *x = dev(be, N), *one = dev(be, N), *h = malloc(N * sizeof *h);
  for (size_t i = 0; i < N; i++) h[i] = 1.0f;
  die(be->to_device(be, one, h, N * sizeof *h));
  order_allreduce(be, &c, x, one, h);
  order_allgather(be, &c, x, one, h);
  order_reduce_scatter(be, &c, x, one, h, 0);
  order_reduce_scatter(be, &c, x, one, h, 1);
  be->free(be, x);
  be->free(be, one);
  free(h);
  die(ptdp_comm_free(&c));
  ptdp_backend_destroy(&be);
  int fails = n_fail;
  MPI_Allreduce(MPI_IN_PLACE, &fails, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (g_rank == 0)
    printf("test_emu_nccl_transport order, %s transport: %d checks on rank 0, %d failures on all ranks\n", VARIANT,
           n_pass + n_fail, fails);
  return fails ? 1 : 0;
}

/* Rank 0's operation that rank 1 never joins, and its wait: the error it ends with. */
static int wait_alone(ptdp_backend *be, ptdp_comm *c, float *x, const char *how)
{
  ptdp_comm_req req;
  if (!strcmp(how, "test")) {
    ptdp_comm_set_wait_sleep(1000);
    die(ptdp_comm_iallreduce_sum(c, x, N, PTDP_TAG_GRAD, &req));
    return ptdp_comm_wait(c, &req);
  }
  if (!strcmp(how, "mpi")) {
    double d = 1.0;
    return ptdp_comm_allreduce_sum_f64(c, &d, 1, PTDP_TAG_LOSS);
  }
  if (!strcmp(how, "recv")) {
    die(ptdp_comm_irecv(c, x, N, 1, 7, PTDP_TAG_P2P, &req));
    return ptdp_comm_wait(c, &req);
  }
  die(ptdp_comm_allreduce_sum(c, x, N, PTDP_TAG_LAYER));
  return be->synchronize(be);
}

/* Rank 0's wait must fail (the program then aborts); rank 1 waits in a barrier it never passes. */
static int run_hang(double timeout, const char *how)
{
  ptdp_backend *be;
  ptdp_comm c;
  setup(&be, &c);
  die(ptdp_cuda_set_wait_timeout(timeout));
  ptdp_error_set_collective(0); /* one rank's failure: it prints, MPI_Abort ends the others */
  float *x = dev(be, N);
  if (g_rank == 0) {
    const double t0 = MPI_Wtime();
    int err = wait_alone(be, &c, x, how);
    printf("test_emu_nccl_transport hang: rank 0's wait ended after %.1f s with %s\n", MPI_Wtime() - t0,
           err ? "an error" : "success");
    fflush(stdout);
    die(err ? err : PTDP_FAIL(PTDP_ERR_LIB, "the wait did not fail"));
  }
  MPI_Barrier(MPI_COMM_WORLD);
  return 1; /* not reached: rank 0 aborts */
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  wrank = g_rank;
  int rc = 2;
  if (argc >= 2 && !strcmp(argv[1], "order"))
    rc = run_order();
  else if (argc >= 4 && !strcmp(argv[1], "hang"))
    rc = run_hang(atof(argv[2]), argv[3]);
  else if (g_rank == 0)
    fprintf(stderr, "usage: test_emu_nccl_transport order | hang SECONDS sync|test|mpi|recv\n");
  MPI_Finalize();
  return rc;
}
