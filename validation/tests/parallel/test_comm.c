/* The counting comm layer on 4 ranks: every collective's numbers against a direct computation,
 * and its byte count against the ring convention of comm.h exactly, for n floats on g ranks:
 *     all-reduce 2 (g-1)/g 4n;  all-gather, reduce-scatter (g-1)/g 4 g n;  bcast 4n at the root;
 *     isend 4n;  e.g. n = 1000, g = 4: all-reduce 6000 bytes, all-gather 12000 bytes.
 * Also: size-1 communicators short-circuit (0 bytes, calls counted, copies made), nonblocking
 * variants equal the blocking ones, an isend/irecv ring exchange (waits blocking and polling),
 * the report, and a refused operation on a group this rank is not in.
 *
 * Each communicator (g = 4, 2, 1) runs everything three times: float buffers in host memory
 * with no backend; in a host-accessible test backend (nothing may be staged); and in a backend
 * with host_accessible = 0 (staging_backend.h) whose memory is locked around every operation,
 * so MPI touching a float buffer directly faults.  There every float message must pass through
 * to_host / to_device, one call each way per operation, each followed by one synchronize:
 *     all-reduce to_host 4n, to_device 4n;  all-gather 4n, 4 g n;  reduce-scatter 4 g n, 4n;
 *     isend 4n (when posted);  irecv 4n (when waited for, not before)
 * while doubles and bcast bytes (host memory) are never staged. */
#include "ptdp/comm.h"
#include "ptdp/error.h"
#include "ptdp/grid.h"
#include "staging_backend.h"

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

