# validation/emu: the CUDA emulation (a test harness, never installed).  The CUDA backend's own
# sources (src/backend/cuda*.c, the .cu kernels translated line for line by translate.sh) and
# the NCCL transport, compiled by the host compilers against the headers in
# validation/emu/include and linked with the emulated runtime, cuBLAS(Lt) and NCCL, so that
# `make check` runs every line of the CUDA backend without a GPU or the CUDA toolkit.
#
# Three libraries, all linked whole (-Wl,--whole-archive) ahead of libptdp.a so that their
# definitions of the CUDA entry points win over libptdp.a's (a real CUDA backend, or the stubs
# of a build without CUDA):
#   libemu_core.a       the emulated runtime (memory, streams, events) and kernel execution
#   libptdp_emu.a       the emulated cuBLAS(Lt) and NCCL + ptdp's CUDA host sources
#   libemu_kernels.a    the translated kernels, compiled with the compiler's thread-sanitizer
#                       hooks (emu_check.cc implements them: race detector and bounds checks);
#                       plain in --enable-sanitizers builds (ASan cannot be combined with them)
EMU_CPP = -DPTDP_EMU_BUILD -I$(top_srcdir)/validation/emu/include -I$(top_srcdir)/validation/emu \
               -D_XOPEN_SOURCE=700 -D_DEFAULT_SOURCE -I$(top_srcdir)/include -I$(top_builddir)/include \
               -I$(top_srcdir)/src/backend $(BLAS_CFLAGS) $(HDF5_CFLAGS)
# -ffp-contract=off: a kernel's a * b + c stays two roundings, as nvcc keeps __fmul_rn / __fadd_rn
# (a CXXFLAGS with -march=native would otherwise let GCC fuse them)
EMU_CXX = -std=c++17 -O2 -g -fno-omit-frame-pointer -Wall -Wno-unused-function -ffp-contract=off
if PTDP_SANITIZE
EMU_CXX += -fsanitize=address,undefined -fno-sanitize-recover=undefined
EMU_KCXX = $(EMU_CXX)
else
EMU_KCXX = $(EMU_CXX) -fsanitize=thread --param=tsan-instrument-func-entry-exit=0
endif

EMU_HDRS = validation/emu/emu_internal.h validation/emu/emu_device.h \
              validation/emu/include/cuda_runtime.h validation/emu/include/cublas_v2.h \
              validation/emu/include/cublasLt.h validation/emu/include/nccl.h \
              validation/emu/include/cuda_bf16.h validation/emu/include/cuda_fp16.h validation/emu/include/emu_half_ops.h \
              validation/emu/include/library_types.h

check_LIBRARIES += validation/emu/libemu_core.a validation/emu/libptdp_emu.a validation/emu/libemu_kernels.a
validation_emu_libemu_core_a_SOURCES = validation/emu/emu_memory.cc validation/emu/emu_stream.cc validation/emu/emu_cudart.cc \
    validation/emu/emu_runtime.h validation/emu/emu_simt.cc validation/emu/emu_check.cc validation/emu/emu_simt.h $(EMU_HDRS) \
    validation/emu/emu_mem.h
validation_emu_libemu_core_a_CPPFLAGS = $(EMU_CPP)
validation_emu_libemu_core_a_CXXFLAGS = $(EMU_CXX)
validation_emu_libptdp_emu_a_SOURCES = validation/emu/emu_cublas.cc validation/emu/emu_nccl_comm.cc validation/emu/emu_nccl_ops.cc validation/emu/emu_nccl.h validation/emu/emu_mpi.cc $(EMU_HDRS) \
    src/backend/cuda.c src/backend/cuda_gemm.c src/backend/cuda_attention.c src/backend/cuda_select.c \
    src/parallel/comm.c src/parallel/transport_nccl.c
validation_emu_libptdp_emu_a_CPPFLAGS = $(EMU_CPP)
validation_emu_libptdp_emu_a_CXXFLAGS = $(EMU_CXX)

# the kernel files of src/backend/local.mk (CUDA_KERNEL_SOURCES), each translated to gen/NAME.cc
EMU_GEN = validation/emu/gen/cuda_layernorm.cc validation/emu/gen/cuda_colsum.cc validation/emu/gen/cuda_elementwise.cc \
          validation/emu/gen/cuda_dropout.cc validation/emu/gen/cuda_embedding.cc validation/emu/gen/cuda_xent.cc \
          validation/emu/gen/cuda_optimizer.cc validation/emu/gen/cuda_convert.cc validation/emu/gen/cuda_softmax.cc \
          validation/emu/gen/cuda_flash.cc validation/emu/gen/cuda_llama.cc
