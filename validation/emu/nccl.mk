# validation/emu: the tests of the emulated NCCL (emu_nccl.cc) and of the NCCL transport's
# ordering and watchdog (src/parallel/transport_nccl.c) on the CUDA emulation.
#   test_emu_nccl.sh        every collective and type ptdp may use, on 2 and 4 ranks, against MPI
#   test_emu_nccl_order.sh  the transport's results; and the planted mutation: a copy of
#                           transport_nccl.c without the comm stream's wait for the compute stream
#                           must give wrong sums (the emulation runs the newest stream first)
#   test_emu_nccl_hang.sh   a peer that never joins: the wait ends after the timeout with a
#                           message naming the group and the collective, non-zero exit, no hang

check_PROGRAMS += validation/emu/tests/test_emu_nccl
validation_emu_tests_test_emu_nccl_SOURCES = validation/emu/tests/test_emu_nccl.c
validation_emu_tests_test_emu_nccl_CPPFLAGS = $(EMU_CPP)
validation_emu_tests_test_emu_nccl_LDFLAGS = $(EMU_LINKF)
validation_emu_tests_test_emu_nccl_LDADD = $(EMU_LIBS)
EXTRA_validation_emu_tests_test_emu_nccl_DEPENDENCIES = $(EMU_DEPS)
TESTS += validation/emu/tests/test_emu_nccl.sh
dist_noinst_SCRIPTS += validation/emu/tests/test_emu_nccl.sh
