/* The inputs of a training run: one struct, filled from defaults, a deck and the command line
 * (ptdp/options.h), echoed at start.  Keys are Megatron-LM's argument names.  A choice key is
 * stored as its module's enum (the position of the choice in the key's list). */
#ifndef PTDP_ARGS_H
#define PTDP_ARGS_H

/* The modules' enums that choice keys store; none of these headers includes <mpi.h>, so the
 * simulator (ptdp/sim.h) reads the key table without MPI. */
#include "ptdp/backend.h"        /* ptdp_backend_kind */
#include "ptdp/lr_schedule.h"    /* ptdp_lr_decay_style */
#include "ptdp/model_config.h"   /* ptdp_model_keys */
#include "ptdp/options.h"
#include "ptdp/parallel_kinds.h" /* ptdp_grid_order, ptdp_comm_backend */
#include "ptdp/params.h"         /* ptdp_norm_type, ptdp_position_type */
#include "ptdp/recompute.h"      /* ptdp_recompute, ptdp_recompute_method */
#include "ptdp/schedule.h"       /* ptdp_schedule_kind */
#include "ptdp/tokenizer.h"      /* ptdp_tokenizer_type */

/* Element type of a flat token file (key flat-data-dtype, in the order of its choices; read by
 * src/train/batch.c). */
typedef enum { PTDP_FLAT_UINT16 = 0, PTDP_FLAT_INT32 = 1 } ptdp_flat_dtype;

/* The signal exit-signal-handler catches (key exit-signal, in the order of its choices). */
typedef enum { PTDP_EXIT_SIGTERM = 0, PTDP_EXIT_SIGINT, PTDP_EXIT_SIGUSR1, PTDP_EXIT_SIGUSR2 } ptdp_exit_signal;

typedef struct ptdp_args {
  /* The keys that make the model (ptdp/model_config.h): `model` is what the programs hand the
   * model module, simulator and converters; the anonymous struct names the same fields, so the
   * key table's offsets and the trainer read them as a->num_layers.  Both members have the one
   * field list PTDP_MODEL_KEY_FIELDS, so their layouts are the same (C11 6.5.2.3: a union of
   * structures with a common initial sequence). */
  union {
    ptdp_model_keys model;
    struct {
      PTDP_MODEL_KEY_FIELDS
    };
  };
  /* iterations */
  long long train_iters, log_interval, eval_interval, eval_iters;
  /* optimizer and learning rate */
  double lr, min_lr, weight_decay, clip_grad, adam_beta1, adam_beta2, adam_eps;
  long long lr_warmup_iters, lr_decay_iters;
  ptdp_lr_decay_style lr_decay_style;
  /* data */
  int mock_data;
  char data_path[PTDP_OPT_STRLEN], split[PTDP_OPT_STRLEN], data_cache_path[PTDP_OPT_STRLEN];
  ptdp_flat_dtype flat_data_dtype;
  ptdp_tokenizer_type tokenizer_type;
  char vocab_file[PTDP_OPT_STRLEN], merge_file[PTDP_OPT_STRLEN];
  char tokenizer_model[PTDP_OPT_STRLEN]; /* HuggingFaceTokenizer: tokenizer.json or its directory */
  /* checkpoints and ending a run */
  char save[PTDP_OPT_STRLEN], load[PTDP_OPT_STRLEN];
  long long save_interval, keep_checkpoints, exit_interval;
  int no_save_optim, no_load_optim, finetune, use_checkpoint_args, exit_signal_handler;
  double exit_duration_in_mins;
  ptdp_exit_signal exit_signal;
  /* the run file */
  char run_file[PTDP_OPT_STRLEN];
  long long timeline_interval;
  double peak_tflops;
  /* precision */
  double loss_scale, initial_loss_scale, min_loss_scale;
  long long loss_scale_window, hysteresis;
  /* device */
  ptdp_backend_kind backend;
  long long device;
  ptdp_comm_backend comm_backend;
  double distributed_timeout_minutes;
  /* outputs and diagnostics */
  char debug_dump[PTDP_OPT_STRLEN];
  long long debug_inject_inf;
  long long num_threads;
} ptdp_args;

/* a at its defaults and o over ptdp-train's key table (for a program's ptdp_cmdline). */
int ptdp_args_init(ptdp_args *a, ptdp_options *o);
/* Fill args from argv (after the program name): ptdp-train's keys alone.  Collective-safe: every rank parses the same
 * text and reaches the same verdict. */
int ptdp_args_parse(ptdp_args *a, ptdp_options *o, int argc, char **argv);
/* Refuse inconsistent settings before any work starts; world is the number of ranks. */
int ptdp_args_validate(const ptdp_args *a, int world);
/* o views a (the key table over a, no sources): for writing every key's value as text. */
void ptdp_args_view(ptdp_args *a, ptdp_options *o);
/* Echo every input, marking the ones set by the deck or command line. */
void ptdp_args_print(const ptdp_options *o, FILE *out);

/* Warn (rank 0) about keys given but without effect in this configuration: the effects the key
 * table declares (ptdp_options_warn_unused); a is o's target. */
void ptdp_args_warn_unused(const ptdp_options *o, const ptdp_args *a, int world, FILE *out);

/* The entry of ptdp-train's key table named key (its type, default and range), or NULL: for
 * programs that set these keys from other files (ptdp-convert from config.json) and check the
 * values there against the table's ranges rather than restating them. */
const ptdp_option *ptdp_args_option(const char *key);

/* Vocabulary padded to a multiple of make-vocab-size-divisible-by x t (Megatron). */
long long ptdp_args_padded_vocab(const ptdp_args *a, long long vocab);

#endif
