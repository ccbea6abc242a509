/* The counting comm layer on 4 ranks: every collective's numbers against a direct computation,
 * and its byte count against the ring convention of comm.h exactly, for n floats on g ranks:
 *     all-reduce 2 (g-1)/g 4n;  all-gather, reduce-scatter (g-1)/g 4 g n;  bcast 4n at the root;
 *     isend 4n;  e.g. n = 1000, g = 4: all-reduce 6000 bytes, all-gather 12000 bytes.
 * Also: size-1 communicators short-circuit (0 bytes, calls counted, copies made), nonblocking
 * variants equal the blocking ones, an isend/irecv ring exchange, the report, and a refused
 * operation on a group this rank is not in. */
#include "ptdp/comm.h"
#include "ptdp/error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../expect.h"

enum { N = 1000 };

/* Rank r's value at index i: integers, so float sums are exact. */
static float val(int r, int i) { return (float)(r * 1000 + i % 997); }

static void check_counts(const ptdp_comm *c, ptdp_comm_tag tag, long long calls, double bytes, const char *what)
{
  EXPECT(c->stats.calls[tag] == calls, "%s: %lld calls on tag %s, expected %lld", what, c->stats.calls[tag],
         ptdp_comm_tag_name(tag), calls);
  EXPECT(c->stats.bytes[tag] == bytes, "%s: %.3f bytes on tag %s, expected %.3f", what, c->stats.bytes[tag],
         ptdp_comm_tag_name(tag), bytes);
}

