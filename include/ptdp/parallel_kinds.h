/* The parallel layer's choices that the inputs name, without MPI (src/parallel: grid.c, comm.c):
 * the key tables above (ptdp-train's, the simulator's) store them, and the simulator's interface
 * must not pull in <mpi.h> through ptdp/grid.h or ptdp/comm.h. */
#ifndef PTDP_PARALLEL_KINDS_H
#define PTDP_PARALLEL_KINDS_H

/* The rank order of the grid, fastest-varying first (key parallel-order). */
typedef enum { PTDP_ORDER_TP_DP_PP = 0, PTDP_ORDER_TP_PP_DP = 1 } ptdp_grid_order;

/* Which transport moves a GPU backend's float messages (key comm-backend, in the order of its
 * choices): auto, MPI (staged through host memory), NCCL (ptdp_comm_use_nccl). */
typedef enum { PTDP_COMM_AUTO = 0, PTDP_COMM_MPI = 1, PTDP_COMM_NCCL = 2 } ptdp_comm_backend;

#endif
