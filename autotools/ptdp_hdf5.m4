# PTDP_CHECK_HDF5: parallel HDF5 (MPI-IO) is required.
#   --with-hdf5=DIR  prefix of a parallel HDF5 installation
# Checks that H5_HAVE_PARALLEL is set and that H5Pset_fapl_mpio links.
# Substitutes HDF5_CFLAGS and HDF5_LIBS.
AC_DEFUN([PTDP_CHECK_HDF5], [
  AC_ARG_WITH([hdf5], [AS_HELP_STRING([--with-hdf5=DIR], [prefix of a parallel HDF5 installation])],
              [], [with_hdf5=check])
  AS_IF([test "x$with_hdf5" != xcheck && test "x$with_hdf5" != xyes], [
    HDF5_CFLAGS="-I$with_hdf5/include"; HDF5_LIBS="-L$with_hdf5/lib -lhdf5"
  ], [pkg-config --exists hdf5-openmpi 2>/dev/null], [
    HDF5_CFLAGS=`pkg-config --cflags hdf5-openmpi`; HDF5_LIBS=`pkg-config --libs hdf5-openmpi`
  ], [
    HDF5_CFLAGS=""; HDF5_LIBS="-lhdf5"
  ])
  ptdp_save_CPPFLAGS=$CPPFLAGS; ptdp_save_LIBS=$LIBS
  CPPFLAGS="$CPPFLAGS $HDF5_CFLAGS"; LIBS="$HDF5_LIBS $LIBS"
  AC_CHECK_HEADER([hdf5.h], [], [AC_MSG_ERROR([hdf5.h not found: install parallel HDF5 (Debian: apt-get install libhdf5-openmpi-dev) or use --with-hdf5=DIR])])
  AC_MSG_CHECKING([whether HDF5 is built with MPI-IO (H5_HAVE_PARALLEL)])
  AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#include <hdf5.h>
#if !defined(H5_HAVE_PARALLEL) || !H5_HAVE_PARALLEL
#error serial HDF5
#endif]], [])], [AC_MSG_RESULT([yes])],
    [AC_MSG_RESULT([no]); AC_MSG_ERROR([HDF5 found is serial; ptdp needs parallel HDF5 (Debian: libhdf5-openmpi-dev)])])
  AC_MSG_CHECKING([for H5Pset_fapl_mpio])
  AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <hdf5.h>]],
      [[hid_t p = H5Pcreate(H5P_FILE_ACCESS); H5Pset_fapl_mpio(p, MPI_COMM_WORLD, MPI_INFO_NULL);]])],
    [AC_MSG_RESULT([yes])], [AC_MSG_RESULT([no]); AC_MSG_ERROR([H5Pset_fapl_mpio does not link with $HDF5_LIBS])])
  CPPFLAGS=$ptdp_save_CPPFLAGS; LIBS=$ptdp_save_LIBS
  AC_SUBST([HDF5_CFLAGS])
  AC_SUBST([HDF5_LIBS])
])
