/* Unit test of the checked integer arithmetic (ptdp/checked.h): products and sums at the edges
 * of each type give the exact value or report overflow, never a wrapped value; t = p = 65536
 * (each in range, their product 2^32) is the worked case.  And ptdp_grow, the growth of an array. */
#include "ptdp/checked.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "../expect.h"

/* ptdp_grow: the array itself while it has room, doubling from first, the elements kept across a
 * move, and a size past size_t (its doubling, or its bytes) refused with the capacity unchanged. */
static void grow_checks(void)
{
  size_t cap = 0;
  int *v = ptdp_grow(NULL, &cap, 1, sizeof *v, 4);
  EXPECT(v && cap == 4, "an empty array grows to first (4)");
  if (!v) return;
  for (int i = 0; i < 4; i++) v[i] = i;
  EXPECT(ptdp_grow(v, &cap, 4, sizeof *v, 4) == v && cap == 4, "room for 4 of 4: the array itself, unmoved");
  int *w = ptdp_grow(v, &cap, 9, sizeof *v, 4);
  EXPECT(w && cap == 16, "room for 9 of 4: doubled until it holds them (16)");
  if (w) v = w;
  EXPECT(v[0] == 0 && v[3] == 3, "the elements kept across the move");
  const size_t had = cap;
  EXPECT(!ptdp_grow(v, &cap, SIZE_MAX / 2, sizeof *v, 4) && cap == had, "bytes past size_t refused, cap unchanged");
  EXPECT(!ptdp_grow(v, &cap, SIZE_MAX, 1, 4) && cap == had, "a count whose doubling passes size_t refused");
  free(v);
}

int main(void)
{
  long long r = -7;
  EXPECT(ptdp_mul_ll(65536, 65536, &r) == 0 && r == 4294967296LL, "65536 x 65536 = 2^32 in long long");
  EXPECT(ptdp_mul_ll_max(65536, 65536, INT_MAX, &r) == 1, "65536 x 65536 is over INT_MAX");
  EXPECT(ptdp_mul_ll_max(46340, 46340, INT_MAX, &r) == 0 && r == 2147395600LL, "46340^2 fits an int");
  EXPECT(ptdp_mul_ll(LLONG_MAX, 2, &r) == 1, "LLONG_MAX x 2 overflows");
  EXPECT(ptdp_mul_ll(LLONG_MIN, -1, &r) == 1, "LLONG_MIN x -1 overflows");
  EXPECT(ptdp_mul_ll(3037000499LL, 3037000499LL, &r) == 0 && r == 9223372030926249001LL, "floor(sqrt(2^63))^2 fits");
  EXPECT(ptdp_mul_ll(3037000500LL, 3037000500LL, &r) == 1, "its successor squared does not");
  EXPECT(ptdp_mul_ll(0, LLONG_MIN, &r) == 0 && r == 0, "0 x anything = 0");
  EXPECT(ptdp_mul_ll(-4, 5, &r) == 0 && r == -20, "signs");
  EXPECT(ptdp_add_ll(LLONG_MAX, 1, &r) == 1 && ptdp_add_ll(LLONG_MIN, -1, &r) == 1, "sums past either end");
  EXPECT(ptdp_add_ll(LLONG_MAX, -1, &r) == 0 && r == LLONG_MAX - 1, "a sum within range");
  int64_t q = 0;
  EXPECT(ptdp_mul_i64(INT64_C(1) << 31, INT64_C(1) << 32, &q) == 1, "2^31 x 2^32 overflows int64");
  EXPECT(ptdp_mul_i64(INT64_C(1) << 31, INT64_C(1) << 31, &q) == 0 && q == INT64_C(1) << 62, "2^62 fits int64");
  EXPECT(ptdp_add_i64(INT64_MAX, 1, &q) == 1, "int64 sum overflows");
  size_t z = 0;
  EXPECT(ptdp_mul_size(SIZE_MAX / 2 + 1, 2, &z) == 1, "size_t product overflows");
  EXPECT(ptdp_mul_size(SIZE_MAX / 3, 3, &z) == 0 && z == SIZE_MAX / 3 * 3, "size_t product fits");
  grow_checks();
  return expect_summary("test_checked");
}
