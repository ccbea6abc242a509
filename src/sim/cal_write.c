/* ptdp-sim --calibrate's output: the fit's report and MINE.hw, BASE's lines with each fitted value
 * replaced and tagged MEASURED (ptdp-hardware(5), PROVENANCE). */
#include "ptdp/calibrate.h"

#include "ptdp/error.h"

#include "sim_hw.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The group a key is fitted in, or -1. */
static int group_of_key(const ptdp_sim_cal_fit *fit, const char *key)
{
  for (int g = 0; g < PTDP_SIM_CAL_GROUPS; g++) {
    const ptdp_sim_cal_group *gr = ptdp_sim_cal_group_of(g);
    for (int k = 0; fit->fitted[g] && gr->keys[k]; k++)
      if (!strcmp(gr->keys[k], key)) return g;
  }
  return -1;
}

void ptdp_sim_cal_print(const ptdp_sim_cal_run *runs, int n, const ptdp_sim_cal_fit *fit, FILE *out)
{
  fprintf(out, "calibration: %d run(s), %d measured quantities, %d Gauss-Newton step(s)\n", n, fit->rows,
          fit->iterations);
  for (int g = 0; g < PTDP_SIM_CAL_GROUPS; g++) {
    const ptdp_sim_cal_group *gr = ptdp_sim_cal_group_of(g);
    if (fit->fitted[g])
      fprintf(out, "calibration: %s (%s%s): time x %.4f (standard error %.1f%%)\n", gr->name, gr->keys[0],
              gr->keys[1] ? ", ..." : "", fit->factor[g], 100 * fit->stderr_ln[g]);
    else fprintf(out, "calibration: %s: not fitted (these runs do not depend on it)\n", gr->name);
  }
  fprintf(out, "calibration: relative residuals of the measured quantities, rms %.2f%% before, %.2f%% after, largest %.2f%%\n",
          100 * fit->rms_before, 100 * fit->rms_after, 100 * fit->max_after);
  fprintf(out, "| run | layout | measured (ms) | BASE (ms) | fitted (ms) | error (%%) |\n| --- | --- | --- | --- | --- | --- |\n");
  for (int i = 0; i < n && i < 64; i++) {
    const double m = runs[i].measured[PTDP_SIM_CAL_ITERATION];
    const char *base = strrchr(runs[i].path, '/');
    fprintf(out, "| %s | %s | %.2f | %.2f | %.2f | %+.1f |\n", base ? base + 1 : runs[i].path, runs[i].label, 1e3 * m,
            1e3 * fit->iter_before[i], 1e3 * fit->iter_after[i], 100 * (fit->iter_after[i] - m) / m);
  }
  static const char *qn[PTDP_SIM_CAL_QUANTITIES] = {"iteration", "forward", "backward", "optimizer", "tp-comm"};
  fprintf(out, "calibration: each quantity fitted, measured / fitted (ms per iteration):\n");
  for (int i = 0; i < n && i < 64; i++) {
    fprintf(out, "  %s:", runs[i].label);
    for (int q = 0; q < PTDP_SIM_CAL_QUANTITIES; q++)
      if (runs[i].measured[q] >= 0 && !isnan(fit->pred_after[i][q]))
        fprintf(out, " %s %.2f / %.2f", qn[q], 1e3 * runs[i].measured[q], 1e3 * fit->pred_after[i][q]);
    fputc('\n', out);
  }
}

