/* bf16 and fp16 through the comm layer's *_t functions (ptdp/comm.h, "Storage types"), on the
 * g ranks of MPI_COMM_WORLD (test_comm16.sh runs g = 2, 3, 4), against a host computation:
 *   all-reduce (blocking and nonblocking), all-gather and reduce-scatter (out of place, in
 *   place, nonblocking), an isend/irecv ring, and the size-1 copies, for each backend named on
 *   the command line: cpu (host memory, nothing staged), guard (memory the host cannot touch:
 *   every message staged through to_host / to_device), and in the emulated build cuda (staged
 *   by the MPI transport) and cuda+nccl (the NCCL transport on the emulated NCCL).
 *
 * Values: rank r's element i is a hash of (r, i) made a bf16 or fp16 number of magnitude in
 * [2^-3, 2^5] with either sign, so sums need rounding (checked: over a quarter of them) and
 * cancel.  What must hold:
 *   movement (all-gather, isend/irecv): the bits unchanged;
 *   sums on g = 2: bit for bit the fp32 sum of the two values rounded once to the type (round
 *     to nearest even, ptdp/half.h), which is the exact sum rounded once (fp32 holds the exact
 *     sum of two such values up to one rounding and has >= 2p + 2 bits: no double rounding);
 *   sums on g > 2: the transport adds in an order of its own, rounding each of the g-1 partial
 *     sums to the type.  Each rounding errs by at most half an ulp of its partial sum, i.e.
 *     u |partial| with u = 2^-8 (bf16) or 2^-11 (fp16), and every partial sum is at most
 *     sum_r |x_r| (1 + u)^(g-2) in magnitude, so whatever the order (Higham, Accuracy and
 *     Stability of Numerical Algorithms, 2nd ed., Sec. 4.2):
 *         |got - S| <= gamma_{g-1} sum_r |x_r|,   gamma_k = k u / (1 - k u),   S the exact sum;
 *     no partial sum here is subnormal: every value is a multiple of 2^-13 (fp16) or 2^-10
 *     (bf16), and so is every partial sum, rounded or not, so it is 0 or at least 2^-13, above
 *     fp16's smallest normal 2^-14: the relative bound holds.  And every rank must get the
 *     same bits (the model's tensor-parallel replicas must stay identical);
 *   bytes: the ring convention of comm.h with 2 bytes an element, exactly.
 * test_comm16_mutant is this program on a planted copy of the comm layer (local.mk): a bf16 sum
 * that truncates instead of rounding, and bytes counted as 4 per 16-bit element; the program
 * must then fail both checks (test_comm16_plant.sh). */
#include "ptdp/backend.h"
#include "ptdp/comm.h"
#include "ptdp/error.h"
#include "ptdp/half.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../expect.h"

enum { N = 1000 };

static int g_rank, g_size;

static void die(int err)
{
  if (err) ptdp_error_exit(err);
}

/* ---- values and the host's sums ---- */

static uint32_t mix(uint32_t x)
{
  x ^= x >> 16;
  x *= 0x7feb352dU;
  x ^= x >> 15;
  x *= 0x846ca68bU;
  x ^= x >> 16;
  return x;
}

/* Rank r's element i (global indices, not this rank's), a number of type t. */
static float val(ptdp_dtype t, int r, size_t i)
{
  uint32_t h = mix((uint32_t)(r * 1000003 + (int)i) ^ 0x9e3779b9U);
  float m = 1.0f + (float)(h & 0xffff) / 65536.0f;       /* [1, 2) */
  float v = ldexpf(m, (int)((h >> 16) % 8) - 3);         /* [2^-3, 2^5), 2^5 once rounded */
  if (h >> 31) v = -v;
  return t == PTDP_BF16 ? ptdp_bf16_to_float(ptdp_float_to_bf16(v)) : ptdp_f16_to_float(ptdp_float_to_f16(v));
}

static uint16_t bits(ptdp_dtype t, float v) { return t == PTDP_BF16 ? ptdp_float_to_bf16(v) : ptdp_float_to_f16(v); }

static float value(ptdp_dtype t, uint16_t b) { return t == PTDP_BF16 ? ptdp_bf16_to_float(b) : ptdp_f16_to_float(b); }

/* Rank r's [blocks, n] values, element i of block k being val(r, k n + i). */
static uint16_t *values(ptdp_dtype t, int r, size_t count)
{
  uint16_t *h = malloc(count * sizeof *h);
  for (size_t i = 0; i < count; i++) h[i] = bits(t, val(t, r, i));
  return h;
}

