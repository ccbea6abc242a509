/* The one-rank model both directions move weights through: built from ptdp-train's keys on the
 * CPU backend with t = p = d = 1, so its parameter table is the table of global tensors
 * (Megatron-core names, global shapes; the word embedding's buffer alone has padding rows past
 * the real vocabulary, which no file holds).  Loading and saving go through ptdp's checkpoint
 * module (ptdp/checkpoint.h): the same shape and checksum checks as ptdp-train's, and a saved
 * checkpoint that any layout loads. */
#include "convert_impl.h"

#include "ptdp/error.h"

#include <stdlib.h>
#include <string.h>

int hf_session_create(hf_session *s, const ptdp_args *a)
{
  memset(s, 0, sizeof *s);
  const ptdp_backend_options bopt = {.num_threads = 0, .ranks_on_node = 1, .report = 0, .device = -1};
  PTDP_CALL(ptdp_backend_create_kind(PTDP_BACKEND_CPU, &bopt, &s->be));
  PTDP_CALL(ptdp_grid_create(MPI_COMM_WORLD, 1, 1, PTDP_ORDER_TP_DP_PP, &s->grid));
  s->have_grid = 1;
  PTDP_CALL(ptdp_grid_attach_backend(&s->grid, s->be));
  ptdp_model_config mc; /* the parameters only, on one rank */
  ptdp_model_config_of(&a->model, &(ptdp_model_env){.use = PTDP_MODEL_WEIGHTS, .world = 1}, &mc);
  PTDP_CALL(ptdp_gpt_create(&s->m, &mc.gpt, s->be, &s->grid));
  s->have_model = 1;
  return 0;
}

void hf_session_free(hf_session *s)
{
  if (s->have_model) ptdp_gpt_destroy(&s->m);
  if (s->have_grid) ptdp_grid_destroy(&s->grid);
  if (s->be) ptdp_backend_destroy(&s->be);
  memset(s, 0, sizeof *s);
}

/* Host tensors named and shaped as the model's global tensors, data allocated (zeroed). */
int hf_session_tensors(const hf_session *s, hf_tensor **mc, int *n)
{
  const ptdp_gpt *m = &s->m;
  hf_tensor *t;
  PTDP_CALLOC(t, (size_t)m->params.n + 1, sizeof *t);
  *mc = t;
  *n = m->params.n;
  for (int i = 0; i < m->params.n; i++) {
    const ptdp_param_info *p = &m->params.table[i];
    PTDP_CHECK_INTERNAL(!p->tied_copy && p->rows == p->grows && p->cols == p->gcols,
                        "parameter %s is not whole on one rank", p->name);
    snprintf(t[i].name, sizeof t[i].name, "%s", p->name);
    t[i].ndim = p->ndim;
    t[i].rows = p->grows;
    t[i].cols = p->gcols;
    PTDP_CALLOC(t[i].data, (size_t)(p->grows * p->gcols) + 1, sizeof(float));
  }
  return 0;
}

int hf_session_get(hf_session *s, hf_tensor *mc)
{
  ptdp_gpt *m = &s->m;
  for (int i = 0; i < m->params.n; i++) { /* the slice is the buffer's first rows: padding rows follow */
    const size_t bytes = sizeof(float) * (size_t)(mc[i].rows * mc[i].cols);
    PTDP_CALL(s->be->to_host(s->be, mc[i].data, ptdp_gpt_param_data(m, i), bytes));
  }
  return s->be->synchronize(s->be);
}

int hf_session_set(hf_session *s, const hf_tensor *mc)
{
  ptdp_gpt *m = &s->m;
  for (int i = 0; i < m->params.n; i++) {
    const ptdp_param_info *p = &m->params.table[i];
    float *dst = ptdp_gpt_param_data(m, i);
    PTDP_CALL(s->be->memset0(s->be, dst, sizeof(float) * (size_t)ptdp_param_local_elems(p))); /* padding rows: 0 */
    PTDP_CALL(s->be->to_device(s->be, dst, mc[i].data, sizeof(float) * (size_t)(mc[i].rows * mc[i].cols)));
  }
  PTDP_CALL(s->be->synchronize(s->be));
  return ptdp_gpt_sync_weights(m, 0, m->params.layout.total);
}
