/* The iteration time's range from the hardware file's provenance (ptdp_sim_range_run), by hand:
 *   - a layout whose iteration is proportional to one value: the test device with its peaks
 *     made enormous and no launch cost, one rank, so that every operator is memory-bound and
 *     T = C / memory-bandwidth.  Its band b gives exactly T / (1 + b) .. T / (1 - b): 5% when
 *     the value is MEASURED, 10% DERIVED, 20% ASSUMED (the range widens with the tag), 2 x 1.5%
 *     when a --calibrate figure says "standard error 1.5%"; every other banded value moves
 *     nothing;
 *   - two values at once (launch costs added, T = Tm + L): the range is the root sum of squares
 *     of the two one-at-a-time changes, the worst case their sum;
 *   - the central figures are untouched: the result's iteration before and after, and a fresh
 *     prediction, bit for bit;
 *   - what is banded: never a peak (the efficiency carries the rate's band, the better known of
 *     the two: gemm-efficiency ASSUMED with a MEASURED peak gets 5%), a count (sm-count,
 *     collective-sms) or a value of 0;
 *   - --explain's list puts the value that moves the range most first. */
#include "ptdp/error.h"
#include "ptdp/sim.h"

#include "../expect.h"
#include "sim_test.h"

#include <stdlib.h>
#include <string.h>

static int parse(ptdp_args *a, ptdp_options *o)
{
  char buf[] = "--num-layers 4 --hidden-size 1024 --num-attention-heads 16 --seq-length 512 --vocab-size 50000 "
               "--micro-batch-size 2 --global-batch-size 16 --bf16 true";
  return sim_test_parse_line(a, o, buf);
}

static ptdp_sim_hw_tag *tag(ptdp_sim_hw *hw, const char *key)
{
  return (ptdp_sim_hw_tag *)ptdp_sim_hw_tag_of(hw, key);
}

static const ptdp_sim_sensitivity *find(const ptdp_sim_result *r, const char *key)
{
  for (int i = 0; i < r->range.n; i++)
    if (!strcmp(ptdp_sim_hw_key(r->range.v[i].key), key)) return &r->range.v[i];
  return NULL;
}

/* The test device, every operator memory-bound: T = C / memory-bandwidth. */
static ptdp_sim_hw memory_bound(void)
{
  ptdp_sim_hw hw = sim_test_gpu();
  hw.peak_flops_16 = hw.peak_flops_32 = 1e30;
  hw.kernel_launch = 0;
  return hw;
}

static void check_one_value(const ptdp_args *a, ptdp_sim_options *so, ptdp_sim_result *r)
{
  ptdp_sim_hw hw = memory_bound();
  static const struct {
    ptdp_sim_prov kind;
    const char *detail;
    double band;
  } cases[] = {{PTDP_SIM_PROV_MEASURED, "a 1 GiB copy", 0.05},
               {PTDP_SIM_PROV_DERIVED, "the copy x 0.9", 0.10},
               {PTDP_SIM_PROV_ASSUMED, "a datasheet", 0.20},
               {PTDP_SIM_PROV_DEFAULT, "", 0.20},
               {PTDP_SIM_PROV_MEASURED,
                "fit of 4 run(s) (a.h5 t1): memory time x 1.0100 (standard error 1.5%) of BASE's 1000", 0.03}};
  double width[5];
  for (int c = 0; c < 5; c++) {
    ptdp_sim_hw_tag *t = tag(&hw, "memory-bandwidth-gbs");
    t->kind = cases[c].kind;
    snprintf(t->detail, sizeof t->detail, "%s", cases[c].detail);
    EXPECT(ptdp_sim_run(&a->model, &hw, so, r) == 0, "run");
    const double T = r->iteration, b = cases[c].band;
    EXPECT(ptdp_sim_range_run(&a->model, &hw, so, r) == 0 && r->ranged, "range");
    EXPECT(r->iteration == T, "the central iteration untouched by the range");
    EXPECT(near(r->range.lo, T / (1 + b), 1e-9) && near(r->range.hi, T / (1 - b), 1e-9),
           "%s band %g: range %.9g .. %.9g, by hand %.9g .. %.9g", ptdp_sim_prov_name(cases[c].kind), b, r->range.lo,
           r->range.hi, T / (1 + b), T / (1 - b));
    EXPECT(near(r->range.worst_lo, r->range.lo, 1e-12) && near(r->range.worst_hi, r->range.hi, 1e-12),
           "one value: the worst case is the range");
    const ptdp_sim_sensitivity *v = find(r, "memory-bandwidth-gbs");
    EXPECT(v && near(v->band, b, 1e-12) && v->calibrated == (c == 4), "memory-bandwidth-gbs's band %g",
           v ? v->band : -1);
    for (int i = 0; i < r->range.n; i++)
      if (&r->range.v[i] != v)
        EXPECT(near(r->range.v[i].at_lo, T, 1e-12) && near(r->range.v[i].at_hi, T, 1e-12), "%s moves nothing here",
               ptdp_sim_hw_key(r->range.v[i].key));
    width[c] = r->range.hi - r->range.lo;
  }
  EXPECT(width[0] < width[1] && width[1] < width[2], "the range widens MEASURED %g < DERIVED %g < ASSUMED %g",
         width[0], width[1], width[2]);
}

