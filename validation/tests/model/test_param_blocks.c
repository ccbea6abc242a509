/* The parameter table's row blocks (SwiGLU's linear_fc1, [gate; up]) and the shard map's
 * rectangles of them, 1 rank, no communication.
 *   - the worked example of params.h: f 6, t 2, h 4: TP rank 1's local rows 0..5 are global rows
 *     3, 4, 5, 9, 10, 11; its whole slice is two rectangles, rows [3, 6) and [9, 12);
 *   - a run crossing the block boundary in the middle of rows: up to three rectangles per block,
 *     each at its global place, consecutive in the shard;
 *   - every t in {1, 2, 3, 6}: the TP ranks' local rows of fc1's weight and bias cover each global
 *     row exactly once, rank r's first block rows [r f/t, (r+1) f/t) of the gate and its second
 *     the same rows of the up projection (f + ...);
 *   - without SwiGLU every parameter has one block and the table is what it was: fc1 [f, h] in
 *     one rectangle from tp_rank f/t;
 *   - planted: the rectangles of a slice whose blocks are taken as one (blocks forced to 1) put
 *     the up rows at the gate's place, and the coverage check sees it;
 *   - the model FLOPs of the log line (ptdp/flops.h) count SwiGLU's third matrix: 3 h f
 *     multiply-adds per token and layer instead of 2 h f, 6 B s l h f FLOPs more per iteration. */
#include "ptdp/flops.h"
#include "ptdp/params.h"
#include "ptdp/shard_map.h"

#include <stdlib.h>
#include <string.h>

#include "../expect.h"

static ptdp_model_shape shape_of(int swiglu, int bias)
{
  ptdp_model_shape s = {.num_layers = 1, .hidden = 4, .heads = 2, .ffn = 6, .max_pos = 8, .vocab = 10,
                        .vocab_divisible_by = 2};
  s.arch.swiglu = swiglu;
  s.arch.no_linear_bias = !bias;
  return s;
}

/* Entry of role r in the table of TP rank q of t. */
static ptdp_param_info entry(const ptdp_model_shape *s, int t, int q, ptdp_param_role r)
{
  const ptdp_param_position pos = {.t = t, .tp_rank = q, .p = 1, .stage = 0, .v = 1};
  ptdp_param_info tab[32], none = {0};
  const int n = ptdp_params_list(s, &pos, tab, 32);
  for (int i = 0; i < n; i++)
    if (tab[i].role == r) return tab[i];
  return none;
}

static void worked_example(void)
{
  const ptdp_model_shape s = shape_of(1, 0);
  const ptdp_param_info p = entry(&s, 2, 1, PTDP_PARAM_FC1_WEIGHT);
  EXPECT(p.grows == 12 && p.gcols == 4 && p.blocks == 2 && p.lrows == 6 && p.rows == 6 && p.row0 == 3,
         "fc1 of rank 1 of 2: [%lld, %lld] in %d blocks, local %lld rows, slice %lld from %lld", p.grows, p.gcols,
         p.blocks, p.lrows, p.rows, p.row0);
  static const long long want[6] = {3, 4, 5, 9, 10, 11};
  for (int r = 0; r < 6; r++)
    EXPECT(ptdp_param_global_row(&p, r) == want[r], "local row %d is global %lld, not %lld", r,
           ptdp_param_global_row(&p, r), want[r]);
  ptdp_shard_piece pc;
  ptdp_shard_run_rects(&p, 0, p.rows * p.lcols, &pc);
  EXPECT(pc.nrects == 2 && pc.rect[0].row0 == 3 && pc.rect[0].rows == 3 && pc.rect[0].shard_offset == 0 &&
             pc.rect[1].row0 == 9 && pc.rect[1].rows == 3 && pc.rect[1].shard_offset == 12,
         "whole slice: %d rectangles, rows %lld+%lld and %lld+%lld", pc.nrects, pc.rect[0].row0, pc.rect[0].rows,
         pc.rect[1].row0, pc.rect[1].rows);
  /* local elements [6, 19): row 1 cols 2..3, row 2, | row 3 (global 9), row 4 cols 0..2 */
  ptdp_shard_run_rects(&p, 6, 19, &pc);
  const ptdp_shard_rect w[4] = {{4, 2, 1, 2, 0}, {5, 0, 1, 4, 2}, {9, 0, 1, 4, 6}, {10, 0, 1, 3, 10}};
  EXPECT(pc.nrects == 4, "a run across the blocks: %d rectangles, not 4", pc.nrects);
  for (int k = 0; k < 4 && k < pc.nrects; k++)
    EXPECT(!memcmp(&pc.rect[k], &w[k], sizeof w[k]), "rectangle %d: row %lld col %lld [%lld x %lld] at %lld", k,
           pc.rect[k].row0, pc.rect[k].col0, pc.rect[k].rows, pc.rect[k].cols, pc.rect[k].shard_offset);
}

