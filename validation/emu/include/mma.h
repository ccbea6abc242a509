/* The CUDA emulation's mma.h: the subset of nvcuda::wmma (warp matrix multiply-accumulate, the
 * tensor cores' C++ interface) that ptdp's kernels use, written from NVIDIA's documentation
 * (CUDA C++ Programming Guide, "Warp Matrix Functions"), not copied; and, at the end, the PTX
 * instructions of src/backend/cuda_mma.h (mma.sync m16n8k16, ldmatrix, cp.async), from the
 * PTX ISA.
 *
 *   fragment<matrix_a | matrix_b, 16, 16, 16, __nv_bfloat16 | __half, row_major | col_major>
 *   fragment<accumulator, 16, 16, 16, float>
 *   fill_fragment(f, v)                     every element of this lane's part set to v
 *   load_matrix_sync(f, p, ldm)             an operand tile from memory (the layout is f's)
 *   load_matrix_sync(f, p, ldm, layout)     an accumulator tile (mem_row_major | mem_col_major)
 *   store_matrix_sync(p, f, ldm, layout)    an accumulator tile to memory
 *   mma_sync(d, a, b, c)                    d = a b + c, 16 x 16 x 16; d may be c
 * Element (r, c) of a row_major tile is p[r ldm + c], of a col_major one p[c ldm + r].
 *
 * Which lane holds which element.  Each lane holds num_elements = 8 of a tile's 256 elements in
 * x[]; CUDA leaves the mapping unspecified, so kernel code may use x[] only for elementwise
 * operations (scaling, conversion) and must not infer rows or columns from it.  Ours:
 *   operands (matrix_a: rows m, columns k; matrix_b: rows k, columns n)
 *                lane l, x[i]  ->  (row l / 2, column (l % 2) 8 + i)
 *   accumulator  lane l, x[i]  ->  (row 2 i + l / 16, column l % 16)
 * The two differ on purpose: an accumulator stored to shared memory and read back as an
 * operand (or by scalar code) is read by other lanes than those that wrote it, so a missing
 * __syncwarp between the two is a hazard the race detector reports, as it may be on hardware.
 *
 * The arithmetic of mma_sync is exact and its order stated: each product of two 16-bit values
 * is exact in fp32 (8 x 8 or 11 x 11 significand bits fit in 24), and
 *     d[m][n] = (((c[m][n] + a[m][0] b[0][n]) + a[m][1] b[1][n]) + ...) + a[m][15] b[15][n]
 * with every sum rounded to fp32 (round to nearest even), k in order 0 to 15.  Tensor cores
 * sum in another order and with other rounding (not IEEE), so results on a GPU differ from
 * these by fp32 rounding; tests state tolerances accordingly.
 *
 * Every operation is warp-collective, as CUDA requires: the 32 lanes of the warp call it
 * together with the same arguments.  Each lane posts its call (operation, caller, pointer,
 * ldm, layout, and for mma_sync its operand elements) and waits at a warp barrier that does
 * not order memory (CUDA documents no ordering for these calls: a kernel uses __syncwarp);
 * then every lane checks all 32 posts.  A misuse ends the block with cudaErrorLaunchFailure
 * and a message naming the kernel:
 *   a warp with fewer than 32 live lanes;
 *   a lane absent (returned, at another barrier, or at another wmma operation or call site);
 *   lanes with different pointers, ldm or layouts;
 *   a pointer not aligned to 256 bits (32 bytes; in dynamic shared memory, its offset from the
 *   buffer's start), an ldm not a multiple of 8 elements for 16-bit types or 4 for float.
 * The loads and stores of tiles are the kernel's own accesses (the race detector and the bounds
 * check see each lane's elements); the exchange of posts is the emulation's and unchecked. */
#ifndef PTDP_EMU_MMA_H
#define PTDP_EMU_MMA_H

#include "emu_simt.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

namespace nvcuda {
namespace wmma {

struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
enum layout_t { mem_row_major, mem_col_major };

template <typename Use, int M, int N, int K, typename T, typename Layout = void> struct fragment {
  static_assert(M == 16 && N == 16 && K == 16, "the emulated wmma has the 16x16x16 shape only");
  static_assert(std::is_same<Use, accumulator>::value
                    ? std::is_same<T, float>::value && std::is_void<Layout>::value
                    : (std::is_same<T, __nv_bfloat16>::value || std::is_same<T, __half>::value) &&
                          (std::is_same<Layout, row_major>::value || std::is_same<Layout, col_major>::value),
                "emulated wmma fragments: matrix_a/matrix_b of __nv_bfloat16 or __half with row_major or "
                "col_major, accumulator of float");
  enum { num_elements = 8 };
  T x[num_elements];
};

} // namespace wmma
} // namespace nvcuda

