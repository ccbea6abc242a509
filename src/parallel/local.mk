# src/parallel: the rank grid (TP, PP, DP, MP, embedding groups), the counting comm layer and
# the transports under it (transport.h is private to this folder)
libptdp_a_SOURCES += src/parallel/grid.c src/parallel/comm.c src/parallel/transport.c \
                     src/parallel/transport_mpi.c src/parallel/transport.h
if PTDP_NCCL
libptdp_a_SOURCES += src/parallel/transport_nccl.c
endif
ptdpinclude_HEADERS += include/ptdp/grid.h include/ptdp/comm.h

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
