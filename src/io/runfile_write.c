/* The run file's rows: every rank's numbers reach world rank 0 by MPI_Gather, rank 0 writes them
 * and flushes (see ptdp/runfile.h). */
#include "runfile_impl.h"

#include "ptdp/error.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static double exp_clamped(double x) { return exp(x < 700 ? x : 700); }

/* ---------------------------------------------------------------- communication volume */

/* What one rank sends per iteration on each communicator, analytically (ptdp(7), COMMUNICATION
 * VOLUME): the ring convention (all-reduce 2 (g-1)/g n, all-gather and reduce-scatter (g-1)/g n,
 * a send its size), 4-byte elements.  TP outside the transformer layers (embedding, output layer,
 * cross entropy) is not modelled (NaN). */
static void analytical_volume(const ptdp_runfile_run *run, double *out)
{
  const ptdp_gpt *m = run->model;
  const ptdp_grid *g = run->grid;
  const double t = g->layout.t, d = g->layout.d, b = (double)run->micro_batch;
  const double s = (double)run->seq, h = (double)run->hidden, mb = run->micro_batches;
  double layers = 0, fwd_sends = 0, bwd_sends = 0;
  const int p = g->layout.p, v = m->nchunks;
  for (int c = 0; c < v; c++) {
    layers += m->chunks[c].nlayers;
    const int vs = c * p + g->me.pp; /* virtual stage */
    fwd_sends += vs < p * v - 1;          /* its output goes on to the next virtual stage */
    bwd_sends += vs > 0;                  /* its input gradient goes back */
  }
  /* per layer and micro-batch, in units of b s h (t-1)/t elements: the layer's collectives
   * (ptdp_layer_describe; 8 without sequence parallelism, 10 with it, 4 more under full
   * recomputation, whose forward runs them again) */
  const ptdp_layer_shape ls = ptdp_gpt_layer_shape(m);
  ptdp_layer_desc desc;
  ptdp_layer_describe(&ls, &desc);
  const double factor =
      ptdp_layer_desc_tp_elems(&desc, m->cfg.recompute == PTDP_RECOMPUTE_FULL) / ((double)m->sh.N * m->sh.h);
  const double E = (double)m->es; /* activations move in the storage type; gradients in fp32 */
  out[RF_COMM_TP_LAYERS] = t > 1 ? factor * b * s * h * (t - 1) / t * E * layers * mb : 0;
  out[RF_COMM_TP_OTHER] = t > 1 ? 0.0 / 0.0 : 0;
  out[RF_COMM_PP] = (fwd_sends + bwd_sends) * mb * (double)m->sh.Nl * h * E;
  out[RF_COMM_DP] = d > 1 ? 2 * (d - 1) / d * (double)m->params.layout.total * 4 : 0;
  double emb = 0; /* the tied embedding's gradient, summed by its two holders */
  if (p * v > 1 && !m->cfg.arch.untie)
    for (int i = 0; i < m->params.n; i++)
      if (m->params.table[i].embedding) emb = (double)ptdp_param_local_elems(&m->params.table[i]) * 4;
  out[RF_COMM_EMB] = emb;
}

/* This rank's measured bytes and calls per iteration on each communicator since the last reset. */
static void measured_volume(const ptdp_grid *g, int iters, double *bytes, double *calls)
{
  const ptdp_comm *c[RF_NCOMMS] = {&g->tp, &g->tp, &g->pp, &g->dp, g->emb.size > 0 ? &g->emb : NULL};
  for (int k = 0; k < RF_NCOMMS; k++) {
    double by = 0, ca = 0;
    if (c[k])
      for (int tag = 0; tag < PTDP_TAG_COUNT; tag++) {
        if (tag == PTDP_TAG_MISC) continue; /* bookkeeping: norms, loss averaging, timers */
        if (k == RF_COMM_TP_LAYERS && tag != PTDP_TAG_LAYER) continue;
        if (k == RF_COMM_TP_OTHER && tag == PTDP_TAG_LAYER) continue;
        by += c[k]->stats.bytes[tag];
        ca += (double)c[k]->stats.calls[tag];
      }
    bytes[k] = by / iters;
    calls[k] = ca / iters;
  }
}

/* ---------------------------------------------------------------- rows */

static int write_scalar(hid_t f, const char *group, const char *name, hid_t type, long long row, const void *v)
{
  char path[128];
  snprintf(path, sizeof path, "/%s/%s", group, name);
  const hsize_t at[1] = {(hsize_t)row}, one[1] = {1};
  return rf_write(f, path, type, 1, at, one, v);
}

static int flush(struct ptdp_runfile *rf)
{
  PTDP_CALL(rf_write_job(rf));
  PTDP_CALL_HDF5(H5Fflush(rf->file, H5F_SCOPE_GLOBAL));
  return 0;
}