namespace emu {
namespace wmma_impl {

enum Op { LOAD_A, LOAD_B, LOAD_C, STORE_D, MMA, PTX_MMA, PTX_LDMATRIX };
static const char *const op_name[] = {"load_matrix_sync (matrix_a)", "load_matrix_sync (matrix_b)",
                                      "load_matrix_sync (accumulator)", "store_matrix_sync", "mma_sync",
                                      "mma.sync.m16n8k16 (ptdp_mma16816)", "ldmatrix (ptdp_ldmatrix)"};

/* One lane's call, posted before the warp barrier. */
struct Post {
  uint64_t block_gen; /* the block and warp barrier generation it belongs to: stale posts show */
  unsigned warp_gen;
  int op, type, layout; /* type: 0 float, 1 bf16, 2 fp16; layout: 0 row, 1 col */
  uintptr_t site;       /* the caller's address */
  const void *ptr;
  unsigned ldm;
  unsigned short a[8], b[8]; /* mma_sync: this lane's operand elements (raw bits) */
};
/* Double-buffered by the warp's barrier generation, as shuffles are: a lane that runs ahead to
 * its next call posts into the other buffer, and it cannot get two calls ahead. */
inline Post posts[2][MAX_THREADS];

template <typename T> constexpr int type_code()
{
  return std::is_same<T, float>::value ? 0 : std::is_same<T, __nv_bfloat16>::value ? 1 : 2;
}
inline float to_float(unsigned short bits, int type)
{
  return type == 1 ? ptdp_emu_bfloat162float_bits(bits) : ptdp_emu_half2float_bits(bits);
}

/* The checks of one lane's arguments that need no other lane. */
__attribute__((no_sanitize_thread)) inline bool check_args(int op, const void *p, unsigned ldm, int type)
{
  uintptr_t a = (uintptr_t)p, dyn = (uintptr_t)R.dyn.data();
  if (!R.dyn.empty() && a >= dyn && a < dyn + R.dyn.size()) a -= dyn; /* the buffer's start is aligned on a GPU */
  if (a % 32) {
    fail_block("wmma::%s: pointer %p is not aligned to 256 bits (32 bytes), as CUDA requires", op_name[op], p);
    return false;
  }
  unsigned mult = type == 0 ? 4 : 8;
  if (ldm % mult || ldm < 16) {
    fail_block("wmma::%s: ldm %u is not a multiple of %u elements (16 bytes) of at least 16", op_name[op], ldm,
               mult);
    return false;
  }
  return true;
}

/* Post this lane's call, wait for the warp, check every lane's post; the warp's posts (for
 * mma_sync's operands), or nullptr when the block has failed. */
__attribute__((no_sanitize_thread)) inline const Post *collective(Post me, bool lane_ptrs = false)
{
  if (!in_kernel || !emu_current) {
    fault(cudaErrorLaunchFailure, "wmma::%s called outside a kernel", op_name[me.op]);
    return nullptr;
  }
  FiberCtx *fc = &fibers[emu_current->linear];
  Warp &w = R.warps[fc->warp];
  if (w.live != 0xffffffffu) {
    fail_block("wmma::%s in warp %d with live lanes %#x: wmma needs all 32 lanes of a warp", op_name[me.op],
               fc->warp, w.live);
    return nullptr;
  }
  const unsigned g = w.gen & 1;
  me.block_gen = R.block_gen;
  me.warp_gen = w.gen;
  posts[g][fc->f.linear] = me;
  vote(0xffffffffu, 1, 0); /* the warp barrier (orders no memory) */
  if (R.failed) return nullptr;
  const Post *all = &posts[g][fc->warp * 32];
  for (int l = 0; l < 32; l++) {
    const Post &o = all[l];
    if (o.block_gen != me.block_gen || o.warp_gen != me.warp_gen || o.op != me.op || o.site != me.site) {
      fail_block("wmma::%s (called from %#lx) by lane %d of warp %d: lane %d is not at this call (a warp-collective "
                 "operation needs every lane of the warp)", op_name[me.op], (unsigned long)me.site, fc->lane,
                 fc->warp, l);
      return nullptr;
    }
    if ((!lane_ptrs && o.ptr != me.ptr) || o.ldm != me.ldm || o.layout != me.layout || o.type != me.type) {
      fail_block("wmma::%s by warp %d: lanes %d and %d pass different arguments (pointer %p / %p, ldm %u / %u); "
                 "CUDA requires the same for every lane", op_name[me.op], fc->warp, fc->lane, l, me.ptr, o.ptr,
                 me.ldm, o.ldm);
      return nullptr;
    }
  }
  return all;
}

__attribute__((no_sanitize_thread)) inline int lane() { return fibers[emu_current->linear].lane; }

/* Element offsets of this lane's part of a tile: operands (row l/2, columns (l%2)8 + i),
 * accumulators (row 2i + l/16, column l%16); col: the tile is stored column-major. */
inline size_t operand_offset(int l, int i, unsigned ldm, bool col)
{
  size_t r = (size_t)(l / 2), c = (size_t)((l % 2) * 8 + i);
  return col ? c * ldm + r : r * ldm + c;
}
inline size_t acc_offset(int l, int i, unsigned ldm, bool col)
{
  size_t r = (size_t)(2 * i + l / 16), c = (size_t)(l % 16);
  return col ? c * ldm + r : r * ldm + c;
}

/* mma_sync's exact arithmetic for this lane's eight elements (see the top of the file). */
__attribute__((no_sanitize_thread)) inline void mma_lane(const Post *all, int type, const float *c, float *d)
{
  const int l = lane();
  float out[8];
  for (int i = 0; i < 8; i++) {
    const int m = 2 * i + l / 16, n = l % 16;
    float acc = c[i];
    for (int k = 0; k < 16; k++) {
      /* a[m][k] is held by lane 2m + k/8, element k%8; b[k][n] by lane 2k + n/8, element n%8 */
      float av = to_float(all[2 * m + k / 8].a[k % 8], type), bv = to_float(all[2 * k + n / 8].b[n % 8], type);
      float prod = av * bv; /* exact */
      acc = acc + prod;
    }
    out[i] = acc;
  }
  memcpy(d, out, sizeof out);
}

} // namespace wmma_impl
} // namespace emu

