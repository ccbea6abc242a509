/* A byte-string -> int64 hash map (src/text; open addressing, linear probing), used for the BPE
 * vocabulary (token bytes -> id), the word cache (word -> ids) and the keys of a JSON object. */
#ifndef PTDP_STRMAP_H
#define PTDP_STRMAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
  uint64_t hash;
  size_t off, len; /* key bytes in pool[off .. off+len) */
  int64_t val;
  int used;
} ptdp_strmap_slot;

typedef struct {
  ptdp_strmap_slot *slots;
  size_t cap, count; /* cap is a power of two, kept at least twice count */
  char *pool;
  size_t pool_len, pool_cap;
} ptdp_strmap;

uint64_t ptdp_strmap_hash(const char *key, size_t len);
/* 0 or -1 (out of memory). */
int ptdp_strmap_init(ptdp_strmap *m, size_t expected);
/* 1 and *val if present, else 0. */
int ptdp_strmap_get(const ptdp_strmap *m, const char *key, size_t len, int64_t *val);
/* Insert or overwrite; 0 or -1 (out of memory). */
int ptdp_strmap_put(ptdp_strmap *m, const char *key, size_t len, int64_t val);
/* Forget all keys, keep the memory. */
void ptdp_strmap_clear(ptdp_strmap *m);
void ptdp_strmap_free(ptdp_strmap *m);
/* Bytes held (slots + pool), for cache limits. */
size_t ptdp_strmap_bytes(const ptdp_strmap *m);
/* Bytes held after inserting one new key of len bytes (an upper bound: a key already present
 * changes nothing). */
size_t ptdp_strmap_bytes_after_put(const ptdp_strmap *m, size_t len);

#endif
