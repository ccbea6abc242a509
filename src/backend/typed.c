/* Which path a storage type takes on a backend (ptdp_backend_create_typed, ptdp/backend.h): the
 * backend is asked for the type (opt->dtype) and stores it if it can; a table that comes back
 * in fp32 is wrapped (mixed.c).  So the backends alone know what they store natively, and a
 * backend gaining 16-bit kernels needs no change here. */
#include "ptdp/backend.h"
#include "ptdp/error.h"

int ptdp_backend_create_typed(ptdp_backend_kind kind, const ptdp_backend_options *opt, ptdp_dtype t,
                              ptdp_backend **be, int *native)
{
  static const ptdp_backend_options defaults = {.num_threads = 0, .ranks_on_node = 1, .report = 0,
                                                 .local_rank = 0, .device = -1};
  ptdp_backend_options o = opt ? *opt : defaults;
  *be = NULL;
  if (native) *native = 0;
  o.dtype = t;
  PTDP_CALL(ptdp_backend_create_kind(kind, &o, be));
  const int own = (*be)->dtype == t;
  if (!own) PTDP_CALL(ptdp_backend_mixed_create(*be, t, be)); /* destroys the inner table on failure */
  if (native) *native = own;
  return 0;
}