int ptdp_runfile_interval(ptdp_runfile *rf, const ptdp_runfile_metrics *row, const ptdp_events_summary *timers)
{
  if (!rf) return 0;
  const ptdp_grid *g = rf->run.grid;
  const int W = g->layout.world, T = timers->nevents;
  double mine[2 * RF_NCOMMS], *all = NULL, *ana_all = NULL;
  measured_volume(g, timers->iters, mine, mine + RF_NCOMMS);
  double ana[RF_NCOMMS];
  analytical_volume(&rf->run, ana);
  if (rf->rank0) {
    PTDP_ALLOC(all, sizeof(double) * 2 * RF_NCOMMS * (size_t)W);
    PTDP_ALLOC(ana_all, sizeof(double) * RF_NCOMMS * (size_t)W);
  }
  PTDP_CALL_MPI(MPI_Gather(mine, 2 * RF_NCOMMS, MPI_DOUBLE, all, 2 * RF_NCOMMS, MPI_DOUBLE, 0, g->world.comm));
  PTDP_CALL_MPI(MPI_Gather(ana, RF_NCOMMS, MPI_DOUBLE, ana_all, RF_NCOMMS, MPI_DOUBLE, 0, g->world.comm));
  if (!rf->rank0) return 0;
  const hid_t f = rf->file;
  const long long n = rf->n_intervals, it = row->iteration;
  const long long iv[4] = {row->iteration, row->consumed_samples, row->skipped, row->nan_iterations};
  const double fv[8] = {row->lm_loss,          row->learning_rate,     row->grad_norm,       row->loss_scale,
                        row->ms_per_iteration, row->tokens_per_second, row->tflops_per_rank, row->mfu};
  int rc = 0;
  for (int i = 0; i < 4 && !rc; i++) rc = write_scalar(f, "metrics", rf_metric_i64[i], H5T_NATIVE_LLONG, n, &iv[i]);
  for (int i = 0; i < 8 && !rc; i++) rc = write_scalar(f, "metrics", rf_metric_f64[i], H5T_NATIVE_DOUBLE, n, &fv[i]);
  if (!rc) rc = write_scalar(f, "timers", "iteration", H5T_NATIVE_LLONG, n, &it);
  const hsize_t st3[3] = {(hsize_t)n, 0, 0}, tcount[3] = {1, (hsize_t)W, (hsize_t)T};
  if (!rc) rc = rf_write(f, "/timers/ms", H5T_NATIVE_DOUBLE, 3, st3, tcount, timers->all);
  if (!rc) rc = write_scalar(f, "communication", "iteration", H5T_NATIVE_LLONG, n, &it);
  /* all: per rank [bytes C, calls C] -> [W, C] each */
  double *by = NULL, *ca = NULL;
  if (!rc && (!(by = malloc(sizeof(double) * RF_NCOMMS * W)) || !(ca = malloc(sizeof(double) * RF_NCOMMS * W))))
    rc = PTDP_ERR_MEM;
  for (int r = 0; !rc && r < W; r++)
    for (int k = 0; k < RF_NCOMMS; k++) {
      by[r * RF_NCOMMS + k] = all[r * 2 * RF_NCOMMS + k];
      ca[r * RF_NCOMMS + k] = all[r * 2 * RF_NCOMMS + RF_NCOMMS + k];
    }
  const hsize_t ccount[3] = {1, (hsize_t)W, RF_NCOMMS}, z2[2] = {0, 0}, wc[2] = {(hsize_t)W, RF_NCOMMS};
  if (!rc) rc = rf_write(f, "/communication/bytes", H5T_NATIVE_DOUBLE, 3, st3, ccount, by);
  if (!rc) rc = rf_write(f, "/communication/calls", H5T_NATIVE_DOUBLE, 3, st3, ccount, ca);
  if (!rc) rc = rf_write(f, "/communication/analytical_bytes", H5T_NATIVE_DOUBLE, 2, z2, wc, ana_all);
  free(by);
  free(ca);
  free(all);
  free(ana_all);
  PTDP_CALL(rc);
  rf->n_intervals++;
  rf->last_iteration = it;
  return flush(rf);
}

int ptdp_runfile_eval(ptdp_runfile *rf, long long iteration, double loss)
{
  if (!rf || !rf->rank0) return 0;
  const double ppl = exp_clamped(loss);
  PTDP_CALL(write_scalar(rf->file, "eval", "iteration", H5T_NATIVE_LLONG, rf->n_evals, &iteration));
  PTDP_CALL(write_scalar(rf->file, "eval", "lm_loss", H5T_NATIVE_DOUBLE, rf->n_evals, &loss));
  PTDP_CALL(write_scalar(rf->file, "eval", "ppl", H5T_NATIVE_DOUBLE, rf->n_evals, &ppl));
  rf->n_evals++;
  return flush(rf);
}

