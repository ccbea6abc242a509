# src/layout: pure functions of the model's shape and the parallel layout, below the model so
# that the model, the simulator and the drivers above share them (no MPI, no device):
#  - the parameter table (params.c): every parameter a rank holds, its slice and its buffer
#  - the flat gradient buffer's buckets (grad_buffer.c) and the distributed optimizer's shard map
#  - the pipeline schedules (GPipe, 1F1B, interleaved 1F1B) with their stage-dependency rule, and
#    the replay of a schedule with given compute times (per-item timeline)
libptdp_a_SOURCES += src/layout/params.c src/layout/grad_buffer.c src/layout/shard_map.c
libptdp_a_SOURCES += src/layout/schedule.c src/layout/replay.c

# Unit test (1 rank): coverage, order, dependency simulation, warmup, in-flight, bubble, errors,
# the stage-dependency rule (ptdp_work_dependency / ptdp_work_consumer).
check_PROGRAMS += validation/tests/pipeline/test_schedule
validation_tests_pipeline_test_schedule_SOURCES = validation/tests/pipeline/test_schedule.c
TESTS += validation/tests/pipeline/test_schedule
# Unit test (1 rank): the replay's per-item timeline, hand-computed and against the old totals.
check_PROGRAMS += validation/tests/pipeline/test_replay
validation_tests_pipeline_test_replay_SOURCES = validation/tests/pipeline/test_replay.c
TESTS += validation/tests/pipeline/test_replay
# Unit test (1 rank): the parameter table's row blocks (SwiGLU's fc1 [gate; up]) and the shard
# map's rectangles of them (a worked example, coverage over t, a planted mistake).
check_PROGRAMS += validation/tests/model/test_param_blocks
validation_tests_model_test_param_blocks_SOURCES = validation/tests/model/test_param_blocks.c
TESTS += validation/tests/model/test_param_blocks
