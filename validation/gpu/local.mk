# validation/gpu: the unattended GPU run (README, GPUs).  run_gpu.sh runs
# on a GPU machine from `make dist`'s tarball, which therefore carries it; pack.sh makes the
# archives it needs on a machine with network.  test_run_gpu.sh checks the run's logic without a
# GPU (a fake tarball of fake tests, a fake compute-sanitizer): in make check.
dist_noinst_SCRIPTS += validation/gpu/run_gpu.sh validation/gpu/pack.sh validation/gpu/test_run_gpu.sh
TESTS += validation/gpu/test_run_gpu.sh
