# src/sim: ptdp-sim, the performance and memory simulator (a cost model over the shared schedule,
# replay and memory plan)
libptdp_a_SOURCES += src/sim/cost.c src/sim/collective.c src/sim/layer.c src/sim/layer_cpu.c src/sim/sim.c \
                     src/sim/sim_mem.c src/sim/reduce.c src/sim/report.c src/sim/sim_out.c src/sim/hw_tag.c \
                     src/sim/calibrate.c src/sim/cal_runfile.c src/sim/cal_write.c src/sim/uncertainty.c \
                     src/sim/sim_internal.h src/sim/sim_hw.h
bin_PROGRAMS += ptdp-sim
ptdp_sim_SOURCES = src/sim/ptdp_sim.c

# Unit test (1 rank): every cost term against hand computations, the iteration's assembly
check_PROGRAMS += validation/tests/sim/test_sim validation/tests/sim/test_layer_desc
validation_tests_sim_test_layer_desc_SOURCES = validation/tests/sim/test_layer_desc.c validation/tests/sim/sim_test.h
TESTS += validation/tests/sim/test_layer_desc
validation_tests_sim_test_sim_SOURCES = validation/tests/sim/test_sim.c validation/tests/sim/sim_test.h
TESTS += validation/tests/sim/test_sim
# Communication by topology (groups on nodes, NCCL's algorithms) and the DP reduction, by hand
check_PROGRAMS += validation/tests/sim/test_sim_comm
validation_tests_sim_test_sim_comm_SOURCES = validation/tests/sim/test_sim_comm.c validation/tests/sim/sim_test.h
TESTS += validation/tests/sim/test_sim_comm
# The modelled stacks (implementation, flash attention, Transformer Engine, tp-comm-overlap), by hand
check_PROGRAMS += validation/tests/sim/test_sim_stack
validation_tests_sim_test_sim_stack_SOURCES = validation/tests/sim/test_sim_stack.c validation/tests/sim/sim_test.h
TESTS += validation/tests/sim/test_sim_stack
# The CPU model (--fusion cpu): its cost terms against hand computations
check_PROGRAMS += validation/tests/sim/test_sim_cpu
validation_tests_sim_test_sim_cpu_SOURCES = validation/tests/sim/test_sim_cpu.c
TESTS += validation/tests/sim/test_sim_cpu
# Every value of every inputs/hw file tagged MEASURED, DERIVED or ASSUMED (ptdp-hardware(5),
# PROVENANCE); the reader's refusals of untagged values and malformed tags, with FILE:LINE
check_PROGRAMS += validation/tests/sim/test_sim_hw_provenance
validation_tests_sim_test_sim_hw_provenance_SOURCES = validation/tests/sim/test_sim_hw_provenance.c
TESTS += validation/tests/sim/test_sim_hw_provenance
# ptdp-sim's memory against ptdp-train's [memory] plan lines (bf16, fp16, fp32), exact
TESTS += validation/tests/sim/test_sim_plan.sh
dist_noinst_SCRIPTS += validation/tests/sim/test_sim_plan.sh
# The papers' rows as a regression test (Narayanan et al. Table 1, Korthikanti et al. Table 5)
TESTS += validation/sim/test_papers.sh
dist_noinst_SCRIPTS += validation/sim/test_papers.sh validation/sim/validate_papers.py validation/sim/sensitivity.py \
                       validation/sim/check_gpu_prediction.sh
EXTRA_DIST += validation/sim/narayanan2021_table1.csv validation/sim/korthikanti2022_table5_end_to_end.csv \
              validation/sim/korthikanti2022_table3_model_configs.csv
# Hardware files and the script that measures this machine
EXTRA_DIST += inputs/hw/dgx-a100-80gb.hw inputs/hw/dgx-h100.hw inputs/hw/dgx-h200.hw inputs/hw/dgx2h-v100.hw \
              inputs/hw/cpu-local.hw inputs/hw/h200-ptdp.hw
dist_noinst_SCRIPTS += jobs/measure_cpu_hw.sh jobs/measure_gpu_hw.sh
# measure_gpu_hw.sh's arguments, its clear failure without a GPU, and the file it writes with a
# mock probe, every value tagged (with planted mistakes)
TESTS += validation/tests/sim/test_measure_gpu_hw.sh
dist_noinst_SCRIPTS += validation/tests/sim/test_measure_gpu_hw.sh
# measure_cpu_hw.sh at its smallest settings: the file it writes, every value tagged (planted)
TESTS += validation/tests/sim/test_measure_cpu_hw.sh
dist_noinst_SCRIPTS += validation/tests/sim/test_measure_cpu_hw.sh
EXTRA_DIST += validation/tests/sim/hw_tags.sh
# ptdp-sim against ptdp's own steps measured on an H200 (inputs/hw/h200-ptdp.hw), with a plant
TESTS += validation/tests/sim/test_sim_h200_ptdp.sh
dist_noinst_SCRIPTS += validation/tests/sim/test_sim_h200_ptdp.sh
# ptdp-sim --calibrate's fit on synthetic runs of known constants (exact recovery) and MINE.hw's tags
check_PROGRAMS += validation/tests/sim/test_sim_calibrate
validation_tests_sim_test_sim_calibrate_SOURCES = validation/tests/sim/test_sim_calibrate.c validation/tests/sim/sim_test.h
TESTS += validation/tests/sim/test_sim_calibrate
# ptdp-sim --calibrate on this CPU: jobs/calibrate.sh's four runs, five held-out layouts predicted
TESTS += validation/tests/sim/test_sim_calibrate_cpu.sh
dist_noinst_SCRIPTS += validation/tests/sim/test_sim_calibrate_cpu.sh jobs/calibrate.sh
# The iteration time's range from the hardware file's provenance bands, by hand (one value, two,
# the tags' widths, the central figures untouched, what is banded)
check_PROGRAMS += validation/tests/sim/test_sim_range
validation_tests_sim_test_sim_range_SOURCES = validation/tests/sim/test_sim_range.c validation/tests/sim/sim_test.h
TESTS += validation/tests/sim/test_sim_range
