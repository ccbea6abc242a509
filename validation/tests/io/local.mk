# validation/tests/io: checkpoints (resume bit for bit and on other layouts, crash safety,
# damaged files, signals, the file's documented layout)
TESTS += validation/tests/io/test_checkpoint_resume.sh validation/tests/io/test_checkpoint_faults.sh validation/tests/io/test_checkpoint_signal.sh validation/tests/io/test_checkpoint_data.sh validation/tests/io/test_runfile.sh validation/tests/io/test_checkpoint_hostile.sh
dist_noinst_SCRIPTS += validation/tests/io/test_checkpoint_resume.sh validation/tests/io/test_checkpoint_faults.sh validation/tests/io/test_checkpoint_signal.sh validation/tests/io/test_checkpoint_data.sh validation/tests/io/test_runfile.sh validation/tests/io/test_checkpoint_hostile.sh validation/tests/io/compare_resume.py validation/tests/io/check_runfile.py