/* ---------------------------------------------------------------- memory */

/* This rank's [L] layer indices, [L][K] held bytes by tensor kind (slot 0 of each chunk), and
 * [5] totals, into out (L + L K + 5 values, -1 where the rank has fewer layers). */
static void memory_row(const ptdp_runfile_run *run, int L, long long *out)
{
  const ptdp_gpt *m = run->model;
  long long *idx = out, *kb = out + L, *tot = out + L + (size_t)L * RF_NKINDS;
  for (int i = 0; i < L + L * RF_NKINDS; i++) out[i] = -1;
  int l = 0;
  for (int c = 0; c < m->nchunks; c++)
    for (int j = 0; j < m->chunks[c].nlayers && l < L; j++, l++) {
      const int layer = m->chunks[c].layer0 + j;
      idx[l] = layer;
      for (int k = 0; k < RF_NKINDS; k++) kb[l * RF_NKINDS + k] = 0;
      for (int r = 0; r < m->mem.n; r++) {
        const ptdp_buffer *b = &m->mem.rec[r].buf;
        if (b->chunk == c && b->slot == 0 && b->layer == layer && b->held && (int)b->kind >= RF_KIND0 &&
            (int)b->kind < RF_KIND0 + RF_NKINDS)
          kb[l * RF_NKINDS + ((int)b->kind - RF_KIND0)] += (long long)b->bytes;
      }
    }
  tot[0] = (long long)m->mem.peak_busy_bytes;
  tot[1] = (long long)m->plan.total[PTDP_MEM_PARAMS];
  tot[2] = (long long)m->plan.total[PTDP_MEM_GRADS];
  tot[3] = (long long)run->optimizer_bytes;
  tot[4] = (long long)m->plan.allocated;
}

int ptdp_runfile_memory(ptdp_runfile *rf)
{
  if (!rf) return 0;
  const ptdp_grid *g = rf->run.grid;
  const int W = g->layout.world, L = (int)(rf->run.num_layers / g->layout.p);
  const int per = L + L * RF_NKINDS + 5;
  long long *mine, *all = NULL;
  PTDP_ALLOC(mine, sizeof(long long) * (size_t)per);
  memory_row(&rf->run, L, mine);
  if (rf->rank0) PTDP_ALLOC(all, sizeof(long long) * (size_t)per * W);
  int rc = MPI_Gather(mine, per, MPI_LONG_LONG, all, per, MPI_LONG_LONG, 0, g->world.comm);
  free(mine);
  PTDP_CALL_MPI(rc);
  if (!rf->rank0) return 0;
  long long *idx = NULL, *kb = NULL, *tot = NULL;
  rc = !(idx = malloc(sizeof *idx * (size_t)W * L)) || !(kb = malloc(sizeof *kb * (size_t)W * L * RF_NKINDS)) ||
       !(tot = malloc(sizeof *tot * (size_t)W * 5)) ? PTDP_ERR_MEM : 0;
  for (int r = 0; !rc && r < W; r++) {
    const long long *row = all + (size_t)r * per;
    memcpy(idx + (size_t)r * L, row, sizeof *idx * L);
    memcpy(kb + (size_t)r * L * RF_NKINDS, row + L, sizeof *kb * L * RF_NKINDS);
    for (int k = 0; k < 5; k++) tot[k * W + r] = row[L + L * RF_NKINDS + k];
  }
  const hsize_t z[3] = {0, 0, 0}, wl[2] = {(hsize_t)W, (hsize_t)L}, wlk[3] = {(hsize_t)W, (hsize_t)L, RF_NKINDS},
                w[1] = {(hsize_t)W};
  if (!rc) rc = rf_write(rf->file, "/memory/layer_index", H5T_NATIVE_LLONG, 2, z, wl, idx);
  if (!rc) rc = rf_write(rf->file, "/memory/layer_bytes", H5T_NATIVE_LLONG, 3, z, wlk, kb);
  static const char *const names[5] = {"peak_activation_bytes", "weight_bytes", "gradient_bytes", "optimizer_bytes",
                                       "allocated_bytes"};
  char path[64];
  for (int k = 0; k < 5 && !rc; k++) {
    snprintf(path, sizeof path, "/memory/%s", names[k]);
    rc = rf_write(rf->file, path, H5T_NATIVE_LLONG, 1, z, w, tot + (size_t)k * W);
  }
  free(idx);
  free(kb);
  free(tot);
  free(all);
  PTDP_CALL(rc);
  return flush(rf);
}

/* ---------------------------------------------------------------- sampled iterations */

enum { EV_FIELDS = 7 }; /* start, end, wait, kind, micro-batch, chunk, held bytes */

