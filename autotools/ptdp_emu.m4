# PTDP_CHECK_EMU: can this build make the CUDA emulation of the tests (validation/emu)?  It
# needs a C++17 compiler for x86-64 (the fibers' context switch and the kernels' shared memory
# in thread-local storage follow x86-64's conventions) and, outside --enable-sanitizers, one
# that takes GCC's thread-sanitizer instrumentation without its runtime (the kernel hooks).
# Defines the conditional PTDP_EMU; without it `make check` builds and runs no emulation test,
# and the summary says why.  Call after PTDP_BUILD_MODE.
AC_DEFUN([PTDP_CHECK_EMU], [
  AC_LANG_PUSH([C++])
  ptdp_emu_save_CXXFLAGS=$CXXFLAGS
  CXXFLAGS="-std=c++17"
  AS_IF([test "x$enable_sanitizers" != xyes],
        [CXXFLAGS="$CXXFLAGS -fsanitize=thread --param=tsan-instrument-func-entry-exit=0"])
  AC_MSG_CHECKING([whether $CXX can build the CUDA emulation of the tests (x86-64, C++17, kernel hooks)])
  AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#if !defined(__x86_64__)
#error the emulation's fibers and shared memory follow x86-64's conventions
#endif
#include <tuple>
#include <functional>]], [[std::tuple<int, float> t{1, 2.0f}; (void)std::get<0>(t);]])],
    [ptdp_emu=yes; ptdp_emu_why="yes ($CXX)"],
    [ptdp_emu=no; ptdp_emu_why="no ($CXX: not x86-64, no C++17 or no -fsanitize=thread without its runtime): no emulated CUDA tests"])
  AC_MSG_RESULT([$ptdp_emu])
  CXXFLAGS=$ptdp_emu_save_CXXFLAGS
  AC_LANG_POP([C++])
  AM_CONDITIONAL([PTDP_EMU], [test "x$ptdp_emu" = xyes])
])
