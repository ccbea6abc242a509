/* The 3D rank grid of PTD-P (Narayanan et al. 2021, Sec. 3) and its communicators.
 *
 * World size n = t * p * d.  A rank's coordinates (tp, dp, pp) follow the order string, read
 * fastest-varying first, as Megatron's default "tp-dp-pp":
 *     rank = tp + t * (dp + d * pp)                      (order "tp-dp-pp")
 *     rank = tp + t * (pp + p * dp)                      (order "tp-pp-dp")
 * Worked example, n = 16, t = 2, p = 4 (d = 2), order tp-dp-pp:
 *     TP groups [0,1] [2,3] ... [14,15]
 *     DP groups [0,2] [1,3] [4,6] [5,7] ... [13,15]
 *     PP groups [0,4,8,12] [1,5,9,13] [2,6,10,14] [3,7,11,15]
 *     embedding groups = first and last member of each PP group: [0,12] [1,13] ...
 *     model-parallel (TP x PP) groups: all ranks with the same dp: [0,1,4,5,8,9,12,13] ...
 * The pure part (ptdp_grid_layout_*) needs no MPI and is what the unit tests pin down. */
#ifndef PTDP_GRID_H
#define PTDP_GRID_H

#include "ptdp/comm.h"
#include "ptdp/parallel_kinds.h" /* ptdp_grid_order */

/* The layout, with no communicators: sizes and order. */
typedef struct {
  int world, t, p, d;
  ptdp_grid_order order;
} ptdp_grid_layout;

typedef struct {
  int tp, pp, dp;
} ptdp_grid_coords;

/* Parse "tp-dp-pp" / "tp-pp-dp"; returns -1 on anything else. */
int ptdp_grid_order_parse(const char *s);
const char *ptdp_grid_order_name(ptdp_grid_order o);
/* Fill a layout; returns PTDP_ERR_INPUT (message names the problem) unless t*p divides world. */
int ptdp_grid_layout_init(ptdp_grid_layout *L, int world, int t, int p, ptdp_grid_order order);
ptdp_grid_coords ptdp_grid_layout_coords(const ptdp_grid_layout *L, int rank);
int ptdp_grid_layout_rank(const ptdp_grid_layout *L, ptdp_grid_coords c);
/* Members (world ranks, ascending position in the group) of rank's group of the given kind;
 * members must hold the group's size; returns the group size.  Kind: PTDP_GROUP_TP, _PP, _DP,
 * _MP, _EMB (for EMB: first and last stage of rank's PP group; one member when p == 1). */
int ptdp_grid_layout_group(const ptdp_grid_layout *L, int kind, int rank, int *members);
/* Size of every group of the kind (t, p, d, t p, and 2 for EMB, 1 when p == 1). */
int ptdp_grid_layout_group_size(const ptdp_grid_layout *L, int kind);
/* 1 if rank belongs to a group of the kind (0 only for EMB on a middle pipeline stage). */
int ptdp_grid_layout_in_group(const ptdp_grid_layout *L, int kind, int rank);

/* The grid of one process: its coordinates and one counting communicator per group. */
typedef struct {
  ptdp_grid_layout layout;
  ptdp_grid_coords me;
  int world_rank;
  ptdp_comm world, tp, pp, dp, mp, emb; /* emb is MPI_COMM_NULL-based (size 0) off the embedding stages */
} ptdp_grid;

/* Split world into the groups with MPI_Comm_split.  Collective over world. */
int ptdp_grid_create(MPI_Comm world, int t, int p, ptdp_grid_order order, ptdp_grid *g);
int ptdp_grid_destroy(ptdp_grid *g);
/* ptdp_comm_attach_backend on every communicator of the grid (float messages are be's memory). */
int ptdp_grid_attach_backend(ptdp_grid *g, ptdp_backend *be);
/* ptdp_comm_use_nccl on every communicator of the grid (after ptdp_grid_attach_backend). */
int ptdp_grid_use_nccl(ptdp_grid *g);
/* Print "grid: world N = t T x p P x d D, order ..." from world rank 0. */
void ptdp_grid_print(const ptdp_grid *g);
int ptdp_grid_is_first_stage(const ptdp_grid *g);
int ptdp_grid_is_last_stage(const ptdp_grid *g);

#endif
