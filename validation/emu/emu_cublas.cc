/* The emulated cuBLAS (include/cublas_v2.h), and the engine under it and cuBLASLt
 * (emu_cublaslt.cc): the product of a call, queued on its stream and run on the host's CBLAS.
 *
 * Every entry point does what the library does at call time: it checks its arguments as the
 * documentation states and returns the documented status (printing why), reads host scalars
 * (alpha, beta) and copies what it needs out of the descriptors, then queues the product on
 * the stream (emu::enqueue).  The product runs when the stream drains, with device memory
 * open: first every operand's extent (rows, cols, ld, batch stride) is checked to lie inside one
 * live device allocation, else the device faults (emu::fault, cudaErrorIllegalAddress, naming
 * the call and the operand), as a kernel reading out of bounds would; then one cblas_sgemm per
 * batch entry, on the fp32 operands in place or on fp32 copies of bf16/fp16 ones, and the
 * epilogue in fp32 with one rounding to the output type.
 *
 * What only a GPU shows: the real kernels' summation order and TF32/fast modes (here every
 * 32F compute type is CBLAS's fp32), their heuristics, and their speed. */
#include "emu_cublas.h"

#include <cblas.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <unordered_map>
#include <vector>

struct cublasContext {
  cudaStream_t stream = nullptr;
  cublasMath_t mode = CUBLAS_DEFAULT_MATH;
};

namespace emu {
namespace blas {

const char *status_name(int s)
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

const char *status_string(int s)
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

cublasStatus_t refuse(cublasStatus_t st, const char *call, const char *fmt, ...)
{
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  fprintf(stderr, "ptdp-emu: %s: %s (%s)\n", call, msg, status_name(st));
  return st;
}

namespace {
/* Never freed: usable from destructors at exit. */
std::unordered_map<const void *, Kind> &live()
{
  static auto *m = new std::unordered_map<const void *, Kind>;
  return *m;
}
} // namespace

void track(const void *p, Kind k) { live()[p] = k; }
void untrack(const void *p) { live().erase(p); }
bool is_live(const void *p, Kind k)
{
  auto it = live().find(p);
  return p && it != live().end() && it->second == k;
}

size_t type_bytes(int t) { return t == CUDA_R_32F ? 4 : t == CUDA_R_16F || t == CUDA_R_16BF ? 2 : 0; }

const char *type_name(int t)
{
  return t == CUDA_R_32F ? "CUDA_R_32F" : t == CUDA_R_16F ? "CUDA_R_16F" : t == CUDA_R_16BF ? "CUDA_R_16BF" : "other";
}

bool is_32f_compute(int c)
{
  return c == CUBLAS_COMPUTE_32F || c == CUBLAS_COMPUTE_32F_PEDANTIC || c == CUBLAS_COMPUTE_32F_FAST_TF32 ||
         c == CUBLAS_COMPUTE_32F_FAST_16F || c == CUBLAS_COMPUTE_32F_FAST_16BF;
}

bool types_supported(int ab, int b, int c) { return ab == b && type_bytes(ab) && (c == ab || c == CUDA_R_32F); }
bool op_valid(int op) { return op == CUBLAS_OP_N || op == CUBLAS_OP_T || op == CUBLAS_OP_C; }

namespace {

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

} // namespace

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

} // namespace blas
} // namespace emu

using namespace emu::blas;

namespace {

/* ---- cuBLAS GEMMs ---- */

struct BlasArgs { /* the arguments common to the four GEMM entry points */
  int ta, tb;
  int m, n, k;
  const void *alpha, *beta;
  const void *A, *B, *C;
  int lda, ldb, ldc;
  long long sa, sb, sc;
  int batch;
  int atype, btype, ctype, compute, algo;
};
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

} // namespace

/* ======================================= cuBLAS ======================================= */

extern "C" {

const char *cublasGetStatusName(cublasStatus_t s) { return status_name(raw(&s)); }
const char *cublasGetStatusString(cublasStatus_t s) { return status_string(raw(&s)); }

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
    const int v = raw(&mode), base = v & ~(int)CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION;
    if (base < CUBLAS_DEFAULT_MATH || base > CUBLAS_TF32_TENSOR_OP_MATH)
      return refuse(CUBLAS_STATUS_INVALID_VALUE, "cublasSetMathMode", "math mode %d", v);
    h->mode = (cublasMath_t)v;
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
  const BlasArgs a = {raw(&ta), raw(&tb), m, n, k, alpha, beta, A, B, C, lda, ldb, ldc, 0, 0, 0, 1,
                      CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT};
  return guarded("cublasSgemm", [&] { return blas_gemm("cublasSgemm", h, a); });
}

cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                                         int k, const float *alpha, const float *A, int lda, long long sa,
                                         const float *B, int ldb, long long sb, const float *beta, float *C, int ldc,
                                         long long sc, int batch)
{
  const BlasArgs a = {raw(&ta), raw(&tb), m, n, k, alpha, beta, A, B, C, lda, ldb, ldc, sa, sb, sc, batch,
                      CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT};
  return guarded("cublasSgemmStridedBatched", [&] { return blas_gemm("cublasSgemmStridedBatched", h, a); });
}

cublasStatus_t cublasGemmEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                            const void *alpha, const void *A, cudaDataType at, int lda, const void *B, cudaDataType bt,
                            int ldb, const void *beta, void *C, cudaDataType ct, int ldc, cublasComputeType_t compute,
                            cublasGemmAlgo_t algo)
{
  const BlasArgs a = {raw(&ta), raw(&tb), m, n, k, alpha, beta, A, B, C, lda, ldb, ldc, 0, 0, 0, 1,
                      raw(&at), raw(&bt), raw(&ct), raw(&compute), raw(&algo)};
  return guarded("cublasGemmEx", [&] { return blas_gemm("cublasGemmEx", h, a); });
}

cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                                          int k, const void *alpha, const void *A, cudaDataType at, int lda,
                                          long long sa, const void *B, cudaDataType bt, int ldb, long long sb,
                                          const void *beta, void *C, cudaDataType ct, int ldc, long long sc, int batch,
                                          cublasComputeType_t compute, cublasGemmAlgo_t algo)
{
  const BlasArgs a = {raw(&ta), raw(&tb), m, n, k, alpha, beta, A, B, C, lda, ldb, ldc, sa, sb, sc, batch,
                      raw(&at), raw(&bt), raw(&ct), raw(&compute), raw(&algo)};
  return guarded("cublasGemmStridedBatchedEx", [&] { return blas_gemm("cublasGemmStridedBatchedEx", h, a); });
}

} // extern "C"
