/* The arithmetic, comparisons and operators that cuda_fp16.h's __half and cuda_bf16.h's
 * __nv_bfloat16 share (C++ only), written once: PTDP_EMU_HALF_OPS(T, AS, INF) defines them for
 * the 2-byte type T, whose bits AS(unsigned short) reinterprets and whose positive infinity has
 * the bits INF.
 *
 * Arithmetic in float, then rounded to T: for + - * / that equals one correct rounding of the
 * exact result (float's 24 bits exceed twice T's significand plus 2), as the GPU's instructions
 * give.  __hfma computes in double (exact for most operands: the product of two T values is)
 * and rounds through float, which can differ from the GPU's single rounding in rare near-ties. */
#ifndef PTDP_EMU_HALF_OPS_H
#define PTDP_EMU_HALF_OPS_H

#define PTDP_EMU_HALF_OPS(T, AS, INF)                                                                    \
  static inline T __hadd(T a, T b) { return T((float)a + (float)b); }                                   \
  static inline T __hsub(T a, T b) { return T((float)a - (float)b); }                                   \
  static inline T __hmul(T a, T b) { return T((float)a * (float)b); }                                   \
  static inline T __hdiv(T a, T b) { return T((float)a / (float)b); }                                   \
  static inline T __hneg(T a) { return AS((unsigned short)(a.__x ^ 0x8000u)); }                         \
  static inline T __habs(T a) { return AS((unsigned short)(a.__x & 0x7fffu)); }                         \
  static inline T __hfma(T a, T b, T c)                                                                 \
  {                                                                                                     \
    return T((float)((double)(float)a * (double)(float)b + (double)(float)c));                          \
  }                                                                                                     \
  static inline bool __hisnan(T a) { return (a.__x & 0x7fffu) > (INF); }                                \
  static inline bool __hisinf(T a) { return (a.__x & 0x7fffu) == (INF); }                               \
  static inline bool __heq(T a, T b) { return (float)a == (float)b; }                                   \
  static inline bool __hne(T a, T b) { return (float)a != (float)b; }                                   \
  static inline bool __hlt(T a, T b) { return (float)a < (float)b; }                                    \
  static inline bool __hle(T a, T b) { return (float)a <= (float)b; }                                   \
  static inline bool __hgt(T a, T b) { return (float)a > (float)b; }                                    \
  static inline bool __hge(T a, T b) { return (float)a >= (float)b; }                                   \
  static inline T operator+(const T &a, const T &b) { return __hadd(a, b); }                            \
  static inline T operator-(const T &a, const T &b) { return __hsub(a, b); }                            \
  static inline T operator*(const T &a, const T &b) { return __hmul(a, b); }                            \
  static inline T operator/(const T &a, const T &b) { return __hdiv(a, b); }                            \
  static inline T &operator+=(T &a, const T &b) { return a = __hadd(a, b); }                            \
  static inline T &operator-=(T &a, const T &b) { return a = __hsub(a, b); }                            \
  static inline T &operator*=(T &a, const T &b) { return a = __hmul(a, b); }                            \
  static inline T &operator/=(T &a, const T &b) { return a = __hdiv(a, b); }                            \
  static inline T operator+(const T &a) { return a; }                                                   \
  static inline T operator-(const T &a) { return __hneg(a); }                                           \
  static inline bool operator==(const T &a, const T &b) { return __heq(a, b); }                         \
  static inline bool operator!=(const T &a, const T &b) { return __hne(a, b); }                         \
  static inline bool operator<(const T &a, const T &b) { return __hlt(a, b); }                          \
  static inline bool operator<=(const T &a, const T &b) { return __hle(a, b); }                         \
  static inline bool operator>(const T &a, const T &b) { return __hgt(a, b); }                          \
  static inline bool operator>=(const T &a, const T &b) { return __hge(a, b); }

#endif
