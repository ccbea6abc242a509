/* ptdp-sweep's "cannot separate" mark (ptdp_sweep_inseparable, ptdp_sweep_print):
 *   - three layouts by hand, fastest first, ranges 1.0 .. 1.2, 1.1 .. 1.3 and 1.5 .. 1.6 s: the
 *     first two overlap (row 1 marked '~', the summary names 1-2), the second and third do not
 *     (row 2 unmarked); a layout without a range is never marked;
 *   - a real sweep (a 4-layer model on 8 devices of the test device): ptdp_sweep_ranges gives
 *     the best k and the one after a range holding the central prediction, which it leaves as
 *     it was, bit for bit, and no other. */
#include "ptdp/error.h"
#include "ptdp/sim.h"
#include "ptdp/sweep.h"

#include "../expect.h"
#include "../sim/sim_test.h"

#include <stdlib.h>
#include <string.h>

static ptdp_sweep_layout layout(int t, double T, double lo, double hi)
{
  ptdp_sweep_layout L;
  memset(&L, 0, sizeof L);
  L.t = t;
  L.p = L.d = L.b = L.v = 1;
  L.iteration = T;
  L.range_lo = lo;
  L.range_hi = hi;
  return L;
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

static void check_marks(void)
{
  ptdp_sweep_layout L[3] = {layout(1, 1.1, 1.0, 1.2), layout(2, 1.2, 1.1, 1.3), layout(4, 1.55, 1.5, 1.6)};
  ptdp_sweep_result res = {.layouts = L, .n = 3, .cap = 3, .ranged = 3};
  EXPECT(ptdp_sweep_inseparable(&res, 0), "1.0 .. 1.2 and 1.1 .. 1.3 overlap: cannot separate");
  EXPECT(!ptdp_sweep_inseparable(&res, 1), "1.1 .. 1.3 and 1.5 .. 1.6 do not overlap: separated");
  EXPECT(!ptdp_sweep_inseparable(&res, 2), "the last layout has no next");
  ptdp_sim_hw hw = sim_test_gpu();
  char text[8192] = "", line[1024];
  FILE *f = tmpfile();
  ptdp_sweep_print(&res, &hw, 3, f);
  rewind(f);
  const size_t got = fread(text, 1, sizeof text - 1, f);
  text[got] = '\0';
  fclose(f);
  row(text, 0, line, sizeof line);
  EXPECT(strstr(line, "1 .. 1.2") && strstr(line, " ~ "), "row 1 carries its range and the mark: %s", line);
  row(text, 1, line, sizeof line);
  EXPECT(strstr(line, "1.1 .. 1.3") && !strstr(line, " ~ "), "row 2 carries its range, no mark: %s", line);
  EXPECT(strstr(text, "ranking: the provenance bands cannot separate 1 of the 2 neighbouring pairs") &&
           strstr(text, "): 1-2\n"),
         "the summary names 1-2:\n%s", text);
  /* row 2 with no range (not computed): no mark on row 1 either */
  res.ranged = 1;
  EXPECT(!ptdp_sweep_inseparable(&res, 0), "no range, no mark");
  /* all separated: the summary says so */
  L[1] = layout(2, 1.3, 1.25, 1.35);
  res.ranged = 3;
  f = tmpfile();
  ptdp_sweep_print(&res, &hw, 3, f);
  rewind(f);
  text[fread(text, 1, sizeof text - 1, f)] = '\0';
  fclose(f);
  EXPECT(!strstr(text, " ~ ") && strstr(text, "ranking: the provenance bands separate every neighbouring pair"),
         "separate ranges: no mark, and the summary says so:\n%s", text);
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
  free(before);
  ptdp_sweep_free(&res);
}

int main(void)
{
  check_marks();
  check_sweep();
  return expect_summary("test_sweep_range");
}