nodist_validation_emu_libemu_kernels_a_SOURCES = $(EMU_GEN)
validation_emu_libemu_kernels_a_CPPFLAGS = $(EMU_CPP)
validation_emu_libemu_kernels_a_CXXFLAGS = $(EMU_KCXX)
EMU_TRANSLATE = $(SHELL) $(top_srcdir)/validation/emu/translate.sh
validation/emu/gen/cuda_layernorm.cc: $(top_srcdir)/src/backend/cuda_layernorm.cu $(top_srcdir)/validation/emu/translate.sh
	$(AM_V_GEN)$(MKDIR_P) validation/emu/gen && $(EMU_TRANSLATE) $(top_srcdir)/src/backend/cuda_layernorm.cu $@
validation/emu/gen/cuda_colsum.cc: $(top_srcdir)/src/backend/cuda_colsum.cu $(top_srcdir)/validation/emu/translate.sh
	$(AM_V_GEN)$(MKDIR_P) validation/emu/gen && $(EMU_TRANSLATE) $(top_srcdir)/src/backend/cuda_colsum.cu $@
validation/emu/gen/cuda_elementwise.cc: $(top_srcdir)/src/backend/cuda_elementwise.cu $(top_srcdir)/validation/emu/translate.sh
	$(AM_V_GEN)$(MKDIR_P) validation/emu/gen && $(EMU_TRANSLATE) $(top_srcdir)/src/backend/cuda_elementwise.cu $@
validation/emu/gen/cuda_dropout.cc: $(top_srcdir)/src/backend/cuda_dropout.cu $(top_srcdir)/validation/emu/translate.sh
	$(AM_V_GEN)$(MKDIR_P) validation/emu/gen && $(EMU_TRANSLATE) $(top_srcdir)/src/backend/cuda_dropout.cu $@
validation/emu/gen/cuda_embedding.cc: $(top_srcdir)/src/backend/cuda_embedding.cu $(top_srcdir)/validation/emu/translate.sh
	$(AM_V_GEN)$(MKDIR_P) validation/emu/gen && $(EMU_TRANSLATE) $(top_srcdir)/src/backend/cuda_embedding.cu $@
validation/emu/gen/cuda_xent.cc: $(top_srcdir)/src/backend/cuda_xent.cu $(top_srcdir)/validation/emu/translate.sh
	$(AM_V_GEN)$(MKDIR_P) validation/emu/gen && $(EMU_TRANSLATE) $(top_srcdir)/src/backend/cuda_xent.cu $@
validation/emu/gen/cuda_optimizer.cc: $(top_srcdir)/src/backend/cuda_optimizer.cu $(top_srcdir)/validation/emu/translate.sh
	$(AM_V_GEN)$(MKDIR_P) validation/emu/gen && $(EMU_TRANSLATE) $(top_srcdir)/src/backend/cuda_optimizer.cu $@
validation/emu/gen/cuda_convert.cc: $(top_srcdir)/src/backend/cuda_convert.cu $(top_srcdir)/validation/emu/translate.sh
	$(AM_V_GEN)$(MKDIR_P) validation/emu/gen && $(EMU_TRANSLATE) $(top_srcdir)/src/backend/cuda_convert.cu $@
validation/emu/gen/cuda_softmax.cc: $(top_srcdir)/src/backend/cuda_softmax.cu $(top_srcdir)/validation/emu/translate.sh
	$(AM_V_GEN)$(MKDIR_P) validation/emu/gen && $(EMU_TRANSLATE) $(top_srcdir)/src/backend/cuda_softmax.cu $@
validation/emu/gen/cuda_llama.cc: $(top_srcdir)/src/backend/cuda_llama.cu $(top_srcdir)/validation/emu/translate.sh
	$(AM_V_GEN)$(MKDIR_P) validation/emu/gen && $(EMU_TRANSLATE) $(top_srcdir)/src/backend/cuda_llama.cu $@
CLEANFILES += $(EMU_GEN) $(EMU_MUTANT_GEN)
dist_noinst_SCRIPTS += validation/emu/translate.sh

