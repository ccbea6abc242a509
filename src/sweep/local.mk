# src/sweep: ptdp-sweep, every layout of a model on n devices ranked by ptdp-sim's predictions
libptdp_a_SOURCES += src/sweep/sweep.c src/sweep/sweep_out.c
bin_PROGRAMS += ptdp-sweep
ptdp_sweep_SOURCES = src/sweep/ptdp_sweep.c
# ptdp-sweep against ptdp-sim on Table 1's 18.4B model
TESTS += validation/tests/sweep/test_sweep.sh
dist_noinst_SCRIPTS += validation/tests/sweep/test_sweep.sh