/* One word naming the machine: the runs' distinct hosts joined by '+'. */
static void machine_of(const ptdp_sim_cal_run *runs, int n, char *out, size_t len)
{
  out[0] = '\0';
  for (int i = 0; i < n; i++) {
    char hosts[256];
    snprintf(hosts, sizeof hosts, "%s", runs[i].hosts);
    for (char *h = strtok(hosts, ","); h; h = strtok(NULL, ",")) {
      char word[128];
      size_t k = 0;
      for (const char *c = h; *c && k + 1 < sizeof word; c++) word[k++] = isspace((unsigned char)*c) || *c == '"' ? '_' : *c;
      word[k] = '\0';
      const char *at = strstr(out, word);
      const size_t wl = strlen(word);
      const int seen = at && (at == out || at[-1] == '+') && (at[wl] == '\0' || at[wl] == '+');
      if (!seen && word[0] && strlen(out) + wl + 2 < len)
        snprintf(out + strlen(out), len - strlen(out), "%s%s", out[0] ? "+" : "", word);
    }
  }
  if (!out[0]) snprintf(out, len, "unknown-host");
}

/* The figure of a fitted key's tag: the runs, the factor, the residuals. */
static void figure(const ptdp_sim_cal_run *runs, int n, const ptdp_sim_cal_fit *fit, int g, const char *old,
                   char *out, size_t len)
{
  int k = snprintf(out, len, "fit of %d run(s) (", n);
  for (int i = 0; i < n && k > 0 && (size_t)k < len; i++) {
    const char *b = strrchr(runs[i].path, '/');
    k += snprintf(out + k, len - k, "%s%s %s", i ? ", " : "", b ? b + 1 : runs[i].path, runs[i].label);
    if ((size_t)k > len / 2 && i + 1 < n) {
      k += snprintf(out + k, len - k, ", and %d more", n - i - 1);
      break;
    }
  }
  if (k > 0 && (size_t)k < len)
    snprintf(out + k, len - k,
             "): %s time x %.4f (standard error %.1f%%) of BASE's %s; residuals rms %.2f%% (BASE %.2f%%), largest "
             "%.2f%% of the measured quantities",
             ptdp_sim_cal_group_of(g)->name, fit->factor[g], 100 * fit->stderr_ln[g], old, 100 * fit->rms_after,
             100 * fit->rms_before, 100 * fit->max_after);
}

/* The fitted value of key (file units) from BASE's text old, and the peak's factor when
 * gemm-efficiency would pass 1 (*spill: the runs' GEMMs beat the file's peak: a CPU file's peak is
 * itself a measured rate; the excess goes to the peak). */
static double fitted_value(const char *key, double old, int g, const ptdp_sim_cal_fit *fit, double *spill)
{
  const ptdp_sim_cal_group *gr = ptdp_sim_cal_group_of(g);
  double v = gr->rate ? old / fit->factor[g] : old * fit->factor[g];
  if (!strcmp(key, "gemm-efficiency") && v > 1) {
    *spill = v;
    v = 1;
  }
  return v;
}