# Programs linked with the emulation: whole archives first, then ptdp as usual, without the
# real CUDA libraries.
EMU_LINKF = -Wl,--whole-archive,validation/emu/libemu_core.a,validation/emu/libptdp_emu.a,validation/emu/libemu_kernels.a,--no-whole-archive
EMU_LIBS = libptdp.a $(HDF5_LIBS) $(BLAS_LIBS) $(LIBS) -lstdc++ -lm -ldl -lpthread
EMU_DEPS = validation/emu/libemu_core.a validation/emu/libptdp_emu.a validation/emu/libemu_kernels.a libptdp.a

# The emulated trainer: ptdp-train's main, `--backend cuda` runs on the emulated GPU.
check_PROGRAMS += validation/emu/ptdp-train-emu
validation_emu_ptdp_train_emu_SOURCES = src/train/ptdp_train.c
validation_emu_ptdp_train_emu_LDFLAGS = $(EMU_LINKF)
validation_emu_ptdp_train_emu_LDADD = $(EMU_LIBS)
EXTRA_validation_emu_ptdp_train_emu_DEPENDENCIES = $(EMU_DEPS)

# The emulation's own test: what it computes and each mistake it catches (planted in
# tests/emu_test_kernels.cu).  Needs only the core, no ptdp.
check_LIBRARIES += validation/emu/libemu_tkernels.a
nodist_validation_emu_libemu_tkernels_a_SOURCES = validation/emu/gen/emu_test_kernels.cc
validation_emu_libemu_tkernels_a_CPPFLAGS = $(EMU_CPP)
validation_emu_libemu_tkernels_a_CXXFLAGS = $(EMU_KCXX)
validation/emu/gen/emu_test_kernels.cc: $(top_srcdir)/validation/emu/tests/emu_test_kernels.cu $(top_srcdir)/validation/emu/translate.sh
	$(AM_V_GEN)$(MKDIR_P) validation/emu/gen && $(EMU_TRANSLATE) $(top_srcdir)/validation/emu/tests/emu_test_kernels.cu $@
CLEANFILES += validation/emu/gen/emu_test_kernels.cc
check_PROGRAMS += validation/emu/tests/test_emu_simt
validation_emu_tests_test_emu_simt_SOURCES = validation/emu/tests/test_emu_simt.c
validation_emu_tests_test_emu_simt_CPPFLAGS = -D_XOPEN_SOURCE=700 -D_DEFAULT_SOURCE -I$(top_srcdir)/validation/emu/include
validation_emu_tests_test_emu_simt_LDFLAGS = -Wl,--whole-archive,validation/emu/libemu_core.a,validation/emu/libemu_tkernels.a,--no-whole-archive
validation_emu_tests_test_emu_simt_LDADD = -lstdc++ -lm -ldl -lpthread
EXTRA_validation_emu_tests_test_emu_simt_DEPENDENCIES = validation/emu/libemu_core.a validation/emu/libemu_tkernels.a
TESTS += validation/emu/tests/test_emu_simt
EXTRA_DIST += validation/emu/tests/emu_test_kernels.cu

# The race detector's planted mutation, which proves the detector sees a missing barrier in the
# backend's own kernels: block_sum's leading barrier removed in a copy of cuda_device.h
# (gen/race_plant/cuda_device.h; translate.sh stops the build unless the line to remove occurs
# exactly once: the test would prove nothing), which the LayerNorm kernels (a copy of
# cuda_layernorm.cu's translation, libemu_mutant.a) find first on their include path.  The
# kernels they call in other files come from libemu_kernels.a, unplanted.
# test_emu_racecheck runs the real kernels, test_emu_racecheck_mutant the planted ones and must
# see the hazard reported (the script checks the report names the source file and block_sum).
EMU_MUTATION = s|__syncthreads(); // part may still be read by a previous call|/* mutant: barrier removed */|
check_LIBRARIES += validation/emu/libemu_mutant.a
nodist_validation_emu_libemu_mutant_a_SOURCES = validation/emu/gen/mutant_layernorm.cc
validation_emu_libemu_mutant_a_CPPFLAGS = -Ivalidation/emu/gen/race_plant $(EMU_CPP)
validation_emu_libemu_mutant_a_CXXFLAGS = $(EMU_KCXX)
validation/emu/gen/race_plant/cuda_device.h: $(top_srcdir)/src/backend/cuda_device.h $(top_srcdir)/validation/emu/translate.sh
	$(AM_V_GEN)$(MKDIR_P) validation/emu/gen/race_plant && $(EMU_TRANSLATE) $(top_srcdir)/src/backend/cuda_device.h $@ \
	  '$(EMU_MUTATION)' '__syncthreads(); // part may still be read by a previous call'
