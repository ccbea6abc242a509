/* The debug dump (debug-dump = FILE): an HDF5 file, written collectively with MPI-IO, that holds
 * everything needed to check a run against an independent implementation:
 *   /            attributes: the model and optimizer settings
 *   /tokens      int32 [train-iters, global-batch-size, seq-length + 1]: every sample, in the
 *                order the iterations consume them
 *   /init/NAME   float32 global-shaped parameters before the first step (Megatron-core names; the
 *                word embedding [vocab-size, h], without the padding of the vocabulary)
 *   /step1/grads/NAME  gradients of the first iteration after DP averaging, before clipping
 *                (not written with use-distributed-optimizer, whose gradients are sharded)
 *   /step1/logits      float32 [seq-length x micro-batch-size, vocab-size]: logits of the
 *                first micro-batch, rows in (position, sample) order
 *   /lm_loss /lr /grad_norm  float64 [train-iters]: per-iteration loss, learning rate used,
 *                gradient norm before clipping
 *   /final/NAME  parameters after the last iteration
 * Every rank holding a part of a tensor writes its hyperslab (its slice from the parameter table,
 * ptdp/params.h, fetched from the device); TP-replicated tensors are written by TP rank 0 of DP
 * rank 0, and the last stage's copy of the tied embedding not at all. */
#include "dump.h"

#include "ptdp/error.h"

#include <hdf5.h>
#include <stdlib.h>
#include <string.h>

struct ptdp_dump {
  hid_t file;
  ptdp_param_info *global;
  int nglobal;
  double *loss, *lr, *norm;
  long long iters;
  float *logits; /* [N, V/t] of micro-batch 0 */
  ptdp_dump_run run;
};

static int attr_double(hid_t obj, const char *name, double v)
{
  hid_t sp = H5Screate(H5S_SCALAR);
  PTDP_CALL_HDF5(sp);
  hid_t a = H5Acreate2(obj, name, H5T_NATIVE_DOUBLE, sp, H5P_DEFAULT, H5P_DEFAULT);
  PTDP_CALL_HDF5(a);
  PTDP_CALL_HDF5(H5Awrite(a, H5T_NATIVE_DOUBLE, &v));
  PTDP_CALL_HDF5(H5Aclose(a));
  PTDP_CALL_HDF5(H5Sclose(sp));
  return 0;
}

/* Create dataset path (making groups) of rank-n dims, collectively. */
static int create_dataset(hid_t file, const char *path, hid_t type, int rank, const hsize_t *dims, hid_t *out)
{
  hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
  PTDP_CALL_HDF5(lcpl);
  PTDP_CALL_HDF5(H5Pset_create_intermediate_group(lcpl, 1));
  hid_t sp = H5Screate_simple(rank, dims, NULL);
  PTDP_CALL_HDF5(sp);
  *out = H5Dcreate2(file, path, type, sp, lcpl, H5P_DEFAULT, H5P_DEFAULT);
  PTDP_CALL_HDF5(*out);
  PTDP_CALL_HDF5(H5Sclose(sp));
  PTDP_CALL_HDF5(H5Pclose(lcpl));
  return 0;
}

/* Write a [rows, cols] block at (r0, c0) of a 2-D dataset (independent I/O). */
static int write_block(hid_t ds, hid_t type, const void *buf, hsize_t r0, hsize_t c0, hsize_t rows, hsize_t cols)
{
  hid_t fs = H5Dget_space(ds);
  PTDP_CALL_HDF5(fs);
  hsize_t start[2] = {r0, c0}, count[2] = {rows, cols};
  PTDP_CALL_HDF5(H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL));
  hid_t ms = H5Screate_simple(2, count, NULL);
  PTDP_CALL_HDF5(ms);
  PTDP_CALL_HDF5(H5Dwrite(ds, type, ms, fs, H5P_DEFAULT, buf));
  PTDP_CALL_HDF5(H5Sclose(ms));
  PTDP_CALL_HDF5(H5Sclose(fs));
  return 0;
}

