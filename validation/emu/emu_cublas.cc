/* cuBLAS and cuBLASLt of the CUDA emulation, on the host's CBLAS (include/cublas_v2.h and
 * include/cublasLt.h say what is emulated and what is refused).
 *
 * Every entry point does what the library does at call time: it checks its arguments as the
 * documentation states and returns the documented status (printing why, as "ptdp-emu: call:
 * reason", since a bare INVALID_VALUE is hard to act on), reads host scalars (alpha, beta) and
 * copies what it needs out of the descriptors, then queues the product on the stream
 * (emu::enqueue).  The product runs when the stream drains, with device memory open: first
 * every operand's extent (rows, cols, ld, batch stride) is checked to lie inside one live device
 * allocation, else the device faults (emu::fault, cudaErrorIllegalAddress, naming the call and
 * the operand), as a kernel reading out of bounds would; then one cblas_sgemm per batch entry,
 * on the fp32 operands in place or on fp32 copies of bf16/fp16 ones, and the epilogue in fp32
 * with one rounding to the output type.
 *
 * What only a GPU shows: the real kernels' summation order and TF32/fast modes (here every
 * 32F compute type is CBLAS's fp32), their heuristics, and their speed. */
#include "emu_internal.h"

#include <cblas.h>
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <climits>
#include <new>
#include <unordered_map>
#include <vector>

struct cublasContext {
  cudaStream_t stream = nullptr;
  cublasMath_t mode = CUBLAS_DEFAULT_MATH;
};
struct cublasLtContext {
  int unused = 0;
};
struct cublasLtMatrixLayoutEmu {
  uint32_t type = CUDA_R_32F;
  int32_t order = CUBLASLT_ORDER_COL;
  uint64_t rows = 0, cols = 0;
  int64_t ld = 0;
  int32_t batch = 1;
  int64_t stride = 0; /* elements between batch entries */
  int64_t plane = 0;
};
struct cublasLtMatmulDescEmu {
  int32_t compute = CUBLAS_COMPUTE_32F, scale = CUDA_R_32F, pointer_mode = CUBLASLT_POINTER_MODE_HOST;
  int32_t transa = CUBLAS_OP_N, transb = CUBLAS_OP_N, transc = CUBLAS_OP_N, fill = CUBLAS_FILL_MODE_FULL;
  uint32_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  void *bias = nullptr;
  int64_t bias_stride = 0;
  void *aux = nullptr;
  int64_t aux_ld = 0, aux_stride = 0;
  int32_t sm_target = 0, aux_type = -1, bias_type = -1; /* -1: D's type */
};
struct cublasLtMatmulPreferenceEmu {
  uint32_t search = 0, reduction = 0;
  uint64_t max_workspace = 0;
  uint32_t align[4] = {256, 256, 256, 256}; /* A, B, C, D */
  float max_waves = 0;
  uint64_t impl = ~0ull;
};

namespace {

/* ---- diagnostics and bookkeeping ---- */

const char *status_name(cublasStatus_t s)
{
  switch (s) {
  case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
  case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
  case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
  case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
  case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
  case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
  case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
  case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
  case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
  case CUBLAS_STATUS_LICENSE_ERROR: return "CUBLAS_STATUS_LICENSE_ERROR";
  }
  return "CUBLAS_STATUS_UNKNOWN";
}

const char *status_string(cublasStatus_t s)
{
  switch (s) {
  case CUBLAS_STATUS_SUCCESS: return "success";
  case CUBLAS_STATUS_NOT_INITIALIZED: return "the library was not initialized (null or destroyed handle)";
  case CUBLAS_STATUS_ALLOC_FAILED: return "resource allocation failed";
  case CUBLAS_STATUS_INVALID_VALUE: return "an unsupported value or parameter was passed to the function";
  case CUBLAS_STATUS_ARCH_MISMATCH: return "the function requires a feature absent from the device architecture";
  case CUBLAS_STATUS_MAPPING_ERROR: return "an access to GPU memory space failed";
  case CUBLAS_STATUS_EXECUTION_FAILED: return "the GPU program failed to execute";
  case CUBLAS_STATUS_INTERNAL_ERROR: return "an internal operation failed";
  case CUBLAS_STATUS_NOT_SUPPORTED: return "the functionality requested is not supported";
  case CUBLAS_STATUS_LICENSE_ERROR: return "license error";
  }
  return "unknown cuBLAS status";
}

/* Return st after printing why (the library's own log would say it on a GPU). */
__attribute__((format(printf, 3, 4))) cublasStatus_t refuse(cublasStatus_t st, const char *call, const char *fmt, ...)
{
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  fprintf(stderr, "ptdp-emu: %s: %s (%s)\n", call, msg, status_name(st));
  return st;
}

/* Live objects, so that a destroyed (or never created) handle or descriptor is refused rather
 * than read.  Never freed: usable from destructors at exit. */
enum class Kind { blas, lt, desc, layout, pref };
std::unordered_map<const void *, Kind> &live()
{
  static auto *m = new std::unordered_map<const void *, Kind>;
  return *m;
}
bool is_live(const void *p, Kind k)
{
  auto it = live().find(p);
  return p && it != live().end() && it->second == k;
}

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
  live()[*out] = k;
  return CUBLAS_STATUS_SUCCESS;
}

template <class T> cublasStatus_t destroy(const char *call, T *p, Kind k, cublasStatus_t bad)
{
  if (!p) return CUBLAS_STATUS_SUCCESS; /* destroying NULL is allowed, as free() */
  if (!is_live(p, k)) return refuse(bad, call, "%p is not a live object of this kind (destroyed twice?)", (void *)p);
  live().erase(p);
  delete p;
  return CUBLAS_STATUS_SUCCESS;
}

/* ---- element types ---- */

size_t type_bytes(int t) { return t == CUDA_R_32F ? 4 : t == CUDA_R_16F || t == CUDA_R_16BF ? 2 : 0; }

const char *type_name(int t)
{
  return t == CUDA_R_32F ? "CUDA_R_32F" : t == CUDA_R_16F ? "CUDA_R_16F" : t == CUDA_R_16BF ? "CUDA_R_16BF" : "other";
}

float load(const void *p, int t, int64_t i)
{
  if (t == CUDA_R_32F) return static_cast<const float *>(p)[i];
  const unsigned short u = static_cast<const unsigned short *>(p)[i];
  return t == CUDA_R_16F ? ptdp_emu_half2float_bits(u) : ptdp_emu_bfloat162float_bits(u);
}

void store(void *p, int t, int64_t i, float v)
{
  if (t == CUDA_R_32F)
    static_cast<float *>(p)[i] = v;
  else
    static_cast<unsigned short *>(p)[i] =
        t == CUDA_R_16F ? ptdp_emu_float2half_bits(v) : ptdp_emu_float2bfloat16_bits(v);
}

