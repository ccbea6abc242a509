# src/core, the lowest level: error handling, the option parser, RNG, fp32 <-> bf16 / fp16
libptdp_a_SOURCES += src/core/error.c
libptdp_a_SOURCES += src/core/options.c
libptdp_a_SOURCES += src/core/rng.c src/core/half.c
libptdp_a_SOURCES += src/core/checked.c

# Unit tests (1 rank), each one program of one source, validation/tests/core/NAME.c (automake's
# default): test_options, the option parser and ptdp-train's key table (src/train/args.c);
# test_half, the fp32 <-> bf16 / fp16 conversions (ptdp/half.h): every 16-bit pattern both ways
# and every rounding midpoint with its neighbours, against values computed with ldexp;
# test_checked, the checked integer arithmetic and the array growth (ptdp/checked.h).
CORE_UNIT_TESTS = validation/tests/core/test_options validation/tests/core/test_half validation/tests/core/test_checked
check_PROGRAMS += $(CORE_UNIT_TESTS)
TESTS += $(CORE_UNIT_TESTS)

# Layers that only look down: every #include of a ptdp header in src/ and include/ptdp names a
# header of its own level or a lower one (the levels: test_layering.py); the plant proves that an
# upward include, and a header no folder implements, fail naming file and line.
TESTS += validation/tests/core/test_layering.py validation/tests/core/test_layering_plant.sh
dist_noinst_SCRIPTS += validation/tests/core/test_layering.py validation/tests/core/test_layering_plant.sh

# Installed headers compile on their own against the installed tree, and ptdp/sim.h needs no MPI
# (the public set: include/local.mk); the plant proves a header needing an uninstalled one fails.
TESTS += validation/tests/core/test_headers.sh validation/tests/core/test_headers_plant.sh
dist_noinst_SCRIPTS += validation/tests/core/test_headers.sh validation/tests/core/test_headers_plant.sh