validation/emu/gen/mutant_layernorm.cc: $(top_srcdir)/src/backend/cuda_layernorm.cu $(top_srcdir)/validation/emu/translate.sh \
    validation/emu/gen/race_plant/cuda_device.h
	$(AM_V_GEN)$(MKDIR_P) validation/emu/gen && $(EMU_TRANSLATE) $(top_srcdir)/src/backend/cuda_layernorm.cu $@
CLEANFILES += validation/emu/gen/mutant_layernorm.cc validation/emu/gen/race_plant/cuda_device.h
EMU_RACE_CPP = -D_XOPEN_SOURCE=700 -D_DEFAULT_SOURCE -I$(top_srcdir)/validation/emu/include -I$(top_srcdir)/src/backend \
               -I$(top_srcdir)/include -I$(top_builddir)/include
check_PROGRAMS += validation/emu/tests/test_emu_racecheck validation/emu/tests/test_emu_racecheck_mutant
validation_emu_tests_test_emu_racecheck_SOURCES = validation/emu/tests/test_emu_racecheck.c
validation_emu_tests_test_emu_racecheck_CPPFLAGS = $(EMU_RACE_CPP)
validation_emu_tests_test_emu_racecheck_LDFLAGS = -Wl,--whole-archive,validation/emu/libemu_core.a,validation/emu/libemu_kernels.a,--no-whole-archive
validation_emu_tests_test_emu_racecheck_LDADD = -lstdc++ -lm -ldl -lpthread
EXTRA_validation_emu_tests_test_emu_racecheck_DEPENDENCIES = validation/emu/libemu_core.a validation/emu/libemu_kernels.a
validation_emu_tests_test_emu_racecheck_mutant_SOURCES = validation/emu/tests/test_emu_racecheck.c
validation_emu_tests_test_emu_racecheck_mutant_CPPFLAGS = $(EMU_RACE_CPP) -DEMU_MUTANT
validation_emu_tests_test_emu_racecheck_mutant_LDFLAGS = -Wl,--whole-archive,validation/emu/libemu_core.a,validation/emu/libemu_mutant.a,--no-whole-archive
validation_emu_tests_test_emu_racecheck_mutant_LDADD = validation/emu/libemu_kernels.a -lstdc++ -lm -ldl -lpthread
EXTRA_validation_emu_tests_test_emu_racecheck_mutant_DEPENDENCIES = validation/emu/libemu_core.a validation/emu/libemu_mutant.a
TESTS += validation/emu/tests/test_emu_racecheck validation/emu/tests/test_emu_racecheck_planted.sh
dist_noinst_SCRIPTS += validation/emu/tests/test_emu_racecheck_planted.sh

# The model on the emulated CUDA backend against the CPU backend (several layouts).
TESTS += validation/emu/tests/test_emu_model.sh
dist_noinst_SCRIPTS += validation/emu/tests/test_emu_model.sh
# The host's waits for the GPU per iteration do not grow with the micro-batches (PTDP_CUDA_WAITS).
TESTS += validation/emu/tests/test_emu_host_waits.sh
dist_noinst_SCRIPTS += validation/emu/tests/test_emu_host_waits.sh
# A Llama-style model (RMSNorm, RoPE, grouped-query attention) on it against the CPU backend.
TESTS += validation/emu/tests/test_emu_llama.sh
dist_noinst_SCRIPTS += validation/emu/tests/test_emu_llama.sh
# A mixture of experts on it (no operation of its own: GEMMs and copies) against the CPU backend.
TESTS += validation/emu/tests/test_emu_moe.sh
dist_noinst_SCRIPTS += validation/emu/tests/test_emu_moe.sh
include validation/emu/nccl.mk
include validation/emu/cublas.mk
include validation/emu/ops.mk
EXTRA_DIST += validation/emu/tests/emu_test.h

# The fused attention (src/backend/cuda_flash.cu) and the emulated wmma it runs on
# (include/mma.h).  test_emu_flash_wmma: mma_sync and the tile loads and stores against their
# stated arithmetic, and the misuses mma.h refuses.  test_emu_flash: the kernels against the
# CPU backend's flash attention (libemu_flash.a: the kernels alone, so the test needs neither
# the rest of the CUDA backend nor cuBLAS); test_emu_flash_mutant and _mutant_bwd: the same
# test on copies with a planted mistake (the forward's rescale of the output accumulator
# dropped; the backward's causal mask dropped from dS), which test_emu_flash_plant.sh runs and
# sees fail; _mutant_gqa and _mutant_gqa_sum: grouped-query attention's mistakes (a group's key and
# value read at the [al][3][hd] slots; dK, dV summed over the group's first query head only).
# The rules fail if the line to change is gone.
check_LIBRARIES += validation/emu/libemu_wmma.a validation/emu/libemu_flash.a validation/emu/libemu_flash_mutant.a \
                   validation/emu/libemu_flash_mutant_bwd.a validation/emu/libemu_flash_mutant_gqa.a \
                   validation/emu/libemu_flash_mutant_gqa_sum.a
