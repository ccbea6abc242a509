/* The guard backend's memory: see guard_arena.h. */
#include "guard_arena.h"

#include "ptdp/error.h"

#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define GUARD_ALIGN 64

/* Opening and closing work in steps of 2 MiB, a transparent huge page: the range asks to be
 * backed by huge pages (MADV_HUGEPAGE), and an mprotect over whole huge pages changes one
 * page-table entry per 2 MiB instead of 512.  Measured in a VM with 64 MiB in use: 20 us per
 * operation instead of 6 ms.  Where huge pages are off it works the same, only slower. */
#define GUARD_STEP ((size_t)2 << 20)

static size_t round_step(size_t n) { return (n + GUARD_STEP - 1) / GUARD_STEP * GUARD_STEP; }

int guard_arena_init(guard_arena *a, size_t reserve)
{
  memset(a, 0, sizeof *a);
  reserve = round_step(reserve);
  /* PROT_NONE and MAP_NORESERVE: address space only, memory is committed when first written;
   * one step more than asked, to start on a huge-page boundary */
  size_t len = reserve + GUARD_STEP;
  void *p = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED)
    return PTDP_FAIL(PTDP_ERR_MEM,
                           "guard backend: cannot reserve %zu bytes of address space: %s", len, strerror(errno));
  a->map = p;
  a->map_len = len;
  a->base = (char *)p + (GUARD_STEP - (uintptr_t)p % GUARD_STEP) % GUARD_STEP;
  a->reserve = reserve;
#ifdef MADV_HUGEPAGE
  madvise(a->base, reserve, MADV_HUGEPAGE); /* advice only: no huge pages is fine too */
#endif
  return 0;
}

void guard_arena_fini(guard_arena *a)
{
  if (a->map) munmap(a->map, a->map_len);
  free(a->live);
  free(a->hole);
  memset(a, 0, sizeof *a);
}

/* Room for one more block, and for the holes its later free may leave (at most one more hole
 * than blocks), so that guard_arena_free never needs memory. */
static int reserve_lists(guard_arena *a)
{
  if (a->n_live + 1 > a->cap_live) {
    size_t cap = a->cap_live ? 2 * a->cap_live : 64;
    guard_extent *l = realloc(a->live, cap * sizeof *l), *h = realloc(a->hole, (cap + 1) * sizeof *h);
    if (l) a->live = l;
    if (h) a->hole = h;
    if (!l || !h)
      return PTDP_FAIL(PTDP_ERR_MEM, "out of memory for guard bookkeeping");
    a->cap_live = cap;
    a->cap_hole = cap + 1;
  }
  return 0;
}

static void insert_at(guard_extent *v, size_t *n, size_t i, guard_extent e)
{
  memmove(v + i + 1, v + i, (*n - i) * sizeof *v);
  v[i] = e;
  (*n)++;
}

static void remove_at(guard_extent *v, size_t *n, size_t i)
{
  memmove(v + i, v + i + 1, (*n - i - 1) * sizeof *v);
  (*n)--;
}

/* First index of v[0..n) whose offset is >= off. */
static size_t lower_bound(const guard_extent *v, size_t n, size_t off)
{
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (v[mid].off < off)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* Offset of a block of len bytes: the first hole that fits, else the top. */
static int place(guard_arena *a, size_t len, size_t bytes, size_t *off)
{
  for (size_t i = 0; i < a->n_hole; i++) {
    guard_extent *h = &a->hole[i];
    if (h->len < len) continue;
    *off = h->off;
    h->off += len;
    h->len -= len;
    if (!h->len) remove_at(a->hole, &a->n_hole, i);
    return 0;
  }
  if (len > a->reserve - a->top)
    return PTDP_FAIL(PTDP_ERR_MEM,
                           "guard backend: out of memory allocating %zu bytes: %zu of its %zu reserved bytes are in "
                           "use, %zu free at the top",
                           bytes, a->in_use, a->reserve, a->reserve - a->top);
  *off = a->top;
  a->top += len;
  return 0;
}

int guard_arena_alloc(guard_arena *a, void **p, size_t bytes)
{
  *p = NULL;
  if (!bytes) return 0;
  size_t len = bytes > a->reserve ? a->reserve + 1 : (bytes + GUARD_ALIGN - 1) / GUARD_ALIGN * GUARD_ALIGN;
  size_t off = 0;
  PTDP_CALL(reserve_lists(a));
  PTDP_CALL(place(a, len, bytes, &off));
  insert_at(a->live, &a->n_live, lower_bound(a->live, a->n_live, off), (guard_extent){off, len});
  a->in_use += len;
  /* a reused block holds old data, and a block above a lowered top may too */
  PTDP_CALL(guard_arena_open(a));
  memset(a->base + off, 0, len);
  PTDP_CALL(guard_arena_close(a));
  *p = a->base + off;
  return 0;
}

void guard_arena_free(guard_arena *a, void *p)
{
  if (!p) return;
  assert((char *)p >= a->base && (char *)p < a->base + a->reserve);
  size_t off = (size_t)((char *)p - a->base), i = lower_bound(a->live, a->n_live, off);
  assert(i < a->n_live && a->live[i].off == off); /* a block of this arena, not yet freed */
  if (i >= a->n_live || a->live[i].off != off) return;
  guard_extent e = a->live[i];
  remove_at(a->live, &a->n_live, i);
  a->in_use -= e.len;
  /* merge with the holes on either side, then lower the top if the hole reaches it */
  size_t j = lower_bound(a->hole, a->n_hole, off);
  if (j < a->n_hole && e.off + e.len == a->hole[j].off) {
    e.len += a->hole[j].len;
    remove_at(a->hole, &a->n_hole, j);
  }
  if (j > 0 && a->hole[j - 1].off + a->hole[j - 1].len == e.off) {
    e.off = a->hole[j - 1].off;
    e.len += a->hole[j - 1].len;
    remove_at(a->hole, &a->n_hole, --j);
  }
  if (e.off + e.len == a->top)
    a->top = e.off;
  else
    insert_at(a->hole, &a->n_hole, j, e);
}

int guard_arena_open(guard_arena *a)
{
  size_t need = round_step(a->top);
  if (need > a->opened) {
    if (mprotect(a->base + a->opened, need - a->opened, PROT_READ | PROT_WRITE))
      return PTDP_FAIL(PTDP_ERR_LIB, "guard backend: mprotect(%zu bytes, RW): %s",
                             need - a->opened, strerror(errno));
    a->opened = need;
  }
  a->depth++;
  return 0;
}

int guard_arena_close(guard_arena *a)
{
  assert(a->depth > 0);
  if (--a->depth > 0 || !a->opened) return 0;
  if (mprotect(a->base, a->opened, PROT_NONE))
    return PTDP_FAIL(PTDP_ERR_LIB, "guard backend: mprotect(%zu bytes, none): %s",
                           a->opened, strerror(errno));
  a->opened = 0;
  return 0;
}
