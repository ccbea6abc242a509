# src/backend: the device interface, backends by name, the CPU backend (and its threads), the
# guard backend of the tests, and the CUDA backend (built when configure finds CUDA)
libptdp_a_SOURCES += src/backend/backend.c src/backend/cuda_select.c
libptdp_a_SOURCES += src/backend/cpu.c src/backend/cpu_attention.c src/backend/cpu_math.h src/backend/cpu_threads.c
libptdp_a_SOURCES += src/backend/guard.c src/backend/guard.h src/backend/guard_arena.c src/backend/guard_arena.h
libptdp_a_SOURCES += src/backend/mixed.c
libptdp_a_SOURCES += src/backend/typed.c
# headers the CUDA sources share; distributed whether or not CUDA is configured
noinst_HEADERS += src/backend/cuda_internal.h src/backend/cuda_rng.h src/backend/cuda_gemm_map.h
noinst_HEADERS += src/backend/cuda_elem.h src/backend/cuda_bda.h src/backend/cuda_device.h
noinst_HEADERS += src/backend/cuda_flash.h src/backend/cuda_mma.h

# The CUDA backend: host C (compiled by $(CC) with CUDA_CFLAGS) and kernels (.cu, by nvcc with
# NVCC_FLAGS from configure: -gencode per --with-cuda-arch, PTX for the last), a file per
# concern; the device helpers they share are in cuda_device.h.  validation/emu/local.mk
# translates the same list for the emulation (EMU_GEN).
#   cuda_layernorm.cu   LayerNorm and its bias + dropout + residual fusion
#   cuda_colsum.cu      column sums (the gradients of norm weights and biases)
#   cuda_elementwise.cu GELU, bias, add, scale, fill
#   cuda_dropout.cu     dropout, bias + dropout + residual
#   cuda_embedding.cu   the token embedding
#   cuda_xent.cu        vocabulary-parallel cross entropy and the loss
#   cuda_optimizer.cu   AdamW, the sums of squares of the gradient norm
#   cuda_convert.cu     storage-type conversions, the loss scaler's unscale
#   cuda_softmax.cu     the unfused attention's causal softmax with dropout
#   cuda_flash.cu       the fused (flash) attention: mma (default) and wmma, bf16/fp16 only
#   cuda_llama.cu       the Llama family: RMSNorm, RoPE, SwiGLU, the grouped attention's dK/dV store
CUDA_KERNEL_SOURCES = src/backend/cuda_layernorm.cu src/backend/cuda_colsum.cu src/backend/cuda_elementwise.cu \
                      src/backend/cuda_dropout.cu src/backend/cuda_embedding.cu src/backend/cuda_xent.cu \
                      src/backend/cuda_optimizer.cu src/backend/cuda_convert.cu src/backend/cuda_softmax.cu \
                      src/backend/cuda_flash.cu src/backend/cuda_llama.cu
if PTDP_CUDA
libptdp_a_SOURCES += src/backend/cuda.c src/backend/cuda_gemm.c src/backend/cuda_attention.c $(CUDA_KERNEL_SOURCES)
endif
SUFFIXES = .cu
NVCC_COMPILE = $(NVCC) $(NVCC_FLAGS) -O3 $(DEFS) -I$(top_srcdir)/include -I$(top_builddir)/include $(CUDA_CFLAGS)
.cu.$(OBJEXT):
	$(AM_V_GEN)$(NVCC_COMPILE) -c -o $@ $<
# nvcc objects depend on their headers by hand (automake tracks only C)
CUDA_KERNEL_OBJECTS = src/backend/cuda_layernorm.$(OBJEXT) src/backend/cuda_colsum.$(OBJEXT) \
                      src/backend/cuda_elementwise.$(OBJEXT) src/backend/cuda_dropout.$(OBJEXT) \
                      src/backend/cuda_embedding.$(OBJEXT) src/backend/cuda_xent.$(OBJEXT) \
                      src/backend/cuda_optimizer.$(OBJEXT) src/backend/cuda_convert.$(OBJEXT) \
                      src/backend/cuda_softmax.$(OBJEXT) src/backend/cuda_flash.$(OBJEXT) \
                      src/backend/cuda_llama.$(OBJEXT)
$(CUDA_KERNEL_OBJECTS): src/backend/cuda_device.h src/backend/cuda_internal.h src/backend/cuda_elem.h \
  src/backend/cuda_bda.h src/backend/cuda_rng.h include/ptdp/backend.h
src/backend/cuda_flash.$(OBJEXT): src/backend/cuda_flash.h src/backend/cuda_mma.h

# Tests (validation/tests/backend).  test_ops is the conformance suite of every backend (cpu
# against a double-precision reference, guard and, where a GPU is present, cuda against cpu), in
# fp32 and through the mixed-precision wrapper in bf16 and fp16; test_ops_plant.sh proves it
# fails on planted mistakes; test_mixed checks the wrapper's life cycle and work space.
# validation/emu/ops.mk links the same sources with the CUDA emulation (TEST_OPS_SOURCES).
TEST_OPS_SOURCES = validation/tests/backend/test_ops.c validation/tests/backend/test_ops.h \
                   validation/tests/backend/test_ops_ref.c validation/tests/backend/test_ops_plant.c
check_PROGRAMS += validation/tests/backend/test_guard validation/tests/backend/test_ops \
                  validation/tests/backend/test_mixed
validation_tests_backend_test_guard_SOURCES = validation/tests/backend/test_guard.c
validation_tests_backend_test_ops_SOURCES = $(TEST_OPS_SOURCES)
validation_tests_backend_test_mixed_SOURCES = validation/tests/backend/test_mixed.c
TESTS += validation/tests/backend/test_guard validation/tests/backend/test_ops \
         validation/tests/backend/test_ops_plant.sh validation/tests/backend/test_mixed
TESTS += validation/tests/backend/test_guard_model.sh
dist_noinst_SCRIPTS += validation/tests/backend/test_guard_model.sh validation/tests/backend/test_ops_plant.sh
