# src/sweep: ptdp-sweep, every layout of a model on n devices ranked by ptdp-sim's predictions
libptdp_a_SOURCES += src/sweep/sweep.c src/sweep/sweep_out.c
bin_PROGRAMS += ptdp-sweep
ptdp_sweep_SOURCES = src/sweep/ptdp_sweep.c
# Tests:
#   test_sweep.sh      ptdp-sweep against ptdp-sim on Table 1's 18.4B model
#   test_sweep_bound   its weights-and-state bound against ptdp-sim's count (GPT and a grouped-query
#                      Llama), with a plant
#   test_sweep_range   the "cannot separate" mark: a pair whose difference's band reaches 0 marked,
#                      one whose ranges overlap but whose difference's band does not, not; a real sweep
sweep_unit_tests = validation/tests/sweep/test_sweep_bound validation/tests/sweep/test_sweep_range
check_PROGRAMS += $(sweep_unit_tests)
validation_tests_sweep_test_sweep_bound_SOURCES = validation/tests/sweep/test_sweep_bound.c
validation_tests_sweep_test_sweep_range_SOURCES = validation/tests/sweep/test_sweep_range.c
TESTS += validation/tests/sweep/test_sweep.sh $(sweep_unit_tests)
dist_noinst_SCRIPTS += validation/tests/sweep/test_sweep.sh
