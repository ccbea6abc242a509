/* The iteration time's range from the hardware file's provenance (ptdp/sim.h; ptdp-sim(1),
 * UNCERTAINTY).  Each value that prices time continuously is moved to the two ends of its band,
 * x (1 - b) and x (1 + b), alone, and the iteration predicted again: T_i- and T_i+.  Value i
 * can lengthen the iteration by u_i = max(0, T_i- - T, T_i+ - T) and shorten it by
 * d_i = max(0, T - T_i-, T - T_i+) (a rate's lower end lengthens, a latency's upper end does).
 * The values come from separate measurements and sources, so their errors are taken as
 * independent: the range is T - sqrt(sum d_i^2) .. T + sqrt(sum u_i^2) (first order: the
 * spread of a sum of independent changes); the worst case, every value at its worse end at
 * once, T - sum d_i .. T + sum u_i, is kept beside it. */
#include "ptdp/error.h"
#include "ptdp/sim.h"

#include "sim_hw.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

double ptdp_sim_band_of(const ptdp_sim_hw_tag *t, int *calibrated)
{
  *calibrated = 0;
  if (t->kind == PTDP_SIM_PROV_MEASURED) {
    /* ptdp-sim --calibrate's figure: "... time x F (standard error X%) ..." */
    const char *se = strstr(t->detail, "(standard error ");
    const double x = se ? strtod(se + strlen("(standard error "), NULL) / 100 : 0;
    if (x > 0) {
      *calibrated = 1;
      return 2 * x < PTDP_SIM_BAND_MAX ? 2 * x : PTDP_SIM_BAND_MAX;
    }
    return PTDP_SIM_BAND_MEASURED;
  }
  return t->kind == PTDP_SIM_PROV_DERIVED ? PTDP_SIM_BAND_DERIVED : PTDP_SIM_BAND_ASSUMED;
}

static int key_index(const char *key)
{
  for (int i = 0; i < PTDP_SIM_HW_KEYS; i++)
    if (!strcmp(ptdp_sim_hw_key(i), key)) return i;
  return -1;
}

/* Whether key i is banded: it prices time continuously (ptdp_sim_hw_field) and is not a count.
 * The peaks are not banded themselves: a GEMM runs at R eta and flash attention at R eta_flash,
 * so the efficiency carries the uncertainty of the rate (a datasheet peak is exact as a
 * definition; a CPU file's peak is the measured rate and its efficiency 1 a convention), with
 * the band of the better known of the two (band_of_rate). */
static int banded(const char *key)
{
  return strcmp(key, "peak-tflops-16") && strcmp(key, "peak-tflops-32") && strcmp(key, "collective-sms");
}

/* The band of key i, and the key whose tag set it. */
static double band_of_key(const ptdp_model_keys *a, const ptdp_sim_hw *hw, int i, int *band_key, int *calibrated)
{
  const char *key = ptdp_sim_hw_key(i);
  double b = ptdp_sim_band_of(&hw->tag[i], calibrated);
  *band_key = i;
  int peak = -1;
  if (!strcmp(key, "gemm-efficiency")) peak = key_index(a->fp16 || a->bf16 ? "peak-tflops-16" : "peak-tflops-32");
  if (!strncmp(key, "flash-attention-efficiency", strlen("flash-attention-efficiency"))) peak = key_index("peak-tflops-16");
  if (peak >= 0 && hw->tag[peak].kind != PTDP_SIM_PROV_DEFAULT) {
    int cal;
    const double bp = ptdp_sim_band_of(&hw->tag[peak], &cal);
    if (bp < b) {
      b = bp;
      *band_key = peak;
      *calibrated = cal;
    }
  }
  return b;
}

