/* The 3D rank grid of PTD-P: pure layout arithmetic, then communicators split from it.
 *
 * n = t p d ranks.  Coordinates (tp, dp, pp), tp fastest-varying:
 *     order tp-dp-pp:  rank = tp + t (dp + d pp)     (Megatron's default)
 *     order tp-pp-dp:  rank = tp + t (pp + p dp)
 * A group of kind K holds the ranks that agree on every coordinate K does not vary:
 *     TP  varies tp          size t, position tp
 *     PP  varies pp          size p, position pp
 *     DP  varies dp          size d, position dp
 *     MP  varies tp and pp   size t p, position tp + t pp (ascending world rank in both orders)
 *     EMB pp in {0, p-1}     size 2 (1 when p == 1), position 0 first stage, 1 last stage
 * Worked example n = 8, t = 2, p = 2 (d = 2), tp-dp-pp: rank 5 = tp 1 + 2 (dp 0 + 2 pp 1),
 * so TP [4,5], DP [5,7], PP [1,5], MP [0,1,4,5], EMB [1,5].
 * ptdp_grid_create uses color = index of the group (from the same coordinates) and key =
 * position, so the communicators equal the formula exactly. */
#include "ptdp/grid.h"

#include "ptdp/error.h"

#include <stdio.h>
#include <string.h>

/* The orders' names, in the enum's order: what parse reads and name writes. */
static const char *const order_names[] = {[PTDP_ORDER_TP_DP_PP] = "tp-dp-pp", [PTDP_ORDER_TP_PP_DP] = "tp-pp-dp"};
#define NORDERS ((int)(sizeof order_names / sizeof order_names[0]))

int ptdp_grid_order_parse(const char *s)
{
  for (int o = 0; s && o < NORDERS; o++)
    if (strcmp(s, order_names[o]) == 0) return o;
  return -1;
}

const char *ptdp_grid_order_name(ptdp_grid_order o) { return (unsigned)o < NORDERS ? order_names[o] : "unknown"; }

int ptdp_grid_layout_init(ptdp_grid_layout *L, int world, int t, int p, ptdp_grid_order order)
{
  PTDP_CHECK(world >= 1, "grid: world size %d must be at least 1", world);
  PTDP_CHECK(t >= 1, "grid: tensor-model-parallel-size t = %d must be at least 1", t);
  PTDP_CHECK(p >= 1, "grid: pipeline-model-parallel-size p = %d must be at least 1", p);
  PTDP_CHECK(order == PTDP_ORDER_TP_DP_PP || order == PTDP_ORDER_TP_PP_DP,
             "grid: unknown rank order %d (expected tp-dp-pp or tp-pp-dp)", (int)order);
  PTDP_CHECK(world % ((long long)t * p) == 0,
             "grid: world size %d is not divisible by t x p = %d x %d = %lld "
             "(data-parallel size d = world / (t p) must be a whole number)",
             world, t, p, (long long)t * p);
  L->world = world;
  L->t = t;
  L->p = p;
  L->d = world / (t * p);
  L->order = order;
  return PTDP_OK;
}

ptdp_grid_coords ptdp_grid_layout_coords(const ptdp_grid_layout *L, int rank)
{
  ptdp_grid_coords c;
  c.tp = rank % L->t;
  int rest = rank / L->t;
  if (L->order == PTDP_ORDER_TP_DP_PP) {
    c.dp = rest % L->d;
    c.pp = rest / L->d;
  } else {
    c.pp = rest % L->p;
    c.dp = rest / L->p;
  }
  return c;
}

int ptdp_grid_layout_rank(const ptdp_grid_layout *L, ptdp_grid_coords c)
{
  if (L->order == PTDP_ORDER_TP_DP_PP) return c.tp + L->t * (c.dp + L->d * c.pp);
  return c.tp + L->t * (c.pp + L->p * c.dp);
}

/* Index of rank's group of this kind among all groups of the kind (the split color), and
 * rank's position in it (the split key); color -1 when rank is in no such group (EMB on a
 * middle stage).  Returns 0, or -1 for an unknown kind. */
static int group_color_key(const ptdp_grid_layout *L, int kind, ptdp_grid_coords c, int *color, int *key)
{
  switch (kind) {
  case PTDP_GROUP_WORLD: *color = 0; *key = ptdp_grid_layout_rank(L, c); return 0;
  case PTDP_GROUP_TP: *color = c.dp + L->d * c.pp; *key = c.tp; return 0;
  case PTDP_GROUP_PP: *color = c.tp + L->t * c.dp; *key = c.pp; return 0;
  case PTDP_GROUP_DP: *color = c.tp + L->t * c.pp; *key = c.dp; return 0;
  case PTDP_GROUP_MP: *color = c.dp; *key = c.tp + L->t * c.pp; return 0;
  case PTDP_GROUP_EMB:
    *color = (c.pp == 0 || c.pp == L->p - 1) ? c.tp + L->t * c.dp : -1;
    *key = c.pp == 0 ? 0 : 1;
    return 0;
  }
  return -1;
}

