/* Which kernels the fused attention (cuda_flash.cu) runs: the mma kernels (FlashAttention-2's
 * register tiling on mma.sync, hd 64 and 128; other head sizes the wmma kernels) or the wmma
 * kernels (the first version, kept to compare and to fall back).  The environment variable
 * PTDP_FLASH_KERNEL (mma or wmma; unset: mma), read once at the first call, chooses; tests and
 * the GPU benchmark set it through ptdp_cuk_flash_set_kernel to run both in one process. */
#ifndef PTDP_CUDA_FLASH_H
#define PTDP_CUDA_FLASH_H

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  PTDP_FLASH_KERNEL_ENV = 0, /* as PTDP_FLASH_KERNEL says (the default) */
  PTDP_FLASH_KERNEL_WMMA = 1,
  PTDP_FLASH_KERNEL_MMA = 2
} ptdp_flash_kernel;

/* Override the variable's choice (PTDP_FLASH_KERNEL_ENV: back to it). */
void ptdp_cuk_flash_set_kernel(ptdp_flash_kernel k);
/* The kernels the next call runs (WMMA or MMA). */
ptdp_flash_kernel ptdp_cuk_flash_kernel(void);

#ifdef __cplusplus
}
#endif
#endif
