# jobs: scripts that set up, build and run ptdp (this machine, and Slurm in jobs/slurm)
EXTRA_DIST += jobs/setup.sh jobs/run-local.sh jobs/quickstart.sh jobs/prepare-data.sh jobs/bundle-deps.sh
# Slurm: a training job that requeues itself across time limits, a sweep array, its table
dist_noinst_SCRIPTS += jobs/slurm/train.sbatch jobs/slurm/sweep.sbatch jobs/slurm/collect.sh
EXTRA_DIST += jobs/slurm/ptdp-slurm.sh
