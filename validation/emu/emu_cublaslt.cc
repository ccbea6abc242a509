/* The emulated cuBLASLt (include/cublasLt.h) on the engine of emu_cublas.cc: descriptors as
 * plain structs with their attribute tables, the documented checks of a problem (shapes,
 * layouts, types, epilogue pointers), a heuristic that returns one algorithm per valid problem,
 * and cublasLtMatmul, which checks the pointers and workspace against that algorithm and queues
 * the product with its epilogue. */
#include "emu_cublas.h"

#include <algorithm>
#include <climits>
#include <cstdio>

/* The handle holds nothing (streams come with each call); descriptors hold their attributes'
 * values, with the documented defaults. */
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
  uint32_t search = 0, reduction = CUBLASLT_REDUCTION_SCHEME_MASK; /* every scheme allowed */
  uint64_t max_workspace = 0;
  uint32_t align[4] = {256, 256, 256, 256}; /* A, B, C, D */
  float max_waves = 0;
  uint64_t impl = ~0ull;
};

using namespace emu::blas;

namespace {

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

extern "C" {

/* ====================================== cuBLASLt ====================================== */

const char *cublasLtGetStatusName(cublasStatus_t s) { return status_name(raw(&s)); }
const char *cublasLtGetStatusString(cublasStatus_t s) { return status_string(raw(&s)); }
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
    if (st != CUBLAS_STATUS_SUCCESS) return st;
    (*l)->type = (uint32_t)raw(&type), (*l)->rows = rows, (*l)->cols = cols, (*l)->ld = ld;
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
    return set_attr(call, raw(&attr), layout_field(l, raw(&attr)), buf, size, [&] { return l->ld >= 0; });
  });
}

cublasStatus_t cublasLtMatrixLayoutGetAttribute(cublasLtMatrixLayout_t l, cublasLtMatrixLayoutAttribute_t attr,
                                                void *buf, size_t size, size_t *written)
{
  const char *call = "cublasLtMatrixLayoutGetAttribute";
  return guarded(call, [&] {
    if (!is_live(l, Kind::layout)) return refuse(CUBLAS_STATUS_INVALID_VALUE, call, "layout %p not live", (void *)l);
    return get_attr(call, raw(&attr), layout_field(l, raw(&attr)), buf, size, written);
  });
}

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *d, cublasComputeType_t compute, cudaDataType_t scale)
{
  return guarded("cublasLtMatmulDescCreate", [&] {
    cublasStatus_t st = create("cublasLtMatmulDescCreate", d, Kind::desc);
    if (st == CUBLAS_STATUS_SUCCESS) (*d)->compute = raw(&compute), (*d)->scale = raw(&scale);
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
    return set_attr(call, raw(&attr), desc_field(d, raw(&attr)), buf, size, [&] {
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
    return get_attr(call, raw(&attr), desc_field(d, raw(&attr)), buf, size, written);
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
    return set_attr(call, raw(&attr), pref_field(p, raw(&attr)), buf, size,
                    [&] { return (p->reduction & ~(uint32_t)CUBLASLT_REDUCTION_SCHEME_MASK) == 0; });
  });
}

cublasStatus_t cublasLtMatmulPreferenceGetAttribute(cublasLtMatmulPreference_t p,
                                                    cublasLtMatmulPreferenceAttributes_t attr, void *buf, size_t size,
                                                    size_t *written)
{
  const char *call = "cublasLtMatmulPreferenceGetAttribute";
  return guarded(call, [&] {
    if (!is_live(p, Kind::pref)) return refuse(CUBLAS_STATUS_INVALID_VALUE, call, "preference %p not live", (void *)p);
    return get_attr(call, raw(&attr), pref_field(p, raw(&attr)), buf, size, written);
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
