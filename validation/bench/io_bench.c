/* io_bench: the raw bandwidth the checkpoint benchmark compares with, in two steps.
 * `write`: every rank writes its share of BYTES to FILE.plain (collective MPI-IO, contiguous
 * blocks of 64 MiB from one buffer, rank order), syncs, closes; then to FILE the way ptdp's
 * buffered path writes (src/io/checkpoint_stream.c): each rank pwrite()s its blocks and starts
 * their write-back at once (sync_file_range), waiting for and dropping them from the cache 256 MiB
 * behind, then fsync.  Prints both rates.
 * `read` (after the caller dropped both files from the page cache with --evict): every rank reads
 * its share of FILE through the page cache (collective MPI-IO, 64 MiB blocks) and of FILE.plain
 * with O_DIRECT (pread of 64 MiB blocks into an aligned buffer), each file read once so that
 * neither finds the other's bytes in a cache below the guest; prints both rates (the direct one
 * "n/a" where the file system refuses O_DIRECT) and removes the files.
 * Rates are over all ranks; shares are whole 4 KiB blocks.
 *   mpirun -np N io_bench write FILE BYTES;  io_bench --evict FILE FILE.plain;  mpirun -np N io_bench read FILE BYTES
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

/* The direct read: each rank preads its share with O_DIRECT.  Returns -1 where the file system
 * refuses direct I/O (open or the first read fails with EINVAL on any rank). */
static double direct_pass(const char *path, long long share, int rank, char *buf, long long chunk)
{
  CHECK(MPI_Barrier(MPI_COMM_WORLD));
  double t0 = MPI_Wtime();
  int fd = open(path, O_RDONLY | O_DIRECT), bad = 0;
  if (fd < 0 && errno != EINVAL) {
    perror(path);
    MPI_Abort(MPI_COMM_WORLD, 5);
  }
  bad = fd < 0;
  for (long long done = 0; !bad && done < share;) {
    long long n = share - done < chunk ? share - done : chunk;
    ssize_t got = pread(fd, buf, (size_t)n, (long long)rank * share + done);
    if (got < 0 && errno == EINVAL && done == 0) bad = 1;
    else if (got <= 0) {
      perror("io_bench: direct read");
      MPI_Abort(MPI_COMM_WORLD, 5);
    } else done += got;
  }
  if (fd >= 0) close(fd);
  CHECK(MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
  return bad ? -1 : MPI_Wtime() - t0;
}

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
  const int write = argc == 4 && !strcmp(argv[1], "write"), read = argc == 4 && !strcmp(argv[1], "read");
  if (!write && !read) {
    if (!rank) fprintf(stderr, "usage: io_bench write|read FILE BYTES  |  io_bench --evict FILE...\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const char *file = argv[2];
  long long total = atoll(argv[3]), share = ((total + np - 1) / np + 4095) / 4096 * 4096, chunk = 64LL << 20;
  char *buf = NULL, plain[4096];
  if (posix_memalign((void **)&buf, 4096, (size_t)chunk)) MPI_Abort(MPI_COMM_WORLD, 3);
  memset(buf, rank + 1, (size_t)chunk);
  snprintf(plain, sizeof plain, "%s.plain", file);
  const double gb = (double)share * np / 1e9;
  if (write) {
    double tw = pass(plain, share, rank, buf, chunk, 1);
    double ts = stream_pass(file, share, rank, buf, chunk);
    if (!rank)
      printf("raw, %d rank(s), %.3f GB: plain write+sync %.3f s (%.3f GB/s), streamed write+sync %.3f s (%.3f GB/s)\n",
             np, gb, tw, gb / tw, ts, gb / ts);
  } else {
    double tr = pass(file, share, rank, buf, chunk, 0);
    double td = direct_pass(plain, share, rank, buf, chunk);
    char direct[64] = "n/a (no O_DIRECT here)";
    if (td > 0) snprintf(direct, sizeof direct, "%.3f s (%.3f GB/s)", td, gb / td);
    if (!rank) printf("raw, %d rank(s), %.3f GB: buffered read %.3f s (%.3f GB/s), direct read %s\n", np, gb, tr, gb / tr, direct);
    if (!rank && (unlink(plain) || unlink(file))) {
      perror(file);
      MPI_Abort(MPI_COMM_WORLD, 6);
    }
  }
  free(buf);
  MPI_Finalize();
  return 0;
}
