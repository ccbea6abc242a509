/* ptdp error discipline (after PETSc's PetscCall).
 *
 * Every function that can fail returns int: 0 on success, a ptdp_err code otherwise.
 *   PTDP_CALL(f(...))        propagate a ptdp error upward, adding a traceback line
 *   PTDP_CHECK(cond, ...)    a user's bad input (always on, also in release builds)
 *   PTDP_CHECK_LOCAL(c, ...) a failure only this rank may see (a file it alone reads)
 *   PTDP_CALL_MPI(x)         an MPI call; the library's own error string goes in the message
 *   PTDP_CALL_HDF5(x)        an HDF5 call returning herr_t or hid_t (< 0 is failure)
 *   PTDP_ALLOC(p, n)         malloc that reports the size on failure
 *   assert(...)              our own invariants (debug builds only)
 * CUDA, cuBLAS and NCCL macros live in ptdp/error_gpu.h (only GPU sources include it).
 *
 * Reporting: the first failure prints one message.  In a collective phase (all ranks evaluate
 * the same checks on the same input, e.g. reading the deck) only world rank 0 prints; otherwise
 * every failing rank prints, prefixed with its rank.  ptdp_error_exit() then ends the program:
 * collectively (MPI_Finalize, exit 1) after a collective input error, MPI_Abort otherwise,
 * so no rank is left waiting in a collective.  Set PTDP_TRACEBACK=1 to print the call chain. */
#ifndef PTDP_ERROR_H
#define PTDP_ERROR_H

#include <mpi.h>
#include <stddef.h>
#include <stdio.h>

typedef enum {
  PTDP_OK = 0,
  PTDP_ERR_INPUT = 1, /* bad deck, flag or data file: the user's to fix */
  PTDP_ERR_LIB = 2,   /* a library (MPI, HDF5, BLAS, CUDA, ...) reported failure */
  PTDP_ERR_MEM = 3,   /* out of memory */
  PTDP_ERR_IO = 4,    /* the operating system refused a file operation */
  PTDP_ERR_NUM = 5,   /* non-finite numbers where they must not be */
  PTDP_ERR_INTERNAL = 6 /* an invariant of ptdp failed: a bug in ptdp, not the user's input */
} ptdp_err;

#if defined(__GNUC__)
#define PTDP_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define PTDP_PRINTF(a, b)
#endif

/* Record and print an error; returns code so callers can `return ptdp_error_push(...)`. */
int ptdp_error_push(int code, const char *file, int line, const char *func, const char *fmt, ...)
    PTDP_PRINTF(5, 6);
/* Add one traceback line for an error passing through; returns code. */
int ptdp_error_trace(int code, const char *file, int line, const char *func);
/* Collective mode: only rank 0 prints input errors (all ranks are known to agree). */
void ptdp_error_set_collective(int collective);
int ptdp_error_collective(void);
/* The text of the first error recorded by this process ("" if none). */
const char *ptdp_error_message(void);
/* Forget recorded errors (tests that expect a failure use it). */
void ptdp_error_clear(void);
/* Silence printing (unit tests checking that a call fails). */
void ptdp_error_set_quiet(int quiet);
/* End the program after a failure with code (see above).  Never returns. */
_Noreturn void ptdp_error_exit(int code);

#define PTDP_CALL(x)                                                        \
  do {                                                                      \
    int ptdp_e_ = (x);                                                      \
    if (ptdp_e_) return ptdp_error_trace(ptdp_e_, __FILE__, __LINE__, __func__); \
  } while (0)

#define PTDP_CHECK(cond, ...)                                                            \
  do {                                                                                   \
    if (!(cond)) return ptdp_error_push(PTDP_ERR_INPUT, __FILE__, __LINE__, __func__, __VA_ARGS__); \
  } while (0)

#define PTDP_CHECK_LOCAL(cond, ...)                                        \
  do {                                                                     \
    if (!(cond)) {                                                         \
      ptdp_error_set_collective(0);                                        \
      return ptdp_error_push(PTDP_ERR_INPUT, __FILE__, __LINE__, __func__, __VA_ARGS__); \
    }                                                                      \
  } while (0)

/* An invariant of ptdp itself (PETSc's PETSC_ERR_PLIB): reported by the rank that saw it as
 * "internal error: ..., a bug in ptdp". */
#define PTDP_CHECK_INTERNAL(cond, ...)                                     \
  do {                                                                     \
    if (!(cond)) {                                                         \
      ptdp_error_set_collective(0);                                        \
      return ptdp_error_push(PTDP_ERR_INTERNAL, __FILE__, __LINE__, __func__, __VA_ARGS__); \
    }                                                                      \
  } while (0)

/* Push an error of kind code with its place: return PTDP_FAIL(PTDP_ERR_IO, "...", ...). */
#define PTDP_FAIL(code, ...) ptdp_error_push((code), __FILE__, __LINE__, __func__, __VA_ARGS__)

#define PTDP_CHECK_IO(cond, ...)                                                      \
  do {                                                                                \
    if (!(cond)) return ptdp_error_push(PTDP_ERR_IO, __FILE__, __LINE__, __func__, __VA_ARGS__); \
  } while (0)

int ptdp_error_mpi(int mpierr, const char *expr, const char *file, int line, const char *func);
#define PTDP_CALL_MPI(x)                                                          \
  do {                                                                            \
    int ptdp_m_ = (x);                                                            \
    if (ptdp_m_ != MPI_SUCCESS) return ptdp_error_mpi(ptdp_m_, #x, __FILE__, __LINE__, __func__); \
  } while (0)

int ptdp_error_hdf5(const char *expr, const char *file, int line, const char *func);
#define PTDP_CALL_HDF5(x)                                                     \
  do {                                                                        \
    if ((long long)(x) < 0) return ptdp_error_hdf5(#x, __FILE__, __LINE__, __func__); \
  } while (0)

#define PTDP_ALLOC(p, n)                                                               \
  do {                                                                                 \
    size_t ptdp_n_ = (size_t)(n);                                                      \
    (p) = ptdp_n_ ? malloc(ptdp_n_) : NULL;                                            \
    if (ptdp_n_ && !(p))                                                               \
      return ptdp_error_push(PTDP_ERR_MEM, __FILE__, __LINE__, __func__,               \
                             "out of memory allocating %zu bytes for %s", ptdp_n_, #p); \
  } while (0)

#define PTDP_CALLOC(p, count, size)                                                       \
  do {                                                                                    \
    size_t ptdp_c_ = (size_t)(count), ptdp_s_ = (size_t)(size);                           \
    (p) = (ptdp_c_ && ptdp_s_) ? calloc(ptdp_c_, ptdp_s_) : NULL;                         \
    if (ptdp_c_ && ptdp_s_ && !(p))                                                       \
      return ptdp_error_push(PTDP_ERR_MEM, __FILE__, __LINE__, __func__,                  \
                             "out of memory allocating %zu x %zu bytes for %s", ptdp_c_, ptdp_s_, #p); \
  } while (0)

#endif
