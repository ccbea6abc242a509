/* ptdp-sweep DECK --hardware FILE --world-size N [--global-batch-size B] [--top K] [--out FILE.h5]
 *            [--emit-tsv FILE] [--key value ...]
 *
 * Every layout of the deck's model on N devices of the hardware file, predicted by ptdp-sim's
 * code; prints the best K with the reason each is where it is, the training time of the best
 * for train-tokens tokens beside Narayanan et al. eq. 4, and writes every prediction (--out) and
 * the best K as a job array's table (--emit-tsv).  ptdp-train's keys fix everything the sweep
 * does not vary (the model, precision, dropout, ...); ptdp-sim's keys (fusion, train-tokens,
 * memory-margin, ...) are taken as ptdp-sim takes them. */
#include "ptdp/args.h"
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

static const char synopsis[] =
  "usage: ptdp-sweep DECK --hardware FILE --world-size N [--global-batch-size B] [--top K] [--out FILE.h5]\n"
  "                  [--emit-tsv FILE] [--key value ...]\n"
  "       ptdp-sweep --help | --version\n\n"
  "DECK is a file of 'key = value' lines of any key below; --key value overrides it.\n";

/* ptdp-sweep's command line: its own keys, ptdp-sim's (out: every prediction as HDF5 columns
 * under /sweep), then ptdp-train's. */
static void sweep_cmdline(ptdp_cmdline *c, ptdp_options *swopt, ptdp_options *sopt, ptdp_options *topt)
{
  ptdp_cmdline_init(c, "ptdp-sweep", synopsis, 1);
  ptdp_cmdline_add(c, swopt, "ptdp-sweep's keys:");
  ptdp_cmdline_add(c, sopt, "ptdp-sim's keys (out: every prediction as HDF5 columns under /sweep):");
  ptdp_cmdline_add(c, topt, "ptdp-train's keys (the model and everything the sweep does not vary):");
}

static int report(const ptdp_model_keys *a, const ptdp_sim_hw *hw, const ptdp_sim_options *so, const sweep_options *sw,
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
  printf("ranges: each printed row's iteration time with every continuous hardware value at its provenance band's "
         "two ends, one at a time, root sum of squares (ptdp-sim(1), UNCERTAINTY); %d rows in %.3f s\n",
         res->ranged, res->range_seconds);
  const ptdp_sweep_layout *B = &res->layouts[0];
  char name[96];
  ptdp_sweep_name(B, name, sizeof name);
  printf("best: %s: %.4g s per iteration, %.1f TFLOP/s per GPU\n", name, B->iteration, B->tflops_per_gpu);
  printf("training time for %g tokens (days): %.1f (Narayanan et al. eq. 4 at the simulated rate: %.1f)\n",
         so->train_tokens, B->train_days_sim, B->train_days_eq4);
  return 0;
}

/* ptdp-train's keys the sweep sets itself for every layout (ptdp_sweep_apply): given, they have
 * no effect, which is said as ptdp-train says it of its keys. */
static void warn_varied(const ptdp_options *topt, const ptdp_options *sopt, FILE *out)
{
  static const char *varied[] = {"tensor-model-parallel-size", "pipeline-model-parallel-size", "micro-batch-size",
                                 "num-layers-per-virtual-pipeline-stage", "sequence-parallel",
                                 "use-distributed-optimizer", "recompute-granularity", "recompute-method",
                                 "recompute-num-layers"};
  for (size_t k = 0; k < sizeof varied / sizeof varied[0]; k++)
    if (ptdp_options_given(topt, varied[k])) ptdp_options_warn(varied[k], "ptdp-sweep varies it", out);
  if (ptdp_options_given(sopt, "explain")) ptdp_options_warn("explain", "ptdp-sweep prints no iteration tree", out);
}

/* The keys from argv; *done when --help or --version answered. */
static int parse(ptdp_cmdline *c, int argc, char **argv, const ptdp_sim_options *so, int *done)
{
  *done = ptdp_cmdline_answer(c, argc - 1, argv + 1, stdout);
  if (*done) return 0;
  PTDP_CHECK(argc > 1, "no deck: usage: ptdp-sweep DECK --hardware FILE --world-size N (--help lists the keys)");
  PTDP_CALL(ptdp_cmdline_parse(c, argc - 1, argv + 1));
  PTDP_CHECK(so->hardware[0], "no hardware file: give --hardware FILE (inputs/hw/*.hw)");
  warn_varied(c->group[2], c->group[1], stderr);
  return 0;
}

/* Every layout, the report, and the files asked for. */
static int sweep(const ptdp_model_keys *a, const ptdp_sim_hw *hw, const ptdp_sim_options *so, const sweep_options *sw)
{
  ptdp_sweep_result res = {0};
  int err = ptdp_sweep_run(a, hw, so, a->global_batch_size, &res);
  if (!err) err = ptdp_sweep_ranges(a, hw, so, a->global_batch_size, &res, (int)sw->top); /* the rows printed */
  if (!err) err = report(a, hw, so, sw, &res);
  if (!err && so->out[0]) err = ptdp_sweep_write_h5(so->out, &res, hw, a->global_batch_size);
  if (!err && so->out[0]) printf("[sweep file] %s: %d predictions under /sweep\n", so->out, res.n);
  if (!err && sw->emit_tsv[0]) err = ptdp_sweep_write_tsv(sw->emit_tsv, &res, (int)sw->top, a->global_batch_size);
  const int tasks = res.n < sw->top ? res.n : (int)sw->top;
  if (!err && sw->emit_tsv[0])
    printf("[tsv] %s: %d tasks: sbatch --array=0-%d -n %lld jobs/slurm/sweep.sbatch %s\n", sw->emit_tsv, tasks,
           tasks - 1, so->world_size, sw->emit_tsv);
  ptdp_sweep_free(&res);
  return err;
}

static int run(int argc, char **argv)
{
  sweep_options sw;
  ptdp_sim_options so;
  ptdp_options swopt = {0}, sopt = {0}, topt = {0};
  ptdp_cmdline c;
  ptdp_args a;
  ptdp_sim_hw hw;
  int done = 0, err = ptdp_options_init(&swopt, sweep_table, (int)(sizeof sweep_table / sizeof sweep_table[0]), &sw);
  if (!err) err = ptdp_sim_options_init(&sopt, &so);
  if (!err) err = ptdp_args_init(&a, &topt);
  sweep_cmdline(&c, &swopt, &sopt, &topt);
  if (!err) err = parse(&c, argc, argv, &so, &done);
  if (!err && !done) err = ptdp_sim_options_read_hw(&sopt, &so, &hw);
  if (!err && !done) err = sweep(&a.model, &hw, &so, &sw);
  ptdp_options_free(&swopt);
  ptdp_options_free(&sopt);
  ptdp_options_free(&topt);
  return err;
}

int main(int argc, char **argv)
{
  return run(argc, argv) ? 1 : 0;
}