/* n floats of be's memory (malloc with no backend). */
static float *dev_alloc(ptdp_backend *be, size_t n)
{
  void *p = NULL;
  if (be ? be->alloc(be, &p, n * sizeof(float)) != 0 : (p = malloc(n * sizeof(float))) == NULL) {
    fprintf(stderr, "test_comm: out of memory\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  return p;
}

static void dev_free(ptdp_backend *be, void *p)
{
  if (be)
    be->free(be, p);
  else
    free(p);
}

static void lock(ptdp_backend *be, int on)
{
  if (be) staging_backend_lock(be, on);
}

/* Counters of one staged operation: a fetch of hb bytes and a delivery of db bytes (0: none). */
static staging_counts staged_op(int on, double hb, double db)
{
  staging_counts k = {0};
  if (!on) return k;
  k.to_host_calls = hb > 0;
  k.to_host_bytes = hb;
  k.to_device_calls = db > 0;
  k.to_device_bytes = db;
  return k;
}

/* Expected counters since the last check, given as if staging; a host-accessible backend must
 * have staged nothing.  Every to_host and to_device is followed by one synchronize.  Resets. */
static void check_staging(ptdp_backend *be, staging_counts want, const char *what)
{
  if (!be) return;
  staging_counts *k = staging_backend_counts(be);
  if (be->host_accessible) want.to_host_calls = want.to_device_calls = 0, want.to_host_bytes = want.to_device_bytes = 0;
  want.sync_calls = want.to_host_calls + want.to_device_calls;
  EXPECT(k->to_host_calls == want.to_host_calls && k->to_host_bytes == want.to_host_bytes &&
             k->to_device_calls == want.to_device_calls && k->to_device_bytes == want.to_device_bytes &&
             k->copy_calls == want.copy_calls && k->copy_bytes == want.copy_bytes && k->sync_calls == want.sync_calls,
         "%s (%s): to_host %lld/%.0f, to_device %lld/%.0f, copy %lld/%.0f, synchronize %lld; expected "
         "%lld/%.0f, %lld/%.0f, %lld/%.0f, %lld",
         what, be->name, k->to_host_calls, k->to_host_bytes, k->to_device_calls, k->to_device_bytes, k->copy_calls,
         k->copy_bytes, k->sync_calls, want.to_host_calls, want.to_host_bytes, want.to_device_calls,
         want.to_device_bytes, want.copy_calls, want.copy_bytes, want.sync_calls);
  *k = (staging_counts){0};
}

/* All-reduce sum and max of floats (tag LAYER, staged) and of host doubles (tag MISC, not). */
static void check_allreduces(ptdp_comm *c, ptdp_backend *be)
{
  int g = c->size, r = c->rank, ok = 1;
  float *a = dev_alloc(be, N);
  double d[N];
  const double ar_bytes = 2.0 * (g - 1) / g * 4.0 * N;
  ptdp_comm_reset_stats(c);
  for (int i = 0; i < N; i++) a[i] = val(r, i);
  lock(be, 1);
  EXPECT(ptdp_comm_allreduce_sum(c, a, N, PTDP_TAG_LAYER) == 0, "allreduce_sum");
  lock(be, 0);
  check_staging(be, staged_op(g > 1, 4.0 * N, 4.0 * N), "allreduce_sum");
  for (int i = 0; i < N; i++) {
    float s = 0;
    for (int q = 0; q < g; q++) s += val(q, i);
    ok &= a[i] == s;
  }
  EXPECT(ok, "g %d: allreduce_sum values", g);
  for (int i = 0; i < N; i++) a[i] = val((r + i) % g, i);
  lock(be, 1);
  EXPECT(ptdp_comm_allreduce_max(c, a, N, PTDP_TAG_LAYER) == 0, "allreduce_max");
  lock(be, 0);
  check_staging(be, staged_op(g > 1, 4.0 * N, 4.0 * N), "allreduce_max");
  ok = 1;
  for (int i = 0; i < N; i++) ok &= a[i] == val(g - 1, i);
  EXPECT(ok, "g %d: allreduce_max values", g);
  check_counts(c, PTDP_TAG_LAYER, 2, 2 * ar_bytes, "float all-reduces");

  for (int i = 0; i < N; i++) d[i] = val(r, i) + 0.5;
  lock(be, 1);
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
  lock(be, 0);
  ok = 1;
  for (int i = 0; i < N; i++) ok &= d[i] == 0.0; /* max over ranks of -r i is rank 0's 0 */
  EXPECT(ok, "g %d: allreduce_max_f64 values", g);
  check_staging(be, staged_op(0, 0, 0), "double all-reduces (host memory)");
  check_counts(c, PTDP_TAG_MISC, 2, 2 * 2.0 * (g - 1) / g * 8.0 * N, "double all-reduces");
  dev_free(be, a);
}

/* All-gather (tag PARAM) and reduce-scatter (tag GRAD), each out of place then in place; on a
 * size-1 communicator the out-of-place forms are one backend copy of 4n bytes. */
static void check_gathers(ptdp_comm *c, ptdp_backend *be)
{
  int g = c->size, r = c->rank, ok = 1;
  float *a = dev_alloc(be, (size_t)N * g), *b = dev_alloc(be, (size_t)N * g), *send = dev_alloc(be, (size_t)N * g);
  float *want = malloc(sizeof(float) * N);
  const double ag_bytes = (double)(g - 1) / g * 4.0 * N * g;
  staging_counts k;
  ptdp_comm_reset_stats(c);
  for (int i = 0; i < N; i++) send[i] = val(r, i), b[r * N + i] = val(r, i);
  lock(be, 1);
  EXPECT(ptdp_comm_allgather(c, send, a, N, PTDP_TAG_PARAM) == 0, "allgather");
  k = staged_op(g > 1, 4.0 * N, 4.0 * N * g);
  if (g == 1) k.copy_calls = 1, k.copy_bytes = 4.0 * N;
  check_staging(be, k, "allgather");
  EXPECT(ptdp_comm_allgather(c, b + r * N, b, N, PTDP_TAG_PARAM) == 0, "allgather in place");
  check_staging(be, staged_op(g > 1, 4.0 * N, 4.0 * N * g), "allgather in place");
  lock(be, 0);
  for (int q = 0; q < g; q++)
    for (int i = 0; i < N; i++) ok &= a[q * N + i] == val(q, i) && b[q * N + i] == val(q, i);
  EXPECT(ok, "g %d: allgather values", g);
  check_counts(c, PTDP_TAG_PARAM, 2, 2 * ag_bytes, "all-gathers");

  for (int q = 0; q < g; q++)
    for (int i = 0; i < N; i++) send[q * N + i] = val(r, i) + q, b[q * N + i] = send[q * N + i];
  for (int i = 0; i < N; i++) {
    want[i] = 0;
    for (int q = 0; q < g; q++) want[i] += val(q, i) + r;
  }
  lock(be, 1);
  EXPECT(ptdp_comm_reduce_scatter(c, send, a, N, PTDP_TAG_GRAD) == 0, "reduce_scatter");
  k = staged_op(g > 1, 4.0 * N * g, 4.0 * N);
  if (g == 1) k.copy_calls = 1, k.copy_bytes = 4.0 * N;
  check_staging(be, k, "reduce_scatter");
  EXPECT(ptdp_comm_reduce_scatter(c, b, b, N, PTDP_TAG_GRAD) == 0, "reduce_scatter in place");
  check_staging(be, staged_op(g > 1, 4.0 * N * g, 4.0 * N), "reduce_scatter in place");
  lock(be, 0);
  ok = 1;
  for (int i = 0; i < N; i++) ok &= a[i] == want[i] && b[i] == want[i];
  EXPECT(ok, "g %d: reduce_scatter values", g);
  check_counts(c, PTDP_TAG_GRAD, 2, 2 * ag_bytes, "reduce-scatters");
  dev_free(be, a), dev_free(be, b), dev_free(be, send), free(want);
}

/* Host-memory operations, never staged: bcast (tag EMBED, bytes at the root only), all-gather
 * of doubles out of place and in place, and the barrier (tag MISC, 0 bytes). */
static void check_host_ops(ptdp_comm *c, ptdp_backend *be)
{
  int g = c->size, r = c->rank, root = g - 1, ok = 1;
  float h[N];
  double *ds = malloc(sizeof(double) * N), *da = malloc(sizeof(double) * N * g), *db = malloc(sizeof(double) * N * g);
  ptdp_comm_reset_stats(c);
  for (int i = 0; i < N; i++) h[i] = r == root ? val(7, i) : -1.0f;
  for (int i = 0; i < N; i++) ds[i] = val(r, i) + 0.25, db[r * N + i] = ds[i];
  lock(be, 1);
  EXPECT(ptdp_comm_bcast(c, h, sizeof(float) * N, root, PTDP_TAG_EMBED) == 0, "bcast");
  EXPECT(ptdp_comm_allgather_f64(c, ds, da, N, PTDP_TAG_MISC) == 0, "allgather_f64");
  EXPECT(ptdp_comm_allgather_f64(c, db + r * N, db, N, PTDP_TAG_MISC) == 0, "allgather_f64 in place");
  EXPECT(ptdp_comm_barrier(c) == 0, "barrier");
  lock(be, 0);
  check_staging(be, staged_op(0, 0, 0), "bcast, allgather_f64, barrier (host memory)");
  for (int i = 0; i < N; i++) ok &= h[i] == val(7, i);
  EXPECT(ok, "g %d: bcast values", g);
  check_counts(c, PTDP_TAG_EMBED, 1, (g > 1 && r == root) ? 4.0 * N : 0.0, "bcast");
  ok = 1;
  for (int q = 0; q < g; q++)
    for (int i = 0; i < N; i++) ok &= da[q * N + i] == val(q, i) + 0.25 && db[q * N + i] == val(q, i) + 0.25;
  EXPECT(ok, "g %d: allgather_f64 values", g);
  check_counts(c, PTDP_TAG_MISC, 3, 2 * (double)(g - 1) / g * 8.0 * N * g, "allgather_f64 and barrier");
  double total = 0;
  for (int t = 0; t < PTDP_TAG_COUNT; t++) total += c->stats.bytes[t];
  EXPECT(ptdp_comm_total_bytes(c) == total, "total bytes");
  EXPECT(c->stats.wait_seconds >= 0, "wait_seconds");
  if (g == 1) EXPECT(total == 0, "size 1 sends nothing (%.0f bytes counted)", total);
  free(ds), free(da), free(db);
}

/* Nonblocking collectives, in place and not, all pending at once (tag LOSS): the numbers and
 * bytes of the blocking ones; staged, each fetches when it starts and delivers only when it is
 * waited for. */
static void check_nonblocking(ptdp_comm *c, ptdp_backend *be)
{
  int g = c->size, r = c->rank, ok = 1;
  float *x = dev_alloc(be, N), *s = dev_alloc(be, N), *z = dev_alloc(be, N);
  float *y = dev_alloc(be, (size_t)N * g), *y2 = dev_alloc(be, (size_t)N * g);
  float *b = dev_alloc(be, (size_t)N * g), *b2 = dev_alloc(be, (size_t)N * g);
  const double ar_bytes = 2.0 * (g - 1) / g * 4.0 * N, ag_bytes = (double)(g - 1) / g * 4.0 * N * g;
  ptdp_comm_req req[5];
  staging_counts k = {0};
  ptdp_comm_reset_stats(c);
  for (int i = 0; i < N; i++) x[i] = val(r, i), s[i] = val(r, i), y2[r * N + i] = val(r, i);
  for (int q = 0; q < g; q++)
    for (int i = 0; i < N; i++) b[q * N + i] = b2[q * N + i] = val(r, i) + q;
  lock(be, 1);
  EXPECT(ptdp_comm_iallreduce_sum(c, x, N, PTDP_TAG_LOSS, &req[0]) == 0, "iallreduce");
  EXPECT(ptdp_comm_iallgather(c, s, y, N, PTDP_TAG_LOSS, &req[1]) == 0, "iallgather");
  EXPECT(ptdp_comm_iallgather(c, y2 + r * N, y2, N, PTDP_TAG_LOSS, &req[2]) == 0, "iallgather in place");
  EXPECT(ptdp_comm_ireduce_scatter(c, b, z, N, PTDP_TAG_LOSS, &req[3]) == 0, "ireduce_scatter");
  EXPECT(ptdp_comm_ireduce_scatter(c, b2, b2, N, PTDP_TAG_LOSS, &req[4]) == 0, "ireduce_scatter in place");
  if (g > 1) k.to_host_calls = 5, k.to_host_bytes = 4.0 * N * (3 + 2 * g);
  if (g == 1) k.copy_calls = 2, k.copy_bytes = 2 * 4.0 * N; /* the two out-of-place forms */
  check_staging(be, k, "nonblocking collectives started");
  if (g == 1)
    EXPECT(req[0] == PTDP_COMM_REQ_NULL && req[1] == PTDP_COMM_REQ_NULL && req[2] == PTDP_COMM_REQ_NULL &&
               req[3] == PTDP_COMM_REQ_NULL && req[4] == PTDP_COMM_REQ_NULL,
           "size-1 nonblocking requests are PTDP_COMM_REQ_NULL");
  EXPECT(ptdp_comm_wait(c, &req[0]) == 0 && ptdp_comm_waitall(c, 4, req + 1) == 0, "waits");
  k = (staging_counts){0};
  if (g > 1) k.to_device_calls = 5, k.to_device_bytes = 4.0 * N * (3 + 2 * g);
  check_staging(be, k, "nonblocking collectives waited for");
  lock(be, 0);
  for (int i = 0; i < 5; i++) ok &= req[i] == PTDP_COMM_REQ_NULL;
  EXPECT(ok, "waits reset the requests to PTDP_COMM_REQ_NULL");
  for (int i = 0; i < N; i++) {
    float sum = 0, want = 0;
    for (int q = 0; q < g; q++) sum += val(q, i), want += val(q, i) + r;
    ok &= x[i] == sum && z[i] == want && b2[i] == want;
    for (int q = 0; q < g; q++) ok &= y[q * N + i] == val(q, i) && y2[q * N + i] == val(q, i);
  }
  EXPECT(ok, "g %d: nonblocking values equal blocking", g);
  check_counts(c, PTDP_TAG_LOSS, 5, ar_bytes + 4 * ag_bytes, "nonblocking collectives");
  dev_free(be, x), dev_free(be, s), dev_free(be, z), dev_free(be, y), dev_free(be, y2), dev_free(be, b),
      dev_free(be, b2);
}

/* Ring exchange: send n floats to rank + 1, receive from rank - 1; tag P2P counts 4n sent.
 * Point-to-point goes through the transport even on a size-1 communicator, so it is staged
 * there too.  sleep_us > 0: waits test and sleep (the polling path). */
static void check_ring(ptdp_comm *c, ptdp_backend *be, int sleep_us)
{
  int g = c->size, r = c->rank, ok = 1;
  float *out = dev_alloc(be, N), *in = dev_alloc(be, N);
  ptdp_comm_req req[2] = {PTDP_COMM_REQ_NULL, PTDP_COMM_REQ_NULL};
  ptdp_comm_reset_stats(c);
  ptdp_comm_set_wait_sleep(sleep_us);
  for (int i = 0; i < N; i++) out[i] = val(r, i), in[i] = -1;
  lock(be, 1);
  EXPECT(ptdp_comm_irecv(c, in, N, (r + g - 1) % g, 5, PTDP_TAG_P2P, &req[0]) == 0, "irecv");
  EXPECT(ptdp_comm_isend(c, out, N, (r + 1) % g, 5, PTDP_TAG_P2P, &req[1]) == 0, "isend");
  check_staging(be, staged_op(1, 4.0 * N, 0), "isend and irecv posted");
  EXPECT(ptdp_comm_wait(c, &req[0]) == 0 && ptdp_comm_waitall(c, 2, req) == 0, "wait, waitall");
  check_staging(be, staged_op(1, 0, 4.0 * N), "isend and irecv waited for");
  lock(be, 0);
  EXPECT(req[0] == PTDP_COMM_REQ_NULL && req[1] == PTDP_COMM_REQ_NULL, "waits reset the requests");
  for (int i = 0; i < N; i++) ok &= in[i] == val((r + g - 1) % g, i);
  EXPECT(ok, "g %d: ring exchange values (wait sleep %d us)", g, sleep_us);
  check_counts(c, PTDP_TAG_P2P, 2, g > 1 ? 4.0 * N : 0.0, "ring exchange");
  ptdp_comm_set_wait_sleep(0);
  dev_free(be, out), dev_free(be, in);
}

/* Everything on c with float buffers in be's memory (NULL: host memory, no backend). */
static void check_all(ptdp_comm *c, ptdp_backend *be)
{
  EXPECT(ptdp_comm_attach_backend(c, be) == 0 && c->be == be, "attach backend %s", be ? be->name : "none");
  if (be) *staging_backend_counts(be) = (staging_counts){0};
  check_allreduces(c, be);
  check_gathers(c, be);
  check_host_ops(c, be);
  check_nonblocking(c, be);
  check_ring(c, be, 0);
  check_ring(c, be, 20);
  EXPECT(ptdp_comm_attach_backend(c, NULL) == 0 && c->be == NULL, "detach backend");
}

/* ptdp_grid_attach_backend reaches every communicator, also the embedding group of a middle
 * stage this rank is not in (t 1, p 4 on 4 ranks): a PP all-reduce is staged. */
static void check_grid_attach(ptdp_backend *be)
{
  ptdp_grid g;
  if (ptdp_grid_create(MPI_COMM_WORLD, 1, 4, PTDP_ORDER_TP_DP_PP, &g) != 0) {
    EXPECT(0, "grid create");
    return;
  }
  EXPECT(ptdp_grid_attach_backend(&g, be) == 0, "grid attach");
  ptdp_comm *all[] = {&g.world, &g.tp, &g.pp, &g.dp, &g.mp, &g.emb};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    EXPECT(all[i]->be == be, "grid attach reaches the %s group", ptdp_comm_group_name(all[i]->kind));
  float *a = dev_alloc(be, N);
  for (int i = 0; i < N; i++) a[i] = 1;
  *staging_backend_counts(be) = (staging_counts){0};
  lock(be, 1);
  EXPECT(ptdp_comm_allreduce_sum(&g.pp, a, N, PTDP_TAG_LAYER) == 0, "grid pp allreduce");
  lock(be, 0);
  check_staging(be, staged_op(1, 4.0 * N, 4.0 * N), "grid pp all-reduce");
  EXPECT(a[0] == 4 && a[N - 1] == 4, "grid pp all-reduce values");
  dev_free(be, a);
  EXPECT(ptdp_grid_destroy(&g) == 0, "grid destroy");
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  int world;
  MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  ptdp_comm w, pair, self, none;
  ptdp_backend *host_be = NULL, *dev_be = NULL;
  EXPECT(staging_backend_create(1, &host_be) == 0 && staging_backend_create(0, &dev_be) == 0, "test backends");
  ptdp_backend *bes[] = {NULL, host_be, dev_be};
  EXPECT(ptdp_comm_wrap(&w, MPI_COMM_WORLD, PTDP_GROUP_WORLD) == 0 && w.size == world && w.rank == wrank, "wrap");
  for (int i = 0; i < 3; i++) check_all(&w, bes[i]);
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
    check_grid_attach(dev_be);
  }
  /* pairs {0,1} {2,3}: g = 2, all-reduce counts 2 (1/2) 4n = 4n */
  MPI_Comm pc;
  MPI_Comm_split(MPI_COMM_WORLD, wrank / 2, wrank, &pc);
  EXPECT(ptdp_comm_wrap(&pair, pc, PTDP_GROUP_TP) == 0, "wrap pair");
  for (int i = 0; i < 3; i++) check_all(&pair, bes[i]);
  /* size 1: no transport call, copies, 0 bytes, calls counted */
  MPI_Comm sc;
  MPI_Comm_split(MPI_COMM_WORLD, wrank, 0, &sc);
  EXPECT(ptdp_comm_wrap(&self, sc, PTDP_GROUP_DP) == 0 && self.size == 1, "wrap self");
  for (int i = 0; i < 3; i++) check_all(&self, bes[i]);
  /* not a member: refused with a message naming the group; a backend attaches all the same */
  EXPECT(ptdp_comm_wrap(&none, MPI_COMM_NULL, PTDP_GROUP_EMB) == 0 && none.size == 0, "wrap null");
  EXPECT(ptdp_comm_attach_backend(&none, dev_be) == 0 && none.be == dev_be, "attach to a non-member");
  float f = 1;
  ptdp_error_set_quiet(1);
  EXPECT(ptdp_comm_allreduce_sum(&none, &f, 1, PTDP_TAG_EMBED) == PTDP_ERR_INPUT &&
             strstr(ptdp_error_message(), "emb group, which this rank is not a member of"),
         "non-member all-reduce refused: %s", ptdp_error_message());
  ptdp_error_clear();
  /* a backend MPI cannot read that has no way to copy to the host is refused */
  ptdp_backend bare = {.name = "bare", .host_accessible = 0};
  EXPECT(ptdp_comm_attach_backend(&self, &bare) == PTDP_ERR_INPUT && self.be == NULL &&
             strstr(ptdp_error_message(), "lacks to_host"),
         "backend without to_host refused: %s", ptdp_error_message());
  ptdp_error_clear();
  ptdp_error_set_quiet(0);
  ptdp_error_set_collective(1);
  EXPECT(ptdp_comm_free(&pair) == 0 && ptdp_comm_free(&self) == 0 && ptdp_comm_free(&none) == 0 &&
             ptdp_comm_free(&w) == 0,
         "free");
  EXPECT(pair.comm == MPI_COMM_NULL && pair.transport == NULL, "free resets comm and transport");
  ptdp_backend_destroy(&host_be);
  ptdp_backend_destroy(&dev_be);
  int status = expect_summary_all("test_comm");
  MPI_Finalize();
  return status;
}