namespace nvcuda {
namespace wmma {

/* The value converts to the element type (T is deduced from the fragment alone, as in CUDA). */
template <typename Use, typename T, typename L>
inline void fill_fragment(fragment<Use, 16, 16, 16, T, L> &f, const typename std::enable_if<true, T>::type &v)
{
  for (int i = 0; i < 8; i++) f.x[i] = v;
}

template <typename Use, typename T, typename L>
__attribute__((noinline)) void load_matrix_sync(fragment<Use, 16, 16, 16, T, L> &f, const T *p, unsigned ldm)
{
  using namespace emu::wmma_impl;
  static_assert(!std::is_same<Use, accumulator>::value, "an accumulator load names its layout (mem_row_major)");
  const int op = std::is_same<Use, matrix_a>::value ? LOAD_A : LOAD_B;
  const bool col = std::is_same<L, col_major>::value;
  Post me{};
  me.op = op, me.type = type_code<T>(), me.layout = col, me.site = (uintptr_t)__builtin_return_address(0);
  me.ptr = p, me.ldm = ldm;
  if (!check_args(op, p, ldm, me.type) || !collective(me)) return;
  const int l = lane();
  for (int i = 0; i < 8; i++) f.x[i] = p[operand_offset(l, i, ldm, col)];
}

__attribute__((noinline)) inline void load_matrix_sync(fragment<accumulator, 16, 16, 16, float> &f, const float *p,
                                                       unsigned ldm, layout_t layout)
{
  using namespace emu::wmma_impl;
  const bool col = layout == mem_col_major;
  Post me{};
  me.op = LOAD_C, me.type = 0, me.layout = col, me.site = (uintptr_t)__builtin_return_address(0);
  me.ptr = p, me.ldm = ldm;
  if (!check_args(LOAD_C, p, ldm, 0) || !collective(me)) return;
  const int l = lane();
  for (int i = 0; i < 8; i++) f.x[i] = p[acc_offset(l, i, ldm, col)];
}

__attribute__((noinline)) inline void store_matrix_sync(float *p, const fragment<accumulator, 16, 16, 16, float> &f,
                                                        unsigned ldm, layout_t layout)
{
  using namespace emu::wmma_impl;
  const bool col = layout == mem_col_major;
  Post me{};
  me.op = STORE_D, me.type = 0, me.layout = col, me.site = (uintptr_t)__builtin_return_address(0);
  me.ptr = p, me.ldm = ldm;
  if (!check_args(STORE_D, p, ldm, 0) || !collective(me)) return;
  const int l = lane();
  for (int i = 0; i < 8; i++) p[acc_offset(l, i, ldm, col)] = f.x[i];
}

template <typename T, typename LA, typename LB>
__attribute__((noinline)) void mma_sync(fragment<accumulator, 16, 16, 16, float> &d,
                                        const fragment<matrix_a, 16, 16, 16, T, LA> &a,
                                        const fragment<matrix_b, 16, 16, 16, T, LB> &b,
                                        const fragment<accumulator, 16, 16, 16, float> &c, bool satf = false)
{
  using namespace emu::wmma_impl;
  static_assert(sizeof(T) == 2, "16-bit operands");
  Post me{};
  me.op = MMA, me.type = type_code<T>(), me.layout = 0, me.site = (uintptr_t)__builtin_return_address(0);
  me.ldm = 16;
  memcpy(me.a, a.x, sizeof me.a);
  memcpy(me.b, b.x, sizeof me.b);
  if (satf) {
    emu::fail_block("wmma::mma_sync with satf: not emulated");
    return;
  }
  const Post *all = collective(me);
  if (all) mma_lane(all, me.type, c.x, d.x);
}

} // namespace wmma
} // namespace nvcuda

