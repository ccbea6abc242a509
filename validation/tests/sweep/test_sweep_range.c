/* ptdp-sweep's "cannot separate" mark (ptdp_sweep_difference, ptdp_sweep_inseparable,
 * ptdp_sweep_print): the mark is the band of the DIFFERENCE of two neighbouring rows' times
 * reaching 0, not their ranges overlapping.
 *   - three layouts by hand, fastest first, 1.0, 1.05 and 1.08 s, each with one-at-a-time changes
 *     of three hardware values: value 0 is shared and moves all three the same way (+0.2 s at its
 *     low end, -0.1 s at its high end), so every range overlaps the next; value 1 moves rows 1
 *     and 2 by the same +-0.01 s; value 2 moves row 2 by -+0.02 s and row 3 by +-0.04 s.  Rows 1
 *     and 2: the difference 0.05 moves only by value 2's 0.02: 0.03 .. 0.07, separated (row 1
 *     unmarked although the ranges overlap).  Rows 2 and 3: value 2 moves the difference 0.03 by
 *     -+0.06 and value 1 (row 2's only) by 0.01: 0.03 -+ 0.0608 reaches 0: row 2 marked
 *     '~', the summary names 2-3; a layout without a range is never marked; rows whose difference
 *     stays above 0 leave no mark and the summary says every pair is separated;
 *   - a real sweep (a 4-layer model on 8 devices of the test device): ptdp_sweep_ranges gives
 *     the best k and the one after a range holding the central prediction, which it leaves as
 *     it was, bit for bit, and no other; it keeps each row's changes, each pair's difference band
 *     holds the difference, the mark is that band reaching 0, and a marked pair's ranges overlap
 *     (the difference's band is never wider than the two ranges together). */
#include "ptdp/error.h"
#include "ptdp/sim.h"
#include "ptdp/sweep.h"

#include "../expect.h"
#include "../sim/sim_test.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A layout of time T whose banded values 0 .. nv - 1 move it by lo[j] at their band's low end and
 * hi[j] at its high end, into L and r; L's range from them as ptdp_sim_range_run makes it. */
static void layout(int t, double T, int nv, const double *lo, const double *hi, ptdp_sweep_layout *L, ptdp_sim_range *r)
{
  memset(L, 0, sizeof *L);
  memset(r, 0, sizeof *r);
  L->t = t;
  L->p = L->d = L->b = L->v = 1;
  L->iteration = T;
  double up2 = 0, down2 = 0;
  for (int j = 0; j < nv; j++) {
    ptdp_sim_sensitivity *v = &r->v[r->n++];
    v->key = v->band_key = j;
    v->band = PTDP_SIM_BAND_DERIVED;
    v->at_lo = T + lo[j];
    v->at_hi = T + hi[j];
    const double u = fmax(0, fmax(lo[j], hi[j])), d = fmax(0, fmax(-lo[j], -hi[j]));
    up2 += u * u;
    down2 += d * d;
  }
  L->range_lo = r->lo = T - sqrt(down2);
  L->range_hi = r->hi = T + sqrt(up2);
}

/* The table's row i + 1 into line (n bytes). */
static void row(const char *text, int i, char *line, size_t n)
{
  char want[16];
  snprintf(want, sizeof want, "%4d  ", i + 1);
  line[0] = '\0';
  for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
    if (!strncmp(p, want, strlen(want))) {
      const char *e = strchr(p, '\n');
      snprintf(line, n, "%.*s", (int)(e ? e - p : (long)strlen(p)), p);
    }
}

static void print(const ptdp_sweep_result *res, char *text, size_t n)
{
  ptdp_sim_hw hw = sim_test_gpu();
  FILE *f = tmpfile();
  ptdp_sweep_print(res, &hw, res->n, f);
  rewind(f);
  text[fread(text, 1, n - 1, f)] = '\0';
  fclose(f);
}

