# jobs: scripts that set up, build and run ptdp (local machine; Slurm scripts come later)
EXTRA_DIST += jobs/setup.sh jobs/run-local.sh jobs/quickstart.sh jobs/prepare-data.sh jobs/bundle-deps.sh
