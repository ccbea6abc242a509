/* ptdp-sim DECK [--key value ...] --hardware FILE [--world-size N] [--out FILE.h5] [--explain]
 *
 * Predicts iteration time, throughput, MFU, pipeline bubble and memory per GPU of the layout the
 * deck and keys describe (ptdp-train's keys and ptdp-sim's, on one command line: ptdp_cmdline) on
 * the cluster the hardware file describes.  No MPI: one process, a few milliseconds.
 *
 * ptdp-sim --calibrate RUN.h5 [RUN.h5 ...] --hardware BASE.hw --out MINE.hw
 *
 * fits BASE's efficiency and bandwidth keys to short runs' run files (ptdp/calibrate.h) and writes
 * MINE.hw with the fitted values tagged MEASURED. */
#include "ptdp/args.h"
#include "ptdp/calibrate.h"
#include "ptdp/error.h"
#include "ptdp/sim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char synopsis[] =
  "usage: ptdp-sim DECK [--key value ...] --hardware FILE [--world-size N] [--out FILE.h5] [--explain]\n"
  "       ptdp-sim --calibrate RUN.h5 [RUN.h5 ...] --hardware BASE.hw --out MINE.hw [--key value ...]\n"
  "       ptdp-sim --help | --version\n\n"
  "DECK is a file of 'key = value' lines of any key below; --key value overrides it.\n";

/* ptdp-sim's command line: its own keys, then ptdp-train's (both tables initialised). */
static void sim_cmdline(ptdp_cmdline *c, ptdp_options *sopt, ptdp_options *topt)
{
  ptdp_cmdline_init(c, "ptdp-sim", synopsis, 1);
  ptdp_cmdline_add(c, sopt, "ptdp-sim's keys:");
  ptdp_cmdline_add(c, topt, "ptdp-train's keys:");
}

/* --help or --version: the answer on stdout (1), else 0. */
static int answered(const ptdp_cmdline *c, int argc, char **argv)
{
  if (!ptdp_cmdline_answer(c, argc, argv, stdout)) return 0;
  if (ptdp_cmdline_asks(argc, argv) == PTDP_ASK_HELP) {
    printf("\nhardware file keys:\n");
    ptdp_sim_hw_print_help(stdout);
  }
  return 1;
}

/* The keys from argv; *done when --help or --version answered. Warns about keys without effect
 * for the layout's world size (world-size, or t p when it is 0). */
static int parse(ptdp_cmdline *c, int argc, char **argv, const ptdp_model_keys *a, const ptdp_sim_options *so, int *done)
{
  *done = answered(c, argc - 1, argv + 1);
  if (*done) return 0;
  PTDP_CHECK(argc > 1, "no deck: usage: ptdp-sim DECK [--key value ...] --hardware FILE (--help lists the keys)");
  PTDP_CALL(ptdp_cmdline_parse(c, argc - 1, argv + 1));
  PTDP_CHECK(so->hardware[0], "no hardware file: give --hardware FILE (inputs/hw/*.hw)");
  const long long world =
    so->world_size ? so->world_size : a->tensor_model_parallel_size * a->pipeline_model_parallel_size;
  ptdp_cmdline_warn_unused(c, world < (1LL << 30) ? (int)world : 0, stderr);
  return 0;
}

/* Predict, print, and write the run file if asked. */
static int simulate(const ptdp_model_keys *a, ptdp_options *topt, const ptdp_sim_hw *hw, const ptdp_sim_options *so)
{
  ptdp_sim_result *r = calloc(1, sizeof *r);
  if (!r) return PTDP_FAIL(PTDP_ERR_MEM, "out of memory");
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  int err = ptdp_sim_run(a, hw, so, r);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  if (!err) err = ptdp_sim_range_run(a, hw, so, r); /* the range from the file's provenance */
  if (!err) {
    ptdp_sim_print(a, hw, so, r, stdout);
    printf("simulated in (ms): %.3f\n", 1e3 * (t1.tv_sec - t0.tv_sec) + 1e-6 * (t1.tv_nsec - t0.tv_nsec));
    if (so->explain) ptdp_sim_explain(a, so, r, stdout);
    if (so->explain) ptdp_sim_range_explain(hw, r, 5, stdout);
    if (so->explain) ptdp_sim_hw_explain(hw, stdout);
    if (so->out[0]) err = ptdp_sim_write_runfile(so->out, a, topt, hw, so, r);
    if (!err && so->out[0]) printf("[run file] %s\n", so->out);
  }
  free(r);
  return err;
}

/* --calibrate: the runs read, the fit, its report, MINE.hw. */
static int calibrate(int argc, char **argv, const ptdp_options *sopt, const ptdp_sim_options *so, const ptdp_sim_hw *hw)
{
  PTDP_CHECK(so->out[0], "--calibrate: give --out MINE.hw, the calibrated hardware file to write");
  char list[PTDP_OPT_STRLEN], cmd[2048] = "ptdp-sim";
  snprintf(list, sizeof list, "%s", so->calibrate);
  for (int i = 1; i < argc; i++) { /* the command, each run file by its base name */
    const char *w = strrchr(argv[i], '/') && strstr(argv[i], ".h5") ? strrchr(argv[i], '/') + 1 : argv[i];
    if (strlen(cmd) + strlen(w) + 2 < sizeof cmd) snprintf(cmd + strlen(cmd), sizeof cmd - strlen(cmd), " %s", w);
  }
  ptdp_sim_cal_run *runs = calloc(64, sizeof *runs);
  ptdp_sim_hw *fitted = malloc(sizeof *fitted);
  ptdp_sim_cal_fit *fit = malloc(sizeof *fit);
  int n = 0, err = runs && fitted && fit ? 0 : PTDP_FAIL(PTDP_ERR_MEM, "out of memory");
  for (char *p = strtok(list, " "); !err && p; p = strtok(NULL, " ")) {
    if (n == 64) err = PTDP_FAIL(PTDP_ERR_INPUT, "--calibrate: at most 64 run files");
    if (!err) err = ptdp_sim_cal_read_run(p, &runs[n++]);
  }
  if (!err) err = ptdp_sim_cal_fit_runs(runs, n, hw, sopt, so, fitted, fit);
  if (!err) ptdp_sim_cal_print(runs, n, fit, stdout);
  if (!err) err = ptdp_sim_cal_write(so->hardware, so->out, hw, runs, n, fit, cmd);
  if (!err) printf("[hardware file] %s\n", so->out);
  free(runs);
  free(fitted);
  free(fit);
  return err;
}

static int run(int argc, char **argv)
{
  ptdp_sim_options so;
  ptdp_options sopt = {0}, topt = {0};
  ptdp_cmdline c;
  ptdp_args a;
  ptdp_sim_hw hw;
  int done = 0, err = ptdp_sim_options_init(&sopt, &so);
  if (!err) err = ptdp_args_init(&a, &topt);
  sim_cmdline(&c, &sopt, &topt);
  if (!err) err = parse(&c, argc, argv, &a.model, &so, &done);
  if (!err && !done) err = ptdp_sim_options_read_hw(&sopt, &so, &hw);
  if (!err && !done) err = so.calibrate[0] ? calibrate(argc, argv, &sopt, &so, &hw) : simulate(&a.model, &topt, &hw, &so);
  ptdp_options_free(&sopt);
  ptdp_options_free(&topt);
  return err;
}

int main(int argc, char **argv)
{
  int err = run(argc, argv);
  return err ? 1 : 0;
}