bool is_32f_compute(int c)
{
  return c == CUBLAS_COMPUTE_32F || c == CUBLAS_COMPUTE_32F_PEDANTIC || c == CUBLAS_COMPUTE_32F_FAST_TF32 ||
         c == CUBLAS_COMPUTE_32F_FAST_16F || c == CUBLAS_COMPUTE_32F_FAST_16BF;
}

/* cuBLAS's table for fp32 compute, as far as emulated: A and B alike, C of their type or fp32. */
bool types_supported(int ab, int b, int c) { return ab == b && type_bytes(ab) && (c == ab || c == CUDA_R_32F); }

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

/* Decode a cublasLtEpilogue_t; false for one not emulated. */
bool decode_epilogue(uint32_t e, Epilogue *ep)
{
  Epilogue x;
  switch (e) {
  case CUBLASLT_EPILOGUE_DEFAULT: break;
  case CUBLASLT_EPILOGUE_RELU: x.relu = true; break;
  case CUBLASLT_EPILOGUE_BIAS: x.bias_in = true; break;
  case CUBLASLT_EPILOGUE_RELU_BIAS: x.bias_in = x.relu = true; break;
  case CUBLASLT_EPILOGUE_GELU: x.gelu = true; break;
  case CUBLASLT_EPILOGUE_GELU_AUX: x.gelu = x.aux_out = true; break;
  case CUBLASLT_EPILOGUE_GELU_BIAS: x.gelu = x.bias_in = true; break;
  case CUBLASLT_EPILOGUE_GELU_AUX_BIAS: x.gelu = x.aux_out = x.bias_in = true; break;
  case CUBLASLT_EPILOGUE_DGELU: x.aux_in = true; break;
  case CUBLASLT_EPILOGUE_DGELU_BGRAD: x.aux_in = x.bgrad_d = true; break;
  case CUBLASLT_EPILOGUE_BGRADA: x.bgrad_a = true; break;
  case CUBLASLT_EPILOGUE_BGRADB: x.bgrad_b = true; break;
  default: return false;
  }
  *ep = x;
  return true;
}

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

/* Device side: the operand's whole extent over all batch entries inside one allocation, else
 * a fault naming the call and the operand. */
bool extent_ok(const char *call, const Operand &o, int64_t batch)
{
  if (o.rows == 0 || o.cols == 0) return true;
  const int64_t es = (int64_t)type_bytes(o.type), span = (o.cols - 1) * o.ld + o.rows;
  const int64_t lo = std::min<int64_t>(0, (batch - 1) * o.stride),
                hi = std::max<int64_t>(0, (batch - 1) * o.stride) + span;
  const char *start = static_cast<const char *>(o.p) + lo * es;
  const size_t need = (size_t)(hi - lo) * (size_t)es, have = emu::device_bytes(start);
  if (have >= need) return true;
  char where[128];
  if (have)
    snprintf(where, sizeof where, "its allocation ends %zu bytes from there", have);
  else
    snprintf(where, sizeof where, "that is not inside a live device allocation");
  emu::fault(cudaErrorIllegalAddress,
             "%s: operand %s (%lld x %lld %s, ld %lld, %lld batch entries %lld apart) spans %zu bytes from %p, but %s",
             call, o.name, (long long)o.rows, (long long)o.cols, type_name(o.type), (long long)o.ld, (long long)batch,
             (long long)o.stride, need, (const void *)start, where);
  return false;
}

/* An fp32 view of batch entry b of an operand: in place for fp32, else a dense copy. */
struct View {
  const float *p;
  int64_t ld;
};
View fp32_view(const Operand &o, int64_t b, std::vector<float> &buf)
{
  if (o.type == CUDA_R_32F) return {static_cast<const float *>(o.p) + b * o.stride, o.ld};
  buf.resize((size_t)(o.rows * o.cols));
  for (int64_t j = 0; j < o.cols; j++)
    for (int64_t i = 0; i < o.rows; i++) buf[(size_t)(i + j * o.rows)] = load(o.p, o.type, b * o.stride + i + j * o.ld);
  return {buf.data(), o.rows};
}

/* GELU, tanh form, and its derivative, in fp32 as a kernel computes them. */
float gelu(float x)
{
  const float u = 0.7978845608f * (x + 0.044715f * x * x * x);
  return 0.5f * x * (1.0f + tanhf(u));
}
float dgelu(float x)
{
  const float u = 0.7978845608f * (x + 0.044715f * x * x * x), t = tanhf(u);
  return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * 0.7978845608f * (1.0f + 3.0f * 0.044715f * x * x);
}

/* C (fp32, column-major m x n, ldc) = alpha op(A) op(B) + beta C. */
void sgemm(const Product &p, View a, View b, float beta, float *C, int64_t ldc)
{
  cblas_sgemm(CblasColMajor, p.ta ? CblasTrans : CblasNoTrans, p.tb ? CblasTrans : CblasNoTrans, (int)p.m, (int)p.n,
              (int)p.k, p.alpha, a.p, (int)a.ld, b.p, (int)b.ld, beta, C, (int)ldc);
}

/* Batch entry e when D is fp32, C is D (or beta is 0) and the epilogue is plain: in place.
 * beta 0 writes zeros first, whatever D held (NaN included: BLAS does not read C then, and we
 * do not rely on how a CBLAS implements that). */
void entry_in_place(const Product &p, int64_t e, View a, View b)
{
  float *D = static_cast<float *>(const_cast<void *>(p.D.p)) + e * p.D.stride;
  const bool product = p.k > 0 && p.alpha != 0;
  if (p.beta == 0 || !product)
    for (int64_t j = 0; j < p.n; j++)
      for (int64_t i = 0; i < p.m; i++) D[i + j * p.D.ld] = p.beta == 0 ? 0.0f : p.beta * D[i + j * p.D.ld];
  if (product) sgemm(p, a, b, p.beta == 0 ? 0.0f : p.beta, D, p.D.ld);
}

