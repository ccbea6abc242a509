/* ptdp-train: train a GPT model with tensor, pipeline and data parallelism (PTD-P).
 *
 *   mpirun -np N ptdp-train DECK [--key value ...]
 *
 * Set-up is collective: every rank reads the same deck and flags and reaches the same verdict,
 * so bad input ends the run cleanly with one message from rank 0.  Errors after set-up may be
 * seen by one rank only and end the run with MPI_Abort. */
#include "ptdp/args.h"
#include "ptdp/backend.h"
#include "ptdp/checkpoint.h"
#include "ptdp/config.h"
#include "ptdp/cpu_threads.h"
#include "ptdp/error.h"
#include "ptdp/program.h"
#include "ptdp/trainer.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const char synopsis[] =
  "usage: mpirun -np N ptdp-train DECK [--key value ...]\n"
  "       ptdp-train --help | --version\n\n"
  "DECK is a file of 'key = value' lines ('#' starts a comment); --key value overrides it.\n"
  "Keys are Megatron-LM's argument names; booleans may be given bare (--sequence-parallel).\n\n";

static void usage(FILE *out)
{
  ptdp_args a;
  ptdp_options o;
  ptdp_args_view(&a, &o);
  ptdp_cmdline_print_single(synopsis, o.table, o.count, out);
}

/* use-checkpoint-args: the model's shape and tokenizer come from the checkpoint in load (a load
 * directory without one yet leaves the deck's values: the first job of a chain). */
static int checkpoint_args(ptdp_options *o)
{
  const ptdp_args *a = o->target;
  ptdp_checkpoint_ref ref;
  int found = 0;
  PTDP_CALL(ptdp_checkpoint_locate(a->load, MPI_COMM_WORLD, &ref, &found));
  if (found) PTDP_CALL(ptdp_checkpoint_read_model_keys(&ref, o, MPI_COMM_WORLD));
  return 0;
}

static int run(int argc, char **argv)
{
  int rank, world;
  PTDP_CALL_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  PTDP_CALL_MPI(MPI_Comm_size(MPI_COMM_WORLD, &world));
  ptdp_args a;
  ptdp_options o;
  ptdp_cmdline c;
  PTDP_CHECK(argc > 1, "no input deck: usage: mpirun -np N ptdp-train DECK [--key value ...] (--help lists the keys)");
  int err = ptdp_args_init(&a, &o);
  ptdp_cmdline_single(&c, &o, "ptdp-train", synopsis, 1); /* the deck, then ptdp-train's keys */
  if (!err) err = ptdp_cmdline_parse(&c, argc - 1, argv + 1);
  if (!err && a.use_checkpoint_args && a.load[0]) err = checkpoint_args(&o);
  if (!err) err = ptdp_args_validate(&a, world);
  if (err) {
    ptdp_options_free(&o);
    return err;
  }
  ptdp_backend_options bopt;
  char blas[1024];
  PTDP_CALL(ptdp_node_setup((int)a.num_threads, (int)a.device, &bopt, blas, sizeof blas));
  if (rank == 0) {
    printf("ptdp-train %s: %d rank(s); %s\n", PACKAGE_VERSION, world, blas);
    ptdp_args_print(&o, stdout);
    ptdp_cmdline_warn_unused(&c, world, stderr);
  }
  ptdp_options_free(&o);
  ptdp_trainer tr;
  err = ptdp_trainer_setup(&tr, &a, &bopt);
  if (!err) {
    if (rank == 0) ptdp_grid_print(&tr.grid);
    ptdp_error_set_collective(0); /* from here a failure may be one rank's own */
    err = ptdp_trainer_run(&tr);
  }
  ptdp_trainer_destroy(&tr);
  return err;
}

int main(int argc, char **argv) { return ptdp_main(argc, argv, "ptdp-train", usage, run); }
