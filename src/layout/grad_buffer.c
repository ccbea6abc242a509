/* Flat buffer layout and data-parallel buckets: see include/ptdp/grad_buffer.h. */
#include "ptdp/grad_buffer.h"

#include "ptdp/error.h"

#include <stdlib.h>
#include <string.h>

static long long align16(long long n) { return (n + 15) / 16 * 16; }

/* Assign buckets walking the parameters in reverse; returns the number of buckets, the late
 * (embedding) one last, its index in *late (-1 if none). */
static int assign_buckets(const ptdp_param_info *params, int n, long long cap, int *bucket, int *late)
{
  int nb = 0;
  long long acc = 0;
  for (int i = n - 1; i >= 0; i--) {
    if (params[i].embedding) continue;
    if (acc == 0) nb++;
    bucket[i] = nb - 1;
    acc += ptdp_param_local_elems(&params[i]);
    if (acc >= cap) acc = 0;
  }
  *late = -1;
  for (int i = 0; i < n; i++)
    if (params[i].embedding) {
      if (*late < 0) *late = nb++;
      bucket[i] = *late;
    }
  return nb;
}

int ptdp_grad_layout_build(const ptdp_param_info *params, int n, long long bucket_elems, int d,
                           ptdp_grad_layout *L)
{
  memset(L, 0, sizeof *L);
  const long long align = 16LL * (d > 0 ? d : 1), cap = bucket_elems > 0 ? bucket_elems : (1LL << 62);
  L->nparams = n;
  L->d = d > 0 ? d : 1;
  PTDP_CALLOC(L->offset, n > 0 ? n : 1, sizeof *L->offset);
  PTDP_CALLOC(L->bucket, n > 0 ? n : 1, sizeof *L->bucket);
  int late;
  const int nb = assign_buckets(params, n, cap, L->bucket, &late);
  PTDP_CALLOC(L->buckets, nb > 0 ? nb : 1, sizeof *L->buckets);
  L->nbuckets = nb;
  /* memory order: the late bucket, then the others from the earliest parameters on (the
   * highest-numbered ordinary bucket holds the earliest parameters) */
  const int ordinary = late >= 0 ? nb - 1 : nb;
  long long off = 0;
  for (int pass = 0; pass < nb; pass++) {
    int b = late >= 0 ? (pass == 0 ? late : ordinary - pass) : ordinary - 1 - pass;
    ptdp_bucket_range *bk = &L->buckets[b];
    bk->lo = off;
    bk->late = b == late;
    for (int i = 0; i < n; i++) {
      if (L->bucket[i] != b) continue;
      L->offset[i] = off;
      off += align16(ptdp_param_local_elems(&params[i]));
      bk->nparams++;
    }
    off = (off + align - 1) / align * align;
    bk->hi = off;
  }
  L->total = off;
  return 0;
}

void ptdp_grad_layout_free(ptdp_grad_layout *L)
{
  free(L->offset);
  free(L->bucket);
  free(L->buckets);
  memset(L, 0, sizeof *L);
}
