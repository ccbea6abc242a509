/* Checkpoints: one HDF5 file per checkpoint shared by all ranks (parallel HDF5 over MPI-IO:
 * metadata collective, each rank's tensor data moved independently), every tensor in its global
 * (unsharded) shape, so that any parallel layout loads what any other saved.
 *
 *   SAVE/latest_checkpointed_iteration.txt   the newest complete checkpoint's iteration
 *   SAVE/iter_NNNNNNN/checkpoint.h5          the checkpoint (layout: ptdp-checkpoint(5))
 *
 * A checkpoint is written into SAVE/iter_NNNNNNN.tmp-<stamp>/, flushed and synced, renamed into
 * place, and only then named by the tracker (written to a temporary and renamed), so a kill at
 * any moment leaves the previous checkpoint loadable.
 *
 * Every function here is collective over the communicator it is given (or the model's grid):
 * rank 0 does the file-system work that must happen once and broadcasts its verdict, so every
 * rank returns the same error code. */
#ifndef PTDP_CHECKPOINT_H
#define PTDP_CHECKPOINT_H

#include "ptdp/gpt.h"
#include "ptdp/master.h"
#include "ptdp/optimizer.h"
#include "ptdp/options.h"

#include <mpi.h>

#define PTDP_CHECKPOINT_FORMAT 1
#define PTDP_CHECKPOINT_FILE "checkpoint.h5"
#define PTDP_CHECKPOINT_TRACKER "latest_checkpointed_iteration.txt"

/* A located checkpoint. */
typedef struct {
  char dir[PTDP_OPT_STRLEN];  /* LOAD/iter_NNNNNNN */
  char file[PTDP_OPT_STRLEN]; /* LOAD/iter_NNNNNNN/checkpoint.h5 */
  long long iteration;
} ptdp_checkpoint_ref;

/* What a checkpoint records besides tensors. */
typedef struct {
  long long iteration;      /* completed iterations */
  long long consumed_train; /* training samples consumed */
  long long consumed_valid; /* validation samples consumed */
  long long opt_step;       /* AdamW steps taken (bias correction; skipped steps do not count) */
  ptdp_grad_scaler scaler;  /* loss scaling state (fp16): scale, growth and hysteresis trackers */
  double lr;                /* learning rate of the last iteration (for the record) */
  const ptdp_options *keys; /* saving: every key over its value (ptdp_args_view), stored as text under /args */
  int keep;                 /* saving: keep this many newest checkpoints (<= 0: all) */
} ptdp_checkpoint_info;

typedef struct {
  double bytes;   /* tensor bytes written or read, all ranks */
  double seconds; /* wall time of the whole save or load, syncs and renames included */
  double direct_bytes; /* loading: of bytes, those read with direct I/O (O_DIRECT), all ranks */
} ptdp_checkpoint_stats;

/* Save the model (and with opt, the optimizer state) as SAVE/iter_NNNNNNN, then point the
 * tracker at it and delete checkpoints beyond info->keep.  Collective over the model's world.
 * master: the owner of the fp32 weights in training (the distributed optimizer may shard them,
 * ptdp/master.h); NULL: the model's own (params.fp32: one rank's copy, as in ptdp-convert). */
int ptdp_checkpoint_save(const char *save_dir, const ptdp_checkpoint_info *info, ptdp_gpt *m, ptdp_master *master,
                         const ptdp_optimizer *opt, ptdp_checkpoint_stats *stats);

/* Load the model (and with opt non-NULL, the optimizer state, which must be there) from ref on
 * this run's layout; info (may be NULL) receives iteration, samples consumed and the AdamW step;
 * master as for ptdp_checkpoint_save (with it, the 16-bit weights are made from the fp32 ones read:
 * ptdp_master_sync_all).  Shapes and checksums are checked; every failure is an error all ranks return.  Collective. */
int ptdp_checkpoint_load(const ptdp_checkpoint_ref *ref, ptdp_gpt *m, ptdp_master *master, ptdp_optimizer *opt,
                         ptdp_checkpoint_info *info, ptdp_checkpoint_stats *stats);

/* Find the checkpoint the tracker in load_dir names.  *found = 0 (and 0 returned) when load_dir
 * does not exist or holds no tracker: a first run.  A tracker that cannot be read, or names a
 * directory or file that is missing, is an error naming it.  Collective over comm. */
int ptdp_checkpoint_locate(const char *load_dir, MPI_Comm comm, ptdp_checkpoint_ref *ref, int *found);

/* Set the options named in keys[0 .. nkeys) to the values stored in the checkpoint (every key
 * is stored as text, as the echo of the inputs prints it); keys the checkpoint lacks are left
 * alone.  For use-checkpoint-args and for ptdp-generate.  Collective over comm. */
int ptdp_checkpoint_read_keys(const ptdp_checkpoint_ref *ref, ptdp_options *o, const char *const *keys, int nkeys,
                              MPI_Comm comm);

/* ptdp_checkpoint_read_keys of the keys that make the model and its tokenizer (num-layers,
 * hidden-size, num-attention-heads, ffn-hidden-size, max-position-embeddings, vocab-size,
 * make-vocab-size-divisible-by, layernorm-epsilon, tokenizer-type, vocab-file, merge-file):
 * use-checkpoint-args and ptdp-generate. */
int ptdp_checkpoint_read_model_keys(const ptdp_checkpoint_ref *ref, ptdp_options *o, MPI_Comm comm);

/* ptdp_checkpoint_load without the optimizer: this rank's slice of every parameter. */
int ptdp_checkpoint_load_model(const ptdp_checkpoint_ref *ref, ptdp_gpt *m);

#endif