/* Rows [r0, r0 + rows) of p's global tensor in ds from host (its columns: p's slice). */
static int write_rows(hid_t ds, const ptdp_param_info *p, const float *host, long long r0, long long rows)
{
  if (p->ndim == 2)
    return write_block(ds, H5T_NATIVE_FLOAT, host, (hsize_t)r0, (hsize_t)p->col0, (hsize_t)rows, (hsize_t)p->cols);
  hid_t fs = H5Dget_space(ds);
  PTDP_CALL_HDF5(fs);
  hsize_t start = (hsize_t)r0, count = (hsize_t)rows;
  PTDP_CALL_HDF5(H5Sselect_hyperslab(fs, H5S_SELECT_SET, &start, NULL, &count, NULL));
  hid_t ms = H5Screate_simple(1, &count, NULL);
  PTDP_CALL_HDF5(ms);
  PTDP_CALL_HDF5(H5Dwrite(ds, H5T_NATIVE_FLOAT, ms, fs, H5P_DEFAULT, host));
  PTDP_CALL_HDF5(H5Sclose(ms));
  PTDP_CALL_HDF5(H5Sclose(fs));
  return 0;
}

/* Fetch parameter i (from the flat buffer base: the gradients or the fp32 weights) to host and
 * write its slice into dataset ds. */
static int write_slice(hid_t ds, ptdp_gpt *m, int i, const float *base, float *host)
{
  const ptdp_param_info *p = &m->params.table[i];
  const float *dev = base + m->params.layout.offset[i];
  PTDP_CALL(m->be->to_host(m->be, host, dev, (size_t)(p->rows * p->lcols) * sizeof(float)));
  PTDP_CALL(m->be->synchronize(m->be));
  if (p->rows == 0) return 0;
  /* block by block (SwiGLU's fc1: this rank's gate rows, then its up rows, apart in the tensor) */
  const long long per = p->rows / p->blocks, lper = p->lrows / p->blocks;
  for (long long k = 0; k < p->blocks; k++)
    PTDP_CALL(write_rows(ds, p, host + k * lper * p->lcols, ptdp_param_global_row(p, k * lper), per));
  return 0;
}

/* Global tensor g of group: created by every rank (collective), written by the slices' owners. */
static int write_global(ptdp_dump *d, const char *group, int g, const float *base, float *host)
{
  ptdp_gpt *m = d->run.model;
  const ptdp_param_info *gp = &d->global[g];
  hsize_t dims[2] = {(hsize_t)gp->grows, (hsize_t)gp->gcols};
  char path[256];
  hid_t ds;
  snprintf(path, sizeof path, "%s/%s", group, gp->name);
  PTDP_CALL(create_dataset(d->file, path, H5T_NATIVE_FLOAT, gp->ndim, dims, &ds));
  for (int i = 0; i < m->params.n; i++) {
    const ptdp_param_info *p = &m->params.table[i];
    if (strcmp(p->name, gp->name) != 0 || p->tied_copy || d->run.grid->me.dp != 0) continue;
    if (p->tp_replicated && m->tp_rank != 0) continue;
    PTDP_CALL(write_slice(ds, m, i, base, host));
  }
  PTDP_CALL_HDF5(H5Dclose(ds));
  return 0;
}

static int write_params(ptdp_dump *d, const char *group, int grads)
{
  ptdp_gpt *m = d->run.model;
  const float *base = grads ? m->params.grad : m->params.fp32;
  float *gathered = NULL; /* sharded master weights: gathered whole for the dump (collective) */
  if (!grads && d->run.master->sharded) {
    PTDP_CALL(m->be->alloc(m->be, (void **)&gathered, (size_t)m->params.layout.total * sizeof(float) + sizeof(float)));
    int err = ptdp_master_gather(d->run.master, gathered);
    if (err) m->be->free(m->be, gathered);
    PTDP_CALL(err);
    base = gathered;
  }
  float *host; /* one parameter's local buffer at a time */
  int err = 0;
  host = malloc((size_t)ptdp_gpt_max_param_elems(m) * sizeof(float));
  if (!host) err = PTDP_FAIL(PTDP_ERR_MEM, "out of memory (debug dump)");
  for (int g = 0; g < d->nglobal && !err; g++) err = write_global(d, group, g, base, host);
  free(host);
  if (gathered) m->be->free(m->be, gathered);
  return err;
}

