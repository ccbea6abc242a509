/* The main() of every MPI executable of ptdp (src/parallel/program.c): above the backend (it
 * chooses the BLAS kernels before MPI_Init) and the core (the collective error mode). */
#ifndef PTDP_PROGRAM_H
#define PTDP_PROGRAM_H

#include "ptdp/backend.h" /* ptdp_backend_options */

#include <stddef.h>
#include <stdio.h>

/* The main() of an MPI executable called name: chooses the BLAS kernels, MPI_Init, collective
 * error mode, MPI errors returned as codes; --help (-h) or --version: rank 0 prints usage(stdout)
 * or "name VERSION"; else run(argc, argv) (a negative return: a clean early exit); then
 * ptdp_error_exit on failure or MPI_Finalize.  Returns the exit status. */
int ptdp_main(int argc, char **argv, const char *name, void (*usage)(FILE *out), int (*run)(int argc, char **argv));

/* The node this rank runs on, as every program that builds a backend needs it: the ranks sharing
 * the node (MPI_COMM_TYPE_SHARED) and this rank's place among them, hence the backend options
 * (threads per rank, the GPU: device, or -1 for local rank mod GPUs; report on world rank 0); waits
 * that sleep instead of polling when ranks x threads exceed the node's cores; and, in blas (n
 * bytes), the BLAS kernels and threads for the program's first line.  Collective over the world. */
int ptdp_node_setup(int num_threads, int device, ptdp_backend_options *bopt, char *blas, size_t n);

#endif