/* ---------------------------------------------------------------- PTX instructions
 * The inline-PTX wrappers of src/backend/cuda_mma.h (the fused attention's "mma" kernels), as
 * the PTX ISA states them (NVIDIA, "Parallel Thread Execution ISA", version 8.5; section numbers
 * of that version), written from the ISA's text and figures:
 *
 *   ptdp_mma16816<T>(d, a, b, c)   mma.sync.aligned.m16n8k16.row.col.f32.T.T.f32 (T bf16 or f16;
 *                                  9.7.14.5.14 "mma", fragments 9.7.14.5.8 "Matrix Fragments for
 *                                  mma.m16n8k16 with floating point type"): D [16, 8] = A [16, 16]
 *                                  B [16, 8] + C.  Lane l, g = l / 4, t = l % 4 (groupID,
 *                                  threadID_in_group); a 32-bit register holds two 16-bit
 *                                  elements, the first in its low half:
 *       A  a[0] (g, 2t..2t+1)  a[1] (g+8, 2t..2t+1)  a[2] (g, 2t+8..2t+9)  a[3] (g+8, 2t+8..2t+9)
 *       B  b[0] (rows k 2t..2t+1, column g)  b[1] (rows k 2t+8..2t+9, column g)
 *       C, D  c[0], c[1] (g, 2t), (g, 2t+1);  c[2], c[3] (g+8, 2t), (g+8, 2t+1)
 *     The arithmetic: exact products summed in order k = 0..15 onto c in fp32, as wmma's above.
 *   ptdp_ldmatrix<NUM, TRANS>(r, row)   ldmatrix.sync.aligned.m8n8.xNUM[.trans].shared.b16
 *                                  (9.7.14.5.15 "ldmatrix"): NUM (2 or 4) 8x8 matrices of 16-bit
 *                                  elements; lanes 8i..8i+7 give the addresses of rows 0..7 of
 *                                  matrix i (16 bytes each, 16-byte aligned; other lanes'
 *                                  addresses unused); r[i] of lane l holds matrix i's elements
 *                                  (l / 4, 2 (l % 4)) and (l / 4, 2 (l % 4) + 1), or with .trans
 *                                  (2 (l % 4), l / 4) and (2 (l % 4) + 1, l / 4).
 *   ptdp_cp_async16(dst, src, n)   cp.async.cg.shared.global [dst], [src], 16, n (9.7.9.25
 *                                  "cp.async"): n (0..16) bytes from global src, the rest of the
 *                                  16 zero-filled; dst and src 16-byte aligned.
 *   ptdp_cp_async_commit()         cp.async.commit_group (9.7.9.26): the copies issued since
 *                                  the last commit form a group.
 *   ptdp_cp_async_wait<N>()        cp.async.wait_group N (9.7.9.27): wait until at most the N
 *                                  most recent groups are pending.
 * mma and ldmatrix are warp-collective and checked as wmma's calls (every lane at the same call;
 * a misuse ends the block).  cp.async is emulated as late as the ISA allows: a copy happens
 * inside the wait that completes its group, as this thread's loads and stores (the bounds check
 * and the race detector see them there), so a read before the wait, or by another thread
 * without a barrier after it, sees stale data or a race report, as it may on a GPU.  Copies a
 * block leaves unwaited are dropped. */
