/* Helpers of the fuzz harnesses (fuzz.h). */
#include "fuzz.h"

#include "ptdp/error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char scratch[512];

static void scratch_remove(void)
{
  char path[FUZZ_PATH_MAX];
  static const char *tags[] = {"vocab", "merges", "deck", "hw", "idx", "bin", "ckpt.h5", "run.h5", "st", "st-out"};
  for (size_t i = 0; i < sizeof tags / sizeof tags[0]; i++) {
    snprintf(path, sizeof path, "%s/%s", scratch, tags[i]);
    unlink(path);
  }
  rmdir(scratch);
}

void fuzz_begin(void)
{
  ptdp_error_set_quiet(1);
  ptdp_error_clear();
}

int fuzz_file(const char *tag, const uint8_t *data, size_t n, char path[FUZZ_PATH_MAX])
{
  if (!scratch[0]) {
    const char *tmp = getenv("TMPDIR");
    snprintf(scratch, sizeof scratch, "%s/ptdp-fuzz-%ld", tmp && *tmp ? tmp : "/tmp", (long)getpid());
    (void)mkdir(scratch, 0700);
    atexit(scratch_remove);
  }
  snprintf(path, FUZZ_PATH_MAX, "%s/%s", scratch, tag);
  FILE *f = fopen(path, "wb");
  if (!f) return -1;
  size_t put = n ? fwrite(data, 1, n, f) : 0;
  if (fclose(f) != 0 || put != n) return -1;
  return 0;
}

const uint8_t *fuzz_part(const uint8_t *data, size_t size, int i, size_t *n)
{
  static const char sep[] = "\n%%\n";
  const size_t ls = sizeof sep - 1;
  size_t start = 0;
  for (int k = 0;; k++) {
    size_t end = start;
    while (end + ls <= size && memcmp(data + end, sep, ls) != 0) end++;
    int last = end + ls > size;
    if (last) end = size;
    if (k == i) {
      *n = end - start;
      return data + start;
    }
    if (last) break;
    start = end + ls;
  }
  *n = 0;
  return NULL;
}

void fuzz_verdict(const char *step, int failed)
{
  if (!getenv("PTDP_FUZZ_VERBOSE")) return;
  if (failed) fprintf(stderr, "%s: refused: %s\n", step, ptdp_error_message());
  else fprintf(stderr, "%s: accepted\n", step);
}

_Noreturn void fuzz_fail(const char *what)
{
  fprintf(stderr, "ptdp fuzz: broken promise: %s\n", what);
  fflush(stderr);
  abort();
}
