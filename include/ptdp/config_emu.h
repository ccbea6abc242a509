/* The CUDA emulation of the tests (validation/emu) compiles the CUDA backend and the NCCL
 * transport against its own headers, whatever this build found: config.h includes this header
 * when PTDP_EMU_BUILD is defined.  It is a header of its own because config.status rewrites every
 * "#undef NAME" line of config.h's template, those of a bottom section too: written there, the
 * overrides below became "#define PTDP_HAVE_NCCL 0" in a build configured --without-nccl, and
 * the emulation's NCCL transport did not compile. */
#ifndef PTDP_CONFIG_EMU_H
#define PTDP_CONFIG_EMU_H
#undef PTDP_HAVE_CUDA
#define PTDP_HAVE_CUDA 1
#undef PTDP_HAVE_NCCL
#define PTDP_HAVE_NCCL 1
#endif
