/* Checked integer arithmetic for sizes a user or a file chose, and the growth of an array.
 *
 * Products of sizes that are each in range (t = p = 65536, a vocabulary times a hidden size,
 * a sample count times a sequence length) can overflow.  Signed overflow is undefined
 * behaviour in C, and the wrapped result passes later checks with a misleading message, so
 * every such product goes through these helpers and the caller reports the sizes involved:
 *
 *   long long n;
 *   PTDP_CHECK(!ptdp_mul_ll(t, p, &n), "tensor x pipeline = %lld x %lld overflows", t, p);
 *
 * Each returns 0 and stores the exact result, or returns 1 on overflow (*out unspecified). */
#ifndef PTDP_CHECKED_H
#define PTDP_CHECKED_H

#include <stddef.h>
#include <stdint.h>

int ptdp_mul_ll(long long a, long long b, long long *out);
int ptdp_add_ll(long long a, long long b, long long *out);
int ptdp_mul_i64(int64_t a, int64_t b, int64_t *out);
int ptdp_add_i64(int64_t a, int64_t b, int64_t *out);
int ptdp_mul_size(size_t a, size_t b, size_t *out);
/* a * b, also refused when the product exceeds limit (e.g. INT_MAX for a count kept in an int). */
int ptdp_mul_ll_max(long long a, long long b, long long limit, long long *out);

/* A growing array's room (the doubling written once, for every caller): buf holding *cap elements of size bytes, grown
 * to hold need, doubling from *cap (first when empty).  Returns the array (buf itself when it already has room,
 * *cap updated when it moved), or NULL when memory or size_t runs out: buf and *cap are then unchanged and the
 * caller still owns buf.  A push:  int32_t *v = ptdp_grow(b->v, &b->cap, b->n + 1, sizeof *v, 1024);
 *                                 if (!v) return ...;  b->v = v;  b->v[b->n++] = x; */
void *ptdp_grow(void *buf, size_t *cap, size_t need, size_t size, size_t first);

#endif
