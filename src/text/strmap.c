/* Byte-string hash map: FNV-1a 64-bit hashes, linear probing, keys copied into one pool. */
#include "ptdp/strmap.h"

#include <stdlib.h>
#include <string.h>

uint64_t ptdp_strmap_hash(const char *key, size_t len)
{
  uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a offset basis and prime */
  for (size_t i = 0; i < len; i++) h = (h ^ (unsigned char)key[i]) * 0x100000001b3ull;
  return h ^ (h >> 29);
}

int ptdp_strmap_init(ptdp_strmap *m, size_t expected)
{
  memset(m, 0, sizeof *m);
  size_t cap = 64;
  while (cap < 2 * expected) cap *= 2;
  m->slots = calloc(cap, sizeof *m->slots);
  if (!m->slots) return -1;
  m->cap = cap;
  return 0;
}

static size_t find(const ptdp_strmap *m, uint64_t h, const char *key, size_t len)
{
  size_t mask = m->cap - 1, i = (size_t)h & mask;
  while (m->slots[i].used) {
    const ptdp_strmap_slot *s = &m->slots[i];
    if (s->hash == h && s->len == len && memcmp(m->pool + s->off, key, len) == 0) return i;
    i = (i + 1) & mask;
  }
  return i;
}

int ptdp_strmap_get(const ptdp_strmap *m, const char *key, size_t len, int64_t *val)
{
  size_t i = find(m, ptdp_strmap_hash(key, len), key, len);
  if (!m->slots[i].used) return 0;
  *val = m->slots[i].val;
  return 1;
}

static int grow(ptdp_strmap *m)
{
  size_t cap = m->cap * 2;
  ptdp_strmap_slot *s = calloc(cap, sizeof *s);
  if (!s) return -1;
  for (size_t i = 0; i < m->cap; i++) {
    if (!m->slots[i].used) continue;
    size_t j = (size_t)m->slots[i].hash & (cap - 1);
    while (s[j].used) j = (j + 1) & (cap - 1);
    s[j] = m->slots[i];
  }
  free(m->slots);
  m->slots = s;
  m->cap = cap;
  return 0;
}

int ptdp_strmap_put(ptdp_strmap *m, const char *key, size_t len, int64_t val)
{
  uint64_t h = ptdp_strmap_hash(key, len);
  size_t i = find(m, h, key, len);
  if (m->slots[i].used) {
    m->slots[i].val = val;
    return 0;
  }
  if (m->pool_len + len > m->pool_cap) {
    size_t cap = m->pool_cap ? m->pool_cap : 4096;
    while (cap < m->pool_len + len) cap *= 2;
    char *p = realloc(m->pool, cap);
    if (!p) return -1;
    m->pool = p;
    m->pool_cap = cap;
  }
  if (len) memcpy(m->pool + m->pool_len, key, len);
  m->slots[i] = (ptdp_strmap_slot){.hash = h, .off = m->pool_len, .len = len, .val = val, .used = 1};
  m->pool_len += len;
  m->count++;
  if (2 * m->count > m->cap) return grow(m);
  return 0;
}

void ptdp_strmap_clear(ptdp_strmap *m)
{
  memset(m->slots, 0, m->cap * sizeof *m->slots);
  m->count = 0;
  m->pool_len = 0;
}

void ptdp_strmap_free(ptdp_strmap *m)
{
  free(m->slots);
  free(m->pool);
  memset(m, 0, sizeof *m);
}

size_t ptdp_strmap_bytes(const ptdp_strmap *m) { return m->cap * sizeof *m->slots + m->pool_cap; }

/* Mirrors the growth rules of ptdp_strmap_put (the table doubles when more than half full, the
 * pool doubles from 4096 until the key fits). */
size_t ptdp_strmap_bytes_after_put(const ptdp_strmap *m, size_t len)
{
  size_t cap = 2 * (m->count + 1) > m->cap ? 2 * m->cap : m->cap;
  size_t pool = m->pool_cap;
  if (m->pool_len + len > pool) {
    if (!pool) pool = 4096;
    while (pool < m->pool_len + len) pool *= 2;
  }
  return cap * sizeof *m->slots + pool;
}
