/* The main() of a fuzz harness built without libFuzzer (the default build): run
 * LLVMFuzzerTestOneInput once on each file named on the command line, or on each file of a
 * folder named there (in name order, so a failure is reproducible), and say how many ran.
 * A harness that crashes, hangs or abort()s on a broken promise fails `make check`; with
 * --enable-sanitizers, so does any AddressSanitizer or UBSan report.
 *   fuzz_READER FILE|DIR...   */
#include "fuzz.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int run_file(const char *path)
{
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "replay: cannot open '%s'\n", path);
    return 1;
  }
  size_t n = 0, cap = 1 << 16;
  uint8_t *d = malloc(cap);
  for (size_t got; d && (got = fread(d + n, 1, cap - n, f)) > 0;) {
    n += got;
    if (n == cap) {
      uint8_t *nd = realloc(d, cap *= 2);
      if (!nd) free(d);
      d = nd;
    }
  }
  int bad = ferror(f);
  fclose(f);
  if (!d || bad) {
    free(d);
    fprintf(stderr, "replay: cannot read '%s'\n", path);
    return 1;
  }
  /* an exact-size copy, so a read past the input is caught by AddressSanitizer */
  uint8_t *exact = malloc(n ? n : 1);
  if (!exact) return free(d), 1;
  memcpy(exact, d, n);
  free(d);
  LLVMFuzzerTestOneInput(exact, n);
  free(exact);
  return 0;
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int run_dir(const char *dir, int *count)
{
  DIR *dp = opendir(dir);
  if (!dp) {
    fprintf(stderr, "replay: cannot open folder '%s'\n", dir);
    return 1;
  }
  char **names = NULL;
  size_t n = 0;
  for (struct dirent *e; (e = readdir(dp));) {
    if (e->d_name[0] == '.') continue;
    char **nn = realloc(names, (n + 1) * sizeof *names);
    if (!nn) break;
    names = nn;
    size_t len = strlen(dir) + strlen(e->d_name) + 2;
    if (!(names[n] = malloc(len))) break;
    snprintf(names[n++], len, "%s/%s", dir, e->d_name);
  }
  closedir(dp);
  qsort(names, n, sizeof *names, by_name);
  int rc = 0;
  for (size_t i = 0; i < n; i++) {
    struct stat st;
    if (stat(names[i], &st) == 0 && S_ISREG(st.st_mode)) rc |= run_file(names[i]), ++*count;
    free(names[i]);
  }
  free(names);
  return rc;
}

int main(int argc, char **argv)
{
  int rc = 0, count = 0;
  for (int i = 1; i < argc; i++) {
    struct stat st;
    if (stat(argv[i], &st) != 0) {
      fprintf(stderr, "replay: no file or folder '%s'\n", argv[i]);
      rc = 1;
    } else if (S_ISDIR(st.st_mode)) {
      rc |= run_dir(argv[i], &count);
    } else {
      rc |= run_file(argv[i]);
      count++;
    }
  }
  printf("%s: %d inputs replayed%s\n", argv[0], count, rc ? ", some could not be read" : "");
  return rc;
}
