/* The main() of every MPI executable of ptdp (src/parallel/program.c): above the backend (it
 * chooses the BLAS kernels before MPI_Init) and the core (the collective error mode). */
#ifndef PTDP_PROGRAM_H
#define PTDP_PROGRAM_H

#include <stdio.h>

/* The main() of an MPI executable called name: chooses the BLAS kernels, MPI_Init, collective
 * error mode, MPI errors returned as codes; --help (-h) or --version: rank 0 prints usage(stdout)
 * or "name VERSION"; else run(argc, argv) (a negative return: a clean early exit); then
 * ptdp_error_exit on failure or MPI_Finalize.  Returns the exit status. */
int ptdp_main(int argc, char **argv, const char *name, void (*usage)(FILE *out), int (*run)(int argc, char **argv));

#endif
