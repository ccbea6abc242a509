# validation/emu: the tests of the emulated NCCL (emu_nccl_*.cc) and of the NCCL transport's
# ordering and watchdog (src/parallel/transport_nccl.c) on the CUDA emulation.
#   test_emu_nccl.sh        every collective and type ptdp may use, on 2 and 4 ranks, against MPI
#   test_emu_nccl_order.sh  the transport's results; and the planted mutation: a copy of
#                           transport_nccl.c without the comm stream's wait for the compute stream
#                           must give wrong sums (the emulation runs the newest stream first)
#   test_emu_nccl_hang.sh   a peer that never joins: the wait ends after the timeout with a
#                           message naming the group and the collective, non-zero exit, no hang
#   test_emu_nccl_timeout.sh  the same in training runs (t2, d2, p2) with distributed-timeout-minutes

check_PROGRAMS += validation/emu/tests/test_emu_nccl
validation_emu_tests_test_emu_nccl_SOURCES = validation/emu/tests/test_emu_nccl.c
validation_emu_tests_test_emu_nccl_CPPFLAGS = $(EMU_CPP)
validation_emu_tests_test_emu_nccl_LDFLAGS = $(EMU_LINKF)
validation_emu_tests_test_emu_nccl_LDADD = $(EMU_LIBS)
EXTRA_validation_emu_tests_test_emu_nccl_DEPENDENCIES = $(EMU_DEPS)
TESTS += validation/emu/tests/test_emu_nccl.sh
dist_noinst_SCRIPTS += validation/emu/tests/test_emu_nccl.sh

# The transport's test, with the real transport_nccl.c (in libptdp_emu.a) and with the planted
# mutation: a build-time copy of transport_nccl.c whose begin() lost the comm stream's wait for
# the compute stream, its entry point renamed so that both link beside libptdp_emu.a.  The rule
# fails if the line to remove is not found once (the mutant would prove nothing).
EMU_NCCL_WAIT = cudaStreamWaitEvent(x->stream, x->ready, 0)
EMU_NCCL_MUTATION = /$(EMU_NCCL_WAIT)/d; s/ptdp_transport_nccl_create/ptdp_transport_nccl_mutant_create/
validation/emu/gen/transport_nccl_mutant.c: $(top_srcdir)/src/parallel/transport_nccl.c $(top_srcdir)/validation/emu/nccl.mk
	$(AM_V_GEN)$(MKDIR_P) validation/emu/gen && \
	test "`grep -c '$(EMU_NCCL_WAIT)' $(top_srcdir)/src/parallel/transport_nccl.c`" = 1 || \
	  { echo "nccl.mk: begin()'s wait not found once in transport_nccl.c: update EMU_NCCL_WAIT" >&2; exit 1; } && \
	sed -e '$(EMU_NCCL_MUTATION)' $(top_srcdir)/src/parallel/transport_nccl.c > $@.tmp && \
	test "`grep -c '$(EMU_NCCL_WAIT)' $@.tmp`" = 0 && mv $@.tmp $@
CLEANFILES += validation/emu/gen/transport_nccl_mutant.c
EMU_NCCL_TCPP = $(EMU_CPP) -I$(top_srcdir)/src/parallel
check_PROGRAMS += validation/emu/tests/test_emu_nccl_transport validation/emu/tests/test_emu_nccl_transport_mutant
validation_emu_tests_test_emu_nccl_transport_SOURCES = validation/emu/tests/test_emu_nccl_transport.c
validation_emu_tests_test_emu_nccl_transport_CPPFLAGS = $(EMU_NCCL_TCPP)
validation_emu_tests_test_emu_nccl_transport_LDFLAGS = $(EMU_LINKF)
validation_emu_tests_test_emu_nccl_transport_LDADD = $(EMU_LIBS)
EXTRA_validation_emu_tests_test_emu_nccl_transport_DEPENDENCIES = $(EMU_DEPS)
validation_emu_tests_test_emu_nccl_transport_mutant_SOURCES = validation/emu/tests/test_emu_nccl_transport.c
nodist_validation_emu_tests_test_emu_nccl_transport_mutant_SOURCES = validation/emu/gen/transport_nccl_mutant.c
validation_emu_tests_test_emu_nccl_transport_mutant_CPPFLAGS = $(EMU_NCCL_TCPP) -DEMU_NCCL_MUTANT
validation_emu_tests_test_emu_nccl_transport_mutant_LDFLAGS = $(EMU_LINKF)
validation_emu_tests_test_emu_nccl_transport_mutant_LDADD = $(EMU_LIBS)
EXTRA_validation_emu_tests_test_emu_nccl_transport_mutant_DEPENDENCIES = $(EMU_DEPS)
TESTS += validation/emu/tests/test_emu_nccl_order.sh validation/emu/tests/test_emu_nccl_hang.sh
dist_noinst_SCRIPTS += validation/emu/tests/test_emu_nccl_order.sh validation/emu/tests/test_emu_nccl_hang.sh

# The key in training runs: distributed-timeout-minutes ends a run whose peer stalls in NCCL,
# naming the group (comm.c names each MPI communicator after its group) and the collective.
TESTS += validation/emu/tests/test_emu_nccl_timeout.sh
dist_noinst_SCRIPTS += validation/emu/tests/test_emu_nccl_timeout.sh