nodist_validation_emu_libemu_wmma_a_SOURCES = validation/emu/gen/test_emu_flash_wmma.cc
validation_emu_libemu_wmma_a_CPPFLAGS = $(EMU_CPP)
validation_emu_libemu_wmma_a_CXXFLAGS = $(EMU_KCXX)
validation/emu/gen/test_emu_flash_wmma.cc: $(top_srcdir)/validation/emu/tests/test_emu_flash_wmma.cu $(top_srcdir)/validation/emu/translate.sh
	$(AM_V_GEN)$(MKDIR_P) validation/emu/gen && $(EMU_TRANSLATE) $(top_srcdir)/validation/emu/tests/test_emu_flash_wmma.cu $@
nodist_validation_emu_libemu_flash_a_SOURCES = validation/emu/gen/cuda_flash.cc
validation_emu_libemu_flash_a_CPPFLAGS = $(EMU_CPP)
validation_emu_libemu_flash_a_CXXFLAGS = $(EMU_KCXX)
validation/emu/gen/cuda_flash.cc: $(top_srcdir)/src/backend/cuda_flash.cu $(top_srcdir)/validation/emu/translate.sh \
    $(top_srcdir)/src/backend/cuda_mma.h $(top_srcdir)/src/backend/cuda_flash.h
	$(AM_V_GEN)$(MKDIR_P) validation/emu/gen && $(EMU_TRANSLATE) $(top_srcdir)/src/backend/cuda_flash.cu $@
EMU_FLASH_MUTATION = s|Ow\[r \* ldo + c\] \*= alpha;|/* mutant: rescale dropped */|;s|o\[j\]\[e\] \*= alpha\[e / 2\]; // the rescale of O|; /* mutant: rescale dropped */|
nodist_validation_emu_libemu_flash_mutant_a_SOURCES = validation/emu/gen/flash_mutant.cc
validation_emu_libemu_flash_mutant_a_CPPFLAGS = $(EMU_CPP)
validation_emu_libemu_flash_mutant_a_CXXFLAGS = $(EMU_KCXX)
validation/emu/gen/flash_mutant.cc: $(top_srcdir)/src/backend/cuda_flash.cu $(top_srcdir)/validation/emu/translate.sh
	$(AM_V_GEN)$(MKDIR_P) validation/emu/gen && $(EMU_TRANSLATE) $(top_srcdir)/src/backend/cuda_flash.cu $@ \
	  '$(EMU_FLASH_MUTATION)' 'Ow[r * ldo + c] *= alpha;' 'o[j][e] *= alpha[e / 2]; // the rescale of O'
EMU_FLASH_MUTATION_BWD = s|const int causal = k <= q;|const int causal = 1; /* mutant: causal mask dropped */|;s|return k <= q \&\& q < s; // f2_sees|return q < s; /* mutant: causal mask dropped */|
nodist_validation_emu_libemu_flash_mutant_bwd_a_SOURCES = validation/emu/gen/flash_mutant_bwd.cc
validation_emu_libemu_flash_mutant_bwd_a_CPPFLAGS = $(EMU_CPP)
validation_emu_libemu_flash_mutant_bwd_a_CXXFLAGS = $(EMU_KCXX)
validation/emu/gen/flash_mutant_bwd.cc: $(top_srcdir)/src/backend/cuda_flash.cu $(top_srcdir)/validation/emu/translate.sh
	$(AM_V_GEN)$(MKDIR_P) validation/emu/gen && $(EMU_TRANSLATE) $(top_srcdir)/src/backend/cuda_flash.cu $@ \
	  '$(EMU_FLASH_MUTATION_BWD)' 'const int causal = k <= q;' 'return k <= q && q < s; // f2_sees'
