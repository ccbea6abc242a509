/* The CUDA emulation's mma.h: the subset of nvcuda::wmma (warp matrix multiply-accumulate, the
 * tensor cores' C++ interface) that ptdp's kernels use, written from NVIDIA's documentation
 * (CUDA C++ Programming Guide, "Warp Matrix Functions"), not copied.
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

enum Op { LOAD_A, LOAD_B, LOAD_C, STORE_D, MMA };
static const char *const op_name[] = {"load_matrix_sync (matrix_a)", "load_matrix_sync (matrix_b)",
                                      "load_matrix_sync (accumulator)", "store_matrix_sync", "mma_sync"};

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
__attribute__((no_sanitize_thread)) inline const Post *collective(Post me)
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
    if (o.ptr != me.ptr || o.ldm != me.ldm || o.layout != me.layout || o.type != me.type) {
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

#endif