static void check_two_values(const ptdp_args *a, ptdp_sim_options *so, ptdp_sim_result *r)
{
  ptdp_sim_hw hw = memory_bound();
  tag(&hw, "memory-bandwidth-gbs")->kind = PTDP_SIM_PROV_MEASURED;
  EXPECT(ptdp_sim_run(&a->model, &hw, so, r) == 0, "run without launches");
  const double Tm = r->iteration;
  hw.kernel_launch = 20e-6;
  tag(&hw, "kernel-launch-us")->kind = PTDP_SIM_PROV_ASSUMED;
  EXPECT(ptdp_sim_run(&a->model, &hw, so, r) == 0, "run with launches");
  const double T = r->iteration, L = T - Tm;
  EXPECT(L > 0.05 * T, "the launches are a part of the iteration worth banding (%g of %g s)", L, T);
  EXPECT(ptdp_sim_range_run(&a->model, &hw, so, r) == 0, "range");
  /* the bandwidth's 5% changes Tm by Tm (1/0.95 - 1) up and Tm (1 - 1/1.05) down; the launches' 20%: L 0.2 */
  const double bu = Tm * (1 / 0.95 - 1), bd = Tm * (1 - 1 / 1.05), l = 0.2 * L;
  EXPECT(near(r->range.hi, T + sqrt(bu * bu + l * l), 1e-9) && near(r->range.lo, T - sqrt(bd * bd + l * l), 1e-9),
         "two values: root sum of squares %.9g .. %.9g, by hand %.9g .. %.9g", r->range.lo, r->range.hi,
         T - sqrt(bd * bd + l * l), T + sqrt(bu * bu + l * l));
  EXPECT(near(r->range.worst_hi, T + bu + l, 1e-9) && near(r->range.worst_lo, T - bd - l, 1e-9),
         "two values: the worst case is the sum");
  /* --explain: the launches (0.4 L across their band) against the bandwidth (about 0.1 Tm) */
  FILE *f = tmpfile();
  ptdp_sim_range_explain(&hw, r, 5, f);
  rewind(f);
  char line[1024], first[1024] = "";
  while (fgets(line, sizeof line, f))
    if (!strncmp(line, "+- ", 3) && !first[0]) snprintf(first, sizeof first, "%s", line);
  fclose(f);
  const char *top = 0.4 * L > Tm * (1 / 0.95 - 1 / 1.05) ? "+- kernel-launch-us = " : "+- memory-bandwidth-gbs = ";
  EXPECT(!strncmp(first, top, strlen(top)), "--explain names the largest first: %s", first);
}

static void check_what_is_banded(const ptdp_args *a, ptdp_sim_options *so, ptdp_sim_result *r)
{
  ptdp_sim_hw hw = sim_test_gpu();
  hw.collective_sms = 16;
  tag(&hw, "peak-tflops-16")->kind = PTDP_SIM_PROV_MEASURED;
  tag(&hw, "gemm-efficiency")->kind = PTDP_SIM_PROV_ASSUMED;
  tag(&hw, "intra-node-latency-us")->kind = PTDP_SIM_PROV_DERIVED;
  EXPECT(ptdp_sim_run(&a->model, &hw, so, r) == 0, "run");
  ptdp_sim_result *fresh = malloc(sizeof *fresh);
  *fresh = *r;
  EXPECT(ptdp_sim_range_run(&a->model, &hw, so, r) == 0, "range");
  EXPECT(!memcmp(fresh->comp, r->comp, sizeof r->comp) && fresh->iteration == r->iteration &&
           fresh->mem_total == r->mem_total && fresh->bubble == r->bubble,
         "the central figures bit for bit");
  EXPECT(ptdp_sim_run(&a->model, &hw, so, fresh) == 0 && fresh->iteration == r->iteration,
         "a fresh prediction after the range: the same iteration");
  free(fresh);
  const ptdp_sim_sensitivity *eta = find(r, "gemm-efficiency"), *lat = find(r, "intra-node-latency-us");
  EXPECT(eta && near(eta->band, 0.05, 1e-12) && eta->kind == PTDP_SIM_PROV_MEASURED &&
           !strcmp(ptdp_sim_hw_key(eta->band_key), "peak-tflops-16"),
         "gemm-efficiency ASSUMED beside a MEASURED peak: the rate's band is the peak's 5%%");
  EXPECT(lat && near(lat->band, 0.10, 1e-12), "a DERIVED latency: 10%%");
  EXPECT(!find(r, "peak-tflops-16") && !find(r, "peak-tflops-32") && !find(r, "sm-count") &&
           !find(r, "collective-sms") && !find(r, "memory-gb") && !find(r, "gpus-per-node") && !find(r, "gemm-tile-m"),
         "no peak, count or size is banded");
  EXPECT(!find(r, "gemm-k0") && !find(r, "cpu-dropout-ns"), "values of 0 are not banded");
  EXPECT(r->range.lo < r->iteration && r->iteration < r->range.hi && r->range.worst_lo <= r->range.lo &&
           r->range.hi <= r->range.worst_hi,
         "worst %g <= %g < T %g < %g <= worst %g", r->range.worst_lo, r->range.lo, r->iteration, r->range.hi,
         r->range.worst_hi);
  FILE *f = tmpfile();
  ptdp_sim_range_print(r, f);
  rewind(f);
  char line[1024] = "";
  EXPECT(fgets(line, sizeof line, f) && !strncmp(line, "iteration time range (s): ", 26), "the report's line: %s", line);
  fclose(f);
}

int main(void)
{
  ptdp_sim_options so;
  ptdp_options sopt, o;
  ptdp_args a;
  ptdp_sim_result *r = calloc(1, sizeof *r);
  ptdp_sim_options_init(&sopt, &so);
  ptdp_options_free(&sopt);
  EXPECT(parse(&a, &o) == 0, "parse");
  ptdp_options_free(&o);
  check_one_value(&a, &so, r);
  check_two_values(&a, &so, r);
  check_what_is_banded(&a, &so, r);
  free(r);
  return expect_summary("test_sim_range");
}
