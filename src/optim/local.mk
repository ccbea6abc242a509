# src/optim: AdamW and clipping, the learning-rate schedule
libptdp_a_SOURCES += src/optim/optimizer.c src/optim/lr_schedule.c src/optim/grad_scaler.c
# Unit test of the loss scaler against trajectories worked out by hand from Megatron's rule
check_PROGRAMS += validation/tests/optim/test_grad_scaler
validation_tests_optim_test_grad_scaler_SOURCES = validation/tests/optim/test_grad_scaler.c
TESTS += validation/tests/optim/test_grad_scaler
