/* io_bench: the raw bandwidth the checkpoint benchmark compares with.  Every rank writes its
 * share of BYTES to one file (collective MPI-IO, contiguous blocks of 64 MiB from one buffer, rank
 * order), syncs, closes; then drops the file's pages from the page cache (posix_fadvise DONTNEED,
 * which needs no privilege) and every rank reads its share back, from the device as a requeued job
 * on another node would.  Last, the file is removed and written again the way ptdp's checkpoints
 * write (src/io/checkpoint_stream.c): each rank pwrite()s its blocks and starts their write-back at
 * once (sync_file_range), waiting for and dropping them from the cache 256 MiB behind, then
 * fsync.  Prints the rates over all ranks of the plain write, the read and the streamed write.
 *   mpirun -np N io_bench FILE BYTES
 *   io_bench --evict FILE...      drop the files' pages from the page cache (after a sync) */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CHECK(x)                                                         \
  do {                                                                   \
    int rc_ = (x);                                                       \
    if (rc_ != MPI_SUCCESS) {                                            \
      fprintf(stderr, "io_bench: %s failed (%d)\n", #x, rc_);            \
      MPI_Abort(MPI_COMM_WORLD, 1);                                      \
    }                                                                    \
  } while (0)

/* Write back and drop the pages of path from the page cache. */
static int evict(const char *path)
{
  int fd = open(path, O_RDONLY);
  if (fd < 0) {
    perror(path);
    return 1;
  }
  int rc = fdatasync(fd) ? errno : posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  close(fd);
  if (rc) fprintf(stderr, "io_bench: cannot evict %s: %s\n", path, strerror(rc));
  return rc != 0;
}

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

/* The streamed write: POSIX I/O on each rank's own descriptor, write-back started per block. */
static double stream_pass(const char *path, long long share, int rank, char *buf, long long chunk)
{
  CHECK(MPI_Barrier(MPI_COMM_WORLD));
  double t0 = MPI_Wtime();
  int fd = open(path, O_CREAT | O_WRONLY, 0644);
  if (fd < 0) {
    perror(path);
    MPI_Abort(MPI_COMM_WORLD, 5);
  }
  const long long window = 256LL << 20, base = (long long)rank * share;
  long long done = 0, retired = 0;
  while (done < share) {
    long long n = share - done < chunk ? share - done : chunk;
    if (pwrite(fd, buf, (size_t)n, base + done) != n || sync_file_range(fd, base + done, n, SYNC_FILE_RANGE_WRITE)) {
      perror("io_bench: streamed write");
      MPI_Abort(MPI_COMM_WORLD, 5);
    }
    done += n;
    for (; done - retired > window; retired += chunk) {
      long long m = done - retired < chunk ? done - retired : chunk;
      if (sync_file_range(fd, base + retired, m, SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER) ||
          posix_fadvise(fd, base + retired, m, POSIX_FADV_DONTNEED)) {
        perror("io_bench: write-back");
        MPI_Abort(MPI_COMM_WORLD, 5);
      }
    }
  }
  if (fsync(fd) || close(fd)) {
    perror("io_bench: fsync");
    MPI_Abort(MPI_COMM_WORLD, 5);
  }
  CHECK(MPI_Barrier(MPI_COMM_WORLD));
  return MPI_Wtime() - t0;
}

int main(int argc, char **argv)
{
  if (argc > 1 && !strcmp(argv[1], "--evict")) {
    int rc = 0;
    for (int i = 2; i < argc; i++) rc |= evict(argv[i]);
    return rc;
  }
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
  if (!rank && evict(argv[1])) MPI_Abort(MPI_COMM_WORLD, 4);
  double tr = pass(argv[1], share, rank, buf, chunk, 0);
  CHECK(MPI_Barrier(MPI_COMM_WORLD));
  if (!rank && unlink(argv[1])) {
    perror(argv[1]);
    MPI_Abort(MPI_COMM_WORLD, 6);
  }
  double ts = stream_pass(argv[1], share, rank, buf, chunk);
  const double gb = (double)share * np / 1e9;
  if (!rank)
    printf("raw, %d rank(s), %.3f GB: plain write+sync %.3f s (%.3f GB/s), read %.3f s (%.3f GB/s), "
           "streamed write+sync %.3f s (%.3f GB/s)\n", np, gb, tw, gb / tw, tr, gb / tr, ts, gb / ts);
  free(buf);
  MPI_Finalize();
  return 0;
}
