/* The distributed optimizer's shards (ZeRO-1, as Megatron's DistributedOptimizer).  Pure.
 *
 * Each bucket [lo, hi) of the flat buffers (ptdp/grad_buffer.h) is split into d equal shards;
 * data-parallel rank r owns [lo + r len/d, lo + (r+1) len/d) of every bucket and keeps the Adam
 * state of those elements only, laid out bucket after bucket (bucket index order) in arrays of
 * total/d elements.  Without the distributed optimizer (or d = 1) a rank's "shard" of a bucket is
 * the whole bucket and the state arrays mirror the flat buffers.
 *
 * For files, a shard is also described in global terms: which pieces of which global tensors it
 * holds.  A piece is the part of one parameter's local buffer [lrows, lcols] inside the shard: a
 * contiguous run of the flattened buffer, i.e. at most three rectangles of the global tensor (a
 * partial first row, whole rows, a partial last row), each contiguous in memory.  Rows of the
 * word embedding's padding belong to no global tensor and are left out.  A buffer of K row blocks
 * (SwiGLU's fc1: ptdp_param_info.blocks) is apart in the global tensor at each block's end: up to
 * three rectangles per block.
 *
 * Worked example: a [4, 6] local buffer at global origin (8, 0) and a shard covering its flat
 * elements [3, 20): rectangles rows 8 cols [3, 6) (3 elements), rows [9, 11) cols [0, 6)
 * (12 elements), row 11 cols [0, 2) (2 elements). */
#ifndef PTDP_SHARD_MAP_H
#define PTDP_SHARD_MAP_H

#include "ptdp/grad_buffer.h"

/* Rectangles a run of one parameter's buffer makes at most: three per row block. */
#define PTDP_SHARD_RECTS (3 * PTDP_PARAM_MAX_BLOCKS)

typedef struct {
  long long lo, hi; /* the shard in the flat buffers */
  long long state;  /* offset of element lo in the rank's optimizer-state arrays */
} ptdp_shard;

/* A rectangle of a global tensor and where its elements sit in the shard. */
typedef struct {
  long long row0, col0, rows, cols; /* hyperslab of the global tensor */
  long long shard_offset;           /* of its first element, counted from the shard's lo */
} ptdp_shard_rect;

typedef struct {
  int param;               /* index in the parameter table */
  long long local_lo, local_hi; /* flattened elements of the parameter's local buffer */
  int nrects;
  ptdp_shard_rect rect[PTDP_SHARD_RECTS];
} ptdp_shard_piece;

/* distributed = 0 or d = 1: the whole bucket, state = lo. */
void ptdp_shard_of(const ptdp_grad_layout *L, int bucket, int distributed, int d, int r, ptdp_shard *s);
/* Elements of each optimizer-state array of one rank. */
long long ptdp_shard_state_elems(const ptdp_grad_layout *L, int distributed, int d);
/* The pieces of shard s: fills out[0 .. n) with at most cap pieces and returns n (-1 if cap is
 * too small; at most L->nparams pieces are ever needed). */
int ptdp_shard_pieces(const ptdp_grad_layout *L, const ptdp_param_info *params, const ptdp_shard *s,
                      ptdp_shard_piece *out, int cap);
/* The rectangles of the flattened run [a, b) of p's local buffer alone (padding rows left out);
 * sets local_lo, local_hi, nrects and rect (shard offsets counted from a), not param. */
void ptdp_shard_run_rects(const ptdp_param_info *p, long long a, long long b, ptdp_shard_piece *pc);

#endif
