/* The emulated cuBLAS and cuBLASLt's shared internals (C++, validation/emu): emu_cublas.cc
 * defines them (diagnostics, live objects, element types, the queued product and its engine)
 * and the cuBLAS API; emu_cublaslt.cc the cuBLASLt API on top of them. */
#ifndef PTDP_EMU_CUBLAS_H
#define PTDP_EMU_CUBLAS_H

#include "emu_internal.h"

#include <cublasLt.h>
#include <cublas_v2.h>

#include <cstdint>
#include <cstring>
#include <mutex>
#include <new>

namespace emu {
namespace blas {

/* ---- diagnostics and bookkeeping ---- */

const char *status_name(int s);
const char *status_string(int s);

/* Return st after printing why ("ptdp-emu: call: reason (STATUS)"), as the library's own log
 * would on a GPU: a bare INVALID_VALUE is hard to act on. */
cublasStatus_t refuse(cublasStatus_t st, const char *call, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* The value a C caller passed for an enum parameter: any int (7 for a transpose, say), which
 * C++ may not load as the enum type when it lies outside the enumerators' range; read the bytes. */
template <class E> int raw(const E *e)
{
  static_assert(sizeof(E) == sizeof(int), "enums of the cuBLAS API are int-sized");
  int v;
  memcpy(&v, e, sizeof v);
  return v;
}

/* Live objects, so that a destroyed (or never created) handle or descriptor is refused rather
 * than read. */
enum class Kind { blas, lt, desc, layout, pref };
void track(const void *p, Kind k);
void untrack(const void *p);
bool is_live(const void *p, Kind k);

/* Run an entry point under the emulation's lock; no C++ exception reaches a C caller. */
template <class F> cublasStatus_t guarded(const char *call, F &&f)
{
  try {
    std::lock_guard<std::recursive_mutex> g(emu::lock());
    return f();
  } catch (const std::bad_alloc &) {
    return refuse(CUBLAS_STATUS_ALLOC_FAILED, call, "out of host memory");
  } catch (...) {
    return refuse(CUBLAS_STATUS_INTERNAL_ERROR, call, "unexpected exception");
  }
}

template <class T> cublasStatus_t create(const char *call, T **out, Kind k)
{
  if (!out) return refuse(CUBLAS_STATUS_INVALID_VALUE, call, "null output pointer");
  *out = new T();
  track(*out, k);
  return CUBLAS_STATUS_SUCCESS;
}

template <class T> cublasStatus_t destroy(const char *call, T *p, Kind k, cublasStatus_t bad)
{
  if (!p) return CUBLAS_STATUS_SUCCESS; /* destroying NULL is allowed, as free() */
  if (!is_live(p, k)) return refuse(bad, call, "%p is not a live object of this kind (destroyed twice?)", (void *)p);
  untrack(p);
  delete p;
  return CUBLAS_STATUS_SUCCESS;
}

/* ---- element types: CUDA_R_32F, CUDA_R_16F, CUDA_R_16BF ---- */

size_t type_bytes(int t); /* 0 for a type not emulated */
const char *type_name(int t);
bool is_32f_compute(int c); /* CUBLAS_COMPUTE_32F and its variants */
/* cuBLAS's table for fp32 compute, as far as emulated: A and B alike, C of their type or fp32. */
bool types_supported(int ab, int b, int c);
bool op_valid(int op); /* CUBLAS_OP_N, T or C */

/* ---- the queued product ---- */

/* One matrix operand in device memory: column-major rows x cols, leading dimension ld, batch
 * entries stride elements apart.  p == nullptr: not used by this product. */
struct Operand {
  const char *name = "";
  const void *p = nullptr;
  int type = CUDA_R_32F;
  int64_t rows = 0, cols = 0, ld = 1, stride = 0;
};

/* What an epilogue does to T = alpha op(A) op(B) + beta C (cublasLt.h lists them). */
struct Epilogue {
  bool bias_in = false, aux_out = false, aux_in = false, relu = false, gelu = false;
  bool bgrad_d = false, bgrad_a = false, bgrad_b = false;
  bool plain() const { return !(bias_in || aux_out || aux_in || relu || gelu || bgrad_d || bgrad_a || bgrad_b); }
  bool uses_bias() const { return bias_in || bgrad_d || bgrad_a || bgrad_b; }
  bool uses_aux() const { return aux_out || aux_in; }
};

/* Everything a queued product needs, copied at call time (descriptors may be destroyed or
 * changed before the stream drains, as with the real library). */
struct Product {
  const char *call = "";
  bool ta = false, tb = false;
  int64_t m = 0, n = 0, k = 0, batch = 1;
  float alpha = 1, beta = 0;
  Operand A, B, C, D, bias, aux; /* bias: length rows, stride per batch entry; aux like D */
  Epilogue ep;
  const void *work = nullptr;
  size_t work_bytes = 0;
  bool reads_ab() const { return k > 0 && (alpha != 0 || ep.bgrad_a || ep.bgrad_b); }
};

/* Queue p on stream s (emu::enqueue): it runs when the stream drains, checking every operand's
 * extent first.  EXECUTION_FAILED when the work cannot be queued (a faulted device). */
cublasStatus_t submit(cudaStream_t s, const Product &p);

} // namespace blas
} // namespace emu

#endif