/* Batch entry e in general: T = alpha op(A) op(B) + beta C in fp32, the epilogue, D rounded. */
void entry_general(const Product &p, int64_t e, View a, View b, std::vector<float> &T)
{
  const int64_t m = p.m, n = p.n;
  T.assign((size_t)(m * n), 0.0f);
  if (p.beta != 0)
    for (int64_t j = 0; j < n; j++)
      for (int64_t i = 0; i < m; i++)
        T[(size_t)(i + j * m)] = p.beta * load(p.C.p, p.C.type, e * p.C.stride + i + j * p.C.ld);
  if (p.k > 0 && p.alpha != 0) sgemm(p, a, b, 1.0f, T.data(), m); /* T held beta C */
  std::vector<double> rowsum(p.ep.bgrad_d ? (size_t)m : 0, 0.0);
  void *D = const_cast<void *>(p.D.p), *aux = const_cast<void *>(p.aux.p);
  for (int64_t j = 0; j < n; j++)
    for (int64_t i = 0; i < m; i++) {
      float t = T[(size_t)(i + j * m)];
      const int64_t ia = e * p.aux.stride + i + j * p.aux.ld;
      if (p.ep.bias_in) t += load(p.bias.p, p.bias.type, e * p.bias.stride + i);
      if (p.ep.aux_out) store(aux, p.aux.type, ia, t); /* the pre-activation */
      if (p.ep.relu) t = fmaxf(t, 0.0f);
      if (p.ep.gelu) t = gelu(t);
      if (p.ep.aux_in) t *= dgelu(load(aux, p.aux.type, ia));
      store(D, p.D.type, e * p.D.stride + i + j * p.D.ld, t);
      if (p.ep.bgrad_d) rowsum[(size_t)i] += t;
    }
  void *bias = const_cast<void *>(p.bias.p);
  for (int64_t i = 0; p.ep.bgrad_d && i < m; i++)
    store(bias, p.bias.type, e * p.bias.stride + i, (float)rowsum[(size_t)i]);
}

/* BGRADA: bias[i] = sum_p op(A)[i, p] (m of them); BGRADB: bias[j] = sum_p op(B)[p, j] (n). */
void entry_bgrad(const Product &p, int64_t e, View a, View b)
{
  const bool on_a = p.ep.bgrad_a;
  const View v = on_a ? a : b;
  const bool tr = on_a ? p.ta : p.tb;
  const int64_t len = on_a ? p.m : p.n;
  for (int64_t i = 0; i < len; i++) {
    double s = 0;
    for (int64_t q = 0; q < p.k; q++) /* op(A)[i, q] or op(B)[q, i] as stored */
      s += on_a ? v.p[tr ? q + i * v.ld : i + q * v.ld] : v.p[tr ? i + q * v.ld : q + i * v.ld];
    store(const_cast<void *>(p.bias.p), p.bias.type, e * p.bias.stride + i, (float)s);
  }
}

bool same_storage(const Operand &x, const Operand &y)
{
  return x.p == y.p && x.type == y.type && x.ld == y.ld && x.stride == y.stride;
}

/* The queued work: extents, then each batch entry. */
cudaError_t run(const Product &p)
{
  const bool ab = p.reads_ab();
  const Operand *ops[] = {ab ? &p.A : nullptr,
                          ab ? &p.B : nullptr,
                          p.beta != 0 ? &p.C : nullptr,
                          &p.D,
                          p.ep.uses_bias() ? &p.bias : nullptr,
                          p.ep.uses_aux() ? &p.aux : nullptr};
  for (const Operand *o : ops)
    if (o && !extent_ok(p.call, *o, p.batch)) return cudaErrorIllegalAddress;
  if (!emu::is_device_range(p.work, p.work_bytes)) {
    emu::fault(cudaErrorIllegalAddress, "%s: workspace of %zu bytes at %p is not inside one device allocation", p.call,
               p.work_bytes, p.work);
    return cudaErrorIllegalAddress;
  }
  const bool in_place = p.D.type == CUDA_R_32F && p.ep.plain() && (p.beta == 0 || same_storage(p.C, p.D));
  std::vector<float> abuf, bbuf, T;
  for (int64_t e = 0; e < p.batch; e++) {
    const View a = ab ? fp32_view(p.A, e, abuf) : View{nullptr, 1}, b = ab ? fp32_view(p.B, e, bbuf) : View{nullptr, 1};
    if (in_place)
      entry_in_place(p, e, a, b);
    else
      entry_general(p, e, a, b, T);
    if (p.ep.bgrad_a || p.ep.bgrad_b) entry_bgrad(p, e, a, b);
  }
  return cudaSuccess;
}

cublasStatus_t submit(cudaStream_t s, const Product &p)
{
  cudaError_t e = emu::enqueue(s, p.call, [p]() -> cudaError_t {
    try {
      return run(p);
    } catch (const std::bad_alloc &) {
      emu::fault(cudaErrorMemoryAllocation, "%s: out of host memory for the product's scratch", p.call);
      return cudaErrorMemoryAllocation;
    }
  });
  if (e != cudaSuccess)
    return refuse(CUBLAS_STATUS_EXECUTION_FAILED, p.call,
                  "the work could not be queued, or failed on the legacy stream: %s", cudaGetErrorName(e));
  return CUBLAS_STATUS_SUCCESS;
}

/* ---- cuBLAS GEMMs ---- */

struct BlasArgs { /* the arguments common to the four GEMM entry points */
  cublasOperation_t ta, tb;
  int m, n, k;
  const void *alpha, *beta;
  const void *A, *B, *C;
  int lda, ldb, ldc;
  long long sa, sb, sc;
  int batch;
  int atype, btype, ctype, compute, algo;
};

bool op_valid(int op) { return op == CUBLAS_OP_N || op == CUBLAS_OP_T || op == CUBLAS_OP_C; }

