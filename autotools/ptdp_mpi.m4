# PTDP_PROG_MPICC: use the MPI compiler wrapper as CC unless the user set CC.
# PTDP_CHECK_MPI: MPI is required; check that mpi.h compiles and MPI_Init links.
AC_DEFUN([PTDP_PROG_MPICC], [
  AC_ARG_VAR([MPICC], [MPI C compiler wrapper (default: mpicc)])
  : ${CFLAGS=""}
  AS_IF([test -z "$CC"], [
    AC_CHECK_PROGS([MPICC], [mpicc mpigcc mpiicc], [none])
    AS_IF([test "x$MPICC" != xnone], [CC=$MPICC])
  ])
])

AC_DEFUN([PTDP_CHECK_MPI], [
  AC_ARG_VAR([MPIEXEC], [MPI launcher used by make check (default: mpirun)])
  AC_CHECK_PROGS([MPIEXEC], [mpirun mpiexec srun], [none])
  AC_MSG_CHECKING([for MPI (mpi.h and MPI_Init)])
  AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <mpi.h>]],
                   [[int argc = 0; char **argv = 0; MPI_Init(&argc, &argv); MPI_Finalize();]])],
    [AC_MSG_RESULT([yes])],
    [AC_MSG_RESULT([no])
     AC_MSG_ERROR([MPI is required: install Open MPI (Debian: apt-get install libopenmpi-dev openmpi-bin) or set CC to an MPI compiler wrapper])])
  ptdp_mpi_where=`$CC -showme:compile 2>/dev/null || echo "$CC"`
  AS_IF([test "x$MPIEXEC" = xnone], [AC_MSG_WARN([no MPI launcher found: make check will fail; set MPIEXEC])])
])