int ptdp_grid_layout_group(const ptdp_grid_layout *L, int kind, int rank, int *members)
{
  ptdp_grid_coords c = ptdp_grid_layout_coords(L, rank), q = c;
  int n = 0;
  switch (kind) {
  case PTDP_GROUP_WORLD:
    for (int r = 0; r < L->world; r++) members[n++] = r;
    break;
  case PTDP_GROUP_TP:
    for (q.tp = 0; q.tp < L->t; q.tp++) members[n++] = ptdp_grid_layout_rank(L, q);
    break;
  case PTDP_GROUP_PP:
    for (q.pp = 0; q.pp < L->p; q.pp++) members[n++] = ptdp_grid_layout_rank(L, q);
    break;
  case PTDP_GROUP_DP:
    for (q.dp = 0; q.dp < L->d; q.dp++) members[n++] = ptdp_grid_layout_rank(L, q);
    break;
  case PTDP_GROUP_MP:
    for (q.pp = 0; q.pp < L->p; q.pp++)
      for (q.tp = 0; q.tp < L->t; q.tp++) members[n++] = ptdp_grid_layout_rank(L, q);
    break;
  case PTDP_GROUP_EMB:
    q.pp = 0;
    members[n++] = ptdp_grid_layout_rank(L, q);
    if (L->p > 1) {
      q.pp = L->p - 1;
      members[n++] = ptdp_grid_layout_rank(L, q);
    }
    break;
  default: return 0;
  }
  return n;
}

int ptdp_grid_layout_group_size(const ptdp_grid_layout *L, int kind)
{
  switch (kind) {
  case PTDP_GROUP_WORLD: return L->world;
  case PTDP_GROUP_TP: return L->t;
  case PTDP_GROUP_PP: return L->p;
  case PTDP_GROUP_DP: return L->d;
  case PTDP_GROUP_MP: return L->t * L->p;
  case PTDP_GROUP_EMB: return L->p > 1 ? 2 : 1;
  }
  return 0;
}

int ptdp_grid_layout_in_group(const ptdp_grid_layout *L, int kind, int rank)
{
  int color, key;
  if (group_color_key(L, kind, ptdp_grid_layout_coords(L, rank), &color, &key)) return 0;
  return color >= 0;
}

static int split(MPI_Comm world, const ptdp_grid_layout *L, ptdp_grid_coords me, int kind, ptdp_comm *out)
{
  int color, key;
  MPI_Comm sub;
  PTDP_CHECK(group_color_key(L, kind, me, &color, &key) == 0, "grid: unknown group kind %d", kind);
  PTDP_CALL_MPI(MPI_Comm_split(world, color < 0 ? MPI_UNDEFINED : color, key, &sub));
  PTDP_CALL(ptdp_comm_wrap(out, sub, kind));
  return PTDP_OK;
}

int ptdp_grid_create(MPI_Comm world, int t, int p, ptdp_grid_order order, ptdp_grid *g)
{
  int n, r;
  memset(g, 0, sizeof *g);
  PTDP_CALL_MPI(MPI_Comm_size(world, &n));
  PTDP_CALL_MPI(MPI_Comm_rank(world, &r));
  PTDP_CALL(ptdp_grid_layout_init(&g->layout, n, t, p, order));
  g->world_rank = r;
  g->me = ptdp_grid_layout_coords(&g->layout, r);
  PTDP_CALL(ptdp_comm_wrap(&g->world, world, PTDP_GROUP_WORLD));
  PTDP_CALL(split(world, &g->layout, g->me, PTDP_GROUP_TP, &g->tp));
  PTDP_CALL(split(world, &g->layout, g->me, PTDP_GROUP_PP, &g->pp));
  PTDP_CALL(split(world, &g->layout, g->me, PTDP_GROUP_DP, &g->dp));
  PTDP_CALL(split(world, &g->layout, g->me, PTDP_GROUP_MP, &g->mp));
  PTDP_CALL(split(world, &g->layout, g->me, PTDP_GROUP_EMB, &g->emb));
  return PTDP_OK;
}

int ptdp_grid_destroy(ptdp_grid *g)
{
  PTDP_CALL(ptdp_comm_free(&g->emb));
  PTDP_CALL(ptdp_comm_free(&g->mp));
  PTDP_CALL(ptdp_comm_free(&g->dp));
  PTDP_CALL(ptdp_comm_free(&g->pp));
  PTDP_CALL(ptdp_comm_free(&g->tp));
  PTDP_CALL(ptdp_comm_free(&g->world));
  return PTDP_OK;
}

int ptdp_grid_attach_backend(ptdp_grid *g, ptdp_backend *be)
{
  ptdp_comm *all[] = {&g->world, &g->tp, &g->pp, &g->dp, &g->mp, &g->emb};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) PTDP_CALL(ptdp_comm_attach_backend(all[i], be));
  return PTDP_OK;
}

int ptdp_grid_use_nccl(ptdp_grid *g)
{
  ptdp_comm *all[] = {&g->world, &g->tp, &g->pp, &g->dp, &g->mp, &g->emb};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) PTDP_CALL(ptdp_comm_use_nccl(all[i]));
  return PTDP_OK;
}

void ptdp_grid_print(const ptdp_grid *g)
{
  const ptdp_grid_layout *L = &g->layout;
  if (g->world_rank != 0) return;
  printf("grid: world %d = t %d x p %d x d %d, order %s\n", L->world, L->t, L->p, L->d,
         ptdp_grid_order_name(L->order));
  fflush(stdout);
}

int ptdp_grid_is_first_stage(const ptdp_grid *g) { return g->me.pp == 0; }
int ptdp_grid_is_last_stage(const ptdp_grid *g) { return g->me.pp == g->layout.p - 1; }
