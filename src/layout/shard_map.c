/* Distributed-optimizer shards and their pieces of global tensors: see include/ptdp/shard_map.h. */
#include "ptdp/shard_map.h"

void ptdp_shard_of(const ptdp_grad_layout *L, int b, int distributed, int d, int r, ptdp_shard *s)
{
  const ptdp_bucket_range *bk = &L->buckets[b];
  if (!distributed || d <= 1) {
    s->lo = bk->lo;
    s->hi = bk->hi;
    s->state = bk->lo;
    return;
  }
  long long per = (bk->hi - bk->lo) / d, before = 0;
  for (int k = 0; k < b; k++) before += (L->buckets[k].hi - L->buckets[k].lo) / d;
  s->lo = bk->lo + r * per;
  s->hi = s->lo + per;
  s->state = before;
}

long long ptdp_shard_state_elems(const ptdp_grad_layout *L, int distributed, int d)
{
  return distributed && d > 1 ? L->total / d : L->total;
}

/* Add the rectangle of local rows [r0, r1) x cols [c0, c1), rows of one block of the buffer
 * (clipped to the slice's rows). */
static void add_rect(ptdp_shard_piece *pc, const ptdp_param_info *p, long long r0, long long r1, long long c0,
                     long long c1, long long shard_offset)
{
  if (r1 > p->rows) r1 = p->rows; /* padding rows: in no global tensor */
  if (r1 <= r0 || c1 <= c0) return;
  ptdp_shard_rect *rc = &pc->rect[pc->nrects++];
  rc->row0 = ptdp_param_global_row(p, r0);
  rc->col0 = p->col0 + c0;
  rc->rows = r1 - r0;
  rc->cols = c1 - c0;
  rc->shard_offset = shard_offset;
}

/* Split the flattened run [a, b) of one block of p's local buffer into row-aligned rectangles. */
static void split_block(ptdp_shard_piece *pc, const ptdp_param_info *p, long long a, long long b, long long shard_off)
{
  const long long w = p->lcols;
  long long ra = a / w, ca = a % w, rb = b / w, cb = b % w;
  if (ra == rb) { /* within one row */
    add_rect(pc, p, ra, ra + 1, ca, cb, shard_off);
    return;
  }
  long long off = shard_off;
  if (ca > 0) { /* partial first row */
    add_rect(pc, p, ra, ra + 1, ca, w, off);
    off += w - ca;
    ra++;
  }
  add_rect(pc, p, ra, rb, 0, w, off); /* whole rows */
  off += (rb - ra) * w;
  if (cb > 0) add_rect(pc, p, rb, rb + 1, 0, cb, off); /* partial last row */
}

/* The run [a, b) block by block: the blocks of a buffer are apart in the global tensor. */
static void split_run(ptdp_shard_piece *pc, const ptdp_param_info *p, long long a, long long b, long long shard_off)
{
  const long long per = p->lrows / p->blocks * p->lcols; /* elements of one block of the buffer */
  pc->nrects = 0;
  for (int k = 0; k < p->blocks; k++) {
    const long long lo = a > k * per ? a : k * per, hi = b < (k + 1) * per || k == p->blocks - 1 ? b : (k + 1) * per;
    if (hi > lo) split_block(pc, p, lo, hi, shard_off + (lo - a));
  }
}

void ptdp_shard_run_rects(const ptdp_param_info *p, long long a, long long b, ptdp_shard_piece *pc)
{
  pc->local_lo = a;
  pc->local_hi = b;
  split_run(pc, p, a, b, 0);
}

int ptdp_shard_pieces(const ptdp_grad_layout *L, const ptdp_param_info *params, const ptdp_shard *s,
                      ptdp_shard_piece *out, int cap)
{
  int n = 0;
  for (int i = 0; i < L->nparams; i++) {
    const long long o = L->offset[i], e = o + ptdp_param_local_elems(&params[i]);
    const long long a = o > s->lo ? o : s->lo, b = e < s->hi ? e : s->hi;
    if (b <= a) continue;
    if (n >= cap) return -1;
    ptdp_shard_piece *pc = &out[n++];
    pc->param = i;
    pc->local_lo = a - o;
    pc->local_hi = b - o;
    split_run(pc, &params[i], a - o, b - o, a - s->lo);
  }
  return n;
}
