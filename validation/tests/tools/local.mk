# validation/tests/tools: ptdp-plot and ptdp-compare on synthetic run files written to the
# documented format by make_runfile.py (check_plot.py compares what ptdp-plot drew with the file)
TESTS += validation/tests/tools/test_plot.sh validation/tests/tools/test_compare.sh \
  validation/tests/tools/test_tools_real.sh
dist_noinst_SCRIPTS += validation/tests/tools/test_plot.sh validation/tests/tools/test_compare.sh \
  validation/tests/tools/test_tools_real.sh \
  validation/tests/tools/make_runfile.py validation/tests/tools/runfile_sim.py validation/tests/tools/check_plot.py