int ptdp_sim_range_run(const ptdp_model_keys *a, const ptdp_sim_hw *hw, const ptdp_sim_options *o, ptdp_sim_result *r)
{
  ptdp_sim_hw *h = malloc(sizeof *h);
  ptdp_sim_result *s = malloc(sizeof *s);
  int err = h && s ? 0 : PTDP_FAIL(PTDP_ERR_MEM, "out of memory");
  ptdp_sim_range *rg = &r->range;
  memset(rg, 0, sizeof *rg);
  if (!err) *h = *hw;
  const double T = r->iteration;
  double up2 = 0, down2 = 0, up = 0, down = 0;
  for (int i = 0; !err && i < PTDP_SIM_HW_KEYS; i++) {
    const char *key = ptdp_sim_hw_key(i);
    double *f = banded(key) ? ptdp_sim_hw_field(h, key) : NULL;
    if (!f || !(*f > 0)) continue; /* not a time's price, or 0: nothing to move */
    ptdp_sim_sensitivity *v = &rg->v[rg->n++];
    v->key = i;
    v->band = band_of_key(a, hw, i, &v->band_key, &v->calibrated);
    v->kind = hw->tag[v->band_key].kind;
    const double x = *f;
    *f = x * (1 - v->band);
    err = ptdp_sim_run(a, h, o, s);
    v->at_lo = s->iteration;
    *f = x * (1 + v->band);
    if (!err) err = ptdp_sim_run(a, h, o, s);
    v->at_hi = s->iteration;
    *f = x;
    const double u = fmax(0, fmax(v->at_lo - T, v->at_hi - T)), d = fmax(0, fmax(T - v->at_lo, T - v->at_hi));
    up2 += u * u;
    down2 += d * d;
    up += u;
    down += d;
  }
  free(h);
  free(s);
  PTDP_CALL(err);
  rg->lo = T - sqrt(down2);
  rg->hi = T + sqrt(up2);
  rg->worst_lo = T - down;
  rg->worst_hi = T + up;
  r->ranged = 1;
  return 0;
}

void ptdp_sim_range_print(const ptdp_sim_result *r, FILE *out)
{
  if (!r->ranged) return;
  const ptdp_sim_range *rg = &r->range;
  int cal = 0;
  for (int i = 0; i < rg->n; i++) cal |= rg->v[i].calibrated;
  fprintf(out,
          "iteration time range (s): %.6g .. %.6g (provenance bands MEASURED +-%g%%, DERIVED +-%g%%, ASSUMED +-%g%%%s; "
          "root sum of squares of %d values' one-at-a-time changes; worst case %.6g .. %.6g)\n",
          rg->lo, rg->hi, 100 * PTDP_SIM_BAND_MEASURED, 100 * PTDP_SIM_BAND_DERIVED, 100 * PTDP_SIM_BAND_ASSUMED,
          cal ? ", calibrated 2 standard errors" : "", rg->n, rg->worst_lo, rg->worst_hi);
}

static double spread(const ptdp_sim_sensitivity *v) { return fabs(v->at_hi - v->at_lo); }

void ptdp_sim_range_explain(const ptdp_sim_hw *hw, const ptdp_sim_result *r, int top, FILE *out)
{
  if (!r->ranged) return;
  const ptdp_sim_range *rg = &r->range;
  int order[PTDP_SIM_HW_KEYS];
  for (int i = 0; i < rg->n; i++) { /* by the change across the band, largest first */
    int j = i;
    for (; j > 0 && spread(&rg->v[order[j - 1]]) < spread(&rg->v[i]); j--) order[j] = order[j - 1];
    order[j] = i;
  }
  double total = 0;
  for (int i = 0; i < rg->n; i++) total += spread(&rg->v[i]) * spread(&rg->v[i]);
  fprintf(out, "iteration range %.6g .. %.6g s: the hardware values that move it most (measure these first):\n", rg->lo,
          rg->hi);
  for (int k = 0; k < rg->n && k < top; k++) {
    const ptdp_sim_sensitivity *v = &rg->v[order[k]];
    const ptdp_sim_hw_tag *t = &hw->tag[v->key];
    const double w = spread(v);
    char via[96] = "";
    if (v->band_key != v->key) snprintf(via, sizeof via, " (%s's band: the rate is R x eta)", ptdp_sim_hw_key(v->band_key));
    fprintf(out, "+- %s = %s  %s +-%.3g%%%s%s: at x(1-b) %.6g s, x(1+b) %.6g s; %.4g s across its band (%.0f%% of the "
                 "squares' sum)",
            ptdp_sim_hw_key(v->key), t->value[0] ? t->value : ptdp_sim_hw_default(v->key), ptdp_sim_prov_name(v->kind),
            100 * v->band, v->calibrated ? " (calibrated: 2 standard errors)" : "", via, v->at_lo, v->at_hi, w,
            total > 0 ? 100 * w * w / total : 0);
    fputc('\n', out);
  }
}
