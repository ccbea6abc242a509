/* Column slices of row-parallel weights, moved by the tensor-parallel group together.
 *
 * A row-parallel weight (linear_proj, linear_fc2) is split by columns: TP rank q holds columns
 * [q w, (q+1) w) of every row, so its slice is a strided pattern in the file, w of every t w
 * floats.  When a run of local elements is whole rows of the slice (at least t of them), the t
 * TP ranks' runs cover the same rows of the file, and the group moves them as full rows instead:
 * rank q takes the q-th t-th of the rows at full width, one contiguous range of the file, and one
 * all-to-all over the group (MPI_Alltoallw with a strided vector type per peer, no packing copy)
 * turns slices into rows (saving) or rows into slices (loading).  Every TP rank decides alike: the
 * local shape and the run's bounds are the same on all of them. */
#include "checkpoint_impl.h"

#include "ptdp/error.h"

#include <stdlib.h>

/* The t-th part q of rows [r0, r1): [*m0, *m1). */
static void row_part(long long r0, long long r1, int t, int q, long long *m0, long long *m1)
{
  *m0 = r0 + (r1 - r0) * q / t;
  *m1 = r0 + (r1 - r0) * (q + 1) / t;
}

/* Is p this rank's column slice of a row-parallel weight (columns split in t equal slices)? */
static int column_slice(const ckpt_io *io, const ptdp_param_info *p)
{
  const ptdp_gpt *m = io->m;
  return m->t > 1 && p->ndim == 2 && p->gcols == m->t * p->lcols && p->col0 == m->tp_rank * p->lcols;
}

int ckpt_swap_rows(const ckpt_io *io, const ptdp_param_info *p, long long c0, long long c1, long long *r0,
                   long long *r1, long long *m0, long long *m1)
{
  const ptdp_gpt *m = io->m;
  if (!column_slice(io, p) || c0 % p->lcols || c1 % p->lcols || (c1 - c0) / p->lcols < m->t) return 0;
  *r0 = c0 / p->lcols;
  *r1 = c1 / p->lcols;
  row_part(*r0, *r1, m->t, m->tp_rank, m0, m1);
  return 1;
}

long long ckpt_run_end(const ckpt_io *io, const ptdp_param_info *p, long long c0, long long hi)
{
  long long c1 = c0 + io->chunk < hi ? c0 + io->chunk : hi;
  if (column_slice(io, p) && c0 % p->lcols) {
    const long long row = (c0 / p->lcols + 1) * p->lcols; /* a part starting inside a row: up to its end */
    if (row < c1) c1 = row;
  }
  return c1;
}

/* The all-to-all of ckpt_exchange_slices.  cnt: 4 t ints, type: 2 t types, slice: the strided
 * vector (this rank's rows of one peer's columns), for the caller to free. */
static int alltoall(const ckpt_io *io, const ptdp_param_info *p, long long c0, long long c1, const float *src,
                    float *dst, int to_rows, int *cnt, MPI_Datatype *type, MPI_Datatype *slice)
{
  long long r0 = 0, r1 = 0, m0 = 0, m1 = 0;
  ckpt_swap_rows(io, p, c0, c1, &r0, &r1, &m0, &m1);
  const int t = io->m->t;
  const long long w = p->lcols;
  /* the rows side: to or from peer j, this rank's rows of j's columns; the slices side: from or
   * to peer j, j's rows of this rank's columns, in row order (displacements in bytes) */
  int *wcnt = cnt, *wdisp = cnt + t, *scnt = cnt + 2 * t, *sdisp = cnt + 3 * t;
  MPI_Datatype *wtype = type, *stype = type + t;
  PTDP_CALL_MPI(MPI_Type_vector((int)(m1 - m0), (int)w, (int)p->gcols, MPI_FLOAT, slice));
  PTDP_CALL_MPI(MPI_Type_commit(slice));
  for (int j = 0; j < t; j++) {
    long long a, b;
    row_part(r0, r1, t, j, &a, &b);
    wcnt[j] = 1, wdisp[j] = (int)(4 * j * w), wtype[j] = *slice;
    scnt[j] = (int)((b - a) * w), sdisp[j] = (int)(4 * (a - r0) * w), stype[j] = MPI_FLOAT;
  }
  MPI_Comm tp = io->m->grid->tp.comm;
  if (to_rows) PTDP_CALL_MPI(MPI_Alltoallw(src, scnt, sdisp, stype, dst, wcnt, wdisp, wtype, tp));
  else PTDP_CALL_MPI(MPI_Alltoallw(src, wcnt, wdisp, wtype, dst, scnt, sdisp, stype, tp));
  return 0;
}

int ckpt_exchange_slices(const ckpt_io *io, const ptdp_param_info *p, long long c0, long long c1, const float *src,
                         float *dst, int to_rows)
{
  const size_t t = (size_t)io->m->t;
  int *cnt = malloc(sizeof *cnt * 4 * t);
  MPI_Datatype *type = malloc(sizeof *type * 2 * t), slice = MPI_DATATYPE_NULL;
  int rc = cnt && type ? alltoall(io, p, c0, c1, src, dst, to_rows, cnt, type, &slice)
                       : PTDP_FAIL(PTDP_ERR_MEM, "out of memory for %zu TP ranks", t);
  if (slice != MPI_DATATYPE_NULL) MPI_Type_free(&slice);
  free(cnt);
  free(type);
  return rc;
}
