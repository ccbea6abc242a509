/* io_bench: the raw bandwidth the checkpoint benchmark compares with.  Every rank writes its
 * share of BYTES to one file (collective MPI-IO, contiguous blocks, rank order), syncs, closes;
 * then every rank reads its share back.  Prints the write and read rates over all ranks.
 *   mpirun -np N io_bench FILE BYTES */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(x)                                                         \
  do {                                                                   \
    int rc_ = (x);                                                       \
    if (rc_ != MPI_SUCCESS) {                                            \
      fprintf(stderr, "io_bench: %s failed (%d)\n", #x, rc_);            \
      MPI_Abort(MPI_COMM_WORLD, 1);                                      \
    }                                                                    \
  } while (0)

static double pass(const char *path, long long share, int rank, char *buf, long long chunk, int write)
{
  MPI_File fh;
  CHECK(MPI_Barrier(MPI_COMM_WORLD));
  double t0 = MPI_Wtime();
  CHECK(MPI_File_open(MPI_COMM_WORLD, path, write ? MPI_MODE_CREATE | MPI_MODE_WRONLY : MPI_MODE_RDONLY,
                      MPI_INFO_NULL, &fh));
  /* every rank makes the same number of collective calls */
  for (long long done = 0; done < share; done += chunk) {
    int n = (int)(share - done < chunk ? share - done : chunk);
    MPI_Offset at = (MPI_Offset)rank * share + done;
    if (write) CHECK(MPI_File_write_at_all(fh, at, buf, n, MPI_BYTE, MPI_STATUS_IGNORE));
    else CHECK(MPI_File_read_at_all(fh, at, buf, n, MPI_BYTE, MPI_STATUS_IGNORE));
  }
  if (write) CHECK(MPI_File_sync(fh));
  CHECK(MPI_File_close(&fh));
  CHECK(MPI_Barrier(MPI_COMM_WORLD));
  return MPI_Wtime() - t0;
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  int rank, np;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  if (argc < 3) {
    if (!rank) fprintf(stderr, "usage: io_bench FILE BYTES\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  long long total = atoll(argv[2]), share = (total + np - 1) / np, chunk = 64LL << 20;
  char *buf = malloc((size_t)chunk);
  if (!buf) MPI_Abort(MPI_COMM_WORLD, 3);
  memset(buf, rank + 1, (size_t)chunk);
  double tw = pass(argv[1], share, rank, buf, chunk, 1);
  double tr = pass(argv[1], share, rank, buf, chunk, 0);
  if (!rank)
    printf("raw MPI-IO, %d rank(s), %.3f GB: write+sync %.3f s (%.3f GB/s), read %.3f s (%.3f GB/s)\n", np,
           (double)share * np / 1e9, tw, (double)share * np / 1e9 / tw, tr, (double)share * np / 1e9 / tr);
  free(buf);
  MPI_Finalize();
  return 0;
}
