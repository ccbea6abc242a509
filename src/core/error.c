/* One handler for every failure: see include/ptdp/error.h for the discipline. */
#include "ptdp/error.h"

#include <hdf5.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Process-wide error state: what failed first, and how to report it. */
static struct {
  char message[2048];
  int have_error;
  int collective;
  int quiet;
  int traceback;
} err_state = {.collective = 1, .traceback = -1};

static int world_rank(void)
{
  int init = 0, fin = 0, r = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  if (init && !fin) MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

static int want_traceback(void)
{
  if (err_state.traceback < 0) {
    const char *e = getenv("PTDP_TRACEBACK");
    err_state.traceback = e && e[0] && strcmp(e, "0") != 0;
  }
  return err_state.traceback;
}

void ptdp_error_set_collective(int collective) { err_state.collective = collective; }
int ptdp_error_collective(void) { return err_state.collective; }
void ptdp_error_set_quiet(int quiet) { err_state.quiet = quiet; }
const char *ptdp_error_message(void) { return err_state.message; }
void ptdp_error_clear(void)
{
  err_state.message[0] = '\0';
  err_state.have_error = 0;
}

static int should_print(void)
{
  if (err_state.quiet) return 0;
  return !err_state.collective || world_rank() == 0;
}

int ptdp_error_push(int code, const char *file, int line, const char *func, const char *fmt, ...)
{
  if (err_state.have_error) return ptdp_error_trace(code, file, line, func);
  va_list ap;
  va_start(ap, fmt);
  size_t at = 0;
  if (code == PTDP_ERR_INTERNAL) /* the kind says whose it is to fix */
    at = (size_t)snprintf(err_state.message, sizeof err_state.message, "internal error (a bug in ptdp): ");
  vsnprintf(err_state.message + at, sizeof err_state.message - at, fmt, ap);
  va_end(ap);
  err_state.have_error = 1;
  if (should_print()) {
    if (err_state.collective)
      fprintf(stderr, "ptdp: error: %s\n", err_state.message);
    else
      fprintf(stderr, "ptdp: error [rank %d]: %s\n", world_rank(), err_state.message);
    if (want_traceback()) fprintf(stderr, "ptdp:   at %s (%s:%d)\n", func, file, line);
    fflush(stderr);
  }
  return code;
}

int ptdp_error_trace(int code, const char *file, int line, const char *func)
{
  if (want_traceback() && should_print()) {
    fprintf(stderr, "ptdp:   at %s (%s:%d)\n", func, file, line);
    fflush(stderr);
  }
  return code;
}

int ptdp_error_mpi(int mpierr, const char *expr, const char *file, int line, const char *func)
{
  char s[MPI_MAX_ERROR_STRING] = "";
  int n = 0;
  if (MPI_Error_string(mpierr, s, &n) != MPI_SUCCESS) snprintf(s, sizeof s, "MPI error code %d", mpierr);
  ptdp_error_set_collective(0);
  return ptdp_error_push(PTDP_ERR_LIB, file, line, func, "MPI error: %s (in %s at %s:%d)", s, expr, file, line);
}

/* Walk HDF5's error stack and keep its innermost description. */
static herr_t hdf5_walk(unsigned n, const H5E_error2_t *e, void *data)
{
  if (n == 0 && e && e->desc) snprintf((char *)data, 512, "%s (in %s)", e->desc, e->func_name ? e->func_name : "?");
  return 0;
}

int ptdp_error_hdf5(const char *expr, const char *file, int line, const char *func)
{
  char msg[512] = "no message on the HDF5 error stack";
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, hdf5_walk, msg);
  H5Eclear2(H5E_DEFAULT);
  ptdp_error_set_collective(0);
  return ptdp_error_push(PTDP_ERR_LIB, file, line, func, "HDF5 error: %s; call %s at %s:%d", msg, expr, file, line);
}

_Noreturn void ptdp_error_exit(int code)
{
  int init = 0, fin = 0, size = 1;
  if (code == 0) code = 1;
  fflush(stdout);
  fflush(stderr);
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  if (init && !fin) {
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (err_state.collective || size == 1) {
      /* Every rank reached the same verdict: leave together, cleanly. */
      MPI_Finalize();
      exit(code);
    }
    MPI_Abort(MPI_COMM_WORLD, code);
  }
  exit(code);
}
