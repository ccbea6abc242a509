/* Choosing the CPU BLAS's kernels and threads well by default.
 *
 * OpenBLAS picks its kernels when it loads, from the CPU or from OPENBLAS_CORETYPE.  When that
 * variable names kernels older than the CPU supports (e.g. Haswell on an AVX-512 machine, about
 * half the sgemm rate), ptdp_blas_choose_core re-executes the program before MPI starts with
 * OPENBLAS_CORETYPE=SkylakeX, and says so.  PTDP_KEEP_OPENBLAS_CORETYPE=1 keeps the user's value. */
#ifndef PTDP_BLAS_ENV_H
#define PTDP_BLAS_ENV_H

#include <stddef.h>

/* Call first thing in main (before MPI_Init); returns only when no re-exec happened. */
void ptdp_blas_choose_core(int argc, char **argv);
/* One line about the BLAS: library, kernels, threads, and what ptdp changed. */
void ptdp_blas_describe(char *buf, size_t n);
/* Threads per rank: requested (> 0), else OMP_NUM_THREADS, else the CPUs this rank is bound to,
 * else cores / ranks on this node; warns (if report) when the binding allows fewer CPUs. */
int ptdp_threads_setup(int requested, int ranks_on_node, int report);

#endif