/* Blocking and nonblocking collectives on c (any size g), each on its own tag. */
static void check_collectives(ptdp_comm *c)
{
  int g = c->size, r = c->rank;
  float *a = malloc(sizeof(float) * N * g), *b = malloc(sizeof(float) * N * g);
  float *send = malloc(sizeof(float) * N * g), *want = malloc(sizeof(float) * N * g);
  double *d = malloc(sizeof(double) * N);
  ptdp_comm_reset_stats(c);
  const double ar_bytes = 2.0 * (g - 1) / g * 4.0 * N, ag_bytes = (double)(g - 1) / g * 4.0 * N * g;

  /* all-reduce sum and max, float and double: tag LAYER */
  for (int i = 0; i < N; i++) a[i] = val(r, i), d[i] = val(r, i) + 0.5;
  EXPECT(ptdp_comm_allreduce_sum(c, a, N, PTDP_TAG_LAYER) == 0, "allreduce_sum");
  int ok = 1;
  for (int i = 0; i < N; i++) {
    float s = 0;
    for (int q = 0; q < g; q++) s += val(q, i);
    ok &= a[i] == s;
  }
  EXPECT(ok, "g %d: allreduce_sum values", g);
  for (int i = 0; i < N; i++) a[i] = val((r + i) % g, i);
  EXPECT(ptdp_comm_allreduce_max(c, a, N, PTDP_TAG_LAYER) == 0, "allreduce_max");
  ok = 1;
  for (int i = 0; i < N; i++) ok &= a[i] == val(g - 1, i);
  EXPECT(ok, "g %d: allreduce_max values", g);
  check_counts(c, PTDP_TAG_LAYER, 2, 2 * ar_bytes, "float all-reduces");
  EXPECT(ptdp_comm_allreduce_sum_f64(c, d, N, PTDP_TAG_MISC) == 0, "allreduce_sum_f64");
  ok = 1;
  for (int i = 0; i < N; i++) {
    double s = 0;
    for (int q = 0; q < g; q++) s += val(q, i) + 0.5;
    ok &= d[i] == s;
  }
  EXPECT(ok, "g %d: allreduce_sum_f64 values", g);
  for (int i = 0; i < N; i++) d[i] = -(double)r * i;
  EXPECT(ptdp_comm_allreduce_max_f64(c, d, N, PTDP_TAG_MISC) == 0, "allreduce_max_f64");
  ok = 1;
  for (int i = 0; i < N; i++) ok &= d[i] == 0.0; /* max over ranks of -r i is rank 0's 0 */
  EXPECT(ok, "g %d: allreduce_max_f64 values", g);
  check_counts(c, PTDP_TAG_MISC, 2, 2 * 2.0 * (g - 1) / g * 8.0 * N, "double all-reduces");

  /* all-gather (out of place and in place): tag PARAM */
  for (int i = 0; i < N; i++) send[i] = val(r, i);
  EXPECT(ptdp_comm_allgather(c, send, a, N, PTDP_TAG_PARAM) == 0, "allgather");
  for (int i = 0; i < N; i++) b[r * N + i] = val(r, i);
  EXPECT(ptdp_comm_allgather(c, b + r * N, b, N, PTDP_TAG_PARAM) == 0, "allgather in place");
  ok = 1;
  for (int q = 0; q < g; q++)
    for (int i = 0; i < N; i++) ok &= a[q * N + i] == val(q, i) && b[q * N + i] == val(q, i);
  EXPECT(ok, "g %d: allgather values", g);
  check_counts(c, PTDP_TAG_PARAM, 2, 2 * ag_bytes, "all-gathers");

  /* reduce-scatter (out of place and in place): tag GRAD */
  for (int q = 0; q < g; q++)
    for (int i = 0; i < N; i++) send[q * N + i] = val(r, i) + q, b[q * N + i] = send[q * N + i];
  for (int i = 0; i < N; i++) {
    want[i] = 0;
    for (int q = 0; q < g; q++) want[i] += val(q, i) + r;
  }
  EXPECT(ptdp_comm_reduce_scatter(c, send, a, N, PTDP_TAG_GRAD) == 0, "reduce_scatter");
  EXPECT(ptdp_comm_reduce_scatter(c, b, b, N, PTDP_TAG_GRAD) == 0, "reduce_scatter in place");
  ok = 1;
  for (int i = 0; i < N; i++) ok &= a[i] == want[i] && b[i] == want[i];
  EXPECT(ok, "g %d: reduce_scatter values", g);
  check_counts(c, PTDP_TAG_GRAD, 2, 2 * ag_bytes, "reduce-scatters");

  /* broadcast from the last rank: tag EMBED, bytes at the root only */
  int root = g - 1;
  for (int i = 0; i < N; i++) a[i] = r == root ? val(7, i) : -1.0f;
  EXPECT(ptdp_comm_bcast(c, a, sizeof(float) * N, root, PTDP_TAG_EMBED) == 0, "bcast");
  ok = 1;
  for (int i = 0; i < N; i++) ok &= a[i] == val(7, i);
  EXPECT(ok, "g %d: bcast values", g);
  check_counts(c, PTDP_TAG_EMBED, 1, (g > 1 && r == root) ? 4.0 * N : 0.0, "bcast");

  /* nonblocking: the same numbers and bytes as blocking, on tag LOSS */
  ptdp_comm_req req[3];
  float *x = malloc(sizeof(float) * N), *y = malloc(sizeof(float) * N * g), *z = malloc(sizeof(float) * N);
  for (int i = 0; i < N; i++) x[i] = val(r, i), send[i] = val(r, i);
  for (int q = 0; q < g; q++)
    for (int i = 0; i < N; i++) b[q * N + i] = val(r, i) + q;
  EXPECT(ptdp_comm_iallreduce_sum(c, x, N, PTDP_TAG_LOSS, &req[0]) == 0, "iallreduce");
  EXPECT(ptdp_comm_iallgather(c, send, y, N, PTDP_TAG_LOSS, &req[1]) == 0, "iallgather");
  EXPECT(ptdp_comm_ireduce_scatter(c, b, z, N, PTDP_TAG_LOSS, &req[2]) == 0, "ireduce_scatter");
  if (g == 1)
    EXPECT(req[0] == PTDP_COMM_REQ_NULL && req[1] == PTDP_COMM_REQ_NULL && req[2] == PTDP_COMM_REQ_NULL,
           "size-1 nonblocking requests are PTDP_COMM_REQ_NULL");
  EXPECT(ptdp_comm_wait(c, &req[0]) == 0 && ptdp_comm_waitall(c, 2, req + 1) == 0, "waits");
  ok = 1;
  for (int i = 0; i < N; i++) {
    float s = 0;
    for (int q = 0; q < g; q++) s += val(q, i);
    ok &= x[i] == s && z[i] == want[i];
    for (int q = 0; q < g; q++) ok &= y[q * N + i] == val(q, i);
  }
  EXPECT(ok, "g %d: nonblocking values equal blocking", g);
  check_counts(c, PTDP_TAG_LOSS, 3, ar_bytes + 2 * ag_bytes, "nonblocking collectives");

  ptdp_comm_barrier(c);
  check_counts(c, PTDP_TAG_MISC, 3, 2 * 2.0 * (g - 1) / g * 8.0 * N, "barrier");
  double total = 0;
  for (int t = 0; t < PTDP_TAG_COUNT; t++) total += c->stats.bytes[t];
  EXPECT(ptdp_comm_total_bytes(c) == total, "total bytes");
  EXPECT(c->stats.wait_seconds >= 0, "wait_seconds");
  if (g == 1) EXPECT(total == 0, "size 1 sends nothing (%.0f bytes counted)", total);
  free(a), free(b), free(send), free(want), free(d), free(x), free(y), free(z);
}

