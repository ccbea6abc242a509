/* gpt_data_tool DATA_PATH SPLIT SEQ_LENGTH NTRAIN NVALID NTEST SEED CACHE_DIR
 * Opens the data with ptdp_data_open on all ranks and prints (rank 0), per split:
 *   <split> samples=<n> hash=<FNV-1a of every sample's tokens, in index order>
 * plus, for a blend, how many of the train samples each dataset supplied.  Every rank hashes
 * the samples itself and the run fails if any rank disagrees with rank 0, or if consecutive
 * samples of one dataset (in the unshuffled order) do not share a token -- that is checked
 * indirectly by the index tests; here tokens must be non-negative, and the largest one seen is
 * printed (max_token=...) for the caller to compare with its vocabulary.
 *
 * gpt_data_tool PREFIX ... CACHE_DIR open-only
 * Only opens the data (one prefix) and prints the sample counts and how many pages of
 * PREFIX.bin are in the page cache before and after ptdp_data_open (mincore on a mapping of
 * its own).  Given a fresh sparse .bin, none are before; a test checks that none are after, so
 * that open reads no tokens: counted work, not time. */
#include "ptdp/error.h"
#include "ptdp/gpt_dataset.h"

#include <fcntl.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Pages of the file at path that are in the page cache. */
static int resident_pages(const char *path, size_t *resident, size_t *pages)
{
  int fd = open(path, O_RDONLY);
  PTDP_CHECK(fd >= 0, "cannot open '%s'", path);
  struct stat st;
  void *m = MAP_FAILED;
  if (fstat(fd, &st) == 0 && st.st_size > 0) m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
  close(fd);
  PTDP_CHECK(m != MAP_FAILED, "cannot map '%s'", path);
  size_t ps = (size_t)sysconf(_SC_PAGESIZE), n = ((size_t)st.st_size + ps - 1) / ps;
  unsigned char *v = malloc(n);
  int ok = v && mincore(m, (size_t)st.st_size, v) == 0;
  *resident = 0;
  for (size_t i = 0; ok && i < n; i++) *resident += v[i] & 1;
  *pages = n;
  free(v);
  munmap(m, (size_t)st.st_size);
  PTDP_CHECK(ok, "mincore on '%s' failed", path);
  return 0;
}

static int open_only(const ptdp_data_args *a, int rank)
{
  char bin[2048];
  snprintf(bin, sizeof bin, "%s.bin", a->data_path);
  size_t before, after, pages;
  PTDP_CALL(resident_pages(bin, &before, &pages));
  PTDP_CALL_MPI(MPI_Barrier(MPI_COMM_WORLD));
  ptdp_data *d;
  PTDP_CALL(ptdp_data_open(&d, a, MPI_COMM_WORLD));
  PTDP_CALL_MPI(MPI_Barrier(MPI_COMM_WORLD));
  PTDP_CALL(resident_pages(bin, &after, &pages));
  if (rank == 0) {
    for (int s = 0; s < 3; s++) printf("split %d samples=%lld\n", s, ptdp_data_num_samples(d, s));
    printf("bin pages resident: before=%zu after=%zu of %zu\n", before, after, pages);
  }
  ptdp_data_destroy(&d);
  return 0;
}

static int run(int argc, char **argv, int rank)
{
  PTDP_CHECK(argc == 9 || (argc == 10 && !strcmp(argv[9], "open-only")),
             "usage: gpt_data_tool DATA_PATH SPLIT SEQ NTRAIN NVALID NTEST SEED CACHE_DIR [open-only]");
  ptdp_data_args a = {.data_path = argv[1], .split = argv[2], .cache_path = argv[8], .seq_length = atoi(argv[3]),
                      .seed = strtoull(argv[7], NULL, 10),
                      .num_samples = {atoll(argv[4]), atoll(argv[5]), atoll(argv[6])}};
  if (argc == 10) return open_only(&a, rank);
  ptdp_data *d;
  PTDP_CALL(ptdp_data_open(&d, &a, MPI_COMM_WORLD));
  int32_t *t = malloc(sizeof(int32_t) * (size_t)(a.seq_length + 1));
  PTDP_CHECK(t, "out of memory");
  int bad = 0, max_token = -1;
  for (int s = 0; s < 3; s++) {
    long long n = ptdp_data_num_samples(d, s);
    unsigned long long h = 0xcbf29ce484222325ull;
    long long src[8] = {0};
    for (long long i = 0; i < n; i++) {
      PTDP_CALL(ptdp_data_get_sample(d, s, i, t));
      for (int k = 0; k <= a.seq_length; k++) {
        h = (h ^ (unsigned)t[k]) * 0x100000001b3ull;
        bad |= t[k] < 0;
        if (t[k] > max_token) max_token = t[k];
      }
      int k = ptdp_data_sample_source(d, s, i);
      if (k < 8) src[k]++;
    }
    if (n > 0) { /* wrapping: index n is index 0 */
      int32_t *u = malloc(sizeof(int32_t) * (size_t)(a.seq_length + 1));
      PTDP_CALL(ptdp_data_get_sample(d, s, n, u));
      PTDP_CALL(ptdp_data_get_sample(d, s, 0, t));
      for (int k = 0; k <= a.seq_length; k++) bad |= u[k] != t[k];
      free(u);
    }
    unsigned long long h0 = h;
    PTDP_CALL_MPI(MPI_Bcast(&h0, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD));
    PTDP_CHECK_LOCAL(h0 == h, "rank %d: the %d split's samples differ from rank 0's", rank, s);
    if (rank == 0) {
      printf("split %d samples=%lld hash=%016llx", s, n, h);
      if (ptdp_data_num_datasets(d) > 1)
        for (int k = 0; k < ptdp_data_num_datasets(d) && k < 8; k++) printf(" from%d=%lld", k, src[k]);
      printf("\n");
    }
  }
  PTDP_CHECK_LOCAL(!bad, "a token is negative or wrapping is wrong");
  if (rank == 0) printf("max_token=%d\n", max_token);
  free(t);
  ptdp_data_destroy(&d);
  return 0;
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int rc = run(argc, argv, rank);
  int any;
  MPI_Allreduce(&rc, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return any ? 1 : 0;
}
