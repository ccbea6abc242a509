/* Unicode normalization form C (UAX #15), for the NFC normalizer of tokenizer.json files:
 * decode, decompose canonically (recursively; Hangul syllables by arithmetic), put each run of
 * combining marks in canonical order (a stable sort by combining class), compose canonically
 * (a mark composes with the last starter unless a mark of the same or higher class, or a
 * starter, stands between them), encode.  Tables: gen_unicode_tables.py.  An ill-formed UTF-8
 * byte travels as the value BAD_BYTE | byte: a starter with no decomposition that composes
 * with nothing, written back as the byte. */
#include "ptdp/checked.h"
#include "ptdp/unicode.h"

#include <stdlib.h>
#include <string.h>

#define BAD_BYTE 0x80000000u
#define S_BASE 0xAC00u
#define L_BASE 0x1100u
#define V_BASE 0x1161u
#define T_BASE 0x11A7u
#define L_COUNT 19u
#define V_COUNT 21u
#define T_COUNT 28u
#define N_COUNT (V_COUNT * T_COUNT)
#define S_COUNT (L_COUNT * N_COUNT)

static unsigned ccc_of(uint32_t cp)
{
  if (cp < 0x300 || (cp & BAD_BYTE)) return 0;
  const ptdp_uc_ccc_range *r = ptdp_uc_find(ptdp_uc_ccc, ptdp_uc_ccc_count, sizeof *r, cp);
  return r ? r->ccc : 0;
}

/* The canonical decomposition of cp (table row: a = cp, b c = its parts), or NULL. */
static const ptdp_uc_triple *decomp_of(uint32_t cp)
{
  if (cp < 0xC0 || (cp & BAD_BYTE)) return NULL;
  size_t lo = 0, hi = ptdp_uc_decomp_count;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (cp < ptdp_uc_decomp[mid].a) hi = mid;
    else if (cp > ptdp_uc_decomp[mid].a) lo = mid + 1;
    else return &ptdp_uc_decomp[mid];
  }
  return NULL;
}

/* The primary composite of a and b, or 0. */
static uint32_t compose(uint32_t a, uint32_t b)
{
  if (a >= L_BASE && a < L_BASE + L_COUNT && b >= V_BASE && b < V_BASE + V_COUNT)
    return S_BASE + ((a - L_BASE) * V_COUNT + (b - V_BASE)) * T_COUNT;
  if (a >= S_BASE && a < S_BASE + S_COUNT && (a - S_BASE) % T_COUNT == 0 && b > T_BASE && b < T_BASE + T_COUNT)
    return a + (b - T_BASE);
  if ((a | b) & BAD_BYTE) return 0;
  size_t lo = 0, hi = ptdp_uc_compose_count;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    const ptdp_uc_triple *t = &ptdp_uc_compose[mid];
    if (a < t->a || (a == t->a && b < t->b)) hi = mid;
    else if (a > t->a || b > t->b) lo = mid + 1;
    else return t->c;
  }
  return 0;
}

typedef struct {
  uint32_t *v;
  size_t n, cap;
} cp_buf;

static int put(cp_buf *b, uint32_t cp)
{
  uint32_t *v = ptdp_grow(b->v, &b->cap, b->n + 1, sizeof *v, 256);
  if (!v) return -1;
  b->v = v;
  b->v[b->n++] = cp;
  return 0;
}

/* Canonical decomposition; depth is bounded by the table (at most 4 levels in Unicode 14). */
static int decompose(cp_buf *b, uint32_t cp, int depth)
{
  if (cp >= S_BASE && cp < S_BASE + S_COUNT) {
    uint32_t s = cp - S_BASE, t = s % T_COUNT;
    if (put(b, L_BASE + s / N_COUNT) || put(b, V_BASE + (s % N_COUNT) / T_COUNT)) return -1;
    return t ? put(b, T_BASE + t) : 0;
  }
  const ptdp_uc_triple *d = depth < 8 ? decomp_of(cp) : NULL;
  if (!d) return put(b, cp);
  if (decompose(b, d->b, depth + 1)) return -1;
  return d->c ? decompose(b, d->c, depth + 1) : 0;
}

static size_t utf8_put(uint32_t cp, unsigned char *o)
{
  if (cp & BAD_BYTE) return o[0] = (unsigned char)cp, 1;
  if (cp < 0x80) return o[0] = (unsigned char)cp, 1;
  if (cp < 0x800) return o[0] = (unsigned char)(0xC0 | cp >> 6), o[1] = (unsigned char)(0x80 | (cp & 63)), 2;
  if (cp < 0x10000) {
    o[0] = (unsigned char)(0xE0 | cp >> 12), o[1] = (unsigned char)(0x80 | ((cp >> 6) & 63));
    o[2] = (unsigned char)(0x80 | (cp & 63));
    return 3;
  }
  o[0] = (unsigned char)(0xF0 | cp >> 18), o[1] = (unsigned char)(0x80 | ((cp >> 12) & 63));
  o[2] = (unsigned char)(0x80 | ((cp >> 6) & 63)), o[3] = (unsigned char)(0x80 | (cp & 63));
  return 4;
}

int ptdp_utf8_nfc(const unsigned char *s, size_t n, unsigned char **out, size_t *out_n)
{
  cp_buf b = {0};
  for (size_t i = 0; i < n;) {
    uint32_t cp;
    int k = ptdp_utf8_decode(s + i, n - i, &cp);
    if (cp == PTDP_UC_INVALID) cp = BAD_BYTE | s[i];
    if (decompose(&b, cp, 0)) goto oom;
    i += (size_t)k;
  }
  /* canonical order: insertion sort of each run of marks by class, stable */
  for (size_t i = 1; i < b.n; i++) {
    unsigned c = ccc_of(b.v[i]);
    for (size_t j = i; c && j > 0 && ccc_of(b.v[j - 1]) > c; j--) {
      uint32_t t = b.v[j];
      b.v[j] = b.v[j - 1];
      b.v[j - 1] = t;
    }
  }
  /* composition, in place (UAX #15's sample algorithm) */
  if (b.n > 1) {
    size_t starter = 0, k = 1;
    unsigned last = ccc_of(b.v[0]) ? 256 : 0;
    for (size_t i = 1; i < b.n; i++) {
      uint32_t ch = b.v[i], c;
      unsigned cc = ccc_of(ch);
      if ((last < cc || last == 0) && (c = compose(b.v[starter], ch)) != 0) {
        b.v[starter] = c;
        continue;
      }
      if (cc == 0) starter = k;
      last = cc;
      b.v[k++] = ch;
    }
    b.n = k;
  }
  unsigned char *o = malloc(4 * b.n + 1);
  if (!o) goto oom;
  size_t m = 0;
  for (size_t i = 0; i < b.n; i++) m += utf8_put(b.v[i], o + m);
  free(b.v);
  *out = o;
  *out_n = m;
  return 0;
oom:
  free(b.v);
  return -1;
}