/* The documented checks of cublas<t>gemm, cublasGemmEx and their strided-batched forms. */
cublasStatus_t blas_check(const char *call, cublasHandle_t h, const BlasArgs &a)
{
  if (!is_live(h, Kind::blas))
    return refuse(CUBLAS_STATUS_NOT_INITIALIZED, call, "handle %p not created (or destroyed)", (void *)h);
  if (a.m < 0 || a.n < 0 || a.k < 0 || a.batch < 0)
    return refuse(CUBLAS_STATUS_INVALID_VALUE, call, "negative size m %d n %d k %d batchCount %d", a.m, a.n, a.k,
                  a.batch);
  if (!op_valid(a.ta) || !op_valid(a.tb))
    return refuse(CUBLAS_STATUS_INVALID_VALUE, call, "transa %d / transb %d is not N, T or C", (int)a.ta, (int)a.tb);
  const int arows = a.ta == CUBLAS_OP_N ? a.m : a.k, brows = a.tb == CUBLAS_OP_N ? a.k : a.n;
  if (a.lda < std::max(1, arows) || a.ldb < std::max(1, brows) || a.ldc < std::max(1, a.m))
    return refuse(CUBLAS_STATUS_INVALID_VALUE, call, "lda %d (needs >= %d), ldb %d (>= %d), ldc %d (>= %d)", a.lda,
                  std::max(1, arows), a.ldb, std::max(1, brows), a.ldc, std::max(1, a.m));
  if (!a.alpha || !a.beta) return refuse(CUBLAS_STATUS_INVALID_VALUE, call, "null alpha or beta");
  if (!is_32f_compute(a.compute) || !types_supported(a.atype, a.btype, a.ctype))
    return refuse(CUBLAS_STATUS_NOT_SUPPORTED, call, "types A %s B %s C %s with compute type %d", type_name(a.atype),
                  type_name(a.btype), type_name(a.ctype), a.compute);
  if (!(a.algo == CUBLAS_GEMM_DEFAULT || (a.algo >= 0 && a.algo <= 23) || (a.algo >= 99 && a.algo <= 115)))
    return refuse(CUBLAS_STATUS_NOT_SUPPORTED, call, "algorithm %d", a.algo);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t blas_gemm(const char *call, cublasHandle_t h, const BlasArgs &a)
{
  cublasStatus_t st = blas_check(call, h, a);
  if (st != CUBLAS_STATUS_SUCCESS) return st;
  if (a.m == 0 || a.n == 0 || a.batch == 0) return CUBLAS_STATUS_SUCCESS;
  Product p;
  p.call = call;
  p.ta = a.ta != CUBLAS_OP_N;
  p.tb = a.tb != CUBLAS_OP_N;
  p.m = a.m, p.n = a.n, p.k = a.k, p.batch = a.batch;
  p.alpha = *static_cast<const float *>(a.alpha); /* host pointer mode: read now */
  p.beta = *static_cast<const float *>(a.beta);
  p.A = {"A", a.A, a.atype, p.ta ? a.k : a.m, p.ta ? a.m : a.k, a.lda, a.sa};
  p.B = {"B", a.B, a.btype, p.tb ? a.n : a.k, p.tb ? a.k : a.n, a.ldb, a.sb};
  p.C = {"C", a.C, a.ctype, a.m, a.n, a.ldc, a.sc};
  p.D = p.C;
  return submit(h->stream, p);
}

/* ---- cuBLASLt attributes: one table per object, {field, size} by attribute ---- */

struct Field {
  void *p;
  size_t size;
};

Field layout_field(cublasLtMatrixLayoutEmu *l, int a)
{
  switch (a) {
  case CUBLASLT_MATRIX_LAYOUT_TYPE: return {&l->type, 4};
  case CUBLASLT_MATRIX_LAYOUT_ORDER: return {&l->order, 4};
  case CUBLASLT_MATRIX_LAYOUT_ROWS: return {&l->rows, 8};
  case CUBLASLT_MATRIX_LAYOUT_COLS: return {&l->cols, 8};
  case CUBLASLT_MATRIX_LAYOUT_LD: return {&l->ld, 8};
  case CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT: return {&l->batch, 4};
  case CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET: return {&l->stride, 8};
  case CUBLASLT_MATRIX_LAYOUT_PLANE_OFFSET: return {&l->plane, 8};
  }
  return {nullptr, 0};
}

Field desc_field(cublasLtMatmulDescEmu *d, int a)
{
  switch (a) {
  case CUBLASLT_MATMUL_DESC_COMPUTE_TYPE: return {&d->compute, 4};
  case CUBLASLT_MATMUL_DESC_SCALE_TYPE: return {&d->scale, 4};
  case CUBLASLT_MATMUL_DESC_POINTER_MODE: return {&d->pointer_mode, 4};
  case CUBLASLT_MATMUL_DESC_TRANSA: return {&d->transa, 4};
  case CUBLASLT_MATMUL_DESC_TRANSB: return {&d->transb, 4};
  case CUBLASLT_MATMUL_DESC_TRANSC: return {&d->transc, 4};
  case CUBLASLT_MATMUL_DESC_FILL_MODE: return {&d->fill, 4};
  case CUBLASLT_MATMUL_DESC_EPILOGUE: return {&d->epilogue, 4};
  case CUBLASLT_MATMUL_DESC_BIAS_POINTER: return {&d->bias, sizeof(void *)};
  case CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE: return {&d->bias_stride, 8};
  case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER: return {&d->aux, sizeof(void *)};
  case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD: return {&d->aux_ld, 8};
  case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE: return {&d->aux_stride, 8};
  case CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET: return {&d->sm_target, 4};
  case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE: return {&d->aux_type, 4};
  case CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE: return {&d->bias_type, 4};
  }
  return {nullptr, 0};
}

Field pref_field(cublasLtMatmulPreferenceEmu *p, int a)
{
  switch (a) {
  case CUBLASLT_MATMUL_PREF_SEARCH_MODE: return {&p->search, 4};
  case CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES: return {&p->max_workspace, 8};
  case CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK: return {&p->reduction, 4};
  case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES: return {&p->align[0], 4};
  case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES: return {&p->align[1], 4};
  case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES: return {&p->align[2], 4};
  case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES: return {&p->align[3], 4};
  case CUBLASLT_MATMUL_PREF_MAX_WAVES_COUNT: return {&p->max_waves, 4};
  case CUBLASLT_MATMUL_PREF_IMPL_MASK: return {&p->impl, 8};
  }
  return {nullptr, 0};
}

/* Set: the documented INVALID_VALUE cases, then `valid` may reject the new value (restored). */
template <class Valid>
cublasStatus_t set_attr(const char *call, int attr, Field f, const void *buf, size_t size, Valid valid)
{
  if (!f.p) return refuse(CUBLAS_STATUS_INVALID_VALUE, call, "attribute %d is not one the emulation knows", attr);
  if (!buf || size != f.size)
    return refuse(CUBLAS_STATUS_INVALID_VALUE, call, "attribute %d takes %zu bytes, got %zu at %p", attr, f.size, size,
                  buf);
  unsigned char old[8];
  memcpy(old, f.p, f.size);
  memcpy(f.p, buf, f.size);
  if (valid()) return CUBLAS_STATUS_SUCCESS;
  memcpy(f.p, old, f.size);
  return refuse(CUBLAS_STATUS_INVALID_VALUE, call, "value out of range for attribute %d", attr);
}

cublasStatus_t get_attr(const char *call, int attr, Field f, void *buf, size_t size, size_t *written)
{
  if (!f.p) return refuse(CUBLAS_STATUS_INVALID_VALUE, call, "attribute %d is not one the emulation knows", attr);
  if (size == 0) {
    if (!written) return refuse(CUBLAS_STATUS_INVALID_VALUE, call, "sizeInBytes 0 and a null sizeWritten");
    *written = f.size;
    return CUBLAS_STATUS_SUCCESS;
  }
  if (!buf || size != f.size)
    return refuse(CUBLAS_STATUS_INVALID_VALUE, call, "attribute %d takes %zu bytes, got %zu at %p", attr, f.size, size,
                  buf);
  memcpy(buf, f.p, f.size);
  if (written) *written = f.size;
  return CUBLAS_STATUS_SUCCESS;
}

/* ---- cuBLASLt problems ---- */

/* A matmul's problem: shapes, types and epilogue from the descriptors, validated (pointers
 * come later, at cublasLtMatmul). */
struct LtProblem {
  cublasLtMatmulDescEmu d;
  cublasLtMatrixLayoutEmu A, B, C, D;
  Epilogue ep;
  int64_t m, n, k;
  int bias_type, aux_type;
};

cublasStatus_t lt_layout_check(const char *call, const char *name, const cublasLtMatrixLayoutEmu &l)
{
  if (l.order != CUBLASLT_ORDER_COL)
    return refuse(CUBLAS_STATUS_NOT_SUPPORTED, call, "layout %s: order %d (only CUBLASLT_ORDER_COL is emulated)", name,
                  l.order);
  if (l.rows > INT_MAX || l.cols > INT_MAX || l.ld > INT_MAX)
    return refuse(CUBLAS_STATUS_NOT_SUPPORTED, call, "layout %s: rows, cols or ld beyond int32", name);
  if (l.ld < (int64_t)std::max<uint64_t>(1, l.rows))
    return refuse(CUBLAS_STATUS_INVALID_VALUE, call, "layout %s: ld %lld < rows %llu", name, (long long)l.ld,
                  (unsigned long long)l.rows);
  if (l.batch < 1) return refuse(CUBLAS_STATUS_INVALID_VALUE, call, "layout %s: batch count %d", name, l.batch);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t lt_types_check(const char *call, const LtProblem &q)
{
  if (!is_32f_compute(q.d.compute) || q.d.scale != CUDA_R_32F || !types_supported(q.A.type, q.B.type, q.C.type) ||
      q.C.type != q.D.type)
    return refuse(CUBLAS_STATUS_NOT_SUPPORTED, call, "compute %d scale %d types A %s B %s C %s D %s", q.d.compute,
                  q.d.scale, type_name(q.A.type), type_name(q.B.type), type_name(q.C.type), type_name(q.D.type));
  if (q.d.pointer_mode != CUBLASLT_POINTER_MODE_HOST || q.d.transc != CUBLAS_OP_N || q.d.fill != CUBLAS_FILL_MODE_FULL)
    return refuse(CUBLAS_STATUS_NOT_SUPPORTED, call,
                  "pointer mode %d, transc %d, fill mode %d (emulated: host, N, full)", q.d.pointer_mode, q.d.transc,
                  q.d.fill);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t lt_shape_check(const char *call, LtProblem &q)
{
  const bool ta = q.d.transa != CUBLAS_OP_N, tb = q.d.transb != CUBLAS_OP_N;
  q.m = (int64_t)q.D.rows, q.n = (int64_t)q.D.cols, q.k = (int64_t)(ta ? q.A.rows : q.A.cols);
  const int64_t am = (int64_t)(ta ? q.A.cols : q.A.rows), bk = (int64_t)(tb ? q.B.cols : q.B.rows),
                bn = (int64_t)(tb ? q.B.rows : q.B.cols);
  if (am != q.m || bk != q.k || bn != q.n || q.C.rows != q.D.rows || q.C.cols != q.D.cols)
    return refuse(CUBLAS_STATUS_INVALID_VALUE, call,
                  "shapes disagree: op(A) %lld x %lld, op(B) %lld x %lld, C %llu x %llu, D %llu x %llu", (long long)am,
                  (long long)q.k, (long long)bk, (long long)bn, (unsigned long long)q.C.rows,
                  (unsigned long long)q.C.cols, (unsigned long long)q.D.rows, (unsigned long long)q.D.cols);
  if (q.A.batch != q.D.batch || q.B.batch != q.D.batch || q.C.batch != q.D.batch)
    return refuse(CUBLAS_STATUS_INVALID_VALUE, call, "batch counts differ: A %d B %d C %d D %d", q.A.batch, q.B.batch,
                  q.C.batch, q.D.batch);
  return CUBLAS_STATUS_SUCCESS;
}

/* The epilogue's documented requirements: its pointers set, aux ld >= rows of D and a
 * multiple of 8, aux of D's type, bias of D's type or fp32. */
cublasStatus_t lt_epilogue_check(const char *call, LtProblem &q)
{
  if (!decode_epilogue(q.d.epilogue, &q.ep))
    return refuse(CUBLAS_STATUS_NOT_SUPPORTED, call, "epilogue %u is not emulated", q.d.epilogue);
  q.bias_type = q.d.bias_type == -1 ? (int)q.D.type : q.d.bias_type;
  q.aux_type = q.d.aux_type == -1 ? (int)q.D.type : q.d.aux_type;
  if (q.ep.uses_bias() && (!q.d.bias || (q.bias_type != (int)q.D.type && q.bias_type != CUDA_R_32F)))
    return refuse(CUBLAS_STATUS_INVALID_VALUE, call, "epilogue %u: bias pointer %p, bias type %s with D %s",
                  q.d.epilogue, q.d.bias, type_name(q.bias_type), type_name(q.D.type));
  if (q.ep.uses_aux() &&
      (!q.d.aux || q.aux_type != (int)q.D.type || q.d.aux_ld < q.m || q.d.aux_ld % 8 != 0 || q.d.aux_stride % 8 != 0))
    return refuse(CUBLAS_STATUS_INVALID_VALUE, call,
                  "epilogue %u: aux pointer %p, aux type %s (D %s), aux ld %lld (>= %lld, a multiple of 8), "
                  "aux batch stride %lld (a multiple of 8)",
                  q.d.epilogue, q.d.aux, type_name(q.aux_type), type_name(q.D.type), (long long)q.d.aux_ld,
                  (long long)q.m, (long long)q.d.aux_stride);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t lt_problem(const char *call, cublasLtHandle_t h, cublasLtMatmulDesc_t d, cublasLtMatrixLayout_t a,
                          cublasLtMatrixLayout_t b, cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t dd, LtProblem *q)
{
  if (!is_live(h, Kind::lt))
    return refuse(CUBLAS_STATUS_NOT_INITIALIZED, call, "handle %p not created (or destroyed)", (void *)h);
  if (!is_live(d, Kind::desc) || !is_live(a, Kind::layout) || !is_live(b, Kind::layout) || !is_live(c, Kind::layout) ||
      !is_live(dd, Kind::layout))
    return refuse(CUBLAS_STATUS_INVALID_VALUE, call, "a null or destroyed descriptor");
  q->d = *d, q->A = *a, q->B = *b, q->C = *c, q->D = *dd;
  const char *names[] = {"A", "B", "C", "D"};
  const cublasLtMatrixLayoutEmu *ls[] = {&q->A, &q->B, &q->C, &q->D};
  for (int i = 0; i < 4; i++) {
    cublasStatus_t st = lt_layout_check(call, names[i], *ls[i]);
    if (st != CUBLAS_STATUS_SUCCESS) return st;
  }
  cublasStatus_t st = lt_types_check(call, *q);
  if (st == CUBLAS_STATUS_SUCCESS) st = lt_shape_check(call, *q);
  if (st == CUBLAS_STATUS_SUCCESS) st = lt_epilogue_check(call, *q);
  return st;
}

/* The algorithm the heuristic returns, as plain data: a tag, its workspace need, the minimum
 * alignments of A, B, C, D it assumes (the preference's) and of bias and aux (what it saw). */
constexpr uint64_t ALGO_TAG = 0x707464702d656d75ull; /* "ptdp-emu" */
enum { AL_WORK = 1, AL_A = 2, AL_BIAS = 6, AL_AUX = 7 };

uint64_t alignment_of(const void *p)
{
  const uintptr_t u = (uintptr_t)p | 16u; /* kernels load at most 16 bytes at once */
  return u & (~u + 1);
}

bool aligned(const void *p, uint64_t a) { return a == 0 || (uintptr_t)p % a == 0; }

/* Workspace of the emulated algorithm: fp32 partial products of a two-way split of k, when k
 * can be split and the preference allows the bytes. */
size_t workspace_need(const LtProblem &q, uint64_t max_bytes)
{
  const uint64_t bytes = ((uint64_t)(q.m * q.n * q.D.batch) * 4 + 255) / 256 * 256;
  return q.k >= 2 && bytes <= max_bytes ? (size_t)bytes : 0;
}

/* cublasLtMatmul's checks of the pointers against the algorithm and the workspace. */
cublasStatus_t lt_algo_check(const char *call, const LtProblem &q, const cublasLtMatmulAlgo_t *algo,
                             const void *ptrs[4], const void *work, size_t work_bytes)
{
  if (!algo) return CUBLAS_STATUS_SUCCESS; /* implicit heuristic: fits any pointers, no workspace */
  const uint64_t *x = algo->data;
  if (x[0] != ALGO_TAG) return refuse(CUBLAS_STATUS_INVALID_VALUE, call, "algo was not initialised by a heuristic");
  if (work_bytes < x[AL_WORK] || (x[AL_WORK] && !work))
    return refuse(CUBLAS_STATUS_INVALID_VALUE, call, "workspace %p of %zu bytes, the algorithm needs %llu", work,
                  work_bytes, (unsigned long long)x[AL_WORK]);
  const char *names = "ABCD";
  for (int i = 0; i < 4; i++)
    if (!aligned(ptrs[i], x[AL_A + i]))
      return refuse(CUBLAS_STATUS_NOT_SUPPORTED, call,
                    "%c at %p is less aligned than the %llu bytes the algorithm assumes", names[i], ptrs[i],
                    (unsigned long long)x[AL_A + i]);
  if ((q.ep.uses_bias() && !aligned(q.d.bias, x[AL_BIAS])) || (q.ep.uses_aux() && !aligned(q.d.aux, x[AL_AUX])))
    return refuse(CUBLAS_STATUS_NOT_SUPPORTED, call,
                  "bias %p or aux %p is less aligned than at the heuristic (%llu, %llu bytes; a GPU would fault)",
                  q.d.bias, q.d.aux, (unsigned long long)x[AL_BIAS], (unsigned long long)x[AL_AUX]);
  return CUBLAS_STATUS_SUCCESS;
}

Product lt_product(const LtProblem &q, float alpha, float beta, const void *A, const void *B, const void *C, void *D)
{
  Product p;
  p.call = "cublasLtMatmul";
  p.ta = q.d.transa != CUBLAS_OP_N, p.tb = q.d.transb != CUBLAS_OP_N;
  p.m = q.m, p.n = q.n, p.k = q.k, p.batch = q.D.batch, p.alpha = alpha, p.beta = beta;
  auto op = [](const char *name, const void *ptr, const cublasLtMatrixLayoutEmu &l) {
    return Operand{name, ptr, (int)l.type, (int64_t)l.rows, (int64_t)l.cols, l.ld, l.stride};
  };
  p.A = op("A", A, q.A), p.B = op("B", B, q.B), p.C = op("C", C, q.C), p.D = op("D", D, q.D);
  p.ep = q.ep;
  if (q.ep.uses_bias()) {
    const int64_t len = q.ep.bgrad_b ? q.n : q.m;
    p.bias = Operand{"bias", q.d.bias, q.bias_type, len, 1, len, q.d.bias_stride};
  }
  if (q.ep.uses_aux()) p.aux = Operand{"aux", q.d.aux, q.aux_type, q.m, q.n, q.d.aux_ld, q.d.aux_stride};
  return p;
}

} // namespace

/* ======================================= cuBLAS ======================================= */

extern "C" {

const char *cublasGetStatusName(cublasStatus_t s) { return status_name(s); }
const char *cublasGetStatusString(cublasStatus_t s) { return status_string(s); }

cublasStatus_t cublasCreate_v2(cublasHandle_t *h)
{
  return guarded("cublasCreate", [&] {
    if (emu::sticky() != cudaSuccess)
      return refuse(CUBLAS_STATUS_NOT_INITIALIZED, "cublasCreate", "the device has faulted");
    return create("cublasCreate", h, Kind::blas);
  });
}

/* cuBLAS documents that destroying a handle synchronises the device. */
cublasStatus_t cublasDestroy_v2(cublasHandle_t h)
{
  return guarded("cublasDestroy", [&] {
    if (!is_live(h, Kind::blas))
      return refuse(CUBLAS_STATUS_NOT_INITIALIZED, "cublasDestroy", "handle %p not live", (void *)h);
    cudaDeviceSynchronize();
    return destroy("cublasDestroy", h, Kind::blas, CUBLAS_STATUS_NOT_INITIALIZED);
  });
}

cublasStatus_t cublasSetStream_v2(cublasHandle_t h, cudaStream_t s)
{
  return guarded("cublasSetStream", [&] {
    if (!is_live(h, Kind::blas))
      return refuse(CUBLAS_STATUS_NOT_INITIALIZED, "cublasSetStream", "handle %p not live", (void *)h);
    h->stream = s;
    return CUBLAS_STATUS_SUCCESS;
  });
}

cublasStatus_t cublasGetStream_v2(cublasHandle_t h, cudaStream_t *s)
{
  return guarded("cublasGetStream", [&] {
    if (!is_live(h, Kind::blas))
      return refuse(CUBLAS_STATUS_NOT_INITIALIZED, "cublasGetStream", "handle %p not live", (void *)h);
    if (!s) return refuse(CUBLAS_STATUS_INVALID_VALUE, "cublasGetStream", "null stream pointer");
    *s = h->stream;
    return CUBLAS_STATUS_SUCCESS;
  });
}

cublasStatus_t cublasSetMathMode(cublasHandle_t h, cublasMath_t mode)
{
  return guarded("cublasSetMathMode", [&] {
    if (!is_live(h, Kind::blas))
      return refuse(CUBLAS_STATUS_NOT_INITIALIZED, "cublasSetMathMode", "handle %p not live", (void *)h);
    const int base = (int)mode & ~(int)CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION;
    if (base < CUBLAS_DEFAULT_MATH || base > CUBLAS_TF32_TENSOR_OP_MATH)
      return refuse(CUBLAS_STATUS_INVALID_VALUE, "cublasSetMathMode", "math mode %d", (int)mode);
    h->mode = mode;
    return CUBLAS_STATUS_SUCCESS;
  });
}

cublasStatus_t cublasGetMathMode(cublasHandle_t h, cublasMath_t *mode)
{
  return guarded("cublasGetMathMode", [&] {
    if (!is_live(h, Kind::blas))
      return refuse(CUBLAS_STATUS_NOT_INITIALIZED, "cublasGetMathMode", "handle %p not live", (void *)h);
    if (!mode) return refuse(CUBLAS_STATUS_INVALID_VALUE, "cublasGetMathMode", "null mode pointer");
    *mode = h->mode;
    return CUBLAS_STATUS_SUCCESS;
  });
}

cublasStatus_t cublasSgemm_v2(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                              const float *alpha, const float *A, int lda, const float *B, int ldb, const float *beta,
                              float *C, int ldc)
{
  const BlasArgs a = {ta,
                      tb,
                      m,
                      n,
                      k,
                      alpha,
                      beta,
                      A,
                      B,
                      C,
                      lda,
                      ldb,
                      ldc,
                      0,
                      0,
                      0,
                      1,
                      CUDA_R_32F,
                      CUDA_R_32F,
                      CUDA_R_32F,
                      CUBLAS_COMPUTE_32F,
                      CUBLAS_GEMM_DEFAULT};
  return guarded("cublasSgemm", [&] { return blas_gemm("cublasSgemm", h, a); });
}

cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                                         int k, const float *alpha, const float *A, int lda, long long sa,
                                         const float *B, int ldb, long long sb, const float *beta, float *C, int ldc,
                                         long long sc, int batch)
{
  const BlasArgs a = {ta,
                      tb,
                      m,
                      n,
                      k,
                      alpha,
                      beta,
                      A,
                      B,
                      C,
                      lda,
                      ldb,
                      ldc,
                      sa,
                      sb,
                      sc,
                      batch,
                      CUDA_R_32F,
                      CUDA_R_32F,
                      CUDA_R_32F,
                      CUBLAS_COMPUTE_32F,
                      CUBLAS_GEMM_DEFAULT};
  return guarded("cublasSgemmStridedBatched", [&] { return blas_gemm("cublasSgemmStridedBatched", h, a); });
}

cublasStatus_t cublasGemmEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                            const void *alpha, const void *A, cudaDataType at, int lda, const void *B, cudaDataType bt,
                            int ldb, const void *beta, void *C, cudaDataType ct, int ldc, cublasComputeType_t compute,
                            cublasGemmAlgo_t algo)
{
  const BlasArgs a = {ta, tb, m, n, k, alpha, beta, A, B, C, lda, ldb, ldc, 0, 0, 0, 1, at, bt, ct, compute, algo};
  return guarded("cublasGemmEx", [&] { return blas_gemm("cublasGemmEx", h, a); });
}

cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                                          int k, const void *alpha, const void *A, cudaDataType at, int lda,
                                          long long sa, const void *B, cudaDataType bt, int ldb, long long sb,
                                          const void *beta, void *C, cudaDataType ct, int ldc, long long sc, int batch,
                                          cublasComputeType_t compute, cublasGemmAlgo_t algo)
{
  const BlasArgs a = {ta,  tb,  m,  n,  k,  alpha, beta, A,  B,  C,       lda,
                      ldb, ldc, sa, sb, sc, batch, at,   bt, ct, compute, algo};
  return guarded("cublasGemmStridedBatchedEx", [&] { return blas_gemm("cublasGemmStridedBatchedEx", h, a); });
}

/* ====================================== cuBLASLt ====================================== */

const char *cublasLtGetStatusName(cublasStatus_t s) { return status_name(s); }
const char *cublasLtGetStatusString(cublasStatus_t s) { return status_string(s); }
size_t cublasLtGetVersion(void) { return CUBLAS_VERSION; }

cublasStatus_t cublasLtCreate(cublasLtHandle_t *h)
{
  return guarded("cublasLtCreate", [&] {
    if (emu::sticky() != cudaSuccess)
      return refuse(CUBLAS_STATUS_NOT_INITIALIZED, "cublasLtCreate", "the device has faulted");
    return create("cublasLtCreate", h, Kind::lt);
  });
}

cublasStatus_t cublasLtDestroy(cublasLtHandle_t h)
{
  return guarded("cublasLtDestroy", [&] {
    if (!is_live(h, Kind::lt))
      return refuse(CUBLAS_STATUS_NOT_INITIALIZED, "cublasLtDestroy", "handle %p not live", (void *)h);
    return destroy("cublasLtDestroy", h, Kind::lt, CUBLAS_STATUS_NOT_INITIALIZED);
  });
}

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *l, cudaDataType type, uint64_t rows, uint64_t cols,
                                          int64_t ld)
{
  return guarded("cublasLtMatrixLayoutCreate", [&] {
    cublasStatus_t st = create("cublasLtMatrixLayoutCreate", l, Kind::layout);
    if (st == CUBLAS_STATUS_SUCCESS) (*l)->type = type, (*l)->rows = rows, (*l)->cols = cols, (*l)->ld = ld;
    return st;
  });
}

cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t l)
{
  return guarded("cublasLtMatrixLayoutDestroy",
                 [&] { return destroy("cublasLtMatrixLayoutDestroy", l, Kind::layout, CUBLAS_STATUS_INVALID_VALUE); });
}

cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t l, cublasLtMatrixLayoutAttribute_t attr,
                                                const void *buf, size_t size)
{
  const char *call = "cublasLtMatrixLayoutSetAttribute";
  return guarded(call, [&] {
    if (!is_live(l, Kind::layout)) return refuse(CUBLAS_STATUS_INVALID_VALUE, call, "layout %p not live", (void *)l);
    return set_attr(call, attr, layout_field(l, attr), buf, size, [&] { return l->ld >= 0; });
  });
}

cublasStatus_t cublasLtMatrixLayoutGetAttribute(cublasLtMatrixLayout_t l, cublasLtMatrixLayoutAttribute_t attr,
                                                void *buf, size_t size, size_t *written)
{
  const char *call = "cublasLtMatrixLayoutGetAttribute";
  return guarded(call, [&] {
    if (!is_live(l, Kind::layout)) return refuse(CUBLAS_STATUS_INVALID_VALUE, call, "layout %p not live", (void *)l);
    return get_attr(call, attr, layout_field(l, attr), buf, size, written);
  });
}

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *d, cublasComputeType_t compute, cudaDataType_t scale)
{
  return guarded("cublasLtMatmulDescCreate", [&] {
    cublasStatus_t st = create("cublasLtMatmulDescCreate", d, Kind::desc);
    if (st == CUBLAS_STATUS_SUCCESS) (*d)->compute = compute, (*d)->scale = scale;
    return st;
  });
}

cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t d)
{
  return guarded("cublasLtMatmulDescDestroy",
                 [&] { return destroy("cublasLtMatmulDescDestroy", d, Kind::desc, CUBLAS_STATUS_INVALID_VALUE); });
}

cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t attr,
                                              const void *buf, size_t size)
{
  const char *call = "cublasLtMatmulDescSetAttribute";
  return guarded(call, [&] {
    if (!is_live(d, Kind::desc)) return refuse(CUBLAS_STATUS_INVALID_VALUE, call, "descriptor %p not live", (void *)d);
    return set_attr(call, attr, desc_field(d, attr), buf, size, [&] {
      return op_valid(d->transa) && op_valid(d->transb) && op_valid(d->transc) && d->pointer_mode >= 0 &&
             d->pointer_mode <= CUBLASLT_POINTER_MODE_ALPHA_DEVICE_VECTOR_BETA_HOST && d->fill >= 0 &&
             d->fill <= CUBLAS_FILL_MODE_FULL;
    });
  });
}

cublasStatus_t cublasLtMatmulDescGetAttribute(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t attr, void *buf,
                                              size_t size, size_t *written)
{
  const char *call = "cublasLtMatmulDescGetAttribute";
  return guarded(call, [&] {
    if (!is_live(d, Kind::desc)) return refuse(CUBLAS_STATUS_INVALID_VALUE, call, "descriptor %p not live", (void *)d);
    return get_attr(call, attr, desc_field(d, attr), buf, size, written);
  });
}

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *p)
{
  return guarded("cublasLtMatmulPreferenceCreate",
                 [&] { return create("cublasLtMatmulPreferenceCreate", p, Kind::pref); });
}

cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t p)
{
  return guarded("cublasLtMatmulPreferenceDestroy", [&] {
    return destroy("cublasLtMatmulPreferenceDestroy", p, Kind::pref, CUBLAS_STATUS_INVALID_VALUE);
  });
}

cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t p,
                                                    cublasLtMatmulPreferenceAttributes_t attr, const void *buf,
                                                    size_t size)
{
  const char *call = "cublasLtMatmulPreferenceSetAttribute";
  return guarded(call, [&] {
    if (!is_live(p, Kind::pref)) return refuse(CUBLAS_STATUS_INVALID_VALUE, call, "preference %p not live", (void *)p);
    return set_attr(call, attr, pref_field(p, attr), buf, size, [] { return true; });
  });
}

cublasStatus_t cublasLtMatmulPreferenceGetAttribute(cublasLtMatmulPreference_t p,
                                                    cublasLtMatmulPreferenceAttributes_t attr, void *buf, size_t size,
                                                    size_t *written)
{
  const char *call = "cublasLtMatmulPreferenceGetAttribute";
  return guarded(call, [&] {
    if (!is_live(p, Kind::pref)) return refuse(CUBLAS_STATUS_INVALID_VALUE, call, "preference %p not live", (void *)p);
    return get_attr(call, attr, pref_field(p, attr), buf, size, written);
  });
}

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t h, cublasLtMatmulDesc_t d, cublasLtMatrixLayout_t a,
                                              cublasLtMatrixLayout_t b, cublasLtMatrixLayout_t c,
                                              cublasLtMatrixLayout_t dd, cublasLtMatmulPreference_t pref, int requested,
                                              cublasLtMatmulHeuristicResult_t results[], int *count)
{
  const char *call = "cublasLtMatmulAlgoGetHeuristic";
  return guarded(call, [&] {
    if (requested <= 0 || !results || !count || !is_live(pref, Kind::pref))
      return refuse(CUBLAS_STATUS_INVALID_VALUE, call, "requestedAlgoCount %d, results %p, count %p, preference %p",
                    requested, (void *)results, (void *)count, (void *)pref);
    *count = 0;
    LtProblem q;
    cublasStatus_t st = lt_problem(call, h, d, a, b, c, dd, &q);
    if (st != CUBLAS_STATUS_SUCCESS) return st;
    cublasLtMatmulHeuristicResult_t r;
    memset(&r, 0, sizeof r);
    uint64_t *x = r.algo.data;
    x[0] = ALGO_TAG;
    x[AL_WORK] = workspace_need(q, pref->max_workspace);
    for (int i = 0; i < 4; i++) x[AL_A + i] = pref->align[i];
    x[AL_BIAS] = alignment_of(q.d.bias);
    x[AL_AUX] = alignment_of(q.d.aux);
    r.workspaceSize = (size_t)x[AL_WORK];
    r.state = CUBLAS_STATUS_SUCCESS;
    r.wavesCount = 1.0f;
    results[0] = r;
    *count = 1;
    return CUBLAS_STATUS_SUCCESS;
  });
}

