/* What the emulation's own C tests share: CK (a CUDA call that must succeed, else exit 2) and
 * emu_child (run a planted fault in a forked child: a fault is sticky, as on a GPU, so each
 * gets a process of its own; stderr is captured in a file under $TMPDIR). */
#ifndef PTDP_EMU_TEST_H
#define PTDP_EMU_TEST_H

#include <cuda_runtime.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define CK(x)                                                                            \
  do {                                                                                   \
    cudaError_t e_ = (x);                                                                \
    if (e_ != cudaSuccess) {                                                             \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorName(e_));  \
      exit(2);                                                                           \
    }                                                                                    \
  } while (0)

/* Run fn in a child; its exit status (128 + signal if killed), and in *saw whether its stderr
 * held `want` (printed when it did not). */
static inline int emu_child(void (*fn)(void), const char *want, int *saw)
{
  char path[4096];
  const char *dir = getenv("TMPDIR");
  snprintf(path, sizeof path, "%s/emu-test-XXXXXX", dir && *dir ? dir : "/tmp");
  int fd = mkstemp(path);
  if (fd < 0) {
    perror("emu_child: mkstemp");
    exit(2);
  }
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) {
    perror("emu_child: fork");
    exit(2);
  }
  if (pid == 0) {
    dup2(fd, 2);
    fn();
    _exit(0);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  char buf[8192] = "";
  lseek(fd, 0, SEEK_SET);
  ssize_t r = read(fd, buf, sizeof buf - 1);
  buf[r > 0 ? r : 0] = 0;
  close(fd);
  unlink(path);
  *saw = strstr(buf, want) != NULL;
  if (!*saw) fprintf(stderr, "  (child stderr: %s)\n", buf);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

#endif
