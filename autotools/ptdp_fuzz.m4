# PTDP_CHECK_FUZZING: --enable-fuzzing builds the harnesses of validation/fuzz as libFuzzer
# programs, and everything else with AddressSanitizer, UBSan and libFuzzer's coverage, so a
# campaign (validation/fuzz/campaign.sh) can run.  Needs clang, given with MPI's flags (make does
# not see configure's environment, so OMPI_CC=clang would hold for configure's tests only):
#   configure --enable-fuzzing --without-cuda CC=clang CPPFLAGS="`mpicc --showme:compile`" \
#             LIBS="`mpicc --showme:link`"
# Without it (the default), `make check` builds each harness with a replay main of ours and runs
# it over the committed corpus and reproducers.  Sets PTDP_FUZZ_LDFLAGS and AM_CONDITIONAL
# PTDP_FUZZING; appends to PTDP_OPT_CFLAGS and PTDP_OPT_LDFLAGS (after PTDP_BUILD_MODE).
AC_DEFUN([PTDP_CHECK_FUZZING], [
  AC_ARG_ENABLE([fuzzing], [AS_HELP_STRING([--enable-fuzzing],
                [build the fuzz harnesses with libFuzzer, and the code with ASan, UBSan and coverage (needs clang)])],
                [], [enable_fuzzing=no])
  PTDP_FUZZ_LDFLAGS=
  ptdp_fuzz_why="no (make check replays the committed inputs)"
  AS_IF([test "x$enable_fuzzing" = xyes], [
    AC_MSG_CHECKING([whether $CC links libFuzzer programs (-fsanitize=fuzzer)])
    ptdp_save_CFLAGS=$CFLAGS
    CFLAGS="$CFLAGS -fsanitize=fuzzer,address,undefined"
    AC_LINK_IFELSE([AC_LANG_SOURCE([[
#include <stddef.h>
#include <stdint.h>
int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { return d && n > 1 ? d[0] == 'x' : 0; }
]])], [AC_MSG_RESULT([yes])],
      [AC_MSG_RESULT([no])
       AC_MSG_ERROR([--enable-fuzzing needs clang with libFuzzer (Debian: clang libclang-rt-dev): configure with
                     CC=clang CPPFLAGS="`mpicc --showme:compile`" LIBS="`mpicc --showme:link`"])])
    CFLAGS=$ptdp_save_CFLAGS
    PTDP_OPT_CFLAGS="$PTDP_OPT_CFLAGS -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined"
    PTDP_OPT_CFLAGS="$PTDP_OPT_CFLAGS -fno-omit-frame-pointer"
    PTDP_OPT_LDFLAGS="$PTDP_OPT_LDFLAGS -fsanitize=address,undefined"
    PTDP_FUZZ_LDFLAGS="-fsanitize=fuzzer"
    ptdp_mode="$ptdp_mode+fuzzing"
    ptdp_fuzz_why="yes: libFuzzer harnesses (validation/fuzz/campaign.sh)"
  ])
  AM_CONDITIONAL([PTDP_FUZZING], [test "x$enable_fuzzing" = xyes])
  AC_SUBST([PTDP_FUZZ_LDFLAGS])
])