int ptdp_sim_cal_write(const char *base_path, const char *out_path, const ptdp_sim_hw *base,
                       const ptdp_sim_cal_run *runs, int n, const ptdp_sim_cal_fit *fit, const char *command)
{
  FILE *in = fopen(base_path, "r");
  PTDP_CHECK_IO(in != NULL, "cannot open hardware file '%s': %s", base_path, strerror(errno));
  FILE *out = fopen(out_path, "w");
  if (!out) {
    fclose(in);
    PTDP_CHECK_IO(0, "cannot write '%s': %s", out_path, strerror(errno));
  }
  char machine[64], date[32], cmd[384];
  machine_of(runs, n, machine, sizeof machine);
  const time_t now = time(NULL);
  strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
  snprintf(cmd, sizeof cmd, "%s", command);
  for (char *c = cmd; *c; c++)
    if (*c == '"') *c = '\'';
  const int half = runs[0].args.model.bf16 || runs[0].args.model.fp16;
  const char *peak_key = half ? "peak-tflops-16" : "peak-tflops-32";
  double spill = 0;
  int spill_group = -1, peak_line_seen = 0;
  /* the fitted gemm-efficiency's spill is known before the peak's line: find it first */
  for (int i = 0; i < PTDP_SIM_HW_KEYS; i++) {
    const int g = group_of_key(fit, ptdp_sim_hw_key(i));
    if (g < 0 || strcmp(ptdp_sim_hw_key(i), "gemm-efficiency")) continue;
    const char *txt = base->tag[i].kind == PTDP_SIM_PROV_DEFAULT ? ptdp_sim_hw_default(i) : base->tag[i].value;
    fitted_value("gemm-efficiency", strtod(txt, NULL), g, fit, &spill);
    spill_group = g;
  }
  fprintf(out, "# written by ptdp-sim --calibrate on %s from %s and %d run(s) of %s: the MEASURED values below were "
               "fitted (ptdp-sim(1), CALIBRATION)\n",
          date, base_path, n, machine);
  char line[8192];
  int written[PTDP_SIM_HW_KEYS] = {0};
  while (fgets(line, sizeof line, in)) {
    char key[256] = "";
    const char *eq = strchr(line, '='), *hash = strchr(line, '#');
    if (eq && (!hash || hash > eq)) {
      const char *s = line;
      while (isspace((unsigned char)*s)) s++;
      size_t k = (size_t)(eq - s);
      while (k && isspace((unsigned char)s[k - 1])) k--;
      snprintf(key, sizeof key, "%.*s", (int)k, s);
    }
    const int g = key[0] ? group_of_key(fit, key) : -1;
    const ptdp_sim_hw_tag *t = key[0] ? ptdp_sim_hw_tag_of(base, key) : NULL;
    const double old = t ? strtod(t->value, NULL) : 0;
    char fig[640];
    if (g >= 0 && old > 0) {
      double sp = 0;
      const double v = fitted_value(key, old, g, fit, &sp);
      figure(runs, n, fit, g, t->value, fig, sizeof fig);
      if (sp > 0) {
        char tail[200];
        snprintf(tail, sizeof tail, "; %.4g above 1: %s took the excess", sp, peak_key);
        if (strlen(fig) + strlen(tail) < sizeof fig) strcat(fig, tail);
      }
      fprintf(out, "%s = %.6g  # MEASURED %s %s \"%s\" %s\n", key, v, machine, date, cmd, fig);
      written[ptdp_sim_hw_tag_of(base, key) - base->tag] = 1;
    } else if (spill > 0 && !strcmp(key, peak_key) && old > 0) {
      figure(runs, n, fit, spill_group, t->value, fig, sizeof fig);
      fprintf(out, "%s = %.6g  # MEASURED %s %s \"%s\" %s; gemm-efficiency came out %.4g: the excess over 1 put here\n",
              key, old * spill, machine, date, cmd, fig, spill);
      peak_line_seen = 1;
    } else {
      fputs(line, out);
    }
  }
  /* fitted keys BASE did not give (their default): appended */
  for (int i = 0; i < PTDP_SIM_HW_KEYS; i++) {
    const char *key = ptdp_sim_hw_key(i);
    const int g = group_of_key(fit, key);
    if (g < 0 || written[i] || base->tag[i].kind != PTDP_SIM_PROV_DEFAULT) continue;
    const double old = strtod(ptdp_sim_hw_default(i), NULL);
    if (old <= 0) continue;
    double sp = 0;
    char fig[640];
    figure(runs, n, fit, g, ptdp_sim_hw_default(i), fig, sizeof fig);
    fprintf(out, "%s = %.6g  # MEASURED %s %s \"%s\" %s (BASE gave none: the key's default)\n", key,
            fitted_value(key, old, g, fit, &sp), machine, date, cmd, fig);
  }
  fclose(in);
  const int bad = fclose(out) != 0;
  PTDP_CHECK(!(spill > 0 && !peak_line_seen),
             "--calibrate: gemm-efficiency came out %.4g (above 1) and %s gives no %s to take the excess", spill,
             base_path, peak_key);
  PTDP_CHECK_IO(!bad, "writing '%s' failed", out_path);
  return 0;
}
