# src/backend: the device interface, backends by name, the CPU backend (and its threads) and the
# guard backend of the tests
libptdp_a_SOURCES += src/backend/backend.c
libptdp_a_SOURCES += src/backend/cpu.c src/backend/cpu_attention.c src/backend/cpu_math.h src/backend/cpu_threads.c
libptdp_a_SOURCES += src/backend/guard.c src/backend/guard.h src/backend/guard_arena.c src/backend/guard_arena.h
ptdpinclude_HEADERS += include/ptdp/cpu_threads.h

# Tests (validation/tests/backend)
check_PROGRAMS += validation/tests/backend/test_guard validation/tests/backend/test_guard_ops
validation_tests_backend_test_guard_SOURCES = validation/tests/backend/test_guard.c
validation_tests_backend_test_guard_ops_SOURCES = validation/tests/backend/test_guard_ops.c
TESTS += validation/tests/backend/test_guard validation/tests/backend/test_guard_ops
TESTS += validation/tests/backend/test_guard_model.sh
dist_noinst_SCRIPTS += validation/tests/backend/test_guard_model.sh