EMU_FLASH_MUTATION_GQA = s|hh % d.hpg : d.hpg + part - 1;|hh % d.hpg : part; /* mutant: the [al][3] slots */|
nodist_validation_emu_libemu_flash_mutant_gqa_a_SOURCES = validation/emu/gen/flash_mutant_gqa.cc
validation_emu_libemu_flash_mutant_gqa_a_CPPFLAGS = $(EMU_CPP)
validation_emu_libemu_flash_mutant_gqa_a_CXXFLAGS = $(EMU_KCXX)
validation/emu/gen/flash_mutant_gqa.cc: $(top_srcdir)/src/backend/cuda_flash.cu $(top_srcdir)/validation/emu/translate.sh
	$(AM_V_GEN)$(MKDIR_P) validation/emu/gen && $(EMU_TRANSLATE) $(top_srcdir)/src/backend/cuda_flash.cu $@ \
	  '$(EMU_FLASH_MUTATION_GQA)' 'hh % d.hpg : d.hpg + part - 1;'
EMU_FLASH_MUTATION_GQA_SUM = s|hh < h0 + d.hpg; hh++|hh < h0 + 1; hh++ /* mutant: the first head only */|;s|nstep = d.hpg \* nq;|nstep = nq; /* mutant: the first head only */|
nodist_validation_emu_libemu_flash_mutant_gqa_sum_a_SOURCES = validation/emu/gen/flash_mutant_gqa_sum.cc
validation_emu_libemu_flash_mutant_gqa_sum_a_CPPFLAGS = $(EMU_CPP)
validation_emu_libemu_flash_mutant_gqa_sum_a_CXXFLAGS = $(EMU_KCXX)
validation/emu/gen/flash_mutant_gqa_sum.cc: $(top_srcdir)/src/backend/cuda_flash.cu $(top_srcdir)/validation/emu/translate.sh
	$(AM_V_GEN)$(MKDIR_P) validation/emu/gen && $(EMU_TRANSLATE) $(top_srcdir)/src/backend/cuda_flash.cu $@ \
	  '$(EMU_FLASH_MUTATION_GQA_SUM)' 'hh < h0 + d.hpg; hh++' 'nstep = d.hpg * nq;'
CLEANFILES += validation/emu/gen/test_emu_flash_wmma.cc validation/emu/gen/cuda_flash.cc validation/emu/gen/flash_mutant.cc \
              validation/emu/gen/flash_mutant_bwd.cc validation/emu/gen/flash_mutant_gqa.cc \
              validation/emu/gen/flash_mutant_gqa_sum.cc
check_PROGRAMS += validation/emu/tests/test_emu_flash_wmma validation/emu/tests/test_emu_flash \
                  validation/emu/tests/test_emu_flash_mutant validation/emu/tests/test_emu_flash_mutant_bwd \
                  validation/emu/tests/test_emu_flash_mutant_gqa validation/emu/tests/test_emu_flash_mutant_gqa_sum
