# src/parallel: the rank grid (TP, PP, DP, MP, embedding groups), the counting comm layer and
# the transports under it (transport.h is private to this folder); the named events, reduced
# over ranks through the comm layer; ptdp_main, the MPI start and end of every executable
libptdp_a_SOURCES += src/parallel/events.c src/parallel/program.c
libptdp_a_SOURCES += src/parallel/grid.c src/parallel/comm.c src/parallel/transport.c \
                     src/parallel/transport_mpi.c src/parallel/transport.h
if PTDP_NCCL
libptdp_a_SOURCES += src/parallel/transport_nccl.c
endif

# Unit test of the named events on 3 ranks (the .sh wrapper starts its own mpirun).
check_PROGRAMS += validation/tests/parallel/test_events
validation_tests_parallel_test_events_SOURCES = validation/tests/parallel/test_events.c
TESTS += validation/tests/parallel/test_events.sh
dist_noinst_SCRIPTS += validation/tests/parallel/test_events.sh

# Unit tests: the pure layout on 1 rank; the split communicators on 8 ranks, the comm layer on 4
# (the .sh wrappers start their own mpirun with the rank count they need).
check_PROGRAMS += validation/tests/parallel/test_grid_layout validation/tests/parallel/test_grid_mpi \
                  validation/tests/parallel/test_comm
validation_tests_parallel_test_grid_layout_SOURCES = validation/tests/parallel/test_grid_layout.c
validation_tests_parallel_test_grid_mpi_SOURCES = validation/tests/parallel/test_grid_mpi.c
validation_tests_parallel_test_comm_SOURCES = validation/tests/parallel/test_comm.c \
  validation/tests/parallel/staging_backend.c validation/tests/parallel/staging_backend.h
TESTS += validation/tests/parallel/test_grid_layout validation/tests/parallel/test_grid_mpi.sh \
         validation/tests/parallel/test_comm.sh
dist_noinst_SCRIPTS += validation/tests/parallel/test_grid_mpi.sh validation/tests/parallel/test_comm.sh

# bf16 and fp16 through the comm layer (test_comm16.c says what is checked) on 2, 3 and 4 ranks,
# cpu and guard backends; and the planted mistakes it must catch: build-time copies of comm.c
# (bytes counted as 4 per element) and transport_mpi.c (a bf16 sum that truncates instead of
# rounding), linked ahead of libptdp.a so that they replace its comm.o and transport_mpi.o.
# Each rule fails if its line to change is not found once (the mutant would prove nothing).
COMM16_PAYLOAD = return (double)n \* (double)ptdp_tr_data_size(d);
COMM16_ROUND = b\[i\] = ptdp_float_to_bf16(\(.*\));$$
COMM16_TRUNC = { union { float f; uint32_t u; } s_ = {\1}; b[i] = (uint16_t)(s_.u >> 16); } \/* mutant *\/
validation/tests/parallel/gen/comm_mutant.c: $(top_srcdir)/src/parallel/comm.c $(top_srcdir)/src/parallel/local.mk
	$(AM_V_GEN)$(MKDIR_P) validation/tests/parallel/gen && \
	test "`grep -c '$(COMM16_PAYLOAD)' $(top_srcdir)/src/parallel/comm.c`" = 1 || \
	  { echo "local.mk: payload() not found once in comm.c: update COMM16_PAYLOAD" >&2; exit 1; } && \
	sed -e 's/$(COMM16_PAYLOAD)/return (double)n * 4; \/* mutant *\//' $(top_srcdir)/src/parallel/comm.c > $@.tmp && \
	test "`grep -c 'mutant' $@.tmp`" = 1 && mv $@.tmp $@
validation/tests/parallel/gen/transport_mpi_mutant.c: $(top_srcdir)/src/parallel/transport_mpi.c \
                                                      $(top_srcdir)/src/parallel/local.mk
	$(AM_V_GEN)$(MKDIR_P) validation/tests/parallel/gen && \
	test "`grep -c '$(COMM16_ROUND)' $(top_srcdir)/src/parallel/transport_mpi.c`" = 1 || \
	  { echo "local.mk: sum_bf16's rounding not found once in transport_mpi.c: update COMM16_ROUND" >&2; exit 1; } && \
	sed -e 's/$(COMM16_ROUND)/$(COMM16_TRUNC)/' $(top_srcdir)/src/parallel/transport_mpi.c > $@.tmp && \
	test "`grep -c 'mutant' $@.tmp`" = 1 && mv $@.tmp $@
CLEANFILES += validation/tests/parallel/gen/comm_mutant.c validation/tests/parallel/gen/transport_mpi_mutant.c
check_PROGRAMS += validation/tests/parallel/test_comm16 validation/tests/parallel/test_comm16_mutant
validation_tests_parallel_test_comm16_SOURCES = validation/tests/parallel/test_comm16.c
validation_tests_parallel_test_comm16_mutant_SOURCES = validation/tests/parallel/test_comm16.c
nodist_validation_tests_parallel_test_comm16_mutant_SOURCES = validation/tests/parallel/gen/comm_mutant.c \
  validation/tests/parallel/gen/transport_mpi_mutant.c
validation_tests_parallel_test_comm16_mutant_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/src/parallel
TESTS += validation/tests/parallel/test_comm16.sh validation/tests/parallel/test_comm16_plant.sh
dist_noinst_SCRIPTS += validation/tests/parallel/test_comm16.sh validation/tests/parallel/test_comm16_plant.sh

# The same on the emulated CUDA backend (validation/emu/local.mk): staged by the MPI transport,
# and through the NCCL transport on the emulated NCCL.
if PTDP_EMU
check_PROGRAMS += validation/tests/parallel/test_comm16_emu
validation_tests_parallel_test_comm16_emu_SOURCES = validation/tests/parallel/test_comm16.c
validation_tests_parallel_test_comm16_emu_CPPFLAGS = $(EMU_CPP)
validation_tests_parallel_test_comm16_emu_LDFLAGS = $(EMU_LINKF)
validation_tests_parallel_test_comm16_emu_LDADD = $(EMU_LIBS)
EXTRA_validation_tests_parallel_test_comm16_emu_DEPENDENCIES = $(EMU_DEPS)
TESTS += validation/tests/parallel/test_comm16_emu.sh
endif
dist_noinst_SCRIPTS += validation/tests/parallel/test_comm16_emu.sh
