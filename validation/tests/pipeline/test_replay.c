/* ptdp_schedule_replay: with uniform compute times (forward 1, backward 2 per micro-batch and
 * stage, split evenly over v chunks) the replayed bubble equals Narayanan et al.'s
 * (p-1)/m for GPipe and 1F1B and (p-1)/(v m) for interleaved, on every stage; a slow stage
 * makes it larger. */
#include "ptdp/schedule.h"

#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  int fails = 0, checks = 0;
  for (int kind = 0; kind < 3; kind++)
    for (int p = 2; p <= 8; p *= 2)
      for (int v = 1; v <= (kind == PTDP_SCHED_INTERLEAVED ? 4 : 1); v++)
        for (int m = p; m <= 32; m *= 2) {
          if (kind == PTDP_SCHED_INTERLEAVED && v == 1) continue;
          int n = 2 * m * v;
          double *d = malloc(sizeof(double) * (size_t)n * p), idle[8], total;
          for (int st = 0; st < p; st++) {
            ptdp_schedule s;
            if (ptdp_schedule_build(kind, st, p, v, m, &s)) return 2;
            for (int i = 0; i < n; i++) d[st * n + i] = (s.items[i].kind == PTDP_WORK_FORWARD ? 1.0 : 2.0) / v;
            ptdp_schedule_free(&s);
          }
          if (ptdp_schedule_replay(kind, p, v, m, d, idle, &total)) return 2;
          double want = (double)(p - 1) / ((double)v * m);
          for (int st = 0; st < p; st++) {
            checks++;
            if (fabs(idle[st] - want) > 1e-12) {
              fails++;
              printf("FAIL: %s p=%d v=%d m=%d stage %d: replayed bubble %.6f, want %.6f\n", ptdp_schedule_name(kind), p, v,
                     m, st, idle[st], want);
            }
          }
          /* one slow stage: everyone else waits more */
          for (int i = 0; i < n; i++) d[i] *= 2;
          double idle2[8];
          if (ptdp_schedule_replay(kind, p, v, m, d, idle2, NULL)) return 2;
          checks++;
          if (!(idle2[p - 1] > idle[p - 1])) {
            fails++;
            printf("FAIL: %s p=%d v=%d m=%d: a slow first stage did not add to the last stage's bubble\n",
                   ptdp_schedule_name(kind), p, v, m);
          }
          free(d);
        }
  printf("%d checks, %d failed\n", checks, fails);
  MPI_Finalize();
  return fails != 0;
}
