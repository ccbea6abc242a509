# PTDP_CHECK_CUDA: the CUDA backend's toolkit: nvcc, the runtime, cuBLAS and cuBLASLt; NCCL
# for the NCCL transport (optional inside CUDA: without it collectives stay on MPI).
#   --with-cuda[=DIR]      require it (DIR defaults to /usr/local/cuda); a request that fails stops configure
#   --without-cuda         do not look
#   (default)              use it when found in /usr/local/cuda
#   --with-cuda-arch=LIST  compute capabilities to build for, comma-separated (default 90): each gives
#                          SASS (sm_XX); the last one also PTX (compute_XX), which newer GPUs JIT-compile;
#                          90a adds sm_90a code (Hopper's wgmma/TMA; nothing of ours needs it yet)
#   --with-nccl[=DIR]      NCCL's prefix (include/nccl.h, lib/libnccl.so) when it is not in the CUDA
#                          directory (default: the CUDA directory, then the compiler's paths)
# A machine without a GPU builds and links the backend all the same: nothing here runs GPU code.
# Always defines PTDP_HAVE_CUDA and PTDP_HAVE_NCCL (0/1) and the conditionals PTDP_CUDA and
# PTDP_NCCL; substitutes NVCC, NVCC_FLAGS, CUDA_CFLAGS, CUDA_LIBS, CUDA_BIN.
AC_DEFUN([PTDP_CHECK_CUDA], [
  AC_ARG_WITH([cuda], [AS_HELP_STRING([--with-cuda@<:@=DIR@:>@], [CUDA toolkit with cuBLAS(Lt) (default: auto in /usr/local/cuda)])],
              [], [with_cuda=auto])
  AC_ARG_WITH([cuda-arch], [AS_HELP_STRING([--with-cuda-arch=LIST], [compute capabilities, e.g. 90 or 80,90 or 90a (default: 90)])],
              [], [with_cuda_arch=90])
  AC_ARG_WITH([nccl], [AS_HELP_STRING([--with-nccl@<:@=DIR@:>@], [NCCL prefix for the NCCL transport (default: auto)])],
              [], [with_nccl=auto])
  ptdp_have_cuda=0; ptdp_have_nccl=0; CUDA_CFLAGS=""; CUDA_LIBS=""; NVCC_FLAGS=""; ptdp_cuda_where="not requested"
  ptdp_nccl_where="no (no CUDA)"
  AS_CASE([$with_cuda],
    [no], [],
    [yes|auto], [ptdp_cuda_dir=/usr/local/cuda],
    [ptdp_cuda_dir=$with_cuda])
  AS_IF([test "x$with_cuda" != xno], [
    AC_PATH_PROG([NVCC], [nvcc], [no], [$ptdp_cuda_dir/bin$PATH_SEPARATOR$PATH])
    ptdp_cuda_libdir=$ptdp_cuda_dir/lib64
    test -d "$ptdp_cuda_libdir" || ptdp_cuda_libdir=$ptdp_cuda_dir/lib
    ptdp_save_CPPFLAGS=$CPPFLAGS; ptdp_save_LIBS=$LIBS
    CPPFLAGS="$CPPFLAGS -I$ptdp_cuda_dir/include"
    LIBS="-L$ptdp_cuda_libdir -lcublasLt -lcublas -lcudart $LIBS"
    AC_MSG_CHECKING([for the CUDA runtime, cuBLAS and cuBLASLt in $ptdp_cuda_dir])
    AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <cuda_runtime.h>
#include <cublas_v2.h>
#include <cublasLt.h>]], [[int n; cudaGetDeviceCount(&n); cublasHandle_t h; cublasCreate(&h);
cublasLtHandle_t lt; cublasLtCreate(&lt);]])],
      [ptdp_cuda_ok=yes], [ptdp_cuda_ok=no])
    AS_IF([test "x$NVCC" = xno], [ptdp_cuda_ok="no (no nvcc)"])
    AC_MSG_RESULT([$ptdp_cuda_ok])
    CPPFLAGS=$ptdp_save_CPPFLAGS; LIBS=$ptdp_save_LIBS
    AS_IF([test "x$ptdp_cuda_ok" = xyes], [
      ptdp_have_cuda=1; ptdp_cuda_where=$ptdp_cuda_dir
      CUDA_CFLAGS="-isystem $ptdp_cuda_dir/include"
      CUDA_LIBS="-L$ptdp_cuda_libdir -Wl,-rpath,$ptdp_cuda_libdir -lcublasLt -lcublas -lcudart -lstdc++"
      PTDP_CUDA_GENCODE([$with_cuda_arch])
      PTDP_CHECK_NCCL
    ], [
      ptdp_cuda_where="not found in $ptdp_cuda_dir"
      AS_IF([test "x$with_cuda" != xauto],
            [AC_MSG_ERROR([--with-cuda was given but nvcc + the CUDA runtime + cuBLAS(Lt) do not compile and link from $ptdp_cuda_dir])])])
  ])
  AC_DEFINE_UNQUOTED([PTDP_HAVE_CUDA], [$ptdp_have_cuda], [1 if the CUDA backend is built])
  AC_DEFINE_UNQUOTED([PTDP_HAVE_NCCL], [$ptdp_have_nccl], [1 if the NCCL transport is built])
  AM_CONDITIONAL([PTDP_CUDA], [test $ptdp_have_cuda = 1])
  AM_CONDITIONAL([PTDP_NCCL], [test $ptdp_have_nccl = 1])
  CUDA_BIN=`AS_DIRNAME(["${NVCC:-/usr/local/cuda/bin/nvcc}"])`
  AC_SUBST([CUDA_CFLAGS])
  AC_SUBST([CUDA_LIBS])
  AC_SUBST([CUDA_BIN])
  AC_SUBST([NVCC_FLAGS])
])

