/* Unicode classification (binary search in generated range tables) and strict UTF-8
 * decoding (RFC 3629: no overlongs, no surrogates, nothing above U+10FFFF). */
#include "ptdp/unicode.h"

#include <string.h>

const void *ptdp_uc_find(const void *rows, size_t count, size_t size, uint32_t cp)
{
  const char *row = rows;
  size_t lo = 0, hi = count;
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    ptdp_uc_range r;
    memcpy(&r, row + mid * size, sizeof r); /* the row's leading range, whatever follows it */
    if (cp < r.lo) hi = mid;
    else if (cp > r.hi) lo = mid + 1;
    else return row + mid * size;
  }
  return NULL;
}

static int in_ranges(const ptdp_uc_range *r, size_t n, uint32_t cp)
{
  return ptdp_uc_find(r, n, sizeof *r, cp) != NULL;
}

ptdp_uc_class ptdp_uc_classify(uint32_t cp)
{
  if (cp < 128) { /* ASCII fast path: the bulk of English text */
    if ((cp | 32) >= 'a' && (cp | 32) <= 'z') return PTDP_UC_LETTER;
    if (cp >= '0' && cp <= '9') return PTDP_UC_NUMBER;
    if (cp == ' ' || (cp >= 9 && cp <= 13)) return PTDP_UC_SPACE;
    return PTDP_UC_OTHER;
  }
  if (cp == PTDP_UC_INVALID) return PTDP_UC_OTHER;
  if (in_ranges(ptdp_uc_letter, ptdp_uc_letter_count, cp)) return PTDP_UC_LETTER;
  if (in_ranges(ptdp_uc_number, ptdp_uc_number_count, cp)) return PTDP_UC_NUMBER;
  if (in_ranges(ptdp_uc_space, ptdp_uc_space_count, cp)) return PTDP_UC_SPACE;
  return PTDP_UC_OTHER;
}

ptdp_uc_gc ptdp_uc_category(uint32_t cp)
{
  const ptdp_uc_gc_range *r = ptdp_uc_find(ptdp_uc_gc_table, ptdp_uc_gc_count, sizeof *r, cp);
  return r ? r->gc : PTDP_GC_CN;
}

int ptdp_uc_is_space(uint32_t cp)
{
  if (cp < 128) return cp == ' ' || (cp >= 9 && cp <= 13);
  return cp != PTDP_UC_INVALID && in_ranges(ptdp_uc_space, ptdp_uc_space_count, cp);
}

int ptdp_utf8_decode(const unsigned char *s, size_t n, uint32_t *cp)
{
  unsigned c = s[0];
  if (c < 0x80) {
    *cp = c;
    return 1;
  }
  int len;
  uint32_t v, min;
  if (c >= 0xC2 && c <= 0xDF) len = 2, v = c & 0x1F, min = 0x80;
  else if (c >= 0xE0 && c <= 0xEF) len = 3, v = c & 0x0F, min = 0x800;
  else if (c >= 0xF0 && c <= 0xF4) len = 4, v = c & 0x07, min = 0x10000;
  else goto bad;
  if ((size_t)len > n) goto bad;
  for (int i = 1; i < len; i++) {
    if ((s[i] & 0xC0) != 0x80) goto bad;
    v = (v << 6) | (s[i] & 0x3F);
  }
  if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) goto bad;
  *cp = v;
  return len;
bad:
  *cp = PTDP_UC_INVALID;
  return 1;
}

size_t ptdp_utf8_validate(const unsigned char *s, size_t n)
{
  size_t i = 0;
  while (i < n) {
    if (s[i] < 0x80) {
      i++;
      continue;
    }
    uint32_t cp;
    int k = ptdp_utf8_decode(s + i, n - i, &cp);
    if (cp == PTDP_UC_INVALID) return i;
    i += (size_t)k;
  }
  return n;
}