typedef struct {
  int bad, rounded, n;
} sum_check;

/* got[i] against the sum over ranks of val(r, first + i), as the header says. */
static sum_check check_sums(ptdp_dtype t, const uint16_t *got, size_t first, size_t n)
{
  const double u = t == PTDP_BF16 ? 0x1p-8 : 0x1p-11, k = g_size - 1, gamma = k * u / (1 - k * u);
  sum_check s = {0, 0, (int)n};
  for (size_t i = 0; i < n; i++) {
    double exact = 0, mag = 0;
    float f32 = 0;
    for (int r = 0; r < g_size; r++) {
      float x = val(t, r, first + i);
      exact += x; /* exact in double: at most 4 multiples of 2^-13, each at most 2^5 */
      mag += fabs(x);
      f32 += x;
    }
    s.rounded += value(t, bits(t, (float)exact)) != exact;
    if (g_size == 2)
      s.bad += got[i] != bits(t, f32);
    else
      s.bad += fabs(value(t, got[i]) - exact) > gamma * mag;
  }
  return s;
}

/* The same bits on every rank. */
static int same_everywhere(const uint16_t *got, size_t n)
{
  uint16_t *first = malloc(n * sizeof *first);
  memcpy(first, got, n * sizeof *got);
  MPI_Bcast(first, (int)n, MPI_UINT16_T, 0, MPI_COMM_WORLD);
  int same = memcmp(first, got, n * sizeof *got) == 0, all = 0;
  MPI_Allreduce(&same, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  free(first);
  return all;
}

/* ---- backend memory ---- */

typedef struct {
  ptdp_backend *be;
  ptdp_comm *c;
  ptdp_dtype t;
  const char *name; /* "cpu bf16" */
} setup;

static void *dev(const setup *s, size_t n)
{
  void *p = NULL;
  die(s->be->alloc(s->be, &p, n * 2));
  return p;
}

static void up(const setup *s, void *d, const uint16_t *h, size_t n) { die(s->be->to_device(s->be, d, h, n * 2)); }

static uint16_t *down(const setup *s, const void *d, size_t n)
{
  uint16_t *h = malloc(n * sizeof *h);
  die(s->be->to_host(s->be, h, d, n * 2));
  die(s->be->synchronize(s->be));
  return h;
}

static void expect_bytes(const setup *s, ptdp_comm_tag tag, double want, const char *what)
{
  EXPECT(s->c->stats.bytes[tag] == want && s->c->stats.calls[tag] == 1, "%s %s: %.1f bytes in %lld calls, expected "
         "%.1f in 1", s->name, what, s->c->stats.bytes[tag], s->c->stats.calls[tag], want);
  ptdp_comm_reset_stats(s->c);
}

static void expect_sums(const setup *s, const uint16_t *got, size_t first, size_t n, const char *what)
{
  sum_check k = check_sums(s->t, got, first, n);
  if (g_size == 2)
    EXPECT(!k.bad, "%s %s: %d of %d sums differ from the fp32 sum rounded once (bit for bit)", s->name, what, k.bad,
           k.n);
  else
    EXPECT(!k.bad, "%s %s: %d of %d sums further than %d roundings from the exact sum", s->name, what, k.bad, k.n,
           g_size - 1);
  EXPECT(k.rounded > k.n / 4, "%s %s: only %d of %d sums need rounding (the test would prove little)", s->name, what,
         k.rounded, k.n);
  EXPECT(same_everywhere(got, n), "%s %s: the ranks got different bits", s->name, what);
}

/* ---- the operations ---- */

static void test_allreduce(const setup *s, int nonblocking)
{
  const char *what = nonblocking ? "iallreduce_sum_t" : "allreduce_sum_t";
  uint16_t *h = values(s->t, g_rank, N);
  void *d = dev(s, N);
  up(s, d, h, N);
  ptdp_comm_reset_stats(s->c);
  if (nonblocking) {
    ptdp_comm_req q = PTDP_COMM_REQ_NULL;
    die(ptdp_comm_iallreduce_sum_t(s->c, d, N, s->t, PTDP_TAG_LAYER, &q));
    die(ptdp_comm_wait(s->c, &q));
  } else {
    die(ptdp_comm_allreduce_sum_t(s->c, d, N, s->t, PTDP_TAG_LAYER));
  }
  expect_bytes(s, PTDP_TAG_LAYER, 2.0 * (g_size - 1) / g_size * 2 * N, what);
  uint16_t *got = down(s, d, N);
  expect_sums(s, got, 0, N, what);
  s->be->free(s->be, d);
  free(h), free(got);
}

/* Everyone's values by rank: out of place, in place (send = recv's own block), nonblocking. */
static void test_allgather(const setup *s, int mode)
{
  static const char *names[] = {"allgather_t", "allgather_t in place", "iallgather_t"};
  const size_t g = (size_t)g_size;
  uint16_t *h = values(s->t, g_rank, N);
  void *recv = dev(s, g * N), *send = mode == 1 ? (char *)recv + (size_t)g_rank * N * 2 : dev(s, N);
  up(s, send, h, N);
  ptdp_comm_reset_stats(s->c);
  if (mode == 2) {
    ptdp_comm_req q = PTDP_COMM_REQ_NULL;
    die(ptdp_comm_iallgather_t(s->c, send, recv, N, s->t, PTDP_TAG_PARAM, &q));
    die(ptdp_comm_wait(s->c, &q));
  } else {
    die(ptdp_comm_allgather_t(s->c, send, recv, N, s->t, PTDP_TAG_PARAM));
  }
  expect_bytes(s, PTDP_TAG_PARAM, (double)(g - 1) / g * 2 * g * N, names[mode]);
  uint16_t *got = down(s, recv, g * N);
  int bad = 0;
  for (int r = 0; r < g_size; r++)
    for (size_t i = 0; i < N; i++) bad += got[(size_t)r * N + i] != bits(s->t, val(s->t, r, i));
  EXPECT(!bad, "%s %s: %d of %zu elements differ from the ranks' bits", s->name, names[mode], bad, g * N);
  if (mode != 1) s->be->free(s->be, send);
  s->be->free(s->be, recv);
  free(h), free(got);
}

/* Block rank of the sum over ranks of [g, N]: out of place, in place (send == recv, the result
 * in the first block), nonblocking. */
static void test_reduce_scatter(const setup *s, int mode)
{
  static const char *names[] = {"reduce_scatter_t", "reduce_scatter_t in place", "ireduce_scatter_t"};
  const size_t g = (size_t)g_size;
  uint16_t *h = values(s->t, g_rank, g * N);
  void *send = dev(s, g * N), *recv = mode == 1 ? send : dev(s, N);
  up(s, send, h, g * N);
  ptdp_comm_reset_stats(s->c);
  if (mode == 2) {
    ptdp_comm_req q = PTDP_COMM_REQ_NULL;
    die(ptdp_comm_ireduce_scatter_t(s->c, send, recv, N, s->t, PTDP_TAG_GRAD, &q));
    die(ptdp_comm_wait(s->c, &q));
  } else {
    die(ptdp_comm_reduce_scatter_t(s->c, send, recv, N, s->t, PTDP_TAG_GRAD));
  }
  expect_bytes(s, PTDP_TAG_GRAD, (double)(g - 1) / g * 2 * g * N, names[mode]);
  uint16_t *got = down(s, recv, N);
  sum_check k = check_sums(s->t, got, (size_t)g_rank * N, N);
  EXPECT(!k.bad, "%s %s: %d of %d sums wrong (%s)", s->name, names[mode], k.bad, k.n,
         g_size == 2 ? "bit for bit" : "bound");
  EXPECT(k.rounded > k.n / 4, "%s %s: only %d sums need rounding", s->name, names[mode], k.rounded);
  if (mode != 1) s->be->free(s->be, recv);
  s->be->free(s->be, send);
  free(h), free(got);
}

/* Each rank sends its values to the next and receives the previous one's (the pipeline's
 * messages): the bits unchanged; the sender counts 2 N bytes. */
static void test_ring(const setup *s)
{
  const int next = (g_rank + 1) % g_size, prev = (g_rank + g_size - 1) % g_size;
  uint16_t *h = values(s->t, g_rank, N);
  void *send = dev(s, N), *recv = dev(s, N);
  up(s, send, h, N);
  ptdp_comm_reset_stats(s->c);
  ptdp_comm_req q[2] = {PTDP_COMM_REQ_NULL, PTDP_COMM_REQ_NULL};
  die(ptdp_comm_irecv_t(s->c, recv, N, s->t, prev, 7, PTDP_TAG_P2P, &q[0]));
  die(ptdp_comm_isend_t(s->c, send, N, s->t, next, 7, PTDP_TAG_P2P, &q[1]));
  die(ptdp_comm_waitall(s->c, 2, q));
  EXPECT(s->c->stats.bytes[PTDP_TAG_P2P] == 2.0 * N && s->c->stats.calls[PTDP_TAG_P2P] == 2,
         "%s isend_t/irecv_t: %.1f bytes in %lld calls, expected %d in 2", s->name, s->c->stats.bytes[PTDP_TAG_P2P],
         s->c->stats.calls[PTDP_TAG_P2P], 2 * N);
  uint16_t *got = down(s, recv, N);
  int bad = 0;
  for (size_t i = 0; i < N; i++) bad += got[i] != bits(s->t, val(s->t, prev, i));
  EXPECT(!bad, "%s isend_t/irecv_t: %d of %d elements differ from rank %d's bits", s->name, bad, N, prev);
  s->be->free(s->be, send);
  s->be->free(s->be, recv);
  free(h), free(got);
}

/* Size 1: no transport, the backend copies n elements of 2 bytes, not one more.  recv has room
 * for 2 n with a marker in its second half that must survive. */
static void test_self(const setup *s, ptdp_comm *self)
{
  uint16_t *h = values(s->t, g_rank, 2 * N);
  void *send = dev(s, N), *recv = dev(s, 2 * N);
  up(s, send, h, N);
  up(s, recv, h + N, N); /* marker: anything but send's values */
  up(s, (char *)recv + N * 2, h + N, N);
  die(ptdp_comm_attach_backend(self, s->be));
  die(ptdp_comm_allgather_t(self, send, recv, N, s->t, PTDP_TAG_PARAM));
  uint16_t *got = down(s, recv, 2 * N);
  EXPECT(!memcmp(got, h, N * 2) && !memcmp(got + N, h + N, N * 2),
         "%s size-1 allgather_t: not a copy of exactly %d elements", s->name, N);
  free(got);
  up(s, recv, h + N, N);
  die(ptdp_comm_reduce_scatter_t(self, send, recv, N, s->t, PTDP_TAG_GRAD));
  got = down(s, recv, 2 * N);
  EXPECT(!memcmp(got, h, N * 2) && !memcmp(got + N, h + N, N * 2),
         "%s size-1 reduce_scatter_t: not a copy of exactly %d elements", s->name, N);
  EXPECT(self->stats.bytes[PTDP_TAG_PARAM] == 0 && self->stats.calls[PTDP_TAG_PARAM] == 1,
         "%s size-1: 0 bytes, 1 call", s->name);
  die(ptdp_comm_attach_backend(self, NULL));
  ptdp_comm_reset_stats(self);
  s->be->free(s->be, send);
  s->be->free(s->be, recv);
  free(h), free(got);
}

/* ---- one backend ---- */

/* name: cpu, guard, cuda (staged MPI), cuda+nccl (the NCCL transport). */
static void run_backend(const char *name, ptdp_comm *self)
{
  const int nccl = !strcmp(name, "cuda+nccl");
  ptdp_backend *be = NULL;
  die(ptdp_backend_create(nccl ? "cuda" : name, NULL, &be));
  MPI_Comm dup;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  ptdp_comm c;
  die(ptdp_comm_wrap(&c, dup, PTDP_GROUP_TP));
  die(ptdp_comm_attach_backend(&c, be));
  if (nccl) die(ptdp_comm_use_nccl(&c));
  static const ptdp_dtype types[] = {PTDP_BF16, PTDP_F16};
  for (int k = 0; k < 2; k++) {
    char label[64];
    snprintf(label, sizeof label, "%s %s g=%d", name, ptdp_dtype_name(types[k]), g_size);
    setup s = {be, &c, types[k], label};
    for (int nb = 0; nb < 2; nb++) test_allreduce(&s, nb);
    for (int mode = 0; mode < 3; mode++) test_allgather(&s, mode);
    for (int mode = 0; mode < 3; mode++) test_reduce_scatter(&s, mode);
    test_ring(&s);
    test_self(&s, self);
  }
  die(ptdp_comm_free(&c));
  ptdp_backend_destroy(&be);
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  wrank = g_rank;
  if (argc < 2) {
    if (g_rank == 0) fprintf(stderr, "usage: test_comm16 BACKEND... (cpu, guard; emulated: cuda, cuda+nccl)\n");
    MPI_Finalize();
    return 2;
  }
  MPI_Comm sc;
  MPI_Comm_split(MPI_COMM_WORLD, g_rank, 0, &sc);
  ptdp_comm self;
  die(ptdp_comm_wrap(&self, sc, PTDP_GROUP_DP));
  for (int i = 1; i < argc; i++) run_backend(argv[i], &self);
  die(ptdp_comm_free(&self));
  int status = expect_summary_all("test_comm16");
  MPI_Finalize();
  return status;
}
