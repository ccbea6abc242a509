/* ptdp-sweep DECK --hardware FILE --world-size N [--global-batch-size B] [--top K] [--out FILE.h5]
 *            [--emit-tsv FILE] [--key value ...]
 *
 * Every layout of the deck's model on N devices of the hardware file, predicted by ptdp-sim's
 * code; prints the best K with the reason each is where it is, the training time of the best
 * for train-tokens tokens beside Narayanan et al. eq. 4, and writes every prediction (--out) and
 * the best K as a job array's table (--emit-tsv).  ptdp-train's keys fix everything the sweep
 * does not vary (the model, precision, dropout, ...); ptdp-sim's keys (fusion, train-tokens,
 * memory-margin, ...) are taken as ptdp-sim takes them. */
#include "ptdp/error.h"
#include "ptdp/sim.h"
#include "ptdp/sweep.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  long long top;
  char emit_tsv[PTDP_OPT_STRLEN];
} sweep_options;

static const ptdp_option sweep_table[] = {
    {"top", PTDP_OPT_INT, offsetof(sweep_options, top), "10", 1, 1e9, NULL, "layouts printed (and written by emit-tsv)", NULL},
    {"emit-tsv", PTDP_OPT_STRING, offsetof(sweep_options, emit_tsv), "", 0, 0, NULL,
     "write the best top layouts as a job array's table (jobs/slurm/sweep.sbatch)", NULL},
};

static void usage(FILE *out)
{
  fprintf(out, "usage: ptdp-sweep DECK --hardware FILE --world-size N [--global-batch-size B] [--top K] [--out FILE.h5]\n"
               "                 [--emit-tsv FILE] [--key value ...]\n"
               "ptdp-sweep's keys, ptdp-sim's (out: every prediction as HDF5 columns under /sweep), then ptdp-train's:\n");
}

/* Is argv[i] a key of o; does it take the next argument as its value. */
static int takes(const ptdp_options *o, char **argv, int argc, int i, int *with_value)
{
  char key[256];
  const char *arg = argv[i], *eq = strchr(arg, '=');
  snprintf(key, sizeof key, "%.*s", eq ? (int)(eq - arg - 2) : (int)strlen(arg + 2), arg + 2);
  const int idx = ptdp_options_find(o, key);
  if (idx < 0) return 0;
  const int is_bool = o->table[idx].type == PTDP_OPT_BOOL;
  *with_value = !eq && i + 1 < argc && strncmp(argv[i + 1], "--", 2) != 0 &&
                (!is_bool || !strcmp(argv[i + 1], "true") || !strcmp(argv[i + 1], "false"));
  return 1;
}

/* Split argv into the sweep's keys, ptdp-sim's and the rest (deck and ptdp-train's keys). */
static void split_args(const ptdp_options *sw, const ptdp_options *sim, int argc, char **argv, char **to[3], int n[3])
{
  n[0] = n[1] = n[2] = 0;
  for (int i = 0; i < argc; i++) {
    int which = 2, val = 0;
    if (!strncmp(argv[i], "--", 2)) {
      if (takes(sw, argv, argc, i, &val)) which = 0;
      else if (takes(sim, argv, argc, i, &val)) which = 1;
      else val = 0;
    }
    to[which][n[which]++] = argv[i];
    if (val) to[which][n[which]++] = argv[++i];
  }
}

static int report(const ptdp_args *a, const ptdp_sim_hw *hw, const ptdp_sim_options *so, const sweep_options *sw,
                  const ptdp_sweep_result *res)
{
  printf("ptdp-sweep: %s, n %lld, model: %lld layers, h %lld, a %lld, s %lld; global batch %lld\n", hw->name,
         so->world_size, a->num_layers, a->hidden_size, a->num_attention_heads, a->seq_length, a->global_batch_size);
  printf("layouts: %lld valid (t, p, d, b, v, SP, distributed optimizer), %lld of them too big whatever the "
         "recomputation; %d fit with the recomputation each needs; %lld (t, p, distributed optimizer) too big for "
         "their weights and optimizer state alone; %lld predictions in %.3f s\n",
         res->candidates, res->dropped_memory, res->n, res->bounded, res->simulated, res->seconds);
  PTDP_CHECK(res->n > 0, "no layout of this model fits in %g GB per device on %lld devices: more devices, a smaller "
             "global batch, or 16-bit (bf16) would help", hw->memory_bytes / 1e9, so->world_size);
  ptdp_sweep_print(res, hw, (int)sw->top, stdout);
  const ptdp_sweep_layout *B = &res->layouts[0];
  char name[96];
  ptdp_sweep_name(B, name, sizeof name);
  printf("best: %s: %.4g s per iteration, %.1f TFLOP/s per GPU\n", name, B->iteration, B->tflops_per_gpu);
  printf("training time for %g tokens (days): %.1f (Narayanan et al. eq. 4 at the simulated rate: %.1f)\n",
         so->train_tokens, B->train_days_sim, B->train_days_eq4);
  return 0;
}

