/* sgemm_bench: the rate of a large single-precision GEMM through the same CBLAS ptdp links.
 *
 * usage: sgemm_bench [n [reps]]  (default 4096 and 5).  C[n,n] = A[n,n] B[n,n], 2 n^3 flops;
 * prints the best rate of reps calls (after one warm-up) and the OpenBLAS kernels in use, so a
 * script can compare a training step against what the BLAS itself reaches on this machine. */
#include "ptdp/config.h"

#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#if PTDP_HAVE_OPENBLAS
char *openblas_get_corename(void);
int openblas_get_num_threads(void);
#endif

static double now(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

int main(int argc, char **argv)
{
  int n = argc > 1 ? atoi(argv[1]) : 4096, reps = argc > 2 ? atoi(argv[2]) : 5;
  if (n < 1 || reps < 1) {
    fprintf(stderr, "usage: sgemm_bench [n [reps]]\n");
    return 2;
  }
  size_t nn = (size_t)n * n;
  float *a = malloc(nn * sizeof *a), *b = malloc(nn * sizeof *b), *c = malloc(nn * sizeof *c);
  if (!a || !b || !c) {
    fprintf(stderr, "sgemm_bench: out of memory for n=%d\n", n);
    return 1;
  }
  for (size_t i = 0; i < nn; i++) {
    a[i] = (float)((i * 7 % 13) - 6) / 13.0f;
    b[i] = (float)((i * 5 % 11) - 5) / 11.0f;
    c[i] = 0.0f;
  }
  double best = 1e30;
  for (int r = 0; r <= reps; r++) {
    double t0 = now();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
    double dt = now() - t0;
    if (r > 0 && dt < best) best = dt; /* r = 0 warms up */
  }
  double gflops = 2.0 * n * n * (double)n / best * 1e-9;
#if PTDP_HAVE_OPENBLAS
  printf("sgemm n=%d best of %d: %.3f s, %.1f GFLOP/s, kernels %s, %d thread(s)\n", n, reps, best, gflops,
         openblas_get_corename(), openblas_get_num_threads());
#else
  printf("sgemm n=%d best of %d: %.3f s, %.1f GFLOP/s\n", n, reps, best, gflops);
#endif
  free(a);
  free(b);
  free(c);
  return 0;
}
