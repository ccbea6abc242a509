/* Unit test of the pure grid layout (ptdp_grid_layout_*): no communicators, 1 rank.
 * For every world size n in 1..64, every (t, p) with t p | n and both orders:
 *   coords round-trip through rank(); each group kind partitions the world (the embedding
 *   kind: the first and last stages) with sizes t, p, d, t p, 2 (1 if p == 1); members equal
 *   the formula of grid.h written out independently here.  Then the 16-rank example of grid.h
 *   (t = 2, p = 4, tp-dp-pp) group by group, and bad (n, t, p) refused with clear messages. */
#include "ptdp/error.h"
#include "ptdp/grid.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../expect.h"

/* The formula of grid.h, independently: world rank of (tp, dp, pp). */
static int formula_rank(int order, int t, int p, int d, int tp, int dp, int pp)
{
  return order == PTDP_ORDER_TP_DP_PP ? tp + t * (dp + d * pp) : tp + t * (pp + p * dp);
}

/* Expected members of rank's group of kind, from the formula; returns the size. */
static int formula_group(const ptdp_grid_layout *L, int kind, int r, int *m)
{
  int t = L->t, p = L->p, d = L->d, o = L->order, n = 0;
  int tp = -1, dp = -1, pp = -1;
  for (int a = 0; a < t; a++)
    for (int b = 0; b < d; b++)
      for (int c = 0; c < p; c++)
        if (formula_rank(o, t, p, d, a, b, c) == r) tp = a, dp = b, pp = c;
  switch (kind) {
  case PTDP_GROUP_TP:
    for (int a = 0; a < t; a++) m[n++] = formula_rank(o, t, p, d, a, dp, pp);
    break;
  case PTDP_GROUP_PP:
    for (int c = 0; c < p; c++) m[n++] = formula_rank(o, t, p, d, tp, dp, c);
    break;
  case PTDP_GROUP_DP:
    for (int b = 0; b < d; b++) m[n++] = formula_rank(o, t, p, d, tp, b, pp);
    break;
  case PTDP_GROUP_MP:
    for (int c = 0; c < p; c++)
      for (int a = 0; a < t; a++) m[n++] = formula_rank(o, t, p, d, a, dp, c);
    break;
  case PTDP_GROUP_EMB:
    m[n++] = formula_rank(o, t, p, d, tp, dp, 0);
    if (p > 1) m[n++] = formula_rank(o, t, p, d, tp, dp, p - 1);
    break;
  }
  return n;
}

static void check_layout(int world, int t, int p, int order)
{
  ptdp_grid_layout L;
  int rc = ptdp_grid_layout_init(&L, world, t, p, (ptdp_grid_order)order);
  EXPECT(rc == 0, "layout_init(%d, %d, %d) failed", world, t, p);
  if (rc) return;
  int d = world / (t * p);
  EXPECT(L.d == d, "d = %d, expected %d", L.d, d);
  int *m = malloc(sizeof(int) * world), *e = malloc(sizeof(int) * world), *m2 = malloc(sizeof(int) * world);
  int *seen = calloc((size_t)world, sizeof(int));
  int fails0 = n_fail;
  for (int r = 0; r < world; r++) {
    ptdp_grid_coords c = ptdp_grid_layout_coords(&L, r);
    EXPECT(c.tp >= 0 && c.tp < t && c.dp >= 0 && c.dp < d && c.pp >= 0 && c.pp < p,
           "n %d t %d p %d: rank %d coords (%d,%d,%d) out of range", world, t, p, r, c.tp, c.dp, c.pp);
    EXPECT(ptdp_grid_layout_rank(&L, c) == r, "n %d t %d p %d %s: rank %d does not round-trip", world, t, p,
           ptdp_grid_order_name(L.order), r);
    EXPECT(formula_rank(order, t, p, d, c.tp, c.dp, c.pp) == r, "n %d t %d p %d: rank %d != formula", world,
           t, p, r);
  }
  const int want_size[PTDP_GROUP_COUNT] = {world, t, p, d, t * p, p > 1 ? 2 : 1};
  for (int kind = PTDP_GROUP_TP; kind < PTDP_GROUP_COUNT; kind++) {
    memset(seen, 0, sizeof(int) * world);
    EXPECT(ptdp_grid_layout_group_size(&L, kind) == want_size[kind], "group_size kind %d", kind);
    for (int r = 0; r < world; r++) {
      ptdp_grid_coords c = ptdp_grid_layout_coords(&L, r);
      int member = kind != PTDP_GROUP_EMB || c.pp == 0 || c.pp == p - 1;
      EXPECT(ptdp_grid_layout_in_group(&L, kind, r) == member, "in_group kind %d rank %d", kind, r);
      int g = ptdp_grid_layout_group(&L, kind, r, m);
      int ge = formula_group(&L, kind, r, e);
      EXPECT(g == want_size[kind] && g == ge, "n %d t %d p %d %s kind %s rank %d: size %d, expected %d", world,
             t, p, ptdp_grid_order_name(L.order), ptdp_comm_group_name(kind), r, g, want_size[kind]);
      EXPECT(memcmp(m, e, sizeof(int) * (size_t)ge) == 0, "n %d t %d p %d %s kind %s rank %d: members differ",
             world, t, p, ptdp_grid_order_name(L.order), ptdp_comm_group_name(kind), r);
      if (!member) continue;
      /* Partition: r is in its own group, and every member computes the same group. */
      int has_r = 0;
      for (int i = 0; i < g; i++) has_r |= m[i] == r;
      EXPECT(has_r, "kind %s rank %d not in its own group", ptdp_comm_group_name(kind), r);
      for (int i = 0; i < g; i++) {
        ptdp_grid_layout_group(&L, kind, m[i], m2);
        EXPECT(memcmp(m, m2, sizeof(int) * (size_t)g) == 0, "kind %s: ranks %d and %d disagree on their group",
               ptdp_comm_group_name(kind), r, m[i]);
      }
      seen[r]++;
    }
    for (int r = 0; r < world; r++) {
      ptdp_grid_coords c = ptdp_grid_layout_coords(&L, r);
      int member = kind != PTDP_GROUP_EMB || c.pp == 0 || c.pp == p - 1;
      EXPECT(seen[r] == member, "kind %s: rank %d in %d groups", ptdp_comm_group_name(kind), r, seen[r]);
    }
  }
  if (n_fail > fails0) fprintf(stderr, "  (in layout n %d t %d p %d %s)\n", world, t, p, ptdp_grid_order_name(L.order));
  free(m), free(e), free(m2), free(seen);
}

