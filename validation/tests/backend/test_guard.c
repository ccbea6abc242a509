/* The guard backend's memory, and backends by name.
 *
 *  - Host code touching guard memory outside an operation dies of SIGSEGV: a forked child
 *    writes (then, another, reads) a guard pointer, and must die of that signal; before any
 *    operation, after one, and after an operation that failed.  Controls: a child doing the same
 *    through to_host, or to CPU-backend memory, exits normally.
 *  - alloc returns zeroed memory, also when it reuses freed memory; free + alloc reuses blocks
 *    (adjacent free blocks merge); running out of the reservation is PTDP_ERR_MEM naming the size.
 *  - ptdp_backend_create with an unknown name is PTDP_ERR_INPUT listing the valid names. */
#include "ptdp/backend.h"
#include "ptdp/error.h"

#include "../../../src/backend/guard.h"
#include "../expect.h"

#include <mpi.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

typedef enum { TOUCH_WRITE, TOUCH_READ, TOUCH_TO_HOST } touch_kind;

/* Fork a child that touches p (n floats) as `how` says, and return how it ended: the signal
 * that killed it, or -1 - its exit status. */
static int child_touch(ptdp_backend *be, float *p, touch_kind how)
{
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) return -1000;
  if (pid == 0) {
    /* the default action, not a sanitizer's or MPI's handler: die of the signal */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_DFL;
    sigaction(SIGSEGV, &sa, NULL);
    sigaction(SIGBUS, &sa, NULL);
    volatile float *v = p;
    float x = 0;
    if (how == TOUCH_WRITE) v[3] = 1.0f;
    if (how == TOUCH_READ) x = v[3];
    if (how == TOUCH_TO_HOST && be->to_host(be, &x, p + 3, sizeof x)) _exit(3);
    _exit(x == 0.0f ? 0 : 4);
  }
  int st;
  if (waitpid(pid, &st, 0) != pid) return -1001;
  return WIFSIGNALED(st) ? WTERMSIG(st) : -1 - WEXITSTATUS(st);
}

static void check_host_access(ptdp_backend *guard, ptdp_backend *cpu)
{
  float *g, *c;
  if (guard->alloc(guard, (void **)&g, 64 * sizeof(float)) || cpu->alloc(cpu, (void **)&c, 64 * sizeof(float)))
    exit(2);
  int r = child_touch(guard, g, TOUCH_WRITE);
  EXPECT(r == SIGSEGV, "host write to guard memory: child ended with %d, not SIGSEGV (%d)", r, SIGSEGV);
  r = child_touch(guard, g, TOUCH_READ);
  EXPECT(r == SIGSEGV, "host read of guard memory: child ended with %d, not SIGSEGV", r);
  r = child_touch(guard, g, TOUCH_TO_HOST);
  EXPECT(r == -1, "to_host of guard memory: child ended with %d, not exit 0", r);
  r = child_touch(cpu, c, TOUCH_WRITE);
  EXPECT(r == -1, "host write to cpu memory: child ended with %d, not exit 0", r);
  /* an operation opens the memory and closes it again */
  EXPECT(!guard->scale(guard, g, 2.0f, 64), "scale returns 0");
  r = child_touch(guard, g, TOUCH_WRITE);
  EXPECT(r == SIGSEGV, "host write after an operation: child ended with %d, not SIGSEGV", r);
  /* and closes it when the operation fails too (CBLAS argument check) */
  ptdp_error_set_quiet(1);
  EXPECT(guard->gemm(guard, 0, 0, 2, 2, 2, 1.0f, g, 1, g, 2, 0.0f, g, 2) == PTDP_ERR_LIB, "gemm with lda < K fails");
  ptdp_error_clear();
  ptdp_error_set_quiet(0);
  r = child_touch(guard, g, TOUCH_READ);
  EXPECT(r == SIGSEGV, "host read after a failed operation: child ended with %d, not SIGSEGV", r);
  guard->free(guard, g);
  cpu->free(cpu, c);
}

static int all_zero(ptdp_backend *be, const void *p, size_t bytes)
{
  unsigned char *h = malloc(bytes);
  int zero = h && !be->to_host(be, h, p, bytes);
  for (size_t i = 0; zero && i < bytes; i++) zero = h[i] == 0;
  free(h);
  return zero;
}

