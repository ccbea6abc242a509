/* The CPU backend's BLAS kernels and threads: see include/ptdp/cpu_threads.h. */
/* sched_getaffinity and CPU_COUNT are GNU extensions */
#define _GNU_SOURCE
#include "ptdp/cpu_threads.h"

#include "ptdp/config.h"

#include <sched.h>

#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#if PTDP_HAVE_OPENBLAS
char *openblas_get_corename(void);
char *openblas_get_config(void);
void openblas_set_num_threads(int);
#endif

static int cpu_has_avx512(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
         __builtin_cpu_supports("avx512dq");
#else
  return 0;
#endif
}

static int is_avx512_core(const char *c)
{
  return !strcasecmp(c, "SkylakeX") || !strcasecmp(c, "Cooperlake") || !strcasecmp(c, "SapphireRapids");
}

void ptdp_blas_choose_core(int argc, char **argv)
{
  (void)argc;
#if PTDP_HAVE_OPENBLAS
  const char *ct = getenv("OPENBLAS_CORETYPE"), *keep = getenv("PTDP_KEEP_OPENBLAS_CORETYPE");
  if (!ct || !*ct || (keep && *keep && strcmp(keep, "0") != 0) || getenv("PTDP_OPENBLAS_CORETYPE_WAS")) return;
  if (!cpu_has_avx512() || is_avx512_core(ct)) return;
  if (setenv("PTDP_OPENBLAS_CORETYPE_WAS", ct, 1) != 0 || setenv("OPENBLAS_CORETYPE", "SkylakeX", 1) != 0) return;
  /* the executable's own path, not /proc/self/exe: the process keeps its name (ps, pgrep, pkill
   * and Slurm's accounting see ptdp-train, not "exe") */
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n > 0) {
    self[n] = 0;
    execv(self, argv);
  }
  /* exec failed: carry on with the kernels we have */
  unsetenv("PTDP_OPENBLAS_CORETYPE_WAS");
#else
  (void)argv;
#endif
}

void ptdp_blas_describe(int threads, char *buf, size_t n)
{
#if PTDP_HAVE_OPENBLAS
  const char *was = getenv("PTDP_OPENBLAS_CORETYPE_WAS");
  char note[256] = "";
  if (was)
    snprintf(note, sizeof note, "; OPENBLAS_CORETYPE=%s was set on a CPU with AVX-512, ptdp re-executed with SkylakeX "
             "(PTDP_KEEP_OPENBLAS_CORETYPE=1 keeps it)", was);
  snprintf(buf, n, "OpenBLAS (%s), kernels %s, %d thread(s) per rank%s", openblas_get_config(), openblas_get_corename(),
           threads, note);
#else
  snprintf(buf, n, "CBLAS (not OpenBLAS), %d OpenMP thread(s) per rank", threads);
#endif
}

/* CPUs this process may run on (an MPI launcher's binding narrows them). */
static int allowed_cpus(void)
{
#ifdef CPU_COUNT
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
#endif
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  return cores > 0 ? (int)cores : 1;
}

int ptdp_cpu_threads_count(int requested, int ranks_on_node)
{
  int n = requested;
  const char *env = getenv("OMP_NUM_THREADS");
  if (n <= 0 && env && atoi(env) > 0) n = atoi(env);
  if (n <= 0) {
    /* bound to a set of CPUs: use them; unbound: share the node's cores among its ranks */
    const int cpus = allowed_cpus();
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    n = cpus < online ? cpus : (int)(online > 0 ? online : 1) / (ranks_on_node > 0 ? ranks_on_node : 1);
    if (n < 1) n = 1;
  }
  return n;
}

int ptdp_cpu_threads_setup(int requested, int ranks_on_node, int report)
{
  const int n = ptdp_cpu_threads_count(requested, ranks_on_node), cpus = allowed_cpus();
  if (n > cpus && report)
    fprintf(stderr, "ptdp: warning: %d threads per rank, but this rank is bound to %d CPU(s) (MPI binding); they "
                    "will share them: use mpirun --bind-to none, or bind each rank to %d cores (e.g. --map-by slot:PE=%d)\n",
            n, cpus, n, n);
#ifdef _OPENMP
  omp_set_num_threads(n);
#endif
#if PTDP_HAVE_OPENBLAS
  /* One pool: OpenMP's.  The CPU backend splits large products over the OpenMP threads and
   * calls OpenBLAS single-threaded, so OpenBLAS's own pthreads never compete with them. */
  openblas_set_num_threads(1);
#endif
  return n;
}
