// The tensor-core and asynchronous-copy instructions of the fused attention's "mma" kernels
// (cuda_flash.cu), as inline PTX: the fragment layouts are the PTX ISA's, stated and fixed,
// where wmma leaves them unspecified, so a kernel can keep S, P and O in registers and do the
// softmax on them.  PTX ISA 8.5 (section numbers of that version):
//   ptdp_mma16816<T>(d, a, b, c)   mma.sync.aligned.m16n8k16.row.col.f32.T.T.f32, T bf16 or f16
//       (9.7.14.5.14; fragments 9.7.14.5.8).  Lane l, g = l / 4, t = l % 4; each 32-bit register
//       holds two 16-bit elements, the first in its low half:
//         A [16, 16]  a[0] (g, 2t..2t+1)  a[1] (g+8, 2t..)  a[2] (g, 2t+8..)  a[3] (g+8, 2t+8..)
//         B [16, 8]   b[0] (k 2t..2t+1, column g)  b[1] (k 2t+8..2t+9, column g)
//         C, D [16, 8] fp32  c[0] (g, 2t)  c[1] (g, 2t+1)  c[2] (g+8, 2t)  c[3] (g+8, 2t+1)
//   ptdp_ldmatrix<NUM, TRANS>(r, row)   ldmatrix.sync.aligned.m8n8.xNUM[.trans].shared.b16
//       (9.7.14.5.15): NUM 8x8 16-bit matrices, lanes 8i..8i+7 give the addresses of matrix i's
//       rows (16 bytes, 16-byte aligned); r[i] of lane l = matrix i's (l/4, 2(l%4)..+1), or
//       with .trans its (2(l%4), l/4) and (2(l%4)+1, l/4).  So a row-major [16, 16] tile read as
//       4 matrices (rows 0-7 | 8-15) x (columns 0-7 | 8-15), in the order (0,0) (8,0) (0,8) (8,8),
//       is an A fragment; a [8 n, 16 k] tile of B^T rows read as (k 0-7) (k 8-15) is a B
//       fragment, and a row-major [16 k, 8 n] tile of B read with .trans as (k 0-7) (k 8-15) too.
//   ptdp_cp_async16(dst, src, n)   cp.async.cg.shared.global, 16 bytes, n of them read (0 or
//       16 here), the rest zero-filled (9.7.9.25); ptdp_cp_async_commit() commit_group
//       (9.7.9.26); ptdp_cp_async_wait<N>() wait_group N (9.7.9.27).
// In the CUDA emulation (PTDP_EMU_BUILD) the same functions come from its mma.h, which executes
// exactly these layouts (validation/emu/tests/test_emu_flash_wmma checks them element by element
// against the ISA's tables and a plain matrix product).
#ifndef PTDP_CUDA_MMA_H
#define PTDP_CUDA_MMA_H

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>
#include <type_traits>

#ifdef PTDP_EMU_BUILD
#include <mma.h>
#else

template <typename T>
__device__ __forceinline__ static void ptdp_mma16816(float *d, const uint32_t *a, const uint32_t *b, const float *c)
{
  if constexpr (std::is_same<T, __half>::value)
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
                 "{%10, %11, %12, %13};\n"
                 : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]),
                   "f"(c[2]), "f"(c[3]));
  else
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
                 "{%10, %11, %12, %13};\n"
                 : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]),
                   "f"(c[2]), "f"(c[3]));
}

template <int NUM, bool TRANS> __device__ __forceinline__ static void ptdp_ldmatrix(uint32_t *r, const void *row)
{
  static_assert(NUM == 2 || NUM == 4, "ldmatrix .x2 or .x4");
  const unsigned s = (unsigned)__cvta_generic_to_shared(row);
  if constexpr (NUM == 4 && TRANS)
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(s));
  else if constexpr (NUM == 4)
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(s));
  else if constexpr (TRANS)
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\n" : "=r"(r[0]), "=r"(r[1]) : "r"(s));
  else
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\n" : "=r"(r[0]), "=r"(r[1]) : "r"(s));
}

__device__ __forceinline__ static void ptdp_cp_async16(void *dst, const void *src, int bytes)
{
  const unsigned s = (unsigned)__cvta_generic_to_shared(dst);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(src), "r"(bytes) : "memory");
}

__device__ __forceinline__ static void ptdp_cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }

template <int N> __device__ __forceinline__ static void ptdp_cp_async_wait()
{
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

#endif // PTDP_EMU_BUILD
#endif
