# validation/gpu: the unattended GPU run (issue 20, section 5; README, GPUs).  Not tests of
# `make check`: run_gpu.sh runs on a GPU machine from `make dist`'s tarball, which therefore
# carries it; pack.sh makes the archives it needs on a machine with network.
dist_noinst_SCRIPTS += validation/gpu/run_gpu.sh validation/gpu/pack.sh
