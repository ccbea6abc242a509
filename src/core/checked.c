/* Checked integer arithmetic (ptdp/checked.h).  GCC and clang compute the exact product and
 * say whether it fits; a compiler without the builtins gets the division test. */
#include "ptdp/checked.h"

#include <limits.h>
#include <stdlib.h>

#if defined(__GNUC__) || defined(__clang__)
#define MUL_OVERFLOWS(a, b, out) __builtin_mul_overflow(a, b, out)
#define ADD_OVERFLOWS(a, b, out) __builtin_add_overflow(a, b, out)
#endif

int ptdp_mul_ll(long long a, long long b, long long *out)
{
#ifdef MUL_OVERFLOWS
  return MUL_OVERFLOWS(a, b, out) ? 1 : 0;
#else
  if (a == 0 || b == 0) return *out = 0, 0;
  if ((a == -1 && b == LLONG_MIN) || (b == -1 && a == LLONG_MIN)) return 1;
  if (a > 0 ? (b > 0 ? a > LLONG_MAX / b : b < LLONG_MIN / a) : (b > 0 ? a < LLONG_MIN / b : a < LLONG_MAX / b))
    return 1;
  return *out = a * b, 0;
#endif
}

int ptdp_add_ll(long long a, long long b, long long *out)
{
#ifdef ADD_OVERFLOWS
  return ADD_OVERFLOWS(a, b, out) ? 1 : 0;
#else
  if ((b > 0 && a > LLONG_MAX - b) || (b < 0 && a < LLONG_MIN - b)) return 1;
  return *out = a + b, 0;
#endif
}

int ptdp_mul_i64(int64_t a, int64_t b, int64_t *out)
{
  long long r;
  if (ptdp_mul_ll(a, b, &r) || r > INT64_MAX || r < INT64_MIN) return 1;
  return *out = (int64_t)r, 0;
}

int ptdp_add_i64(int64_t a, int64_t b, int64_t *out)
{
  long long r;
  if (ptdp_add_ll(a, b, &r) || r > INT64_MAX || r < INT64_MIN) return 1;
  return *out = (int64_t)r, 0;
}

int ptdp_mul_size(size_t a, size_t b, size_t *out)
{
#ifdef MUL_OVERFLOWS
  return MUL_OVERFLOWS(a, b, out) ? 1 : 0;
#else
  if (b && a > SIZE_MAX / b) return 1;
  return *out = a * b, 0;
#endif
}

int ptdp_mul_ll_max(long long a, long long b, long long limit, long long *out)
{
  long long r;
  if (ptdp_mul_ll(a, b, &r) || r > limit) return 1;
  return *out = r, 0;
}

void *ptdp_grow(void *buf, size_t *cap, size_t need, size_t size, size_t first)
{
  if (need <= *cap) return buf;
  size_t n = *cap ? *cap : first, bytes;
  while (n < need)
    if (ptdp_mul_size(n, 2, &n)) return NULL;
  if (ptdp_mul_size(n, size, &bytes)) return NULL;
  void *p = realloc(buf, bytes);
  if (p) *cap = n;
  return p;
}