/* Ring exchange: send n floats to rank + 1, receive from rank - 1; tag P2P counts 4n sent. */
static void check_ring(ptdp_comm *c)
{
  int g = c->size, r = c->rank;
  float out[N], in[N];
  ptdp_comm_req req[2];
  ptdp_comm_reset_stats(c);
  for (int i = 0; i < N; i++) out[i] = val(r, i), in[i] = -1;
  EXPECT(ptdp_comm_irecv(c, in, N, (r + g - 1) % g, 5, PTDP_TAG_P2P, &req[0]) == 0, "irecv");
  EXPECT(ptdp_comm_isend(c, out, N, (r + 1) % g, 5, PTDP_TAG_P2P, &req[1]) == 0, "isend");
  EXPECT(ptdp_comm_waitall(c, 2, req) == 0, "waitall");
  int ok = 1;
  for (int i = 0; i < N; i++) ok &= in[i] == val((r + g - 1) % g, i);
  EXPECT(ok, "g %d: ring exchange values", g);
  check_counts(c, PTDP_TAG_P2P, 2, g > 1 ? 4.0 * N : 0.0, "ring exchange");
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  int world;
  MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  ptdp_comm w, pair, self, none;
  EXPECT(ptdp_comm_wrap(&w, MPI_COMM_WORLD, PTDP_GROUP_WORLD) == 0 && w.size == world && w.rank == wrank, "wrap");
  check_collectives(&w);
  check_ring(&w);
  if (world == 4) {
    /* the ring convention's worked numbers, n = 1000 floats on g = 4 */
    ptdp_comm_reset_stats(&w);
    float a[N] = {0}, big[4 * N];
    ptdp_comm_allreduce_sum(&w, a, N, PTDP_TAG_LAYER);
    ptdp_comm_allgather(&w, a, big, N, PTDP_TAG_PARAM);
    EXPECT(w.stats.bytes[PTDP_TAG_LAYER] == 6000.0 && w.stats.bytes[PTDP_TAG_PARAM] == 12000.0,
           "g 4 n 1000: %.1f and %.1f bytes, expected 6000 and 12000", w.stats.bytes[PTDP_TAG_LAYER],
           w.stats.bytes[PTDP_TAG_PARAM]);
    char rep[1024];
    ptdp_comm_report(&w, rep, sizeof rep);
    EXPECT(strstr(rep, "world layer: 1 calls, 6000 bytes") && strstr(rep, "world param: 1 calls, 12000 bytes") &&
               !strstr(rep, "grad"),
           "report:\n%s", rep);
    if (wrank == 0) printf("report:\n%s", rep);
    char tiny[8];
    ptdp_comm_report(&w, tiny, sizeof tiny);
    EXPECT(strlen(tiny) < sizeof tiny, "report truncates safely");
  }
  /* pairs {0,1} {2,3}: g = 2, all-reduce counts 2 (1/2) 4n = 4n */
  MPI_Comm pc;
  MPI_Comm_split(MPI_COMM_WORLD, wrank / 2, wrank, &pc);
  EXPECT(ptdp_comm_wrap(&pair, pc, PTDP_GROUP_TP) == 0, "wrap pair");
  check_collectives(&pair);
  check_ring(&pair);
  /* size 1: no MPI call, copies, 0 bytes, calls counted */
  MPI_Comm sc;
  MPI_Comm_split(MPI_COMM_WORLD, wrank, 0, &sc);
  EXPECT(ptdp_comm_wrap(&self, sc, PTDP_GROUP_DP) == 0 && self.size == 1, "wrap self");
  check_collectives(&self);
  check_ring(&self);
  /* not a member: refused with a message naming the group */
  EXPECT(ptdp_comm_wrap(&none, MPI_COMM_NULL, PTDP_GROUP_EMB) == 0 && none.size == 0, "wrap null");
  float f = 1;
  ptdp_error_set_quiet(1);
  EXPECT(ptdp_comm_allreduce_sum(&none, &f, 1, PTDP_TAG_EMBED) == PTDP_ERR_INPUT &&
             strstr(ptdp_error_message(), "emb group, which this rank is not a member of"),
         "non-member all-reduce refused: %s", ptdp_error_message());
  ptdp_error_clear();
  ptdp_error_set_quiet(0);
  ptdp_error_set_collective(1);
  EXPECT(ptdp_comm_free(&pair) == 0 && ptdp_comm_free(&self) == 0 && ptdp_comm_free(&none) == 0 &&
             ptdp_comm_free(&w) == 0,
         "free");
  EXPECT(pair.comm == MPI_COMM_NULL, "free resets comm");
  int fails = 0;
  MPI_Allreduce(&n_fail, &fails, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (wrank == 0) printf("test_comm: rank 0 %d checks passed; %d failed over all %d ranks\n", n_pass, fails, world);
  MPI_Finalize();
  return fails ? 1 : 0;
}
