/* ptdp-sim --calibrate's fit (ptdp/calibrate.h) on synthetic runs with known constants (1 rank,
 * no MPI): the runs' "measurements" are ptdp_sim_run's own predictions on a CPU whose groups of
 * hardware values are off from BASE's by known factors (GEMMs 1.3x slower, the CPU operators
 * 0.7x, the optimizer 1.5x, collectives 2x), for the four layouts jobs/calibrate.sh runs (t1,
 * t2, d2, t1 with full recomputation).  The fit must recover each factor to 1e-6 and leave the
 * groups the runs do not depend on (a GPU's memory-bound operators, flash attention, links
 * between nodes) unfitted at 1.  Then MINE.hw as written: read back, each fitted value BASE's
 * times its factor and tagged MEASURED with the runs' host, the others with BASE's tags. */
#include "ptdp/calibrate.h"
#include "ptdp/error.h"

#include "../expect.h"
#include "sim_test.h"

#include <math.h>
#include <stdlib.h>
#include <unistd.h>

#define BASE_HW                                                                                                     \
  "name = test cpu\n"                                                                                               \
  "peak-tflops-32 = 0.1  # ASSUMED a round number for the test\n"                                                   \
  "gemm-efficiency = 1  # ASSUMED no tile model\n"                                                                  \
  "memory-bandwidth-gbs = 20  # ASSUMED a round number\n"                                                           \
  "memory-gb = 25  # ASSUMED a round number\n"                                                                      \
  "gpus-per-node = 1024  # ASSUMED every rank on one node\n"                                                        \
  "cores-per-node = 8  # ASSUMED enough cores for every rank\n"                                                     \
  "intra-node-bandwidth-gbs = 5  # ASSUMED a round number\n"                                                        \
  "intra-node-latency-us = 1  # ASSUMED a round number\n"                                                           \
  "inter-node-bandwidth-gbs = 5  # DERIVED \"intra-node-bandwidth-gbs\" the same: one node\n"                       \
  "cpu-elementwise-ns = 0.1  # ASSUMED a round number\n"                                                            \
  "cpu-dropout-ns = 4  # ASSUMED a round number\n"                                                                  \
  "cpu-layernorm-forward-ns = 1  # ASSUMED a round number\n"                                                        \
  "cpu-layernorm-backward-ns = 3  # ASSUMED a round number\n"                                                       \
  "cpu-gelu-forward-ns = 0.5  # ASSUMED a round number\n"                                                           \
  "cpu-gelu-backward-ns = 0.6  # ASSUMED a round number\n"                                                          \
  "cpu-bias-grad-ns = 1.5  # ASSUMED a round number\n"                                                              \
  "cpu-softmax-forward-ns = 1  # ASSUMED a round number\n"                                                          \
  "cpu-softmax-backward-ns = 0.5  # ASSUMED a round number\n"                                                       \
  "cpu-cross-entropy-forward-ns = 0.3  # ASSUMED a round number\n"                                                  \
  "cpu-cross-entropy-grad-ns = 0.25  # ASSUMED a round number\n"                                                    \
  "cpu-optimizer-ns = 4  # MEASURED testhost 2026-11-26 \"a test\" 4 ns\n"

static const char *tmp(const char *what)
{
  static char p[2][4096];
  static int k;
  k ^= 1;
  snprintf(p[k], sizeof p[k], "%s/test_sim_calibrate.%d.%s", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp",
           (int)getpid(), what);
  return p[k];
}

