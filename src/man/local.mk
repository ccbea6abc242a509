# src/man: the manual pages (roff, man(7) macros), installed by make install into $(mandir)/man1,
# man5 and man7 and carried by make dist.  From the tree: man -l src/man/ptdp-train.1.  The key
# tables between '.\" keys:begin' and '.\" keys:end' are generated from the programs' option
# tables (validation/gen_man_keys.sh); validation/tests/docs/test_man.sh checks them, that every
# page renders without a warning and that every installed executable has a page.
dist_man_MANS = src/man/ptdp-train.1 src/man/ptdp-generate.1 src/man/ptdp-preprocess.1 src/man/ptdp-sim.1 \
                src/man/ptdp-sweep.1 src/man/ptdp-plot.1 src/man/ptdp-compare.1 src/man/ptdp-convert.1 \
                src/man/ptdp-deck.5 src/man/ptdp-dataset.5 src/man/ptdp-checkpoint.5 src/man/ptdp-runfile.5 \
                src/man/ptdp-hardware.5 \
                src/man/ptdp.7 src/man/ptdp-gpu.7 src/man/ptdp-tests.7
TESTS += validation/tests/docs/test_man.sh
dist_noinst_SCRIPTS += validation/tests/docs/test_man.sh validation/gen_man_keys.sh
