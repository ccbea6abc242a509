# src/core, the lowest level: error handling, the option parser, RNG, fp32 <-> bf16 / fp16
libptdp_a_SOURCES += src/core/error.c
libptdp_a_SOURCES += src/core/options.c
libptdp_a_SOURCES += src/core/rng.c src/core/half.c
libptdp_a_SOURCES += src/core/checked.c

# Unit test of the option parser and ptdp-train's key table (src/train/args.c) (1 rank).
check_PROGRAMS += validation/tests/core/test_options
validation_tests_core_test_options_SOURCES = validation/tests/core/test_options.c
TESTS += validation/tests/core/test_options

# Unit test of the fp32 <-> bf16 / fp16 conversions (ptdp/half.h): every 16-bit pattern both
# ways and every rounding midpoint with its neighbours, against values computed with ldexp.
check_PROGRAMS += validation/tests/core/test_half
validation_tests_core_test_half_SOURCES = validation/tests/core/test_half.c
TESTS += validation/tests/core/test_half

# Unit test of the checked integer arithmetic (ptdp/checked.h, issue 22).
check_PROGRAMS += validation/tests/core/test_checked
validation_tests_core_test_checked_SOURCES = validation/tests/core/test_checked.c
TESTS += validation/tests/core/test_checked

# Layers that only look down: every #include of a ptdp header in src/ and include/ptdp names a
# header of its own level or a lower one (the levels: test_layering.py); the plant proves that an
# upward include, and a header no folder implements, fail naming file and line.
TESTS += validation/tests/core/test_layering.py validation/tests/core/test_layering_plant.sh
dist_noinst_SCRIPTS += validation/tests/core/test_layering.py validation/tests/core/test_layering_plant.sh

# Installed headers compile on their own against the installed tree, and ptdp/sim.h needs no MPI
# (the public set: include/local.mk); the plant proves a header needing an uninstalled one fails.
TESTS += validation/tests/core/test_headers.sh validation/tests/core/test_headers_plant.sh
dist_noinst_SCRIPTS += validation/tests/core/test_headers.sh validation/tests/core/test_headers_plant.sh
