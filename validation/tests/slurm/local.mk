# validation/tests/slurm: the job scripts of jobs/slurm on a real Slurm started on localhost
# (SKIPs where slurm-wlm or munge is absent or the daemons cannot start)
TESTS += validation/tests/slurm/test_slurm.sh
dist_noinst_SCRIPTS += validation/tests/slurm/test_slurm.sh
