# src/pipeline: pipeline schedules (GPipe, 1F1B, interleaved 1F1B) and their stage-dependency
# rule as pure functions, the replay of a schedule with given compute times (per-item timeline),
# and the driver that runs one iteration's schedule on a rank
libptdp_a_SOURCES += src/pipeline/schedule.c src/pipeline/replay.c src/pipeline/driver.c
ptdpinclude_HEADERS += include/ptdp/schedule.h include/ptdp/pipeline.h

# Unit test (1 rank): coverage, order, dependency simulation, warmup, in-flight, bubble, errors,
# the stage-dependency rule (ptdp_work_dependency / ptdp_work_consumer).
check_PROGRAMS += validation/tests/pipeline/test_schedule
validation_tests_pipeline_test_schedule_SOURCES = validation/tests/pipeline/test_schedule.c
TESTS += validation/tests/pipeline/test_schedule
# Unit test (1 rank): the replay's per-item timeline, hand-computed and against the old totals.
check_PROGRAMS += validation/tests/pipeline/test_replay
validation_tests_pipeline_test_replay_SOURCES = validation/tests/pipeline/test_replay.c
TESTS += validation/tests/pipeline/test_replay
