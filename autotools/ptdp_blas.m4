# PTDP_CHECK_BLAS: a CBLAS is required; OpenBLAS is preferred.
#   --with-blas=DIR  look in DIR/include and DIR/lib first
#   BLAS_LIBS=...    use exactly these libraries
# Defines PTDP_HAVE_OPENBLAS (0/1); substitutes BLAS_CFLAGS and BLAS_LIBS.
AC_DEFUN([PTDP_CHECK_BLAS], [
  AC_ARG_WITH([blas], [AS_HELP_STRING([--with-blas=DIR], [prefix of a CBLAS installation (OpenBLAS preferred)])],
              [], [with_blas=check])
  AC_ARG_VAR([BLAS_LIBS], [libraries providing CBLAS (default: found by configure)])
  ptdp_save_CPPFLAGS=$CPPFLAGS; ptdp_save_LIBS=$LIBS
  BLAS_CFLAGS=""
  AS_IF([test "x$with_blas" != xcheck && test "x$with_blas" != xyes], [
    BLAS_CFLAGS="-I$with_blas/include -I$with_blas/include/openblas"
    ptdp_blas_ldflags="-L$with_blas/lib -L$with_blas/lib64"
  ], [
    AS_IF([test -d /usr/include/x86_64-linux-gnu/openblas-pthread], [BLAS_CFLAGS="-I/usr/include/x86_64-linux-gnu/openblas-pthread"])
    AS_IF([pkg-config --exists openblas 2>/dev/null], [BLAS_CFLAGS="`pkg-config --cflags openblas` $BLAS_CFLAGS"])
    ptdp_blas_ldflags=""
  ])
  CPPFLAGS="$CPPFLAGS $BLAS_CFLAGS"
  AC_CHECK_HEADER([cblas.h], [], [AC_MSG_ERROR([cblas.h not found: install OpenBLAS (Debian: apt-get install libopenblas-dev) or use --with-blas=DIR])])
  ptdp_have_openblas=0
  AS_IF([test -z "$BLAS_LIBS"], [
    for ptdp_blas_try in "-lopenblas" "-lcblas -lblas" "-lblas"; do
      LIBS="$ptdp_blas_ldflags $ptdp_blas_try $ptdp_save_LIBS"
      AC_MSG_CHECKING([for cblas_sgemm in $ptdp_blas_try])
      AC_LINK_IFELSE([AC_LANG_CALL([], [cblas_sgemm])], [AC_MSG_RESULT([yes]); BLAS_LIBS="$ptdp_blas_ldflags $ptdp_blas_try"; break], [AC_MSG_RESULT([no])])
    done
  ])
  AS_IF([test -z "$BLAS_LIBS"], [AC_MSG_ERROR([no library providing cblas_sgemm: install OpenBLAS (Debian: apt-get install libopenblas-dev) or set BLAS_LIBS])])
  LIBS="$BLAS_LIBS $ptdp_save_LIBS"
  AC_CHECK_FUNC([openblas_get_corename], [ptdp_have_openblas=1])
  CPPFLAGS=$ptdp_save_CPPFLAGS; LIBS=$ptdp_save_LIBS
  AC_DEFINE_UNQUOTED([PTDP_HAVE_OPENBLAS], [$ptdp_have_openblas], [1 if the CBLAS is OpenBLAS])
  AC_SUBST([BLAS_CFLAGS])
  AC_SUBST([BLAS_LIBS])
])
