/* The main() of every MPI executable of ptdp (ptdp/program.h). */
#include "ptdp/program.h"

#include "ptdp/comm.h"
#include "ptdp/cpu_threads.h"
#include "ptdp/error.h"
#include "ptdp/options.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* --help or --version anywhere among the arguments: rank 0 answers, and nothing else runs. */
static int answered(int argc, char **argv, const char *name, void (*usage)(FILE *out))
{
  const ptdp_cmdline_ask ask = ptdp_cmdline_asks(argc - 1, argv + 1);
  int rank = 0;
  if (ask == PTDP_ASK_NOTHING) return 0;
  if (MPI_Comm_rank(MPI_COMM_WORLD, &rank) == MPI_SUCCESS && rank == 0) {
    if (ask == PTDP_ASK_HELP) usage(stdout);
    else ptdp_cmdline_print_version(name, stdout);
  }
  return 1;
}

int ptdp_main(int argc, char **argv, const char *name, void (*usage)(FILE *out), int (*run)(int argc, char **argv))
{
  ptdp_blas_choose_core(argc, argv);
  if (MPI_Init(&argc, &argv) != MPI_SUCCESS) {
    fprintf(stderr, "ptdp: error: MPI_Init failed\n");
    return 1;
  }
  ptdp_error_set_collective(1);
  /* MPI errors come back as codes (checked by PTDP_CALL_MPI), not as MPI's own abort */
  int err = MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  if (err != MPI_SUCCESS) err = ptdp_error_mpi(err, "MPI_Comm_set_errhandler", __FILE__, __LINE__, __func__);
  if (!err && !answered(argc, argv, name, usage)) err = run(argc, argv);
  if (err > 0) ptdp_error_exit(err);
  if (MPI_Finalize() != MPI_SUCCESS) {
    fprintf(stderr, "ptdp: error: MPI_Finalize failed\n");
    return 1;
  }
  return 0;
}

int ptdp_node_setup(int num_threads, int device, ptdp_backend_options *bopt, char *blas, size_t n)
{
  int rank, on_node = 1, local_rank = 0;
  MPI_Comm node;
  PTDP_CALL_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  PTDP_CALL_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node));
  PTDP_CALL_MPI(MPI_Comm_size(node, &on_node));
  PTDP_CALL_MPI(MPI_Comm_rank(node, &local_rank)); /* the CUDA backend's GPU follows it */
  PTDP_CALL_MPI(MPI_Comm_free(&node));
  /* the backend sets the threads up from these (ptdp_backend_create); the count it will choose is
   * known now, for the first line and the waiting ranks */
  *bopt = (ptdp_backend_options){.num_threads = num_threads, .ranks_on_node = on_node, .report = rank == 0,
                                 .local_rank = local_rank, .device = device};
  const int threads = ptdp_cpu_threads_count(num_threads, on_node);
  const long cores = sysconf(_SC_NPROCESSORS_ONLN);
  if (cores > 0 && (long)on_node * threads > cores) ptdp_comm_set_wait_sleep(50); /* oversubscribed */
  if (blas && n) ptdp_blas_describe(threads, blas, n);
  return 0;
}