namespace emu {
namespace ptx_impl {

__attribute__((no_sanitize_thread)) inline const void *post_ptr(const wmma_impl::Post *all, int l)
{
  return all[l].ptr;
}

/* The aligned test of ldmatrix's and cp.async's shared addresses (offset in the dynamic buffer,
 * whose start a GPU aligns) and global ones. */
__attribute__((no_sanitize_thread)) inline bool aligned16(const void *p)
{
  uintptr_t a = (uintptr_t)p, dyn = (uintptr_t)R.dyn.data();
  if (!R.dyn.empty() && a >= dyn && a < dyn + R.dyn.size()) a -= dyn;
  return a % 16 == 0;
}

/* mma.m16n8k16 for this lane's four elements of D (the fragments at the top of this part). */
__attribute__((no_sanitize_thread)) inline void mma16816_lane(const wmma_impl::Post *all, int type, const float *c,
                                                              float *d)
{
  const int l = wmma_impl::lane(), g = l / 4, t = l % 4;
  float out[4];
  for (int i = 0; i < 4; i++) {
    const int m = g + 8 * (i / 2), n = 2 * t + i % 2;
    float acc = c[i];
    for (int k = 0; k < 16; k++) {
      /* a[m][k]: lane 4 (m % 8) + (k % 8) / 2, register m / 8 + 2 (k / 8), half k % 2;
       * b[k][n]: lane 4 n + (k % 8) / 2, register k / 8, half k % 2 */
      const int ar = m / 8 + 2 * (k / 8), br = k / 8;
      const float av = wmma_impl::to_float(all[4 * (m % 8) + (k % 8) / 2].a[2 * ar + k % 2], type);
      const float bv = wmma_impl::to_float(all[4 * n + (k % 8) / 2].b[2 * br + k % 2], type);
      acc = acc + av * bv; /* the product exact in fp32 */
    }
    out[i] = acc;
  }
  memcpy(d, out, sizeof out);
}

struct CpAsync {
  unsigned group;
  void *dst;
  const void *src;
  int bytes;
};
/* Per thread of the block being run (blocks run one at a time): the pending copies (a fixed
 * array: kernel code must not allocate through instrumented library code), the open group's
 * number, and the block they belong to. */
constexpr int CP_MAX = 128;
inline CpAsync cp_pending[MAX_THREADS][CP_MAX];
inline int cp_count[MAX_THREADS];
inline unsigned cp_group[MAX_THREADS];
inline uint64_t cp_block[MAX_THREADS];

__attribute__((no_sanitize_thread)) inline int cp_thread()
{
  const int t = emu_current->linear;
  if (cp_block[t] != R.block_gen) cp_count[t] = 0, cp_group[t] = 0, cp_block[t] = R.block_gen;
  return t;
}

__attribute__((no_sanitize_thread)) inline bool cp_push(void *dst, const void *src, int bytes)
{
  const int t = cp_thread();
  if (cp_count[t] == CP_MAX) return false;
  cp_pending[t][cp_count[t]++] = CpAsync{cp_group[t], dst, src, bytes};
  return true;
}

/* One copy, as the waiting thread's own accesses (instrumented). */
inline void cp_do(const CpAsync &c)
{
  unsigned char *d = (unsigned char *)c.dst;
  const unsigned char *s = (const unsigned char *)c.src;
  if (c.bytes == 16) {
    uint64_t *d8 = (uint64_t *)d;
    const uint64_t *s8 = (const uint64_t *)s;
    d8[0] = s8[0], d8[1] = s8[1];
    return;
  }
  for (int i = 0; i < 16; i++) d[i] = i < c.bytes ? s[i] : 0;
}

/* The copies of thread t's groups older than its newest n committed ones, out of the queue
 * (in the order issued). */
__attribute__((no_sanitize_thread)) inline int cp_take(int t, unsigned n, CpAsync *out)
{
  int k = 0, j = 0;
  for (int i = 0; i < cp_count[t]; i++) {
    const CpAsync c = cp_pending[t][i];
    if (c.group + n < cp_group[t]) out[k++] = c;
    else cp_pending[t][j++] = c;
  }
  cp_count[t] = j;
  return k;
}

} // namespace ptx_impl
} // namespace emu