validation_emu_tests_test_emu_flash_wmma_SOURCES = validation/emu/tests/test_emu_flash_wmma.c
validation_emu_tests_test_emu_flash_wmma_CPPFLAGS = -D_XOPEN_SOURCE=700 -D_DEFAULT_SOURCE -I$(top_srcdir)/validation/emu/include
validation_emu_tests_test_emu_flash_wmma_LDFLAGS = -Wl,--whole-archive,validation/emu/libemu_core.a,validation/emu/libemu_wmma.a,--no-whole-archive
validation_emu_tests_test_emu_flash_wmma_LDADD = -lstdc++ -lm -ldl -lpthread
EXTRA_validation_emu_tests_test_emu_flash_wmma_DEPENDENCIES = validation/emu/libemu_core.a validation/emu/libemu_wmma.a
validation_emu_tests_test_emu_flash_SOURCES = validation/emu/tests/test_emu_flash.c
validation_emu_tests_test_emu_flash_CPPFLAGS = $(AM_CPPFLAGS) $(EMU_RACE_CPP)
validation_emu_tests_test_emu_flash_LDFLAGS = -Wl,--whole-archive,validation/emu/libemu_core.a,validation/emu/libemu_flash.a,--no-whole-archive
validation_emu_tests_test_emu_flash_LDADD = $(EMU_LIBS)
EXTRA_validation_emu_tests_test_emu_flash_DEPENDENCIES = validation/emu/libemu_core.a validation/emu/libemu_flash.a libptdp.a
validation_emu_tests_test_emu_flash_mutant_SOURCES = validation/emu/tests/test_emu_flash.c
validation_emu_tests_test_emu_flash_mutant_CPPFLAGS = $(AM_CPPFLAGS) $(EMU_RACE_CPP)
validation_emu_tests_test_emu_flash_mutant_LDFLAGS = -Wl,--whole-archive,validation/emu/libemu_core.a,validation/emu/libemu_flash_mutant.a,--no-whole-archive
validation_emu_tests_test_emu_flash_mutant_LDADD = $(EMU_LIBS)
EXTRA_validation_emu_tests_test_emu_flash_mutant_DEPENDENCIES = validation/emu/libemu_core.a validation/emu/libemu_flash_mutant.a libptdp.a
validation_emu_tests_test_emu_flash_mutant_bwd_SOURCES = validation/emu/tests/test_emu_flash.c
validation_emu_tests_test_emu_flash_mutant_bwd_CPPFLAGS = $(AM_CPPFLAGS) $(EMU_RACE_CPP)
validation_emu_tests_test_emu_flash_mutant_bwd_LDFLAGS = -Wl,--whole-archive,validation/emu/libemu_core.a,validation/emu/libemu_flash_mutant_bwd.a,--no-whole-archive
validation_emu_tests_test_emu_flash_mutant_bwd_LDADD = $(EMU_LIBS)
EXTRA_validation_emu_tests_test_emu_flash_mutant_bwd_DEPENDENCIES = validation/emu/libemu_core.a validation/emu/libemu_flash_mutant_bwd.a libptdp.a
validation_emu_tests_test_emu_flash_mutant_gqa_SOURCES = validation/emu/tests/test_emu_flash.c
validation_emu_tests_test_emu_flash_mutant_gqa_CPPFLAGS = $(AM_CPPFLAGS) $(EMU_RACE_CPP)
validation_emu_tests_test_emu_flash_mutant_gqa_LDFLAGS = -Wl,--whole-archive,validation/emu/libemu_core.a,validation/emu/libemu_flash_mutant_gqa.a,--no-whole-archive
validation_emu_tests_test_emu_flash_mutant_gqa_LDADD = $(EMU_LIBS)
EXTRA_validation_emu_tests_test_emu_flash_mutant_gqa_DEPENDENCIES = validation/emu/libemu_core.a validation/emu/libemu_flash_mutant_gqa.a libptdp.a
validation_emu_tests_test_emu_flash_mutant_gqa_sum_SOURCES = validation/emu/tests/test_emu_flash.c
validation_emu_tests_test_emu_flash_mutant_gqa_sum_CPPFLAGS = $(AM_CPPFLAGS) $(EMU_RACE_CPP)
validation_emu_tests_test_emu_flash_mutant_gqa_sum_LDFLAGS = -Wl,--whole-archive,validation/emu/libemu_core.a,validation/emu/libemu_flash_mutant_gqa_sum.a,--no-whole-archive
validation_emu_tests_test_emu_flash_mutant_gqa_sum_LDADD = $(EMU_LIBS)
EXTRA_validation_emu_tests_test_emu_flash_mutant_gqa_sum_DEPENDENCIES = validation/emu/libemu_core.a validation/emu/libemu_flash_mutant_gqa_sum.a libptdp.a
TESTS += validation/emu/tests/test_emu_flash_wmma validation/emu/tests/test_emu_flash validation/emu/tests/test_emu_flash_plant.sh
dist_noinst_SCRIPTS += validation/emu/tests/test_emu_flash_plant.sh
EXTRA_DIST += validation/emu/tests/test_emu_flash_wmma.cu
EXTRA_DIST += validation/emu/include/mma.h

# The PTX instructions of the mma flash kernels (src/backend/cuda_mma.h: mma.sync m16n8k16,
# ldmatrix, cp.async), emulated in include/mma.h.  test_emu_flash_ptx: each against the PTX ISA's
# layouts, element by element and as a matrix product; test_emu_flash_ptx_plant.sh runs the same
# test built on a copy of mma.h whose mma reads A's registers 1 and 2 swapped (a layout mistake
# the flash test alone would not see, being consistent in every kernel) and sees it fail.  The
# rule fails if the line to change is gone.
EMU_PTX_PLANT = s|const int ar = m / 8 + 2 \* (k / 8), br = k / 8;|const int ar = 2 * (m / 8) + k / 8, br = k / 8; /* plant */|
check_LIBRARIES += validation/emu/libemu_ptx.a validation/emu/libemu_ptx_plant.a
nodist_validation_emu_libemu_ptx_a_SOURCES = validation/emu/gen/test_emu_flash_ptx.cc
validation_emu_libemu_ptx_a_CPPFLAGS = $(EMU_CPP)
validation_emu_libemu_ptx_a_CXXFLAGS = $(EMU_KCXX)
validation/emu/gen/test_emu_flash_ptx.cc: $(top_srcdir)/validation/emu/tests/test_emu_flash_ptx.cu $(top_srcdir)/validation/emu/translate.sh
	$(AM_V_GEN)$(MKDIR_P) validation/emu/gen && $(EMU_TRANSLATE) $(top_srcdir)/validation/emu/tests/test_emu_flash_ptx.cu $@
