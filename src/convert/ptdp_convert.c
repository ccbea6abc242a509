/* ptdp-convert: ptdp checkpoints to and from Hugging Face model directories (ptdp-convert(1)).
 *
 *   ptdp-convert --load CKPT_DIR --hf-out DIR [--dtype fp32|bf16|fp16] [--max-shard-size 5GB]
 *   ptdp-convert --hf-in DIR --save CKPT_DIR
 *
 * One rank: the model passes through host memory whole (global tensors), so more ranks would only
 * wait.  An MPI program like the others because the checkpoint module is parallel HDF5. */
#include "convert_impl.h"

#include "ptdp/error.h"
#include "ptdp/program.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

typedef enum { DT_FP32 = 0, DT_BF16, DT_FP16 } out_dtype;

typedef struct {
  char load[PTDP_OPT_STRLEN], hf_out[PTDP_OPT_STRLEN], hf_in[PTDP_OPT_STRLEN], save[PTDP_OPT_STRLEN];
  char max_shard_size[PTDP_OPT_STRLEN];
  out_dtype dtype;
} convert_args;

#define OFF(f) offsetof(convert_args, f)

static int exporting(const void *target, int world)
{
  (void)world;
  return ((const convert_args *)target)->hf_out[0] != '\0';
}
static const ptdp_opt_effect if_export = {exporting, "it applies to --hf-out (a checkpoint to Hugging Face)"};

/* name, type, offset, default, min, max, choices, help */
static const ptdp_option table[] = {
  {"load", PTDP_OPT_STRING, OFF(load), "", 0, 0, NULL,
   "checkpoint directory (ptdp-train's save) to convert to Hugging Face's format: the checkpoint its tracker names",
   NULL},
  {"hf-out", PTDP_OPT_STRING, OFF(hf_out), "", 0, 0, NULL,
   "Hugging Face model directory to write (config.json, model.safetensors, the tokenizer's files)", NULL},
  {"dtype", PTDP_OPT_ENUM, OFF(dtype), "fp32", 0, 0, "fp32|bf16|fp16",
   "element type of the written tensors (fp32: the checkpoint's master weights exactly; bf16, fp16 rounded to "
   "nearest even)", &if_export},
  {"max-shard-size", PTDP_OPT_STRING, OFF(max_shard_size), "5GB", 0, 0, NULL,
   "largest weight file before the tensors are split over several with model.safetensors.index.json (B, KB, MB, "
   "GB, KiB, MiB, GiB; Hugging Face's default 5GB)", &if_export},
  {"hf-in", PTDP_OPT_STRING, OFF(hf_in), "", 0, 0, NULL,
   "Hugging Face model directory to read (config.json, model.safetensors or its shards and index)", NULL},
  {"save", PTDP_OPT_STRING, OFF(save), "", 0, 0, NULL,
   "checkpoint directory to write from --hf-in (iteration 0, weights only: ptdp-train loads it with finetune)",
   NULL},
};
#define NOPT ((int)(sizeof table / sizeof table[0]))

static const char synopsis[] =
  "usage: ptdp-convert --load CKPT_DIR --hf-out DIR [--dtype fp32|bf16|fp16] [--max-shard-size SIZE]\n"
  "       ptdp-convert --hf-in DIR --save CKPT_DIR\n"
  "       ptdp-convert --help | --version\n\n"
  "A ptdp checkpoint to a Hugging Face model directory (GPT2LMHeadModel, safetensors) and back.\n"
  "One rank (mpirun -np 1, or no launcher).\n\n";

static void usage(FILE *out) { ptdp_cmdline_print_single(synopsis, table, NOPT, out); }

static int check_args(const convert_args *a, int world)
{
  PTDP_CHECK(world == 1, "ptdp-convert runs on one rank (it was started on %d): the model passes through one "
             "process's memory", world);
  const int out = a->load[0] || a->hf_out[0], in = a->hf_in[0] || a->save[0];
  PTDP_CHECK(!(out && in), "give either --load and --hf-out (to Hugging Face) or --hf-in and --save (from it), not "
             "keys of both");
  PTDP_CHECK(out || in, "nothing to do: give --load CKPT_DIR --hf-out DIR, or --hf-in DIR --save CKPT_DIR");
  PTDP_CHECK(!out || (a->load[0] && a->hf_out[0]), "converting to Hugging Face needs both --load CKPT_DIR and "
             "--hf-out DIR");
  PTDP_CHECK(!in || (a->hf_in[0] && a->save[0]), "converting from Hugging Face needs both --hf-in DIR and --save "
             "CKPT_DIR");
  return 0;
}

static int parse(convert_args *a, int argc, char **argv, int world)
{
  ptdp_options o;
  ptdp_cmdline c;
  memset(a, 0, sizeof *a);
  PTDP_CALL(ptdp_options_init(&o, table, NOPT, a));
  ptdp_cmdline_single(&c, &o, "ptdp-convert", synopsis, 0);
  int err = ptdp_cmdline_parse(&c, argc, argv);
  if (!err) err = check_args(a, world);
  if (!err) ptdp_cmdline_warn_unused(&c, world, stderr);
  ptdp_options_free(&o);
  return err;
}

static int run(int argc, char **argv)
{
  int world;
  PTDP_CALL_MPI(MPI_Comm_size(MPI_COMM_WORLD, &world));
  convert_args a;
  PTDP_CALL(parse(&a, argc - 1, argv + 1, world));
  ptdp_error_set_collective(1); /* one rank: its verdict is everyone's */
  if (a.hf_in[0]) return hf_import(a.hf_in, a.save);
  unsigned long long max_shard;
  PTDP_CALL(hf_parse_size(a.max_shard_size, &max_shard));
  static const ptdp_st_dtype st_of[] = {[DT_FP32] = PTDP_ST_F32, [DT_BF16] = PTDP_ST_BF16, [DT_FP16] = PTDP_ST_F16};
  return hf_export(a.load, a.hf_out, st_of[a.dtype], max_shard);
}

int main(int argc, char **argv) { return ptdp_main(argc, argv, "ptdp-convert", usage, run); }
