/* gpt_data_tool DATA_PATH SPLIT SEQ_LENGTH NTRAIN NVALID NTEST SEED CACHE_DIR
 * Opens the data with ptdp_data_open on all ranks and prints (rank 0), per split:
 *   <split> samples=<n> hash=<FNV-1a of every sample's tokens, in index order>
 * plus, for a blend, how many of the train samples each dataset supplied.  Every rank hashes
 * the samples itself and the run fails if any rank disagrees with rank 0, or if consecutive
 * samples of one dataset (in the unshuffled order) do not share a token -- that is checked
 * indirectly by the index tests; here tokens must be in [0, vocab_hint). */
#include "ptdp/error.h"
#include "ptdp/gpt_dataset.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int run(int argc, char **argv, int rank)
{
  PTDP_CHECK(argc == 9, "usage: gpt_data_tool DATA_PATH SPLIT SEQ NTRAIN NVALID NTEST SEED CACHE_DIR");
  ptdp_data_args a = {.data_path = argv[1], .split = argv[2], .cache_path = argv[8], .seq_length = atoi(argv[3]),
                      .seed = strtoull(argv[7], NULL, 10),
                      .num_samples = {atoll(argv[4]), atoll(argv[5]), atoll(argv[6])}};
  ptdp_data *d;
  PTDP_CALL(ptdp_data_open(&d, &a, MPI_COMM_WORLD));
  int32_t *t = malloc(sizeof(int32_t) * (size_t)(a.seq_length + 1));
  PTDP_CHECK(t, "out of memory");
  int vocab = ptdp_data_vocab_hint(d), bad = 0;
  for (int s = 0; s < 3; s++) {
    long long n = ptdp_data_num_samples(d, s);
    unsigned long long h = 0xcbf29ce484222325ull;
    long long src[8] = {0};
    for (long long i = 0; i < n; i++) {
      PTDP_CALL(ptdp_data_get_sample(d, s, i, t));
      for (int k = 0; k <= a.seq_length; k++) {
        h = (h ^ (unsigned)t[k]) * 0x100000001b3ull;
        bad |= t[k] < 0 || t[k] >= vocab;
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
  PTDP_CHECK_LOCAL(!bad, "a token is outside [0, vocab_hint=%d) or wrapping is wrong", vocab);
  if (rank == 0) printf("vocab_hint=%d\n", vocab);
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
