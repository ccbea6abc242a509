# validation/tests/gpu: the CUDA backend.  test_cuda_host runs everywhere (host-side logic, no
# GPU); test_cuda_nogpu checks the error without a GPU (skips with one); the others need a GPU
# and skip (exit 77) with the reason when the build has no CUDA or the node no GPU.  The
# operations themselves are checked by the conformance suite, validation/tests/backend/test_ops.
check_PROGRAMS += validation/tests/gpu/test_cuda_host
validation_tests_gpu_test_cuda_host_SOURCES = validation/tests/gpu/test_cuda_host.c
TESTS += validation/tests/gpu/test_cuda_host \
         validation/tests/gpu/test_cuda_nogpu.sh validation/tests/gpu/test_cuda_model.sh \
         validation/tests/gpu/test_cuda_sanitizer.sh
dist_noinst_SCRIPTS += validation/tests/gpu/test_cuda_nogpu.sh validation/tests/gpu/test_cuda_model.sh \
                       validation/tests/gpu/test_cuda_sanitizer.sh validation/tests/gpu/gpu_lib.sh
AM_TESTS_ENVIRONMENT += CUDA_BIN='$(CUDA_BIN)'; export CUDA_BIN;
if PTDP_CUDA
# test_cuda_flash: the fused attention's kernels (both sets) on the GPU against the CPU backend, the
# emulation's test program (validation/emu/tests/test_emu_flash.c: its cases and bounds) built
# against the CUDA runtime and libptdp.a; exit 77 without a GPU.
check_PROGRAMS += validation/tests/gpu/test_cuda_flash
validation_tests_gpu_test_cuda_flash_SOURCES = validation/emu/tests/test_emu_flash.c
validation_tests_gpu_test_cuda_flash_CPPFLAGS = $(AM_CPPFLAGS) -DPTDP_TEST_ON_GPU -I$(top_srcdir)/src/backend \
                                                -I$(top_srcdir)/validation/emu/tests
TESTS += validation/tests/gpu/test_cuda_flash
endif
