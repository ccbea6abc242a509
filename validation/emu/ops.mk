# validation/emu: the conformance suite of the backends (validation/tests/backend/test_ops.c,
# TEST_OPS_SOURCES in src/backend/local.mk) linked with the CUDA emulation, so that every
# operation of the CUDA backend is checked against the CPU backend in `make check` without a
# GPU.  Its backend list defaults to "cuda" alone (cpu and guard are test_ops's), and without
# '?': the emulated GPU must be there, or the test fails.
check_PROGRAMS += validation/emu/test_ops_emu
validation_emu_test_ops_emu_SOURCES = $(TEST_OPS_SOURCES)
validation_emu_test_ops_emu_CPPFLAGS = $(AM_CPPFLAGS) -DTEST_OPS_BACKENDS='"cuda"'
validation_emu_test_ops_emu_LDFLAGS = $(AM_LDFLAGS) $(EMU_LINKF)
validation_emu_test_ops_emu_LDADD = $(EMU_LIBS)
EXTRA_validation_emu_test_ops_emu_DEPENDENCIES = $(EMU_DEPS)
TESTS += validation/emu/test_ops_emu
# and it fails on the planted mistakes of test_ops_plant.c (test_ops_emu --plant)
TESTS += validation/emu/tests/test_ops_emu_plant.sh
dist_noinst_SCRIPTS += validation/emu/tests/test_ops_emu_plant.sh

# The Llama kernels' planted mistake: a copy of cuda_llama.cu whose RoPE turns the
# wrong way (the sine's sign flipped: the inverse for the forward), linked into the same suite
# ahead of the real kernels (whole archive; libemu_kernels.a then lends only what the copy lacks,
# and a duplicate would fail the link); test_emu_llama_plant.sh sees the rope checks fail and
# RMSNorm's pass.  The rule fails if the line to change is gone.
EMU_LLAMA_MUTATION = s|sn = sign \* cs\[1\]|sn = -sign * cs[1] /* mutant: turned the wrong way */|
check_LIBRARIES += validation/emu/libemu_llama_mutant.a
nodist_validation_emu_libemu_llama_mutant_a_SOURCES = validation/emu/gen/llama_mutant.cc
validation_emu_libemu_llama_mutant_a_CPPFLAGS = $(EMU_CPP)
validation_emu_libemu_llama_mutant_a_CXXFLAGS = $(EMU_KCXX)
validation/emu/gen/llama_mutant.cc: $(top_srcdir)/src/backend/cuda_llama.cu $(top_srcdir)/validation/emu/translate.sh
	$(AM_V_GEN)$(MKDIR_P) validation/emu/gen && $(EMU_TRANSLATE) $(top_srcdir)/src/backend/cuda_llama.cu $@ \
	  '$(EMU_LLAMA_MUTATION)' 'sn = sign * cs[1]'
CLEANFILES += validation/emu/gen/llama_mutant.cc
check_PROGRAMS += validation/emu/test_ops_emu_llama_mutant
validation_emu_test_ops_emu_llama_mutant_SOURCES = $(TEST_OPS_SOURCES)
validation_emu_test_ops_emu_llama_mutant_CPPFLAGS = $(AM_CPPFLAGS) -DTEST_OPS_BACKENDS='"cuda"'
validation_emu_test_ops_emu_llama_mutant_LDFLAGS = $(AM_LDFLAGS) \
  -Wl,--whole-archive,validation/emu/libemu_core.a,validation/emu/libptdp_emu.a \
  -Wl,validation/emu/libemu_llama_mutant.a,--no-whole-archive validation/emu/libemu_kernels.a
validation_emu_test_ops_emu_llama_mutant_LDADD = $(EMU_LIBS)
EXTRA_validation_emu_test_ops_emu_llama_mutant_DEPENDENCIES = $(EMU_DEPS) validation/emu/libemu_llama_mutant.a
TESTS += validation/emu/tests/test_emu_llama_plant.sh
dist_noinst_SCRIPTS += validation/emu/tests/test_emu_llama_plant.sh