template <typename T>
__attribute__((noinline)) void ptdp_mma16816(float *d, const uint32_t *a, const uint32_t *b, const float *c)
{
  using namespace emu::wmma_impl;
  static_assert(std::is_same<T, __nv_bfloat16>::value || std::is_same<T, __half>::value, "bf16 or f16 operands");
  Post me{};
  me.op = PTX_MMA, me.type = type_code<T>(), me.layout = 0, me.site = (uintptr_t)__builtin_return_address(0);
  me.ldm = 16;
  memcpy(me.a, a, 4 * sizeof(uint32_t));
  memcpy(me.b, b, 2 * sizeof(uint32_t));
  const Post *all = collective(me);
  if (all) emu::ptx_impl::mma16816_lane(all, me.type, c, d);
}

template <int NUM, bool TRANS> __attribute__((noinline)) void ptdp_ldmatrix(uint32_t *r, const void *row)
{
  using namespace emu::wmma_impl;
  static_assert(NUM == 2 || NUM == 4, "ldmatrix .x2 or .x4");
  Post me{};
  me.op = PTX_LDMATRIX, me.type = 1, me.layout = TRANS, me.site = (uintptr_t)__builtin_return_address(0);
  me.ptr = row, me.ldm = NUM;
  const Post *all = collective(me, true);
  if (!all) return;
  const int l = lane();
  if (l < 8 * NUM && !emu::ptx_impl::aligned16(row)) {
    emu::fail_block("ldmatrix: lane %d's row address %p is not 16-byte aligned", l, row);
    return;
  }
  for (int i = 0; i < NUM; i++) {
    uint16_t lo, hi;
    if (!TRANS) {
      const uint16_t *p = (const uint16_t *)emu::ptx_impl::post_ptr(all, 8 * i + l / 4);
      lo = p[2 * (l % 4)], hi = p[2 * (l % 4) + 1];
    } else {
      const uint16_t *p0 = (const uint16_t *)emu::ptx_impl::post_ptr(all, 8 * i + 2 * (l % 4));
      const uint16_t *p1 = (const uint16_t *)emu::ptx_impl::post_ptr(all, 8 * i + 2 * (l % 4) + 1);
      lo = p0[l / 4], hi = p1[l / 4];
    }
    r[i] = (uint32_t)lo | (uint32_t)hi << 16;
  }
}

__attribute__((noinline)) inline void ptdp_cp_async16(void *dst, const void *src, int bytes)
{
  using namespace emu::ptx_impl;
  if (!emu::in_kernel || !emu_current) {
    emu::fault(cudaErrorLaunchFailure, "cp.async called outside a kernel");
    return;
  }
  if (!aligned16(dst) || (bytes > 0 && (uintptr_t)src % 16) || bytes < 0 || bytes > 16) {
    emu::fail_block("cp.async: dst %p, src %p (16-byte aligned both) or src-size %d (0..16) wrong", dst, src, bytes);
    return;
  }
  if (!cp_push(dst, src, bytes)) emu::fail_block("cp.async: more than %d copies pending in one thread", CP_MAX);
}

__attribute__((no_sanitize_thread, noinline)) inline void ptdp_cp_async_commit()
{
  if (!emu::in_kernel || !emu_current) return;
  emu::ptx_impl::cp_group[emu::ptx_impl::cp_thread()]++;
}

template <int N> __attribute__((noinline)) void ptdp_cp_async_wait()
{
  using namespace emu::ptx_impl;
  static_assert(N >= 0, "wait_group N >= 0");
  if (!emu::in_kernel || !emu_current) return;
  CpAsync batch[CP_MAX];
  const int n = cp_take(cp_thread(), N, batch);
  for (int i = 0; i < n; i++) cp_do(batch[i]);
}

#endif
