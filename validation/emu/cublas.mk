# validation/emu/cublas.mk: the emulated cuBLASLt's source, and the tests of the emulated
# cuBLAS/cuBLASLt and of the bf16/fp16 types.  Included by local.mk (after libptdp_emu.a's
# source list, which has emu_cublas.cc: the engine and cuBLAS; cuBLASLt joins it here).
validation_emu_libptdp_emu_a_SOURCES += validation/emu/emu_cublaslt.cc validation/emu/emu_cublas.h

#   test_emu_cublas  every entry point against a naive reference, the status of each bad
#                    argument, operand extents outside their allocation reported as faults;
#                    linked like ptdp-train-emu (the emulation's libraries whole, then ptdp)
#   test_emu_half    the conversions (include/cuda_bf16.h, cuda_fp16.h) exhaustively and the
#                    C++ operators; headers only
check_PROGRAMS += validation/emu/tests/test_emu_cublas validation/emu/tests/test_emu_half
validation_emu_tests_test_emu_cublas_SOURCES = validation/emu/tests/test_emu_cublas.c
validation_emu_tests_test_emu_cublas_CPPFLAGS = $(EMU_CPP)
validation_emu_tests_test_emu_cublas_LDFLAGS = $(EMU_LINKF)
validation_emu_tests_test_emu_cublas_LDADD = $(EMU_LIBS)
EXTRA_validation_emu_tests_test_emu_cublas_DEPENDENCIES = $(EMU_DEPS)
validation_emu_tests_test_emu_half_SOURCES = validation/emu/tests/test_emu_half.cc
validation_emu_tests_test_emu_half_CPPFLAGS = -I$(top_srcdir)/validation/emu/include
validation_emu_tests_test_emu_half_CXXFLAGS = $(EMU_CXX)
TESTS += validation/emu/tests/test_emu_cublas validation/emu/tests/test_emu_half
