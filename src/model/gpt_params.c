/* The model's parameter table and flat buffers: see include/ptdp/gpt_params.h. */
#include "ptdp/gpt.h"

#include "ptdp/error.h"
#include "ptdp/rng.h"
#include "model_internal.h"

#include <math.h>
#include <stdlib.h>

float *ptdp_gpt_param_data(const ptdp_gpt *m, int i)
{
  return m->params.fp32 ? m->params.fp32 + m->params.layout.offset[i] : NULL;
}
float *ptdp_gpt_grad_data(const ptdp_gpt *m, int i)
{
  return m->params.grad ? m->params.grad + m->params.layout.offset[i] : NULL;
}
void *ptdp_gpt_weight_data(const ptdp_gpt *m, int i)
{
  return (char *)m->params.wt + (size_t)m->params.layout.offset[i] * m->es;
}

int ptdp_gpt_sync_weights(ptdp_gpt *m, long long lo, long long hi)
{
  PTDP_CHECK_INTERNAL(m->params.fp32, "ptdp_gpt_sync_weights without whole fp32 weights (sharded master weights)");
  if (m->params.wt == (void *)m->params.fp32 || hi <= lo) return 0;
  return m->be->convert(m->be, (char *)m->params.wt + (size_t)lo * m->es, m->cfg.dtype, m->params.fp32 + lo, PTDP_F32,
                        (size_t)(hi - lo));
}

long long ptdp_gpt_max_param_elems(const ptdp_gpt *m)
{
  long long most = 1;
  for (int i = 0; i < m->params.n; i++)
    most = ptdp_param_local_elems(&m->params.table[i]) > most ? ptdp_param_local_elems(&m->params.table[i]) : most;
  return most;
}

int ptdp_gpt_params_build(ptdp_gpt *m, const ptdp_param_position *pos)
{
  const ptdp_model_shape shape = ptdp_gpt_shape(&m->cfg);
  m->params.n = ptdp_params_count(&shape, pos);
  PTDP_CALLOC(m->params.table, m->params.n > 0 ? m->params.n : 1, sizeof *m->params.table);
  ptdp_params_list(&shape, pos, m->params.table, m->params.n);
  return ptdp_grad_layout_build(m->params.table, m->params.n, m->cfg.bucket_elems, m->cfg.dp_size, &m->params.layout);
}

void ptdp_gpt_params_free(ptdp_gpt *m)
{
  free(m->params.table);
  ptdp_grad_layout_free(&m->params.layout);
}

void ptdp_gpt_init_values(const ptdp_gpt *m, int i, float *w)
{
  const ptdp_param_info *p = &m->params.table[i];
  const long long n = ptdp_param_local_elems(p);
  if (p->init == PTDP_INIT_ZEROS || p->init == PTDP_INIT_ONES) {
    for (long long k = 0; k < n; k++) w[k] = p->init == PTDP_INIT_ONES ? 1.0f : 0.0f;
    return;
  }
  const float sd = p->init == PTDP_INIT_NORMAL_SCALED ? m->cfg.init_std / sqrtf(2.0f * (float)m->cfg.num_layers)
                                                      : m->cfg.init_std;
#pragma omp parallel for schedule(static)
  for (long long r = 0; r < p->lrows; r++) {
    uint64_t rh = ptdp_rng_row(m->cfg.seed, PTDP_RNG_INIT, p->init_key, 0, (uint64_t)ptdp_param_global_row(p, r));
    for (long long c = 0; c < p->lcols; c++)
      w[r * p->lcols + c] = sd * (float)ptdp_rng_normal(ptdp_rng_at(rh, (uint64_t)(p->col0 + c)));
  }
}

int ptdp_gpt_init_params(ptdp_gpt *m)
{
  PTDP_CHECK_INTERNAL(m->params.fp32, "ptdp_gpt_init_params without whole fp32 weights (use ptdp_master_init)");
  float *host;
  PTDP_ALLOC(host, (size_t)ptdp_gpt_max_param_elems(m) * sizeof(float));
  int err = 0;
  for (int i = 0; i < m->params.n && !err; i++) {
    ptdp_gpt_init_values(m, i, host);
    err = m->be->to_device(m->be, ptdp_gpt_param_data(m, i), host,
                           (size_t)ptdp_param_local_elems(&m->params.table[i]) * sizeof(float));
  }
  free(host);
  return err ? err : ptdp_gpt_sync_weights(m, 0, m->params.layout.total);
}