static int run(int argc, char **argv)
{
  sweep_options sw;
  ptdp_sim_options so;
  ptdp_options swopt, sopt, topt;
  PTDP_CALL(ptdp_options_init(&swopt, sweep_table, (int)(sizeof sweep_table / sizeof sweep_table[0]), &sw));
  PTDP_CALL(ptdp_sim_options_init(&sopt, &so));
  for (int i = 1; i < argc; i++)
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      usage(stdout);
      ptdp_options_print_help(&swopt, stdout);
      ptdp_options_print_help(&sopt, stdout);
      printf("\nptdp-train keys:\n");
      ptdp_args_print_help(stdout);
      ptdp_options_free(&swopt);
      ptdp_options_free(&sopt);
      return 0;
    }
  char **lists[3];
  int n[3];
  for (int k = 0; k < 3; k++) lists[k] = calloc((size_t)argc + 1, sizeof *lists[k]);
  PTDP_CHECK(lists[0] && lists[1] && lists[2], "out of memory");
  split_args(&swopt, &sopt, argc - 1, argv + 1, lists, n);
  ptdp_args a;
  int err = n[2] > 0 ? 0 : ptdp_error_push(PTDP_ERR_INPUT, __FILE__, __LINE__, __func__, "no deck: usage: ptdp-sweep DECK --hardware FILE --world-size N");
  if (!err) err = ptdp_options_parse_args(&swopt, n[0], lists[0]);
  if (!err) err = ptdp_options_parse_args(&sopt, n[1], lists[1]);
  if (!err) err = ptdp_args_parse(&a, &topt, n[2], lists[2]);
  const int fusion_given = !err && sopt.source[ptdp_options_find(&sopt, "fusion")] != PTDP_SRC_DEFAULT;
  for (int k = 0; k < 3; k++) free(lists[k]);
  ptdp_options_free(&swopt);
  ptdp_options_free(&sopt);
  PTDP_CALL(err);
  ptdp_sim_hw hw;
  ptdp_sweep_result res = {0};
  if (!so.hardware[0]) err = ptdp_error_push(PTDP_ERR_INPUT, __FILE__, __LINE__, __func__, "no hardware file: give --hardware FILE (inputs/hw/*.hw)");
  if (!err) err = ptdp_sim_hw_read(so.hardware, &hw);
  if (!err && !fusion_given && ptdp_sim_hw_is_cpu(&hw)) so.fusion = PTDP_SIM_FUSION_CPU; /* as ptdp-sim */
  if (!err) err = ptdp_sweep_run(&a, &hw, &so, a.global_batch_size, &res);
  if (!err) err = report(&a, &hw, &so, &sw, &res);
  if (!err && so.out[0]) err = ptdp_sweep_write_h5(so.out, &res, &hw, a.global_batch_size);
  if (!err && so.out[0]) printf("[sweep file] %s: %d predictions under /sweep\n", so.out, res.n);
  if (!err && sw.emit_tsv[0]) err = ptdp_sweep_write_tsv(sw.emit_tsv, &res, (int)sw.top, a.global_batch_size);
  if (!err && sw.emit_tsv[0])
    printf("[tsv] %s: %d tasks: sbatch --array=0-%d -n %lld jobs/slurm/sweep.sbatch %s\n", sw.emit_tsv,
           res.n < sw.top ? res.n : (int)sw.top, (res.n < sw.top ? res.n : (int)sw.top) - 1, so.world_size, sw.emit_tsv);
  ptdp_sweep_free(&res);
  ptdp_options_free(&topt);
  return err;
}

int main(int argc, char **argv)
{
  return run(argc, argv) ? 1 : 0;
}
