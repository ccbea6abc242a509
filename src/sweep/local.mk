# src/sweep: ptdp-sweep, every layout of a model on n devices ranked by ptdp-sim's predictions
libptdp_a_SOURCES += src/sweep/sweep.c src/sweep/sweep_out.c
bin_PROGRAMS += ptdp-sweep
ptdp_sweep_SOURCES = src/sweep/ptdp_sweep.c
# ptdp-sweep against ptdp-sim on Table 1's 18.4B model
TESTS += validation/tests/sweep/test_sweep.sh
dist_noinst_SCRIPTS += validation/tests/sweep/test_sweep.sh
# its weights-and-state bound against ptdp-sim's count (GPT and a grouped-query Llama), with a plant
check_PROGRAMS += validation/tests/sweep/test_sweep_bound
validation_tests_sweep_test_sweep_bound_SOURCES = validation/tests/sweep/test_sweep_bound.c
TESTS += validation/tests/sweep/test_sweep_bound
# the "cannot separate" mark: overlapping ranges marked, separate ones not; the ranges of a real sweep
check_PROGRAMS += validation/tests/sweep/test_sweep_range
validation_tests_sweep_test_sweep_range_SOURCES = validation/tests/sweep/test_sweep_range.c
TESTS += validation/tests/sweep/test_sweep_range
