/* The CPU backend's threads and BLAS kernels.
 *
 * ptdp_backend_create("cpu" or "guard", opt) sets the threads up (ptdp_cpu_threads_setup with
 * opt's values); a program calls the rest itself, because some of it must happen before the
 * backend exists:
 *  - ptdp_blas_choose_core, first thing in main, before MPI_Init: OpenBLAS picks its kernels when
 *    it loads, from the CPU or from OPENBLAS_CORETYPE.  When that variable names kernels older
 *    than the CPU supports (e.g. Haswell on an AVX-512 machine, about half the sgemm rate), it
 *    re-executes the program with OPENBLAS_CORETYPE=SkylakeX, and ptdp_blas_describe says so.
 *    PTDP_KEEP_OPENBLAS_CORETYPE=1 keeps the user's value.  The re-exec must come before MPI
 *    starts (an MPI process cannot exec itself).
 *  - ptdp_cpu_threads_count and ptdp_blas_describe, for the run's first line and for deciding
 *    whether waiting ranks sleep (ranks x threads > cores), before the trainer creates its
 *    backend: the count is what the set-up will choose. */
#ifndef PTDP_CPU_THREADS_H
#define PTDP_CPU_THREADS_H

#include <stddef.h>

/* Call first thing in main (before MPI_Init); returns only when no re-exec happened. */
void ptdp_blas_choose_core(int argc, char **argv);
/* Threads per rank the set-up will use: requested (> 0), else OMP_NUM_THREADS, else the CPUs
 * this rank is bound to, else cores / ranks on this node.  No side effects. */
int ptdp_cpu_threads_count(int requested, int ranks_on_node);
/* Set OpenMP to ptdp_cpu_threads_count(requested, ranks_on_node) threads and OpenBLAS to one
 * (the CPU backend splits products over OpenMP's threads itself); warns on stderr (if report)
 * when the rank's binding allows fewer CPUs than threads.  Returns the thread count. */
int ptdp_cpu_threads_setup(int requested, int ranks_on_node, int report);
/* One line about the BLAS: library, kernels, `threads` per rank, and what ptdp changed. */
void ptdp_blas_describe(int threads, char *buf, size_t n);

#endif
