# AX_CHECK_C11: require a C11 compiler.
AC_DEFUN([AX_CHECK_C11], [
  AC_MSG_CHECKING([whether $CC accepts -std=c11])
  ptdp_save_CFLAGS=$CFLAGS; CFLAGS="$CFLAGS -std=c11"
  AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[_Static_assert(1, "c11");]], [])],
    [AC_MSG_RESULT([yes])], [AC_MSG_RESULT([no]); AC_MSG_ERROR([a C11 compiler is required])])
  CFLAGS=$ptdp_save_CFLAGS
])

# PTDP_BUILD_MODE: --enable-debug (-O0 -g, assertions) and --enable-sanitizers (ASan + UBSan).
AC_DEFUN([PTDP_BUILD_MODE], [
  AC_ARG_ENABLE([debug], [AS_HELP_STRING([--enable-debug], [build -O0 -g with assertions (default: -O3, assertions off)])],
                [], [enable_debug=no])
  AC_ARG_ENABLE([sanitizers], [AS_HELP_STRING([--enable-sanitizers], [build with AddressSanitizer and UndefinedBehaviorSanitizer])],
                [], [enable_sanitizers=no])
  AS_IF([test "x$enable_debug" = xyes],
        [ptdp_mode=debug; PTDP_OPT_CFLAGS="-O0 -g"],
        [ptdp_mode=release; PTDP_OPT_CFLAGS="-O3 -g -march=native -DNDEBUG"])
  AS_IF([test "x$enable_sanitizers" = xyes], [
    ptdp_mode="$ptdp_mode+sanitizers"
    PTDP_OPT_CFLAGS="$PTDP_OPT_CFLAGS -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined"
    PTDP_OPT_LDFLAGS="-fsanitize=address,undefined"
  ])
  PTDP_WARN_CFLAGS="-std=c11 -Wall -Wextra -Wno-unused-parameter -Wshadow -Wstrict-prototypes"
  AM_CONDITIONAL([PTDP_SANITIZE], [test "x$enable_sanitizers" = xyes])
  AC_SUBST([PTDP_OPT_CFLAGS])
  AC_SUBST([PTDP_OPT_LDFLAGS])
  AC_SUBST([PTDP_WARN_CFLAGS])
])

AC_DEFUN([PTDP_SUMMARY], [
  cat <<PTDP_EOF

ptdp $PACKAGE_VERSION configured
  C compiler     : $CC (`$CC --version 2>/dev/null | head -n 1`)
  MPI            : $ptdp_mpi_where
  MPI launcher   : $MPIEXEC
  build mode     : $ptdp_mode
  CFLAGS         : $PTDP_WARN_CFLAGS $PTDP_OPT_CFLAGS $OPENMP_CFLAGS $CFLAGS
  OpenMP         : ${OPENMP_CFLAGS:-none}
  CBLAS          : $BLAS_LIBS $BLAS_CFLAGS (OpenBLAS: $ptdp_have_openblas)
  parallel HDF5  : $HDF5_LIBS $HDF5_CFLAGS
  CUDA, cuBLAS(Lt): $ptdp_cuda_where (PTDP_HAVE_CUDA=$ptdp_have_cuda)
  nvcc           : ${NVCC:-none} $NVCC_FLAGS
  NCCL           : $ptdp_nccl_where (PTDP_HAVE_NCCL=$ptdp_have_nccl)
  python3 (tests): $PYTHON3
  CUDA emulation (tests): $ptdp_emu_why
  fuzzing        : $ptdp_fuzz_why
  install prefix : $prefix

PTDP_EOF
])
