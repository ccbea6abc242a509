# src/model: the GPT model (its parameter table: src/layout): the memory plan and its allocation, layers
# (TP/SP), embedding and head, recomputation, the papers' memory formulas
libptdp_a_SOURCES += src/model/model_config.c src/model/shape.c src/model/plan.c src/model/memory.c src/model/memory_formula.c src/model/layer_desc.c src/model/flops.c \
                     src/model/gpt.c src/model/gpt_params.c src/model/loss.c src/model/gpt_hooks.c src/model/gpt_bind.c src/model/layer.c src/model/layer_passes.c src/model/head.c src/model/chunk.c \
                     src/model/moe.c src/model/moe_route.c src/model/moe_internal.h \
                     src/model/model_internal.h

# Tests (validation/tests/model)
check_PROGRAMS += validation/tests/model/test_gradcheck
validation_tests_model_test_gradcheck_SOURCES = validation/tests/model/test_gradcheck.c
TESTS += validation/tests/model/test_gradcheck validation/tests/model/test_gradcheck_recompute.sh
dist_noinst_SCRIPTS += validation/tests/model/test_gradcheck_recompute.sh
TESTS += validation/tests/model/test_comm_volume.sh validation/tests/model/test_memory.sh
dist_noinst_SCRIPTS += validation/tests/model/test_comm_volume.sh validation/tests/model/test_memory.sh
check_PROGRAMS += validation/tests/model/test_vocab_xent
validation_tests_model_test_vocab_xent_SOURCES = validation/tests/model/test_vocab_xent.c
TESTS += validation/tests/model/test_vocab_xent.sh
dist_noinst_SCRIPTS += validation/tests/model/test_vocab_xent.sh
check_PROGRAMS += validation/tests/model/test_plan
validation_tests_model_test_plan_SOURCES = validation/tests/model/test_plan.c
TESTS += validation/tests/model/test_plan.sh
dist_noinst_SCRIPTS += validation/tests/model/test_plan.sh