/* A synthetic run of layout keys on world ranks, "measured" on truth. */
static int make_run(ptdp_sim_cal_run *r, const char *label, const char *keys, int world, const ptdp_sim_hw *truth)
{
  memset(r, 0, sizeof *r);
  snprintf(r->path, sizeof r->path, "%s", label);
  snprintf(r->label, sizeof r->label, "%s", label);
  snprintf(r->hosts, sizeof r->hosts, "synthhost");
  char line[1024];
  snprintf(line, sizeof line,
           "--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 64 --max-position-embeddings 64 "
           "--vocab-size 512 --micro-batch-size 2 --global-batch-size 8 --hidden-dropout 0.1 --attention-dropout 0.1 %s",
           keys);
  ptdp_options o;
  PTDP_CALL(sim_test_parse_line(&r->args, &o, line));
  ptdp_options_free(&o);
  r->world = world;
  ptdp_sim_options so, run_so;
  ptdp_options sopt;
  ptdp_sim_options_init(&sopt, &so);
  ptdp_options_free(&sopt);
  ptdp_sim_cal_options(r, NULL, &so, truth, &run_so);
  ptdp_sim_result *res = calloc(1, sizeof *res);
  int err = ptdp_sim_run(&r->args.model, truth, &run_so, res);
  for (int q = 0; !err && q < PTDP_SIM_CAL_QUANTITIES; q++) r->measured[q] = ptdp_sim_cal_predict(res, r, q);
  free(res);
  return err;
}