nodist_validation_emu_libemu_ptx_plant_a_SOURCES = validation/emu/gen/test_emu_flash_ptx_plant.cc
validation_emu_libemu_ptx_plant_a_CPPFLAGS = -Ivalidation/emu/gen/ptx_plant $(EMU_CPP)
validation_emu_libemu_ptx_plant_a_CXXFLAGS = $(EMU_KCXX)
validation/emu/gen/ptx_plant/mma.h: $(top_srcdir)/validation/emu/include/mma.h
	$(AM_V_GEN)$(MKDIR_P) validation/emu/gen/ptx_plant && \
	test "`grep -c 'const int ar = m / 8 + 2 \* (k / 8), br = k / 8;' $(top_srcdir)/validation/emu/include/mma.h`" = 1 || \
	  { echo "local.mk: mma's A register mapping not found in mma.h: update EMU_PTX_PLANT" >&2; exit 1; } && \
	sed -e '$(EMU_PTX_PLANT)' $(top_srcdir)/validation/emu/include/mma.h > $@
validation/emu/gen/test_emu_flash_ptx_plant.cc: $(top_srcdir)/validation/emu/tests/test_emu_flash_ptx.cu \
    $(top_srcdir)/validation/emu/translate.sh validation/emu/gen/ptx_plant/mma.h
	$(AM_V_GEN)$(MKDIR_P) validation/emu/gen && $(EMU_TRANSLATE) $(top_srcdir)/validation/emu/tests/test_emu_flash_ptx.cu $@
CLEANFILES += validation/emu/gen/test_emu_flash_ptx.cc validation/emu/gen/test_emu_flash_ptx_plant.cc \
              validation/emu/gen/ptx_plant/mma.h
check_PROGRAMS += validation/emu/tests/test_emu_flash_ptx validation/emu/tests/test_emu_flash_ptx_plant
validation_emu_tests_test_emu_flash_ptx_SOURCES = validation/emu/tests/test_emu_flash_ptx.c
validation_emu_tests_test_emu_flash_ptx_CPPFLAGS = -D_XOPEN_SOURCE=700 -D_DEFAULT_SOURCE -I$(top_srcdir)/validation/emu/include
validation_emu_tests_test_emu_flash_ptx_LDFLAGS = -Wl,--whole-archive,validation/emu/libemu_core.a,validation/emu/libemu_ptx.a,--no-whole-archive
validation_emu_tests_test_emu_flash_ptx_LDADD = -lstdc++ -lm -ldl -lpthread
EXTRA_validation_emu_tests_test_emu_flash_ptx_DEPENDENCIES = validation/emu/libemu_core.a validation/emu/libemu_ptx.a
validation_emu_tests_test_emu_flash_ptx_plant_SOURCES = validation/emu/tests/test_emu_flash_ptx.c
validation_emu_tests_test_emu_flash_ptx_plant_CPPFLAGS = -D_XOPEN_SOURCE=700 -D_DEFAULT_SOURCE -I$(top_srcdir)/validation/emu/include
validation_emu_tests_test_emu_flash_ptx_plant_LDFLAGS = -Wl,--whole-archive,validation/emu/libemu_core.a,validation/emu/libemu_ptx_plant.a,--no-whole-archive
validation_emu_tests_test_emu_flash_ptx_plant_LDADD = -lstdc++ -lm -ldl -lpthread
EXTRA_validation_emu_tests_test_emu_flash_ptx_plant_DEPENDENCIES = validation/emu/libemu_core.a validation/emu/libemu_ptx_plant.a
TESTS += validation/emu/tests/test_emu_flash_ptx validation/emu/tests/test_emu_flash_ptx_plant.sh
dist_noinst_SCRIPTS += validation/emu/tests/test_emu_flash_ptx_plant.sh
EXTRA_DIST += validation/emu/tests/test_emu_flash_ptx.cu
