/* ptdp-sim DECK [--key value ...] --hardware FILE [--world-size N] [--out FILE.h5] [--explain]
 *
 * Predicts iteration time, throughput, MFU, pipeline bubble and memory per GPU of the layout the
 * deck and keys describe (ptdp-train's keys, parsed by its option table) on the cluster the
 * hardware file describes.  No MPI: one process, a few milliseconds. */
#include "ptdp/error.h"
#include "ptdp/sim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void usage(FILE *out)
{
  fprintf(out, "usage: ptdp-sim DECK [--key value ...] --hardware FILE [--world-size N] [--out FILE.h5] [--explain]\n"
               "ptdp-train's keys (ptdp-train --help) and ptdp-sim's own:\n");
}

/* Split argv (after the program name) into ptdp-sim's keys and the rest (deck and ptdp-train
 * keys), each keeping its order; a key's value goes with it. */
static int split_args(const ptdp_options *simopt, int argc, char **argv, char **mine, int *nmine, char **rest,
                      int *nrest)
{
  *nmine = *nrest = 0;
  for (int i = 0; i < argc; i++) {
    char key[256];
    const char *arg = argv[i];
    int is_mine = 0;
    if (strncmp(arg, "--", 2) == 0) {
      const char *eq = strchr(arg, '=');
      snprintf(key, sizeof key, "%.*s", eq ? (int)(eq - arg) : (int)strlen(arg), arg);
      is_mine = ptdp_options_find(simopt, key + 2) >= 0;
      char **to = is_mine ? mine : rest;
      int *n = is_mine ? nmine : nrest;
      to[(*n)++] = argv[i];
      const int idx = ptdp_options_find(simopt, key + 2);
      const int is_bool = is_mine && simopt->table[idx].type == PTDP_OPT_BOOL;
      if (!eq && i + 1 < argc && strncmp(argv[i + 1], "--", 2) != 0 &&
          (!is_bool || !strcmp(argv[i + 1], "true") || !strcmp(argv[i + 1], "false")))
        to[(*n)++] = argv[++i];
    } else {
      rest[(*nrest)++] = argv[i];
    }
  }
  return 0;
}

static int run(int argc, char **argv)
{
  for (int i = 1; i < argc; i++)
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      usage(stdout);
      ptdp_sim_options so;
      ptdp_options sopt;
      PTDP_CALL(ptdp_sim_options_init(&sopt, &so));
      ptdp_options_print_help(&sopt, stdout);
      ptdp_options_free(&sopt);
      printf("\nhardware file keys:\n");
      ptdp_sim_hw_print_help(stdout);
      printf("\nptdp-train keys:\n");
      ptdp_args_print_help(stdout);
      return 0;
    }
  PTDP_CHECK(argc > 1, "no deck: usage: ptdp-sim DECK [--key value ...] --hardware FILE");
  ptdp_sim_options so;
  ptdp_options sopt, topt;
  ptdp_args a;
  char **mine = calloc((size_t)argc, sizeof *mine), **rest = calloc((size_t)argc, sizeof *rest);
  PTDP_CHECK(mine && rest, "out of memory");
  int nmine, nrest, err = ptdp_sim_options_init(&sopt, &so);
  if (!err) err = split_args(&sopt, argc - 1, argv + 1, mine, &nmine, rest, &nrest);
  if (!err) err = ptdp_options_parse_args(&sopt, nmine, mine);
  if (!err) err = ptdp_args_parse(&a, &topt, nrest, rest);
  const int fusion_given = !err && sopt.source[ptdp_options_find(&sopt, "fusion")] != PTDP_SRC_DEFAULT;
  free(mine);
  free(rest);
  ptdp_options_free(&sopt);
  PTDP_CALL(err);
  err = so.hardware[0] ? 0 : ptdp_error_push(PTDP_ERR_INPUT, __FILE__, __LINE__, __func__, "no hardware file: give --hardware FILE (inputs/hw/*.hw)");
  ptdp_sim_hw hw;
  if (!err) err = ptdp_sim_hw_read(so.hardware, &hw);
  /* a CPU node's file (jobs/measure_cpu_hw.sh) describes ptdp's CPU backend: model it unless told otherwise */
  if (!err && !fusion_given && ptdp_sim_hw_is_cpu(&hw)) so.fusion = PTDP_SIM_FUSION_CPU;
  ptdp_sim_result *r = calloc(1, sizeof *r);
  if (!err && !r) err = ptdp_error_push(PTDP_ERR_INPUT, __FILE__, __LINE__, __func__, "out of memory");
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  if (!err) err = ptdp_sim_run(&a, &hw, &so, r);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  if (!err) {
    ptdp_sim_print(&a, &hw, &so, r, stdout);
    printf("simulated in (ms): %.3f\n", 1e3 * (t1.tv_sec - t0.tv_sec) + 1e-6 * (t1.tv_nsec - t0.tv_nsec));
    if (so.explain) ptdp_sim_explain(&a, &so, r, stdout);
    if (so.out[0]) err = ptdp_sim_write_runfile(so.out, &a, &topt, &hw, &so, r);
    if (!err && so.out[0]) printf("[run file] %s\n", so.out);
  }
  free(r);
  ptdp_options_free(&topt);
  return err;
}

int main(int argc, char **argv)
{
  int err = run(argc, argv);
  return err ? 1 : 0;
}