/* The 16-rank example of grid.h: t = 2, p = 4, d = 2, tp-dp-pp. */
static void check_example16(void)
{
  ptdp_grid_layout L;
  int m[16];
  EXPECT(ptdp_grid_layout_init(&L, 16, 2, 4, PTDP_ORDER_TP_DP_PP) == 0, "16-rank example init");
  for (int i = 0; i < 8; i++) { /* TP [0,1] [2,3] ... [14,15] */
    int g = ptdp_grid_layout_group(&L, PTDP_GROUP_TP, 2 * i, m);
    EXPECT(g == 2 && m[0] == 2 * i && m[1] == 2 * i + 1, "example TP group %d", i);
  }
  const int dp[8][2] = {{0, 2}, {1, 3}, {4, 6}, {5, 7}, {8, 10}, {9, 11}, {12, 14}, {13, 15}};
  for (int i = 0; i < 8; i++) {
    int g = ptdp_grid_layout_group(&L, PTDP_GROUP_DP, dp[i][1], m);
    EXPECT(g == 2 && m[0] == dp[i][0] && m[1] == dp[i][1], "example DP group [%d,%d]", dp[i][0], dp[i][1]);
  }
  for (int i = 0; i < 4; i++) { /* PP [0,4,8,12] [1,5,9,13] [2,6,10,14] [3,7,11,15] */
    int g = ptdp_grid_layout_group(&L, PTDP_GROUP_PP, i + 8, m);
    EXPECT(g == 4 && m[0] == i && m[1] == i + 4 && m[2] == i + 8 && m[3] == i + 12, "example PP group %d", i);
    g = ptdp_grid_layout_group(&L, PTDP_GROUP_EMB, i + 12, m); /* EMB [0,12] [1,13] ... */
    EXPECT(g == 2 && m[0] == i && m[1] == i + 12, "example EMB group %d", i);
  }
  const int mp0[8] = {0, 1, 4, 5, 8, 9, 12, 13};
  int g = ptdp_grid_layout_group(&L, PTDP_GROUP_MP, 9, m);
  EXPECT(g == 8 && memcmp(m, mp0, sizeof mp0) == 0, "example MP group [0,1,4,5,8,9,12,13]");
  g = ptdp_grid_layout_group(&L, PTDP_GROUP_MP, 2, m);
  for (int i = 0; i < 8; i++) EXPECT(g == 8 && m[i] == mp0[i] + 2, "example MP group of rank 2");
  EXPECT(!ptdp_grid_layout_in_group(&L, PTDP_GROUP_EMB, 5), "rank 5 (stage 1 of 4) not in an EMB group");
}

static void check_bad(int world, int t, int p, const char *needle)
{
  ptdp_grid_layout L;
  ptdp_error_clear();
  int rc = ptdp_grid_layout_init(&L, world, t, p, PTDP_ORDER_TP_DP_PP);
  EXPECT(rc == PTDP_ERR_INPUT, "layout_init(%d, %d, %d) should fail", world, t, p);
  EXPECT(strstr(ptdp_error_message(), needle) != NULL, "message \"%s\" lacks \"%s\"", ptdp_error_message(), needle);
  ptdp_error_clear();
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  int layouts = 0;
  for (int n = 1; n <= 64; n++)
    for (int t = 1; t <= n; t++)
      for (int p = 1; t * p <= n; p++) {
        if (n % (t * p)) continue;
        for (int o = 0; o < 2; o++) check_layout(n, t, p, o), layouts++;
      }
  check_example16();
  ptdp_error_set_quiet(1);
  check_bad(3, 2, 1, "world size 3 is not divisible by t x p = 2 x 1 = 2");
  check_bad(16, 3, 2, "not divisible by t x p = 3 x 2 = 6");
  check_bad(8, 0, 1, "t = 0");
  check_bad(8, 1, -2, "p = -2");
  ptdp_error_set_quiet(0);
  EXPECT(ptdp_grid_order_parse("tp-dp-pp") == PTDP_ORDER_TP_DP_PP, "parse tp-dp-pp");
  EXPECT(ptdp_grid_order_parse("tp-pp-dp") == PTDP_ORDER_TP_PP_DP, "parse tp-pp-dp");
  EXPECT(ptdp_grid_order_parse("pp-tp-dp") == -1 && ptdp_grid_order_parse(NULL) == -1, "parse bad order");
  EXPECT(strcmp(ptdp_grid_order_name(PTDP_ORDER_TP_PP_DP), "tp-pp-dp") == 0, "order name");
  printf("test_grid_layout: %d layouts\n", layouts);
  int status = expect_summary("test_grid_layout");
  MPI_Finalize();
  return status;
}