static void check_marks(void)
{
  ptdp_sweep_layout L[3];
  ptdp_sim_range r[3];
  layout(1, 1.0, 2, (double[]){0.2, 0.01}, (double[]){-0.1, -0.01}, &L[0], &r[0]);
  layout(2, 1.05, 3, (double[]){0.2, 0.01, -0.02}, (double[]){-0.1, -0.01, 0.02}, &L[1], &r[1]);
  layout(4, 1.08, 3, (double[]){0.2, 0, 0.04}, (double[]){-0.1, 0, -0.04}, &L[2], &r[2]);
  ptdp_sweep_result res = {.layouts = L, .n = 3, .cap = 3, .ranged = 3, .ranges = r};
  EXPECT(L[0].range_hi >= L[1].range_lo && L[1].range_hi >= L[2].range_lo, "the ranges overlap: %g .. %g, %g .. %g, %g .. %g",
         L[0].range_lo, L[0].range_hi, L[1].range_lo, L[1].range_hi, L[2].range_lo, L[2].range_hi);
  double lo, hi;
  ptdp_sweep_difference(1.0, &r[0], 1.05, &r[1], &lo, &hi);
  EXPECT(fabs(lo - 0.03) < 1e-12 && fabs(hi - 0.07) < 1e-12, "rows 1, 2: the shared values cancel: %g .. %g", lo, hi);
  ptdp_sweep_difference(1.05, &r[1], 1.08, &r[2], &lo, &hi);
  const double w = sqrt(0.06 * 0.06 + 0.01 * 0.01);
  EXPECT(fabs(lo - (0.03 - w)) < 1e-12 && fabs(hi - (0.03 + w)) < 1e-12, "rows 2, 3: 0.03 -+ 0.0608: %g .. %g", lo, hi);
  EXPECT(!ptdp_sweep_inseparable(&res, 0), "rows 1, 2: ranges overlap, the difference's band 0.03 .. 0.07 does not reach 0: separated");
  EXPECT(ptdp_sweep_inseparable(&res, 1), "rows 2, 3: the difference's band -0.031 .. 0.091 reaches 0: cannot separate");
  EXPECT(!ptdp_sweep_inseparable(&res, 2), "the last layout has no next");
  char text[8192] = "", line[1024];
  print(&res, text, sizeof text);
  row(text, 0, line, sizeof line);
  EXPECT(strstr(line, "0.8995 .. 1.2") && !strstr(line, " ~ "), "row 1 carries its range, no mark: %s", line);
  row(text, 1, line, sizeof line);
  EXPECT(strstr(line, " ~ "), "row 2 carries the mark: %s", line);
  EXPECT(strstr(text, "ranking: the provenance bands cannot separate 1 of the 2 neighbouring pairs") &&
           strstr(text, "minus the row's") && strstr(text, "): 2-3\n"),
         "the summary names 2-3 and says what the mark means:\n%s", text);
  /* row 3 with no range (not computed): no mark on row 2 either */
  res.ranged = 2;
  EXPECT(!ptdp_sweep_inseparable(&res, 1), "no range, no mark");
  /* row 3 moved by value 2 as row 2 is: the difference 0.03 -+ 0 stays above 0 everywhere */
  layout(4, 1.08, 3, (double[]){0.2, 0.01, -0.02}, (double[]){-0.1, -0.01, 0.02}, &L[2], &r[2]);
  res.ranged = 3;
  print(&res, text, sizeof text);
  EXPECT(!strstr(text, " ~ ") && strstr(text, "ranking: the provenance bands separate every neighbouring pair"),
         "differences above 0: no mark, and the summary says so:\n%s", text);
}

static void check_sweep(void)
{
  ptdp_args a;
  char buf[] = "--num-layers 4 --hidden-size 1024 --num-attention-heads 16 --seq-length 512 --vocab-size 50000 "
               "--micro-batch-size 1 --global-batch-size 16 --bf16 true";
  EXPECT(sim_test_parses(&a, buf) == 0, "parse");
  ptdp_sim_options so;
  ptdp_options sopt;
  ptdp_sim_options_init(&sopt, &so);
  ptdp_options_free(&sopt);
  so.world_size = 8;
  ptdp_sim_hw hw = sim_test_gpu();
  ptdp_sweep_result res;
  EXPECT(ptdp_sweep_run(&a.model, &hw, &so, 0, &res) == 0 && res.n > 4, "sweep: %d layouts", res.n);
  ptdp_sweep_layout *before = malloc(sizeof *before * (size_t)res.n);
  memcpy(before, res.layouts, sizeof *before * (size_t)res.n);
  EXPECT(ptdp_sweep_ranges(&a.model, &hw, &so, 0, &res, 3) == 0 && res.ranged == 4, "ranges of the best 3 and the next");
  for (int i = 0; i < res.n; i++) {
    const ptdp_sweep_layout *L = &res.layouts[i];
    EXPECT(L->iteration == before[i].iteration, "layout %d: the central prediction untouched", i);
    if (i < 4)
      EXPECT(L->range_lo < L->iteration && L->iteration < L->range_hi, "layout %d: %g .. %g holds %g", i, L->range_lo,
             L->range_hi, L->iteration);
    else
      EXPECT(isnan(L->range_lo) && isnan(L->range_hi), "layout %d: no range computed", i);
  }
  EXPECT(res.ranges && res.ranges[0].n > 0, "the rows' one-at-a-time changes kept");
  for (int i = 0; i < 3; i++) {
    const ptdp_sweep_layout *A = &res.layouts[i], *B = &res.layouts[i + 1];
    double lo, hi;
    ptdp_sweep_difference(A->iteration, &res.ranges[i], B->iteration, &res.ranges[i + 1], &lo, &hi);
    const double D = B->iteration - A->iteration;
    EXPECT(lo <= D && D <= hi, "pair %d-%d: %g .. %g holds %g", i + 1, i + 2, lo, hi, D);
    EXPECT(ptdp_sweep_inseparable(&res, i) == (lo <= 0), "pair %d-%d: the mark is the band reaching 0 (%g)", i + 1,
           i + 2, lo);
    if (ptdp_sweep_inseparable(&res, i))
      EXPECT(A->range_hi >= B->range_lo, "pair %d-%d marked: the ranges overlap too", i + 1, i + 2);
  }
  EXPECT(!ptdp_sweep_inseparable(&res, 3), "the 4th has no ranged next");
  free(before);
  ptdp_sweep_free(&res);
}

int main(void)
{
  check_marks();
  check_sweep();
  return expect_summary("test_sweep_range");
}