int ptdp_runfile_sample(ptdp_runfile *rf, double replayed_bubble)
{
  if (!rf) return 0;
  const ptdp_grid *g = rf->run.grid;
  const int W = g->layout.world, I = rf->run.work_items, kept = ptdp_events_timelines(rf->run.events);
  const ptdp_event_record *rec = NULL;
  int nrec = 0;
  long long iteration = -1;
  if (kept > 0) PTDP_CALL(ptdp_events_timeline(rf->run.events, kept - 1, &iteration, &rec, &nrec));
  double *mine, *all = NULL, wait = 0, busy = 0;
  PTDP_ALLOC(mine, sizeof(double) * (EV_FIELDS * (size_t)I + 1));
  for (int i = 0; i < EV_FIELDS * I; i++) mine[i] = i % EV_FIELDS < 3 ? 0.0 / 0.0 : -1;
  int k = 0;
  for (int i = 0; i < nrec && k < I; i++) {
    if (rec[i].kind != PTDP_RECORD_FORWARD && rec[i].kind != PTDP_RECORD_BACKWARD) continue;
    double *e = mine + (size_t)EV_FIELDS * k++;
    e[0] = rec[i].start, e[1] = rec[i].end, e[2] = rec[i].wait;
    e[3] = rec[i].kind, e[4] = rec[i].microbatch, e[5] = rec[i].chunk, e[6] = rec[i].held_bytes;
    wait += rec[i].wait;
    busy += rec[i].end - rec[i].start - rec[i].wait;
  }
  mine[EV_FIELDS * I] = busy > 0 ? wait / busy : 0;
  const int per = EV_FIELDS * I + 1;
  if (rf->rank0 && !(all = malloc(sizeof(double) * (size_t)per * W))) {
    free(mine);
    PTDP_CHECK_LOCAL(0, "out of memory gathering the pipeline events");
  }
  int rc = MPI_Gather(mine, per, MPI_DOUBLE, all, per, MPI_DOUBLE, 0, g->world.comm);
  free(mine);
  PTDP_CALL_MPI(rc);
  if (!rf->rank0) return 0;
  rf_event *ev = malloc(sizeof *ev * (size_t)W * I);
  long long *held = malloc(sizeof *held * (size_t)W * I);
  double *bub = malloc(sizeof *bub * (size_t)W);
  rc = ev && held && bub ? 0 : PTDP_ERR_MEM;
  for (int r = 0; !rc && r < W; r++) {
    const double *row = all + (size_t)r * per;
    for (int i = 0; i < I; i++) {
      const double *e = row + (size_t)EV_FIELDS * i;
      ev[(size_t)r * I + i] = (rf_event){e[0], e[1], e[2], (int)e[3], (int)e[4], (int)e[5]};
      held[(size_t)r * I + i] = (long long)e[6];
    }
    bub[r] = row[EV_FIELDS * I];
  }
  const long long s = rf->n_samples;
  const hsize_t st3[3] = {(hsize_t)s, 0, 0}, c3[3] = {1, (hsize_t)W, (hsize_t)I}, st2[2] = {(hsize_t)s, 0},
                c2[2] = {1, (hsize_t)W};
  if (!rc) rc = write_scalar(rf->file, "pipeline", "iteration", H5T_NATIVE_LLONG, s, &iteration);
  if (!rc) rc = rf_write(rf->file, "/pipeline/events", rf->event_type, 3, st3, c3, ev);
  if (!rc) rc = rf_write(rf->file, "/pipeline/bubble_measured", H5T_NATIVE_DOUBLE, 2, st2, c2, bub);
  if (!rc) rc = write_scalar(rf->file, "pipeline", "bubble_replayed", H5T_NATIVE_DOUBLE, s, &replayed_bubble);
  if (!rc) rc = write_scalar(rf->file, "memory", "timeline_iteration", H5T_NATIVE_LLONG, s, &iteration);
  if (!rc) rc = rf_write(rf->file, "/memory/timeline", H5T_NATIVE_LLONG, 3, st3, c3, held);
  free(ev);
  free(held);
  free(bub);
  free(all);
  PTDP_CALL(rc);
  rf->n_samples++;
  return flush(rf);
}

int ptdp_runfile_close(ptdp_runfile **prf)
{
  struct ptdp_runfile *rf = *prf;
  if (!rf) return 0;
  int rc = 0;
  if (rf->file >= 0) {
    rc = flush(rf);
    if (H5Fclose(rf->file) < 0 && !rc) rc = PTDP_ERR_LIB;
  }
  if (rf->job_type > 0) H5Tclose(rf->job_type);
  if (rf->event_type > 0) H5Tclose(rf->event_type);
  if (rf->str_type > 0) H5Tclose(rf->str_type);
  free(rf);
  *prf = NULL;
  return rc;
}