int ptdp_dump_open(ptdp_dump **out, const ptdp_dump_run *run, const char *path)
{
  ptdp_dump *d;
  PTDP_CALLOC(d, 1, sizeof *d);
  *out = d;
  d->run = *run;
  ptdp_gpt *m = run->model;
  const ptdp_args *a = run->args;
  /* errors are reported once, by PTDP_CALL_HDF5 with HDF5's own innermost message */
  PTDP_CALL_HDF5(H5Eset_auto2(H5E_DEFAULT, NULL, NULL));
  hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
  PTDP_CALL_HDF5(fapl);
  PTDP_CALL_HDF5(H5Pset_fapl_mpio(fapl, MPI_COMM_WORLD, MPI_INFO_NULL));
  H5E_BEGIN_TRY { d->file = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl); }
  H5E_END_TRY;
  PTDP_CALL_HDF5(H5Pclose(fapl));
  PTDP_CHECK(d->file >= 0, "cannot create debug-dump file '%s' (check the directory exists and is writable)", path);
  /* names and global shapes: the table of one rank holding the whole model */
  const ptdp_gpt_config *c = &m->cfg;
  const ptdp_model_shape shape = ptdp_gpt_shape(c);
  const ptdp_param_position whole = {.t = 1, .tp_rank = 0, .p = 1, .stage = 0, .v = 1};
  d->nglobal = ptdp_params_count(&shape, &whole);
  PTDP_CALLOC(d->global, d->nglobal, sizeof *d->global);
  ptdp_params_list(&shape, &whole, d->global, d->nglobal);
  struct { const char *k; double v; } at[] = {
    {"num_layers", c->num_layers}, {"hidden_size", c->hidden}, {"num_attention_heads", c->heads},
    {"ffn_hidden_size", c->ffn}, {"seq_length", c->seq}, {"max_position_embeddings", c->max_pos},
    {"padded_vocab_size", (double)m->sh.padded_vocab}, {"vocab_size", (double)c->vocab},
    {"micro_batch_size", c->micro_batch}, {"global_batch_size", (double)run->global_batch}, {"layernorm_epsilon", a->layernorm_epsilon},
    {"train_iters", (double)a->train_iters}, {"seed", (double)a->seed}, {"init_method_std", a->init_method_std},
    {"clip_grad", a->clip_grad}, {"weight_decay", a->weight_decay}, {"adam_beta1", a->adam_beta1},
    {"adam_beta2", a->adam_beta2}, {"adam_eps", a->adam_eps}, {"hidden_dropout", a->hidden_dropout},
    {"attention_dropout", a->attention_dropout}, {"normalization", c->arch.norm},
    {"position_embedding_type", c->arch.position}, {"rotary_base", m->sh.rd ? c->arch.rotary_base : 0},
    {"rotary_dim", m->sh.rd}, {"rotary_interleaved", c->arch.rotary_interleaved},
    {"disable_bias_linear", c->arch.no_linear_bias}, {"untie_embeddings", c->arch.untie},
    {"num_query_groups", m->sh.gl * m->t}, {"kv_channels", m->sh.hd}, {"swiglu", c->arch.swiglu}};
  for (size_t i = 0; i < sizeof at / sizeof at[0]; i++) PTDP_CALL(attr_double(d->file, at[i].k, at[i].v));
  const ptdp_moe *moe = &c->arch.moe;
  if (moe->num_experts > 0) { /* the mixture of experts, and which layers have it */
    struct { const char *k; double v; } mo[] = {
      {"num_experts", moe->num_experts}, {"moe_router_topk", moe->topk},
      {"moe_ffn_hidden_size", ptdp_moe_ffn(&c->arch, c->ffn)}, {"moe_router_score_function", moe->score},
      {"moe_router_pre_softmax", moe->pre_softmax}, {"moe_router_topk_scaling_factor", moe->topk_scaling},
      {"moe_aux_loss", moe->balance == PTDP_MOE_AUX_LOSS}, {"moe_aux_loss_coeff", moe->aux_coeff},
      {"moe_z_loss_coeff", moe->z_coeff}};
    for (size_t i = 0; i < sizeof mo / sizeof mo[0]; i++) PTDP_CALL(attr_double(d->file, mo[i].k, mo[i].v));
    double pattern = 0; /* layer i's bit: the mixture layers (num-layers <= 52 here) */
    for (int i = 0; i < c->num_layers && i < 52; i++) pattern += ptdp_moe_layer(&c->arch, i) ? (double)(1LL << i) : 0;
    PTDP_CALL(attr_double(d->file, "moe_layer_mask", pattern));
  }
  d->iters = a->train_iters;
  PTDP_CALLOC(d->loss, d->iters + 1, sizeof(double));
  PTDP_CALLOC(d->lr, d->iters + 1, sizeof(double));
  PTDP_CALLOC(d->norm, d->iters + 1, sizeof(double));
  /* every sample of the run, in consumption order */
  hsize_t dims[3] = {(hsize_t)d->iters, (hsize_t)run->global_batch, (hsize_t)c->seq + 1};
  hid_t ds;
  PTDP_CALL(create_dataset(d->file, "tokens", H5T_NATIVE_INT32, 3, dims, &ds));
  if (run->grid->world_rank == 0 && d->iters > 0) {
    size_t n = (size_t)(dims[0] * dims[1] * dims[2]);
    int32_t *tok;
    PTDP_ALLOC(tok, n * sizeof(int32_t));
    for (long long s = 0; s < d->iters * run->global_batch; s++)
      PTDP_CALL(ptdp_batch_sample(run->data, PTDP_SPLIT_TRAIN, s, tok + (size_t)s * dims[2]));
    PTDP_CALL_HDF5(H5Dwrite(ds, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, tok));
    free(tok);
  }
  PTDP_CALL_HDF5(H5Dclose(ds));
  PTDP_CALL(write_params(d, "init", 0));
  if (m->chunks[m->nchunks - 1].has_head) {
    PTDP_ALLOC(d->logits, (size_t)m->sh.N * m->sh.vl * sizeof(float));
    ptdp_gpt_capture_logits(m, d->logits);
  }
  return 0;
}

