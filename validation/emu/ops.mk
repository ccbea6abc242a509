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
