# src/sim: ptdp-sim, the performance and memory simulator (a cost model over the shared schedule,
# replay and memory plan)
libptdp_a_SOURCES += src/sim/cost.c src/sim/collective.c src/sim/layer.c src/sim/layer_cpu.c src/sim/sim.c \
                     src/sim/sim_mem.c src/sim/reduce.c src/sim/report.c src/sim/sim_out.c src/sim/hw_tag.c \
                     src/sim/calibrate.c src/sim/cal_runfile.c src/sim/cal_write.c src/sim/uncertainty.c \
                     src/sim/sim_internal.h src/sim/sim_hw.h
bin_PROGRAMS += ptdp-sim
ptdp_sim_SOURCES = src/sim/ptdp_sim.c

# Unit tests (1 rank, no MPI), each against hand computations (ptdp-tests(7)):
#   test_sim                every cost term, the iteration's assembly
#   test_layer_desc         the layer's one description against its readers (plan, FLOPs, sim)
#   test_sim_comm           communication by topology (groups on nodes, NCCL's algorithms), the DP reduction
#   test_sim_stack          the modelled stacks (implementation, flash, Transformer Engine, tp-comm-overlap)
#   test_sim_cpu            the CPU model (--fusion cpu)
#   test_sim_hw_provenance  every inputs/hw value tagged; the reader's refusals, with FILE:LINE
#   test_sim_calibrate      --calibrate's fit on synthetic runs of known constants, MINE.hw's tags
#   test_sim_range          the iteration time's range from the provenance bands
sim_unit_tests = validation/tests/sim/test_sim validation/tests/sim/test_layer_desc validation/tests/sim/test_sim_comm \
                 validation/tests/sim/test_sim_stack validation/tests/sim/test_sim_cpu \
                 validation/tests/sim/test_sim_hw_provenance validation/tests/sim/test_sim_calibrate \
                 validation/tests/sim/test_sim_range
check_PROGRAMS += $(sim_unit_tests)
TESTS += $(sim_unit_tests)
validation_tests_sim_test_sim_SOURCES = validation/tests/sim/test_sim.c validation/tests/sim/sim_test.h
validation_tests_sim_test_layer_desc_SOURCES = validation/tests/sim/test_layer_desc.c validation/tests/sim/sim_test.h
validation_tests_sim_test_sim_comm_SOURCES = validation/tests/sim/test_sim_comm.c validation/tests/sim/sim_test.h
validation_tests_sim_test_sim_stack_SOURCES = validation/tests/sim/test_sim_stack.c validation/tests/sim/sim_test.h
validation_tests_sim_test_sim_cpu_SOURCES = validation/tests/sim/test_sim_cpu.c
validation_tests_sim_test_sim_hw_provenance_SOURCES = validation/tests/sim/test_sim_hw_provenance.c
validation_tests_sim_test_sim_calibrate_SOURCES = validation/tests/sim/test_sim_calibrate.c validation/tests/sim/sim_test.h
validation_tests_sim_test_sim_range_SOURCES = validation/tests/sim/test_sim_range.c validation/tests/sim/sim_test.h

# Whole-program tests:
#   test_sim_plan.sh           ptdp-sim's memory against ptdp-train's [memory] plan lines, exact
#   test_papers.sh             the papers' rows (Narayanan et al. Table 1, Korthikanti et al. Table 5)
#   test_measure_gpu_hw.sh     measure_gpu_hw.sh's arguments, its failure without a GPU, its file (mock probe)
#   test_measure_cpu_hw.sh     measure_cpu_hw.sh at its smallest settings: its file, every value tagged
#   test_sim_h200_ptdp.sh      ptdp-sim against ptdp's own H200 steps (inputs/hw/h200-ptdp.hw)
#   test_sim_calibrate_cpu.sh  jobs/calibrate.sh on this CPU, five held-out layouts predicted
sim_script_tests = validation/tests/sim/test_sim_plan.sh validation/sim/test_papers.sh \
                   validation/tests/sim/test_measure_gpu_hw.sh validation/tests/sim/test_measure_cpu_hw.sh \
                   validation/tests/sim/test_sim_h200_ptdp.sh validation/tests/sim/test_sim_calibrate_cpu.sh
TESTS += $(sim_script_tests)
dist_noinst_SCRIPTS += $(sim_script_tests) validation/sim/validate_papers.py validation/sim/sensitivity.py \
                       validation/sim/check_gpu_prediction.sh jobs/measure_cpu_hw.sh jobs/measure_gpu_hw.sh \
                       jobs/calibrate.sh
EXTRA_DIST += validation/tests/sim/hw_tags.sh
EXTRA_DIST += validation/sim/narayanan2021_table1.csv validation/sim/korthikanti2022_table5_end_to_end.csv \
              validation/sim/korthikanti2022_table3_model_configs.csv
# Hardware files
EXTRA_DIST += inputs/hw/dgx-a100-80gb.hw inputs/hw/dgx-h100.hw inputs/hw/dgx-h200.hw inputs/hw/dgx2h-v100.hw \
              inputs/hw/cpu-local.hw inputs/hw/h200-ptdp.hw