int ptdp_dump_grads(ptdp_dump *d)
{
  const ptdp_gpt *m = d->run.model;
  const ptdp_grid *g = d->run.grid;
  if (d->run.args->use_distributed_optimizer && g->dp.size > 1) return 0;
  PTDP_CALL(write_params(d, "step1/grads", 1));
  hsize_t dims[2] = {(hsize_t)m->sh.N, (hsize_t)m->cfg.vocab};
  hid_t ds;
  PTDP_CALL(create_dataset(d->file, "step1/logits", H5T_NATIVE_FLOAT, 2, dims, &ds));
  const int vv = ptdp_gpt_vocab_columns(m); /* this rank's real-vocabulary columns */
  if (d->logits && g->me.dp == 0 && vv > 0)
    PTDP_CALL(write_block(ds, H5T_NATIVE_FLOAT, d->logits, 0, (hsize_t)m->sh.v0, dims[0], (hsize_t)vv));
  PTDP_CALL_HDF5(H5Dclose(ds));
  return 0;
}

void ptdp_dump_record(ptdp_dump *d, long long iteration, double loss, double lr, double norm)
{
  if (iteration >= 1 && iteration <= d->iters) {
    d->loss[iteration - 1] = loss;
    d->lr[iteration - 1] = lr;
    d->norm[iteration - 1] = norm;
  }
}

int ptdp_dump_close(ptdp_dump **dp)
{
  ptdp_dump *d = *dp;
  if (!d) return 0;
  const char *names[3] = {"lm_loss", "lr", "grad_norm"};
  double *vals[3] = {d->loss, d->lr, d->norm};
  hsize_t n = (hsize_t)d->iters;
  for (int k = 0; k < 3; k++) {
    hid_t ds;
    PTDP_CALL(create_dataset(d->file, names[k], H5T_NATIVE_DOUBLE, 1, &n, &ds));
    if (d->run.grid->world_rank == 0 && n > 0) PTDP_CALL_HDF5(H5Dwrite(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, vals[k]));
    PTDP_CALL_HDF5(H5Dclose(ds));
  }
  PTDP_CALL(write_params(d, "final", 0));
  PTDP_CALL_HDF5(H5Fclose(d->file));
  free(d->global);
  free(d->loss);
  free(d->lr);
  free(d->norm);
  free(d->logits);
  free(d);
  *dp = NULL;
  return 0;
}
