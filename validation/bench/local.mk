# validation/bench: the training benchmark of issue 2 (a script, not a timed test)
EXTRA_DIST += validation/bench/bench_train.sh validation/bench/bench.in validation/bench/sgemm_bench.c \
	validation/bench/README.md
