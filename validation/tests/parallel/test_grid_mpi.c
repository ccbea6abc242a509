/* ptdp_grid_create on 8 ranks: each communicator's members (translated to world ranks) equal
 * the pure layout, its rank equals the position in the group, for (t, p) in
 * {(1,1) (2,1) (2,2) (2,4) (4,2) (1,8) (8,1)} and both orders; the embedding communicator is
 * MPI_COMM_NULL (size 0) off the first and last stage; 3 ranks with t = 2 are refused. */
#include "ptdp/error.h"
#include "ptdp/grid.h"

#include <stdio.h>
#include <string.h>

#include "../expect.h"

static void check_comm(const ptdp_grid *g, const ptdp_comm *c, int kind)
{
  int want[64], got[64], idx[64];
  const ptdp_grid_layout *L = &g->layout;
  const char *name = ptdp_comm_group_name(kind);
  EXPECT(c->kind == kind, "%s: kind %d", name, c->kind);
  if (!ptdp_grid_layout_in_group(L, kind, g->world_rank)) {
    EXPECT(c->comm == MPI_COMM_NULL && c->size == 0, "%s: expected no communicator on stage %d", name, g->me.pp);
    return;
  }
  int n = ptdp_grid_layout_group(L, kind, g->world_rank, want);
  EXPECT(c->comm != MPI_COMM_NULL && c->size == n, "%s: size %d, expected %d", name, c->size, n);
  if (c->comm == MPI_COMM_NULL || c->size != n) return;
  MPI_Group wg, cg;
  MPI_Comm_group(g->world.comm, &wg);
  MPI_Comm_group(c->comm, &cg);
  for (int i = 0; i < n; i++) idx[i] = i;
  MPI_Group_translate_ranks(cg, n, idx, wg, got);
  MPI_Group_free(&wg);
  MPI_Group_free(&cg);
  for (int i = 0; i < n; i++)
    EXPECT(got[i] == want[i], "t %d p %d %s %s: member %d is world rank %d, expected %d", L->t, L->p,
           ptdp_grid_order_name(L->order), name, i, got[i], want[i]);
  int pos = -1;
  for (int i = 0; i < n; i++)
    if (want[i] == g->world_rank) pos = i;
  EXPECT(c->rank == pos, "%s: rank %d in group, expected position %d", name, c->rank, pos);
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  int world;
  MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  if (world != 8) {
    if (wrank == 0) fprintf(stderr, "test_grid_mpi needs 8 ranks, got %d\n", world);
    MPI_Finalize();
    return 1;
  }
  const int tp[7][2] = {{1, 1}, {2, 1}, {2, 2}, {2, 4}, {4, 2}, {1, 8}, {8, 1}};
  for (int o = 0; o < 2; o++)
    for (int i = 0; i < 7; i++) {
      ptdp_grid g;
      int rc = ptdp_grid_create(MPI_COMM_WORLD, tp[i][0], tp[i][1], (ptdp_grid_order)o, &g);
      EXPECT(rc == 0, "grid_create t %d p %d failed", tp[i][0], tp[i][1]);
      if (rc) continue;
      if (o == 0 && i == 3) ptdp_grid_print(&g);
      EXPECT(g.layout.d == 8 / (tp[i][0] * tp[i][1]), "d");
      EXPECT(ptdp_grid_is_first_stage(&g) == (g.me.pp == 0), "first stage");
      EXPECT(ptdp_grid_is_last_stage(&g) == (g.me.pp == tp[i][1] - 1), "last stage");
      EXPECT(g.world.size == 8 && g.world.rank == wrank, "world comm");
      check_comm(&g, &g.tp, PTDP_GROUP_TP);
      check_comm(&g, &g.pp, PTDP_GROUP_PP);
      check_comm(&g, &g.dp, PTDP_GROUP_DP);
      check_comm(&g, &g.mp, PTDP_GROUP_MP);
      check_comm(&g, &g.emb, PTDP_GROUP_EMB);
      EXPECT(ptdp_grid_destroy(&g) == 0 && g.tp.comm == MPI_COMM_NULL, "destroy");
    }
  /* 3 ranks, t = 2: refused, naming the sizes. */
  MPI_Comm three;
  MPI_Comm_split(MPI_COMM_WORLD, wrank < 3 ? 0 : MPI_UNDEFINED, wrank, &three);
  if (three != MPI_COMM_NULL) {
    ptdp_grid g;
    ptdp_error_set_quiet(1);
    int rc = ptdp_grid_create(three, 2, 1, PTDP_ORDER_TP_DP_PP, &g);
    ptdp_error_set_quiet(0);
    EXPECT(rc == PTDP_ERR_INPUT, "3 ranks t 2 should fail, got %d", rc);
    EXPECT(strstr(ptdp_error_message(), "world size 3 is not divisible by t x p = 2 x 1") != NULL,
           "unclear message: %s", ptdp_error_message());
    if (wrank == 0) printf("refused as expected: %s\n", ptdp_error_message());
    ptdp_error_clear();
    MPI_Comm_free(&three);
  }
  int status = expect_summary_all("test_grid_mpi");
  MPI_Finalize();
  return status;
}