static void check_alloc(ptdp_backend *guard)
{
  void *a, *b, *c, *d;
  float ones[1000];
  for (int i = 0; i < 1000; i++) ones[i] = 1.0f;
  EXPECT(!guard->alloc(guard, &a, 0) && !a, "alloc of 0 bytes gives NULL");
  guard->free(guard, NULL);
  EXPECT(!guard->alloc(guard, &a, sizeof ones) && a && all_zero(guard, a, sizeof ones), "a new block is zeroed");
  EXPECT((size_t)a % 64 == 0, "blocks are 64-byte aligned");
  EXPECT(!guard->alloc(guard, &b, sizeof ones), "alloc b");
  EXPECT(!guard->alloc(guard, &c, 100), "alloc c");
  EXPECT(!guard->to_device(guard, a, ones, sizeof ones) && !guard->to_device(guard, b, ones, sizeof ones),
         "to_device");
  guard->free(guard, a);
  EXPECT(!guard->alloc(guard, &d, sizeof ones) && d == a, "free then alloc of the same size reuses the block");
  EXPECT(all_zero(guard, d, sizeof ones), "a reused block is zeroed");
  EXPECT(!guard->to_device(guard, d, ones, sizeof ones), "to_device");
  guard->free(guard, b);
  guard->free(guard, d);
  EXPECT(!guard->alloc(guard, &d, 2 * sizeof ones) && d == a, "two adjacent freed blocks merge into one");
  EXPECT(all_zero(guard, d, 2 * sizeof ones), "a block over two freed ones is zeroed");
  guard->free(guard, d);
  guard->free(guard, c);
}

/* A guard backend with a 4 MiB reservation runs out, says how much was asked, and recovers. */
static void check_exhaustion(void)
{
  ptdp_backend *small;
  void *a, *b, *c;
  const size_t MiB = (size_t)1 << 20;
  if (ptdp_backend_guard_create(4 * MiB, &small)) exit(2);
  ptdp_error_set_quiet(1);
  EXPECT(small->alloc(small, &a, 5 * MiB) == PTDP_ERR_MEM && !a, "alloc past the reservation fails");
  EXPECT(strstr(ptdp_error_message(), "5242880 bytes") != NULL, "the message names the size: %s",
         ptdp_error_message());
  ptdp_error_clear();
  EXPECT(small->alloc(small, &a, (size_t)SIZE_MAX - 10) == PTDP_ERR_MEM, "alloc of SIZE_MAX - 10 fails cleanly");
  ptdp_error_clear();
  EXPECT(!small->alloc(small, &a, 5 * MiB / 2), "2.5 MiB of 4");
  EXPECT(small->alloc(small, &b, 5 * MiB / 2) == PTDP_ERR_MEM, "another 2.5 MiB does not fit");
  EXPECT(strstr(ptdp_error_message(), "2621440 bytes") != NULL, "the message names the size: %s",
         ptdp_error_message());
  ptdp_error_clear();
  ptdp_error_set_quiet(0);
  small->free(small, a);
  EXPECT(!small->alloc(small, &b, 5 * MiB / 2) && !small->alloc(small, &c, 3 * MiB / 2), "after free it fits again");
  small->free(small, b);
  small->free(small, c);
  ptdp_backend_destroy(&small);
}

static void check_names(void)
{
  ptdp_backend *be = (ptdp_backend *)&be;
  ptdp_error_set_quiet(1);
  EXPECT(ptdp_backend_create("cuda-nope", NULL, &be) == PTDP_ERR_INPUT && !be, "an unknown name is an input error");
  const char *msg = ptdp_error_message();
  EXPECT(strstr(msg, "cuda-nope") && strstr(msg, "cpu") && strstr(msg, "guard"),
         "the message names the bad name and lists the valid ones: %s", msg);
  ptdp_error_clear();
  EXPECT(ptdp_backend_create(NULL, NULL, &be) == PTDP_ERR_INPUT, "no name is an input error");
  ptdp_error_clear();
  ptdp_error_set_quiet(0);
  const char *names[] = {"cpu", "guard"};
  for (int i = 0; i < 2; i++) {
    EXPECT(!ptdp_backend_create(names[i], NULL, &be) && be && !strcmp(be->name, names[i]), "create %s", names[i]);
    ptdp_backend_destroy(&be);
    EXPECT(!be, "destroy sets NULL");
  }
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  ptdp_backend *guard, *cpu;
  if (ptdp_backend_create("guard", NULL, &guard) || ptdp_backend_create("cpu", NULL, &cpu)) return 2;
  check_host_access(guard, cpu);
  check_alloc(guard);
  check_exhaustion();
  check_names();
  ptdp_backend_destroy(&guard);
  ptdp_backend_destroy(&cpu);
  int status = expect_summary("test_guard");
  MPI_Finalize();
  return status;
}
