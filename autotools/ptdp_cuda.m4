# PTDP_CHECK_CUDA: optional CUDA runtime + cuBLAS + NCCL for the GPU backend.
#   --with-cuda[=DIR]  require it (DIR defaults to /usr/local/cuda); a request that fails stops configure
#   --without-cuda     do not look
#   (default)          use it when found in /usr/local/cuda
# Always defines PTDP_HAVE_CUDA (0/1) and the automake conditional PTDP_CUDA.
AC_DEFUN([PTDP_CHECK_CUDA], [
  AC_ARG_WITH([cuda], [AS_HELP_STRING([--with-cuda@<:@=DIR@:>@], [CUDA toolkit with cuBLAS and NCCL (default: auto in /usr/local/cuda)])],
              [], [with_cuda=auto])
  ptdp_have_cuda=0; CUDA_CFLAGS=""; CUDA_LIBS=""; ptdp_cuda_where="not requested"
  AS_CASE([$with_cuda],
    [no], [],
    [yes|auto], [ptdp_cuda_dir=/usr/local/cuda],
    [ptdp_cuda_dir=$with_cuda])
  AS_IF([test "x$with_cuda" != xno], [
    ptdp_save_CPPFLAGS=$CPPFLAGS; ptdp_save_LIBS=$LIBS
    CPPFLAGS="$CPPFLAGS -I$ptdp_cuda_dir/include"
    LIBS="-L$ptdp_cuda_dir/lib64 -lnccl -lcublas -lcudart $LIBS"
    AC_MSG_CHECKING([for CUDA runtime, cuBLAS and NCCL in $ptdp_cuda_dir])
    AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <cuda_runtime.h>
#include <cublas_v2.h>
#include <nccl.h>]], [[int n; cudaGetDeviceCount(&n); cublasHandle_t h; cublasCreate(&h); int v; ncclGetVersion(&v);]])],
      [AC_MSG_RESULT([yes]); ptdp_have_cuda=1; ptdp_cuda_where=$ptdp_cuda_dir
       CUDA_CFLAGS="-I$ptdp_cuda_dir/include"; CUDA_LIBS="-L$ptdp_cuda_dir/lib64 -Wl,-rpath,$ptdp_cuda_dir/lib64 -lnccl -lcublas -lcudart"],
      [AC_MSG_RESULT([no]); ptdp_cuda_where="not found in $ptdp_cuda_dir"
       AS_IF([test "x$with_cuda" != xauto], [AC_MSG_ERROR([--with-cuda was given but CUDA runtime + cuBLAS + NCCL do not compile and link from $ptdp_cuda_dir])])])
    CPPFLAGS=$ptdp_save_CPPFLAGS; LIBS=$ptdp_save_LIBS
  ])
  AC_DEFINE_UNQUOTED([PTDP_HAVE_CUDA], [$ptdp_have_cuda], [1 if the CUDA backend's libraries were found])
  AM_CONDITIONAL([PTDP_CUDA], [test $ptdp_have_cuda = 1])
  AC_SUBST([CUDA_CFLAGS])
  AC_SUBST([CUDA_LIBS])
])
