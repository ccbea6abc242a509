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

#endif
