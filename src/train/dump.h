/* Private to src/train: the debug dump (see dump.c for the file layout). */
#ifndef PTDP_TRAIN_DUMP_H
#define PTDP_TRAIN_DUMP_H

#include "ptdp/args.h"
#include "ptdp/batch.h"
#include "ptdp/gpt.h"
#include "ptdp/grid.h"
#include "ptdp/master.h"

typedef struct ptdp_dump ptdp_dump;

/* What the dump reads of a run (the trainer fills it; the pointers stay valid until close). */
typedef struct {
  ptdp_gpt *model;           /* parameters and gradients; it keeps the first micro-batch's logits */
  ptdp_master *master;       /* the fp32 weights (sharded by the distributed optimizer) */
  const ptdp_grid *grid;     /* which rank writes which slice */
  ptdp_batch_source *data;   /* every training sample of the run, for /tokens */
  const ptdp_args *args;     /* the settings written as attributes */
  long long global_batch;    /* samples per iteration */
} ptdp_dump_run;

/* Collective over the world: create path, write the settings, the samples and the initial weights. */
int ptdp_dump_open(ptdp_dump **d, const ptdp_dump_run *run, const char *path);
/* The first iteration's gradients and logits (collective). */
int ptdp_dump_grads(ptdp_dump *d);
void ptdp_dump_record(ptdp_dump *d, long long iteration, double loss, double lr, double norm);
/* The per-iteration series and the final weights, then close (collective; NULL-safe). */
int ptdp_dump_close(ptdp_dump **d);

#endif
