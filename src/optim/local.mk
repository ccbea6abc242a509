# src/optim: AdamW and clipping, the learning-rate schedule
libptdp_a_SOURCES += src/optim/optimizer.c src/optim/lr_schedule.c src/optim/grad_scaler.c
# Unit test of the loss scaler against trajectories worked out by hand from Megatron's rule
check_PROGRAMS += validation/tests/optim/test_grad_scaler
validation_tests_optim_test_grad_scaler_SOURCES = validation/tests/optim/test_grad_scaler.c
TESTS += validation/tests/optim/test_grad_scaler
# The planted mistake test_grad_scaler must catch: a scaler that restores the hysteresis after
# every clean step (the natural misreading of Megatron's rule), built from a copy of
# grad_scaler.c linked ahead of libptdp.a; the rule fails if its line is not found once.
GRAD_SCALER_GROW = if (++s->growth_tracker == s->window) {
validation/tests/optim/gen/grad_scaler_mutant.c: $(top_srcdir)/src/optim/grad_scaler.c $(top_srcdir)/src/optim/local.mk
	$(AM_V_GEN)$(MKDIR_P) validation/tests/optim/gen && \
	test "`grep -c '$(GRAD_SCALER_GROW)' $(top_srcdir)/src/optim/grad_scaler.c`" = 1 || \
	  { echo "local.mk: the growth line is not found once in grad_scaler.c: update GRAD_SCALER_GROW" >&2; exit 1; } && \
	sed -e 's/$(GRAD_SCALER_GROW)/s->hysteresis_tracker = s->hysteresis; \/* mutant *\/ &/' \
	  $(top_srcdir)/src/optim/grad_scaler.c > $@.tmp && test "`grep -c 'mutant' $@.tmp`" = 1 && mv $@.tmp $@
CLEANFILES += validation/tests/optim/gen/grad_scaler_mutant.c
check_PROGRAMS += validation/tests/optim/test_grad_scaler_mutant
validation_tests_optim_test_grad_scaler_mutant_SOURCES = validation/tests/optim/test_grad_scaler.c
nodist_validation_tests_optim_test_grad_scaler_mutant_SOURCES = validation/tests/optim/gen/grad_scaler_mutant.c
TESTS += validation/tests/optim/test_grad_scaler_plant.sh
dist_noinst_SCRIPTS += validation/tests/optim/test_grad_scaler_plant.sh