/* Every global row of role r's tensor held by exactly one TP rank of t, through the rectangles
 * of each rank's whole slice; returns the number of rows held other than once. */
static int coverage(const ptdp_model_shape *s, int t, ptdp_param_role r, int force_one_block)
{
  const ptdp_param_info g = entry(s, 1, 0, r);
  int *seen = calloc((size_t)g.grows, sizeof *seen), bad = 0;
  for (int q = 0; q < t; q++) {
    ptdp_param_info p = entry(s, t, q, r);
    if (force_one_block) p.blocks = 1;
    ptdp_shard_piece pc;
    ptdp_shard_run_rects(&p, 0, p.rows * p.lcols, &pc);
    for (int k = 0; k < pc.nrects; k++)
      for (long long i = 0; i < pc.rect[k].rows; i++) {
        const long long row = pc.rect[k].row0 + i;
        if (row >= 0 && row < g.grows) seen[row]++;
        else bad++;
      }
    /* rank q's gate rows come first, then its up rows: the same rows of the other block */
    const long long fl = s->ffn / t;
    if (s->arch.swiglu && !force_one_block)
      EXPECT(ptdp_param_global_row(&p, 0) == q * fl && ptdp_param_global_row(&p, fl) == s->ffn + q * fl,
             "t %d rank %d: gate from %lld, up from %lld", t, q, ptdp_param_global_row(&p, 0),
             ptdp_param_global_row(&p, fl));
  }
  for (long long i = 0; i < g.grows; i++) bad += seen[i] != 1;
  free(seen);
  return bad;
}

int main(void)
{
  worked_example();
  static const int ts[] = {1, 2, 3, 6};
  for (int glu = 0; glu < 2; glu++) {
    const ptdp_model_shape s = shape_of(glu, 1);
    for (int i = 0; i < 4; i++)
      for (int r = PTDP_PARAM_FC1_WEIGHT; r <= PTDP_PARAM_FC1_BIAS; r++) {
        const int bad = coverage(&s, ts[i], (ptdp_param_role)r, 0);
        EXPECT(bad == 0, "swiglu %d, t %d, %s: %d rows not held exactly once", glu, ts[i],
               ptdp_param_role_suffix((ptdp_param_role)r), bad);
      }
  }
  for (int i = 0; i < 4; i++) { /* without SwiGLU: one block, the table as before */
    const ptdp_model_shape s = shape_of(0, 1);
    for (int q = 0; q < ts[i]; q++) {
      const ptdp_param_info p = entry(&s, ts[i], q, PTDP_PARAM_FC1_WEIGHT);
      EXPECT(p.blocks == 1 && p.grows == 6 && p.row0 == q * (6 / ts[i]) && p.rows == 6 / ts[i],
             "GELU fc1 t %d rank %d: %d blocks, [%lld rows], slice %lld from %lld", ts[i], q, p.blocks, p.grows,
             p.rows, p.row0);
    }
  }
  const ptdp_model_shape s = shape_of(1, 1);
  EXPECT(coverage(&s, 2, PTDP_PARAM_FC1_WEIGHT, 1) > 0, "planted: one block taken for two goes unseen");
  const ptdp_param_info other = entry(&s, 2, 1, PTDP_PARAM_QKV_WEIGHT);
  EXPECT(other.blocks == 1, "linear_qkv has %d blocks with SwiGLU", other.blocks);
  ptdp_model_shape g = shape_of(0, 1), glu = shape_of(1, 1);
  const double more = ptdp_model_flops(8, 16, &glu, 128) - ptdp_model_flops(8, 16, &g, 128);
  EXPECT(more == 6.0 * 8 * 16 * 1 * 4 * 6, "SwiGLU's FLOPs: %g more, not 6 B s l h f", more);
  return expect_summary("test_param_blocks");
}