# PTDP_CUDA_GENCODE(LIST): NVCC_FLAGS's -gencode options from "80,90,90a"; the last plain
# capability also gets PTX (code=compute_XX), so later GPUs can run the build.
AC_DEFUN([PTDP_CUDA_GENCODE], [
  ptdp_gencode=""; ptdp_ptx=""
  for ptdp_cc in `echo "$1" | tr ',' ' '`; do
    AS_IF([echo "$ptdp_cc" | grep -Eq '^@<:@0-9@:>@{2,3}$'],
          [ptdp_gencode="$ptdp_gencode -gencode=arch=compute_$ptdp_cc,code=sm_$ptdp_cc"; ptdp_ptx=$ptdp_cc],
          [echo "$ptdp_cc" | grep -Eq '^@<:@0-9@:>@{2,3}a$'],
          [ptdp_gencode="$ptdp_gencode -gencode=arch=compute_$ptdp_cc,code=sm_$ptdp_cc"],
          [AC_MSG_ERROR([--with-cuda-arch: '$ptdp_cc' is not a compute capability such as 80, 90 or 90a])])
  done
  AS_IF([test -n "$ptdp_ptx"], [ptdp_gencode="$ptdp_gencode -gencode=arch=compute_$ptdp_ptx,code=compute_$ptdp_ptx"])
  AC_MSG_CHECKING([nvcc code generation])
  AC_MSG_RESULT([$ptdp_gencode])
  NVCC_FLAGS="-std=c++17 -lineinfo $ptdp_gencode"
  AC_MSG_CHECKING([whether $NVCC compiles for these targets])
  cat > conftest.cu <<PTDP_EOF
__global__ void k(float *x) { x@<:@threadIdx.x@:>@ += 1.0f; }
int main(void) { return 0; }
PTDP_EOF
  AS_IF([$NVCC $NVCC_FLAGS -c conftest.cu -o conftest.$OBJEXT >&AS_MESSAGE_LOG_FD 2>&1],
        [AC_MSG_RESULT([yes])],
        [AC_MSG_RESULT([no]); AC_MSG_ERROR([$NVCC cannot compile for $1 (see config.log)])])
  rm -f conftest.cu conftest.$OBJEXT
])

# PTDP_CHECK_NCCL: nccl.h and libnccl in --with-nccl's DIR, the CUDA directory, or the default paths.
AC_DEFUN([PTDP_CHECK_NCCL], [
  ptdp_nccl_where="no"
  AS_IF([test "x$with_nccl" != xno], [
    AS_CASE([$with_nccl], [yes|auto], [ptdp_nccl_dirs="$ptdp_cuda_dir default"], [ptdp_nccl_dirs=$with_nccl])
    for ptdp_d in $ptdp_nccl_dirs; do
      AS_IF([test "$ptdp_d" = default], [ptdp_nccl_cpp=""; ptdp_nccl_libs="-lnccl"], [
        ptdp_nccl_ld=$ptdp_d/lib64; test -d "$ptdp_nccl_ld" || ptdp_nccl_ld=$ptdp_d/lib
        ptdp_nccl_cpp="-isystem $ptdp_d/include"; ptdp_nccl_libs="-L$ptdp_nccl_ld -Wl,-rpath,$ptdp_nccl_ld -lnccl"])
      ptdp_save_CPPFLAGS=$CPPFLAGS; ptdp_save_LIBS=$LIBS
      CPPFLAGS="$CPPFLAGS $CUDA_CFLAGS $ptdp_nccl_cpp"; LIBS="$ptdp_nccl_libs $CUDA_LIBS $LIBS"
      AC_MSG_CHECKING([for NCCL in $ptdp_d])
      AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <nccl.h>]], [[int v; ncclGetVersion(&v); ncclUniqueId id; ncclGetUniqueId(&id);]])],
                     [AC_MSG_RESULT([yes]); ptdp_have_nccl=1], [AC_MSG_RESULT([no])])
      CPPFLAGS=$ptdp_save_CPPFLAGS; LIBS=$ptdp_save_LIBS
      AS_IF([test $ptdp_have_nccl = 1], [
        ptdp_nccl_where=$ptdp_d; CUDA_CFLAGS="$CUDA_CFLAGS $ptdp_nccl_cpp"; CUDA_LIBS="$ptdp_nccl_libs $CUDA_LIBS"
        break])
    done
    AS_IF([test $ptdp_have_nccl = 0 && test "x$with_nccl" != xauto],
          [AC_MSG_ERROR([--with-nccl was given but nccl.h + libnccl do not compile and link from $with_nccl])])
  ])
])
