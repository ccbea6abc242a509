/* EXPECT for the compiled unit tests: count a check, print the first 20 failures with file,
 * line and (for MPI tests) the world rank.  One test program is one translation unit, so the
 * counters are that program's own. */
#ifndef PTDP_TEST_EXPECT_H
#define PTDP_TEST_EXPECT_H

#include <stdio.h>

static int n_fail = 0, n_pass = 0, wrank = 0;

#define EXPECT(cond, ...)                                                   \
  do {                                                                      \
    if (cond) {                                                             \
      n_pass++;                                                             \
    } else if (n_fail++ < 20) {                                             \
      fprintf(stderr, "FAIL [rank %d] %s:%d: ", wrank, __FILE__, __LINE__); \
      fprintf(stderr, __VA_ARGS__);                                         \
      fprintf(stderr, "\n");                                                \
    }                                                                       \
  } while (0)

/* The summary line, "NAME: N checks passed, M failed", and the program's exit status (0 only with
 * no failure). */
static inline int expect_summary(const char *name)
{
  printf("%s: %d checks passed, %d failed\n", name, n_pass, n_fail);
  return n_fail ? 1 : 0;
}

#ifdef MPI_VERSION
/* The same for a test on several ranks, collective over MPI_COMM_WORLD: the failures of all ranks
 * are added (a check failing on one rank fails the test on every rank), rank 0 prints the line
 * with its own passes, and every rank returns the same status. */
static inline int expect_summary_all(const char *name)
{
  int fails = 0, world = 0, me = 0;
  if (MPI_Allreduce(&n_fail, &fails, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD) != MPI_SUCCESS ||
      MPI_Comm_size(MPI_COMM_WORLD, &world) != MPI_SUCCESS || MPI_Comm_rank(MPI_COMM_WORLD, &me) != MPI_SUCCESS)
    return 1;
  if (me == 0) printf("%s: rank 0 %d checks passed; %d failed over all %d ranks\n", name, n_pass, fails, world);
  return fails ? 1 : 0;
}
#endif

#endif
