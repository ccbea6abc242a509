/* The trainer of the checkpoint and run-file harnesses (fuzz_h5.h). */
#define _XOPEN_SOURCE 700
#include "fuzz_h5.h"

#include "fuzz.h"

#include "ptdp/args.h"
#include "ptdp/error.h"

#include <ftw.h>
#include <hdf5.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* Small enough that a load takes well under a millisecond of arithmetic; fp16 so that the loss
 * scaler's attributes are read; a vocabulary that is not a multiple of divisible-by, so the
 * word embedding has padding rows that no file holds. */
static const char deck[] = "num-layers = 1\nhidden-size = 8\nnum-attention-heads = 2\nseq-length = 8\n"
                           "max-position-embeddings = 8\nmicro-batch-size = 1\nglobal-batch-size = 1\n"
                           "vocab-size = 30\nmake-vocab-size-divisible-by = 8\nmock-data = true\nfp16 = true\n"
                           "train-iters = 1\nlr = 1e-3\nrun-file = none\nnum-threads = 1\n";

ptdp_trainer *fuzz_trainer(void)
{
  static ptdp_trainer tr;
  static int state; /* 0 not yet, 1 ready, -1 failed */
  if (state) return state > 0 ? &tr : NULL;
  state = -1;
  int init = 0;
  MPI_Initialized(&init);
  /* never finalized: Open MPI's finalize unloads its components, whose allocations LeakSanitizer
   * would then report at exit (it reports nothing of what stays reachable) */
  if (!init && MPI_Init(NULL, NULL) != MPI_SUCCESS) return NULL;
  ptdp_error_set_collective(1);
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL); /* HDF5's own error stacks: millions of them in a campaign */
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN); /* as ptdp_main: MPI errors come back as codes */
  char path[FUZZ_PATH_MAX];
  if (fuzz_file("deck", (const uint8_t *)deck, sizeof deck - 1, path)) return NULL;
  ptdp_args a;
  ptdp_options o;
  char *argv[] = {path, NULL};
  int rc = ptdp_args_parse(&a, &o, 1, argv);
  ptdp_options_free(&o);
  if (rc || ptdp_args_validate(&a, 1) || ptdp_trainer_setup(&tr, &a, NULL)) {
    fprintf(stderr, "ptdp fuzz: the harness's trainer cannot be set up: %s\n", ptdp_error_message());
    return NULL;
  }
  state = 1;
  return &tr;
}

uint8_t *fuzz_slurp(const char *path, size_t *n)
{
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  uint8_t *d = NULL;
  long len = fseek(f, 0, SEEK_END) ? -1 : ftell(f);
  if (len > 0 && !fseek(f, 0, SEEK_SET) && (d = malloc((size_t)len)) && fread(d, 1, (size_t)len, f) != (size_t)len) {
    free(d);
    d = NULL;
  }
  fclose(f);
  *n = d ? (size_t)len : 0;
  return d;
}

int fuzz_tmpdir(char *dir, size_t n)
{
  const char *tmp = getenv("TMPDIR");
  snprintf(dir, n, "%s/ptdp-fuzz-base-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  return mkdtemp(dir) ? 0 : -1;
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
  (void)st, (void)flag, (void)ftw;
  return remove(path);
}

void fuzz_rmtree(const char *dir) { nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS); }
