# validation: tests run by `make check` (automake's parallel harness) and benchmarks.
#
# Compiled unit tests with no extension run through validation/tests/launch.sh, which starts
# them under $(MPIEXEC) with PTDP_TEST_NP ranks (default 1).  Shell tests (.sh) start their own
# runs with "$MPIRUN -n N ...".  Python tests (.py) run under $(PYTHON3).  Override the launcher
# with `make check MPIEXEC=srun MPIEXEC_FLAGS=`.
MPIEXEC_FLAGS ?= --oversubscribe --bind-to none
TEST_EXTENSIONS = .sh .py
LOG_COMPILER    = $(SHELL) $(top_srcdir)/validation/tests/launch.sh
SH_LOG_COMPILER = $(SHELL)
PY_LOG_COMPILER = $(PYTHON3)
AM_TESTS_ENVIRONMENT = \
  top_srcdir='$(abs_top_srcdir)'; export top_srcdir; \
  top_builddir='$(abs_top_builddir)'; export top_builddir; \
  MPIEXEC='$(MPIEXEC)'; export MPIEXEC; \
  MPIRUN='$(MPIEXEC) $(MPIEXEC_FLAGS)'; export MPIRUN; \
  PYTHON3='$(PYTHON3)'; export PYTHON3; \
  OMPI_ALLOW_RUN_AS_ROOT=1; export OMPI_ALLOW_RUN_AS_ROOT; \
  OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM; \
  OMPI_MCA_rmaps_base_oversubscribe=1; export OMPI_MCA_rmaps_base_oversubscribe; \
  OMP_NUM_THREADS=$${OMP_NUM_THREADS:-1}; export OMP_NUM_THREADS; \
  OPENBLAS_NUM_THREADS=$${OPENBLAS_NUM_THREADS:-1}; export OPENBLAS_NUM_THREADS; \
  ASAN_OPTIONS=$${ASAN_OPTIONS:-detect_leaks=0}; export ASAN_OPTIONS;

dist_noinst_SCRIPTS += validation/tests/launch.sh validation/tests/common.sh
EXTRA_DIST += validation/test_bundle.sh
EXTRA_DIST += validation/compare_builds.sh validation/run_suite.sh .ci/run validation/tests/expect.h
TESTS += validation/tests/docs/test_readme.sh validation/tests/docs/test_default_job.sh
dist_noinst_SCRIPTS += validation/tests/docs/test_readme.sh validation/tests/docs/test_default_job.sh

include validation/tests/local.mk
include validation/tests/io/local.mk
include validation/tests/gpu/local.mk
include validation/gpu/local.mk
include validation/bench/local.mk
include validation/reference/local.mk