cublasStatus_t cublasLtMatmul(cublasLtHandle_t h, cublasLtMatmulDesc_t d, const void *alpha, const void *A,
                              cublasLtMatrixLayout_t ad, const void *B, cublasLtMatrixLayout_t bd, const void *beta,
                              const void *C, cublasLtMatrixLayout_t cd, void *D, cublasLtMatrixLayout_t dd,
                              const cublasLtMatmulAlgo_t *algo, void *work, size_t work_bytes, cudaStream_t stream)
{
  const char *call = "cublasLtMatmul";
  return guarded(call, [&] {
    LtProblem q;
    cublasStatus_t st = lt_problem(call, h, d, ad, bd, cd, dd, &q);
    if (st != CUBLAS_STATUS_SUCCESS) return st;
    if (!alpha || !beta) return refuse(CUBLAS_STATUS_INVALID_VALUE, call, "null alpha or beta");
    if (C == D && (q.C.ld != q.D.ld || q.C.stride != q.D.stride))
      return refuse(CUBLAS_STATUS_INVALID_VALUE, call,
                    "in place (C == D) with C's ld/stride %lld/%lld != D's %lld/%lld", (long long)q.C.ld,
                    (long long)q.C.stride, (long long)q.D.ld, (long long)q.D.stride);
    const void *ptrs[4] = {A, B, C, D};
    st = lt_algo_check(call, q, algo, ptrs, work, work_bytes);
    if (st != CUBLAS_STATUS_SUCCESS) return st;
    if (q.m == 0 || q.n == 0) return CUBLAS_STATUS_SUCCESS;
    Product p = lt_product(q, *static_cast<const float *>(alpha), *static_cast<const float *>(beta), A, B, C, D);
    if (algo) p.work = work, p.work_bytes = (size_t)algo->data[AL_WORK];
    return submit(stream, p);
  });
}

} // extern "C"