int main(void)
{
  FILE *f = fopen(tmp("base.hw"), "w");
  EXPECT(f != NULL, "write %s", tmp("base.hw"));
  if (!f) return 1;
  fputs(BASE_HW, f);
  fclose(f);
  static ptdp_sim_hw base, truth, fitted, back;
  EXPECT(ptdp_sim_hw_read(tmp("base.hw"), &base) == 0, "read BASE: %s", ptdp_error_message());
  /* the truth: groups 0 (GEMM rate), 3 (CPU operators), 4 (optimizer), 5 (collectives in a node) */
  const double want[PTDP_SIM_CAL_GROUPS] = {1.3, 1, 1, 0.7, 1.5, 2.0, 1};
  truth = base;
  for (int g = 0; g < PTDP_SIM_CAL_GROUPS; g++) ptdp_sim_cal_apply(&truth, g, want[g]);
  EXPECT(near(truth.gemm_efficiency, 1 / 1.3, 1e-12) && near(truth.cpu_op[PTDP_SIM_CPU_DROPOUT], 4e-9 * 0.7, 1e-12) &&
           near(truth.intra_bandwidth, 2.5e9, 1e-12),
         "a rate divided by its factor, a time multiplied");

  static ptdp_sim_cal_run runs[4];
  EXPECT(make_run(&runs[0], "t1", "", 1, &truth) == 0, "t1");
  EXPECT(make_run(&runs[1], "t2", "--tensor-model-parallel-size 2", 2, &truth) == 0, "t2");
  EXPECT(make_run(&runs[2], "d2", "", 2, &truth) == 0, "d2");
  EXPECT(make_run(&runs[3], "rec", "--recompute-granularity full", 1, &truth) == 0, "rec");
  EXPECT(runs[1].measured[PTDP_SIM_CAL_TP_COMM] > 0 && isnan(runs[0].measured[PTDP_SIM_CAL_TP_COMM]),
         "tp-comm measured where t > 1 only");

  ptdp_sim_options so;
  ptdp_options sopt;
  ptdp_sim_options_init(&sopt, &so);
  static ptdp_sim_cal_fit fit;
  EXPECT(ptdp_sim_cal_fit_runs(runs, 4, &base, &sopt, &so, &fitted, &fit) == 0, "fit: %s", ptdp_error_message());
  ptdp_sim_cal_print(runs, 4, &fit, stdout);
  for (int g = 0; g < PTDP_SIM_CAL_GROUPS; g++) {
    const int dep = g == 0 || g == 3 || g == 4 || g == 5;
    EXPECT(fit.fitted[g] == dep, "group %s fitted %d, expected %d", ptdp_sim_cal_group_of(g)->name, fit.fitted[g], dep);
    EXPECT(fabs(fit.factor[g] - want[g]) <= 1e-6 * want[g], "group %s: factor %.9f, true %.9f",
           ptdp_sim_cal_group_of(g)->name, fit.factor[g], want[g]);
  }
  EXPECT(fit.rms_after < 1e-9 && fit.rms_before > 0.1, "residuals %g before, %g after", fit.rms_before, fit.rms_after);

  /* a fit from one run of one rank cannot see the collectives: not fitted */
  static ptdp_sim_cal_fit one;
  EXPECT(ptdp_sim_cal_fit_runs(runs, 1, &base, &sopt, &so, &fitted, &one) == 0 && !one.fitted[5] &&
           one.factor[5] == 1,
         "one rank: the collectives not fitted");

  /* MINE.hw: fitted values BASE's x factor (rate / factor), MEASURED on the runs' host; the rest BASE's */
  EXPECT(ptdp_sim_cal_write(tmp("base.hw"), tmp("mine.hw"), &base, runs, 4, &fit, "ptdp-sim --calibrate t1.h5") == 0,
         "write MINE: %s", ptdp_error_message());
  EXPECT(ptdp_sim_hw_read(tmp("mine.hw"), &back) == 0, "MINE reads back: %s", ptdp_error_message());
  const ptdp_sim_hw_tag *t = ptdp_sim_hw_tag_of(&back, "cpu-dropout-ns");
  EXPECT(near(back.cpu_op[PTDP_SIM_CPU_DROPOUT], 2.8e-9, 1e-5) && t->kind == PTDP_SIM_PROV_MEASURED &&
           !strcmp(t->machine, "synthhost") && !strcmp(t->basis, "ptdp-sim --calibrate t1.h5") &&
           strstr(t->detail, "fit of 4 run(s)") && strstr(t->detail, "CPU operators time x 0.7000"),
         "cpu-dropout-ns %g, %s on %s: %s", back.cpu_op[PTDP_SIM_CPU_DROPOUT], ptdp_sim_prov_name(t->kind), t->machine,
         t->detail);
  t = ptdp_sim_hw_tag_of(&back, "gemm-efficiency");
  EXPECT(near(back.gemm_efficiency, 1 / 1.3, 1e-5) && t->kind == PTDP_SIM_PROV_MEASURED, "gemm-efficiency %g",
         back.gemm_efficiency);
  t = ptdp_sim_hw_tag_of(&back, "intra-node-bandwidth-gbs");
  EXPECT(near(back.intra_bandwidth, 2.5e9, 1e-5) && t->kind == PTDP_SIM_PROV_MEASURED, "intra bandwidth %g",
         back.intra_bandwidth);
  t = ptdp_sim_hw_tag_of(&back, "memory-bandwidth-gbs");
  const ptdp_sim_hw_tag *ti = ptdp_sim_hw_tag_of(&back, "inter-node-bandwidth-gbs");
  EXPECT(back.memory_bandwidth == 20e9 && t->kind == PTDP_SIM_PROV_ASSUMED && ti->kind == PTDP_SIM_PROV_DERIVED &&
           back.inter_bandwidth == 5e9,
         "unfitted values keep BASE's value and tag");
  /* a GEMM rate above the file's peak (gemm-efficiency past 1): the excess goes to the peak */
  fit.factor[0] = 0.5;
  EXPECT(ptdp_sim_cal_write(tmp("base.hw"), tmp("mine.hw"), &base, runs, 4, &fit, "x") == 0 &&
           ptdp_sim_hw_read(tmp("mine.hw"), &back) == 0,
         "write with gemm-efficiency past 1");
  EXPECT(back.gemm_efficiency == 1 && near(back.peak_flops_32, 0.2e12, 1e-5) &&
           ptdp_sim_hw_tag_of(&back, "peak-tflops-32")->kind == PTDP_SIM_PROV_MEASURED,
         "gemm-efficiency 1, peak 0.2 TFLOP/s: %g %g", back.gemm_efficiency, back.peak_flops_32);
  ptdp_options_free(&sopt);
  remove(tmp("base.hw"));
  remove(tmp("mine.hw"));
  printf("test_sim_calibrate: %d checks passed, %d failed\n", n_pass, n_fail);
  return n_fail ? 1 : 0;
}
