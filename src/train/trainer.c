/* The training run: see include/ptdp/trainer.h. */
#include "ptdp/trainer.h"

#include "dump.h"
#include "ptdp/runfile.h"
#include "ptdp/cuda.h"
#include "ptdp/error.h"
#include "ptdp/memory_formula.h"
#include "ptdp/tokenizer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The vocabulary the run uses: the tokenizer's unless vocab-size is given. */
static int resolve_vocab(const ptdp_args *a, long long *vocab)
{
  if (a->vocab_size > 0) {
    *vocab = a->vocab_size;
    return 0;
  }
  ptdp_tokenizer *tok = NULL;
  if (a->tokenizer_type == PTDP_TOKENIZER_BYTE_LEVEL) { /* the tokenizer says its size (256 bytes + EOD) */
    PTDP_CALL(ptdp_tokenizer_create_bytes(&tok));
    *vocab = ptdp_tokenizer_vocab_size(tok);
    ptdp_tokenizer_destroy(&tok);
    return 0;
  }
  if (a->tokenizer_type == PTDP_TOKENIZER_HUGGING_FACE) { /* the model's tokens and the added ones */
    PTDP_CHECK(a->tokenizer_model[0], "the vocabulary is unknown: HuggingFaceTokenizer needs tokenizer-model (a "
                                      "tokenizer.json), or give vocab-size");
    PTDP_CALL(ptdp_tokenizer_create_hf(&tok, a->tokenizer_model));
    *vocab = ptdp_tokenizer_vocab_size(tok);
    ptdp_tokenizer_destroy(&tok);
    return 0;
  }
  PTDP_CHECK(a->vocab_file[0], "the vocabulary is unknown: give vocab-size, or vocab-file (and merge-file) for "
                               "GPT2BPETokenizer, or tokenizer-type = ByteLevel");
  PTDP_CHECK(a->merge_file[0], "vocab-file is given but merge-file is not (GPT2BPETokenizer needs both)");
  PTDP_CALL(ptdp_tokenizer_create_gpt2(&tok, a->vocab_file, a->merge_file));
  *vocab = ptdp_tokenizer_vocab_size(tok);
  ptdp_tokenizer_destroy(&tok);
  return 0;
}

/* The named timers, in the order the [timers] line prints them. */
static int register_timers(ptdp_trainer *tr)
{
  PTDP_CALL(ptdp_events_create(PTDP_TRAINER_KEEP_TIMELINES, &tr->events));
  PTDP_CALL(ptdp_events_register(tr->events, "forward-backward", &tr->ev.fwd_bwd));
  PTDP_CALL(ptdp_events_register(tr->events, "forward", &tr->ev.forward));
  PTDP_CALL(ptdp_events_register(tr->events, "backward", &tr->ev.backward));
  PTDP_CALL(ptdp_events_register(tr->events, "pipeline-wait", &tr->ev.pp_wait));
  PTDP_CALL(ptdp_events_register(tr->events, "tp-comm", &tr->ev.tp_comm));
  PTDP_CALL(ptdp_events_register(tr->events, "dp-wait", &tr->ev.dp_wait));
  PTDP_CALL(ptdp_events_register(tr->events, "grads-sync", &tr->ev.grads_sync));
  PTDP_CALL(ptdp_events_register(tr->events, "optimizer", &tr->ev.optimizer));
  PTDP_CALL(ptdp_events_register(tr->events, "data", &tr->ev.data));
  PTDP_CALL(ptdp_events_register(tr->events, "checkpoint", &tr->ev.checkpoint));
  return 0;
}

static int feed(void *ctx, int mb, int32_t *tokens, int32_t *targets, long long *sample0)
{
  ptdp_trainer *tr = ctx;
  const int b = (int)tr->args.micro_batch_size, d = tr->grid.layout.d;
  /* Megatron's sampler: micro-step mb takes b d consecutive samples, DP rank r the r-th b */
  long long first = tr->batch_first + (long long)mb * b * d + (long long)tr->grid.me.dp * b;
  *sample0 = first;
  if (!tokens) return 0;
  const double t0 = MPI_Wtime();
  PTDP_CALL(ptdp_batch_micro(tr->data, tr->split, first, b, (int)tr->args.seq_length, tokens, targets, tr->scratch));
  if (tr->split == PTDP_SPLIT_TRAIN) PTDP_CALL(ptdp_events_add(tr->events, tr->ev.data, MPI_Wtime() - t0));
  return 0;
}

/* comm-backend: NCCL for a GPU backend when built, asked for (or auto) and no two ranks share a
 * GPU, decided the same on every rank (a GPU shared anywhere counts everywhere). */
static int choose_transport(ptdp_trainer *tr, const ptdp_args *a, const ptdp_backend_options *bopt)
{
  const int on_gpu = a->backend == PTDP_BACKEND_CUDA;
  int shared = 0;
  if (on_gpu) {
    int gpus = ptdp_cuda_device_count(NULL, 0);
    shared = bopt && bopt->ranks_on_node > 1 && (a->device >= 0 || bopt->ranks_on_node > gpus);
  }
  PTDP_CALL_MPI(MPI_Allreduce(MPI_IN_PLACE, &shared, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
  ptdp_comm_backend cb;
  PTDP_CALL(ptdp_comm_backend_resolve(a->comm_backend, on_gpu, ptdp_nccl_built(), shared, &cb));
  if (cb == PTDP_COMM_NCCL) { /* waits on NCCL end after distributed-timeout-minutes, not never */
    PTDP_CALL(ptdp_cuda_set_wait_timeout(60.0 * a->distributed_timeout_minutes));
    PTDP_CALL(ptdp_grid_use_nccl(&tr->grid));
  }
  if (on_gpu && tr->grid.world_rank == 0)
    printf("cuda: collectives through %s%s%s\n", cb == PTDP_COMM_NCCL ? "NCCL" : "MPI (staged through host memory)",
           shared ? " (ranks share a GPU)" : "",
           cb == PTDP_COMM_NCCL && tr->grid.pp.size > 1 ? "; pipeline messages through NCCL, one link per neighbour and direction"
                                                   : "");
  return PTDP_OK;
}

/* Megatron's choice: fp16 scales the loss (a fixed loss-scale, else dynamically); bf16 only
 * when loss-scale is given; fp32 never. */
static void set_scaler(ptdp_grad_scaler *s, const ptdp_args *a)
{
  if ((a->fp16 || a->bf16) && a->loss_scale > 0)
    ptdp_grad_scaler_constant(s, a->loss_scale);
  else if (a->fp16)
    ptdp_grad_scaler_dynamic(s, a->initial_loss_scale, a->min_loss_scale, a->loss_scale_window, (int)a->hysteresis);
  else
    ptdp_grad_scaler_none(s);
}

/* Model FLOPs of one iteration (ptdp_model_flops of the global batch): the run file's record and
 * the log line's TFLOP/s. */
static double iteration_flops(const ptdp_trainer *tr)
{
  const ptdp_model_shape shape = ptdp_gpt_shape(&tr->model.cfg);
  return ptdp_model_flops(tr->gbs, tr->args.seq_length, &shape, tr->model.sh.padded_vocab);
}

/* The run file, handed what it records of the run (ptdp_runfile_run), not the trainer. */
static int open_runfile(ptdp_trainer *tr)
{
  const ptdp_args *a = &tr->args;
  ptdp_options keys; /* read while the file is opened */
  ptdp_args_view(&tr->args, &keys);
  ptdp_runfile_run run = {
      .keys = &keys, .run_file = a->run_file, .save = a->save, .grid = &tr->grid, .model = &tr->model,
      .events = tr->events, .schedule = ptdp_schedule_name(tr->pipe.sched.kind), .work_items = tr->pipe.sched.count,
      .micro_batches = tr->m, .num_layers = a->num_layers, .hidden = a->hidden_size, .seq = a->seq_length,
      .micro_batch = a->micro_batch_size, .global_batch = tr->gbs, .vocab = tr->vocab,
      .use_distributed_optimizer = a->use_distributed_optimizer, .model_flops = iteration_flops(tr),
      .peak_flops = a->peak_tflops * 1e12, .optimizer_bytes = (double)tr->opt.state_bytes,
      .first_iteration = tr->iteration};
  ptdp_options_choice_text("none|full|selective", (int)a->recompute_granularity, run.recompute, sizeof run.recompute);
  PTDP_CALL(ptdp_runfile_open(&tr->runfile, &run, tr->resumed));
  return 0;
}

int ptdp_trainer_setup(ptdp_trainer *tr, const ptdp_args *a, const ptdp_backend_options *bopt)
{
  memset(tr, 0, sizeof *tr);
  tr->args = *a;
  tr->saved_iteration = -1;
  PTDP_CALL(ptdp_trainer_install_signal(tr));
  int world;
  PTDP_CALL_MPI(MPI_Comm_size(MPI_COMM_WORLD, &world));
  ptdp_model_config mc; /* the vocabulary and the attention core are settled below */
  ptdp_model_config_of(&a->model, &(ptdp_model_env){.use = PTDP_MODEL_TRAIN, .world = world}, &mc);
  const ptdp_model_layout lay = mc.layout;
  const ptdp_schedule_kind sk = lay.schedule;
  const int v = lay.v;
  PTDP_CHECK(sk != PTDP_SCHED_INTERLEAVED || v > 1 || a->pipeline_model_parallel_size > 1,
             "pipeline-schedule = interleaved needs num-layers-per-virtual-pipeline-stage");
  const long long t = lay.t, p = lay.p;
  tr->gbs = lay.global_batch;
  tr->args.global_batch_size = tr->gbs;
  tr->m = lay.m;
  PTDP_CALL(ptdp_schedule_validate(sk, (int)p, v, tr->m));
  PTDP_CALL(resolve_vocab(a, &tr->vocab));
  PTDP_CALL(ptdp_grid_create(MPI_COMM_WORLD, (int)t, (int)p, a->parallel_order, &tr->grid));
  PTDP_CALL(ptdp_batch_open(&tr->data, &tr->args, tr->vocab, MPI_COMM_WORLD));
  const ptdp_dtype dt = ptdp_model_keys_dtype(&a->model);
  int native = 1; /* bf16/fp16 natively (cuda) or through the mixed-precision wrapper (cpu, guard) */
  PTDP_CALL(ptdp_backend_create_typed(a->backend, bopt, dt, &tr->be, &native));
  if (dt != PTDP_F32 && tr->grid.world_rank == 0)
    printf("[backend] %s stores %s %s\n", tr->be->name, ptdp_dtype_name(dt),
           native ? "natively (16-bit kernels and GEMMs, fp32 math)" : "through the mixed-precision wrapper "
                                                                      "(fp32 operations on converted copies)");
  PTDP_CALL(ptdp_grid_attach_backend(&tr->grid, tr->be)); /* float messages are backend memory */
  PTDP_CALL(choose_transport(tr, a, bopt));
  int flash;
  const ptdp_rank_shape rs = ptdp_rank_shape_of(&mc.shape, mc.gpt.seq, mc.gpt.micro_batch, (int)t, 0);
  const ptdp_attn_desc attn = {.b = (int)rs.b, .s = (int)rs.s, .al = rs.al, .groups = rs.gl, .hd = rs.hd};
  PTDP_CALL(ptdp_backend_use_flash(tr->be, a->attention_backend, &attn, &flash));
  ptdp_model_config_of(&a->model,
                       &(ptdp_model_env){.use = PTDP_MODEL_TRAIN, .world = world, .vocab = tr->vocab,
                                         .flash_attention = flash},
                       &mc);
  /* the resolved model shape is what checkpoints record (use-checkpoint-args reads it back) */
  tr->args.vocab_size = tr->vocab;
  tr->args.ffn_hidden_size = mc.gpt.ffn;
  tr->args.max_position_embeddings = mc.gpt.max_pos;
  PTDP_CALL(ptdp_gpt_create(&tr->model, &mc.gpt, tr->be, &tr->grid));
  PTDP_CALL(ptdp_master_create(&tr->master, &tr->model, a->use_distributed_optimizer));
  PTDP_CALL(ptdp_master_init(&tr->master));
  PTDP_CALL(ptdp_ddp_create(&tr->ddp, &tr->model, a->use_distributed_optimizer));
  ptdp_optim_config oc = {
    .wd = a->weight_decay, .clip = a->clip_grad, .beta1 = a->adam_beta1, .beta2 = a->adam_beta2, .eps = a->adam_eps,
    .lr = {.lr = a->lr, .min_lr = a->min_lr, .warmup = a->lr_warmup_iters,
           .decay_iters = a->lr_decay_iters ? a->lr_decay_iters : a->train_iters,
           .style = a->lr_decay_style}};
  PTDP_CALL(ptdp_optimizer_create(&tr->opt, &oc, &tr->model, &tr->ddp, &tr->master));
  set_scaler(&tr->opt.scaler, a);
  PTDP_CALL(ptdp_pipeline_create(&tr->pipe, &tr->model, sk, tr->m));
  PTDP_CALL(register_timers(tr));
  tr->pipe.log = tr->events;
  PTDP_CALLOC(tr->scratch, a->seq_length + 1, sizeof(int32_t));
  PTDP_CALL(ptdp_trainer_resume(tr));
  if (tr->iteration > 0) tr->saved_iteration = tr->iteration;
  PTDP_CALL(open_runfile(tr));
  if (tr->runfile && tr->grid.world_rank == 0) printf("[run file] %s %s\n", tr->resumed ? "appending to" : "writing",
                                                      ptdp_runfile_path(tr->runfile));
  if (a->debug_dump[0]) {
    const ptdp_dump_run dr = {.model = &tr->model, .master = &tr->master, .grid = &tr->grid, .data = tr->data, .args = &tr->args,
                              .global_batch = tr->gbs};
    PTDP_CALL(ptdp_dump_open(&tr->dump, &dr, a->debug_dump));
  }
  return 0;
}

/* Sum of micro-batch losses on the last stage (TP rank 0 only), averaged over the global batch. */
static int global_loss(ptdp_trainer *tr, double *loss)
{
  ptdp_gpt *m = &tr->model;
  double l = (m->chunks[m->nchunks - 1].has_head && m->tp_rank == 0) ? tr->pipe.loss_sum : 0.0;
  PTDP_CALL(ptdp_comm_allreduce_sum_f64(&tr->grid.world, &l, 1, PTDP_TAG_MISC));
  *loss = l / ((double)tr->m * tr->grid.layout.d);
  if (m->cfg.arch.moe.num_experts > 0) { /* the mixtures' losses: each layer's on TP rank 0 of its stage */
    double moe = ptdp_gpt_take_moe_losses(m);
    if (m->tp_rank != 0) moe = 0;
    PTDP_CALL(ptdp_comm_allreduce_sum_f64(&tr->grid.world, &moe, 1, PTDP_TAG_MISC));
    if (tr->split == PTDP_SPLIT_TRAIN) {
      tr->moe_loss_sum += moe / ((double)tr->m * tr->grid.layout.d);
      tr->moe_loss_iters++;
    }
  }
  return 0;
}

/* debug-inject-inf: one gradient element of world rank 0 becomes +inf (a test of the overflow
 * check: the step must be skipped, and count as one overflow of the loss scaler). */
static int inject_inf(ptdp_trainer *tr)
{
  ptdp_gpt *m = &tr->model;
  if (tr->grid.world_rank != 0 || m->params.layout.total == 0) return 0;
  const float inf = INFINITY;
  return m->be->to_device(m->be, m->params.grad, &inf, sizeof inf);
}

int ptdp_trainer_step(ptdp_trainer *tr, double *loss, double *grad_norm, double *lr)
{
  ptdp_gpt *m = &tr->model;
  PTDP_CALL(m->be->memset0(m->be, m->params.grad, (size_t)m->params.layout.total * sizeof(float)));
  tr->split = PTDP_SPLIT_TRAIN;
  tr->batch_first = tr->consumed;
  /* the last iteration of each log interval is sampled: its pipeline timeline is kept */
  const long long n = tr->iteration + 1, every = tr->args.timeline_interval ? tr->args.timeline_interval : tr->args.log_interval;
  tr->sampled = n % every == 0 || n == tr->args.train_iters;
  PTDP_CALL(ptdp_events_iteration_begin(tr->events, n, tr->sampled));
  const double tp0 = tr->grid.tp.stats.wait_seconds;
  PTDP_CALL(ptdp_events_begin(tr->events, tr->ev.fwd_bwd));
  /* the loss of each micro-batch counts 1/m, times the loss scale (1 unless fp16) */
  PTDP_CALL(ptdp_pipeline_run(&tr->pipe, feed, tr, (float)(tr->opt.scaler.scale / tr->m), 0));
  PTDP_CALL(ptdp_events_end(tr->events, tr->ev.fwd_bwd));
  PTDP_CALL(ptdp_events_add(tr->events, tr->ev.pp_wait, tr->pipe.wait_seconds));
  PTDP_CALL(ptdp_events_add(tr->events, tr->ev.forward, tr->pipe.forward_seconds));
  PTDP_CALL(ptdp_events_add(tr->events, tr->ev.backward, tr->pipe.backward_seconds));
  PTDP_CALL(global_loss(tr, loss));
  /* Megatron: the step after n updates runs with the rate after n (skipped steps do not count) */
  *lr = ptdp_lr_at(&tr->opt.cfg.lr, tr->opt.step);
  PTDP_CALL(ptdp_events_begin(tr->events, tr->ev.grads_sync));
  PTDP_CALL(ptdp_ddp_sync(&tr->ddp));
  PTDP_CALL(ptdp_events_end(tr->events, tr->ev.grads_sync));
  PTDP_CALL(ptdp_events_add(tr->events, tr->ev.dp_wait, tr->ddp.wait_seconds));
  if (tr->dump && tr->iteration == 0) PTDP_CALL(ptdp_dump_grads(tr->dump));
  PTDP_CALL(ptdp_events_begin(tr->events, tr->ev.optimizer));
  if (tr->args.debug_inject_inf == tr->iteration + 1) PTDP_CALL(inject_inf(tr));
  PTDP_CALL(ptdp_optimizer_update(&tr->opt, *lr, grad_norm, &tr->skipped));
  PTDP_CALL(ptdp_events_end(tr->events, tr->ev.optimizer));
  PTDP_CALL(ptdp_events_add(tr->events, tr->ev.tp_comm, tr->grid.tp.stats.wait_seconds - tp0));
  tr->iteration++;
  tr->consumed += tr->gbs;
  if (tr->dump) ptdp_dump_record(tr->dump, tr->iteration, *loss, *lr, *grad_norm);
  return 0;
}

/* The validation batches of one evaluation, summed into *sum. */
static int evaluate_batches(ptdp_trainer *tr, double *sum)
{
  PTDP_CALL(ptdp_events_iteration_begin(tr->events, tr->iteration, 0)); /* evaluation is not sampled */
  for (long long e = 0; e < tr->args.eval_iters; e++) {
    /* each evaluation walks the validation split from where the last one stopped, as Megatron */
    tr->batch_first = tr->consumed_valid + e * tr->gbs;
    PTDP_CALL(ptdp_pipeline_run(&tr->pipe, feed, tr, 1.0f, 1));
    double l = 0;
    PTDP_CALL(global_loss(tr, &l));
    *sum += l;
  }
  return 0;
}

int ptdp_trainer_evaluate(ptdp_trainer *tr, double *loss)
{
  ptdp_gpt *m = &tr->model;
  const float hd = m->cfg.hidden_dropout, ad = m->cfg.attn_dropout;
  m->cfg.hidden_dropout = m->cfg.attn_dropout = 0.0f; /* evaluation: no dropout */
  tr->split = PTDP_SPLIT_VALID;
  double sum = 0;
  const int err = evaluate_batches(tr, &sum);
  m->cfg.hidden_dropout = hd; /* restored whatever happened */
  m->cfg.attn_dropout = ad;
  PTDP_CALL(err);
  tr->consumed_valid += tr->args.eval_iters * tr->gbs;
  *loss = tr->args.eval_iters > 0 ? sum / (double)tr->args.eval_iters : 0.0;
  return 0;
}

static int print_memory(ptdp_trainer *tr);
static void print_comm(ptdp_trainer *tr, long long iters);
static int print_timers(ptdp_trainer *tr, int iters);
static int replay_bubble(ptdp_trainer *tr, double *bubble);
static void reset_comm_stats(ptdp_trainer *tr);

/* The sums of one log interval. */
typedef struct {
  double t_last;           /* when it began (MPI_Wtime; restarted after an evaluation) */
  double loss;             /* losses of the iterations that updated */
  double wait, busy;       /* pipeline seconds blocked in receives, and computing */
  int iters, updated;      /* iterations, and of them those that updated */
  int nan_iters, skipped;  /* iterations with a non-finite loss; skipped updates (loss scaling) */
} log_interval;

static void interval_add(log_interval *li, const ptdp_trainer *tr, double loss)
{
  if (!isfinite(loss)) li->nan_iters++;
  li->skipped += tr->skipped;
  if (!tr->skipped) { /* Megatron averages the loss over the iterations that updated */
    li->loss += loss;
    li->updated++;
  }
  li->iters++;
  li->wait += tr->pipe.wait_seconds;
  li->busy += tr->pipe.busy_seconds;
}

/* The numbers of the log line and of the run file's row, TFLOP/s computed once.  Megatron: the
 * loss averaged over the iterations that updated (0 if none did); the loss scale after the last
 * step; the grad norm of the last step (the log line leaves it out when that step was skipped). */
static ptdp_runfile_metrics interval_metrics(const ptdp_trainer *tr, const log_interval *li, double norm, double flops,
                                             double now)
{
  const ptdp_args *a = &tr->args;
  const double per_iter = (now - li->t_last) / li->iters;
  const double tflops = flops / per_iter / 1e12 / tr->grid.layout.world;
  return (ptdp_runfile_metrics){
      .iteration = tr->iteration, .consumed_samples = tr->consumed, .skipped = li->skipped,
      .nan_iterations = li->nan_iters, .lm_loss = li->updated ? li->loss / li->updated : 0.0,
      .learning_rate = ptdp_lr_at(&tr->opt.cfg.lr, tr->opt.step), .grad_norm = norm,
      .loss_scale = tr->opt.scaler.scale, .ms_per_iteration = per_iter * 1000.0,
      .tokens_per_second = (double)tr->gbs * a->seq_length / per_iter, .tflops_per_rank = tflops,
      .mfu = a->peak_tflops > 0 ? tflops / a->peak_tflops : 0.0 / 0.0};
}

/* Megatron's log line (rank 0). */
static void print_log_line(const ptdp_trainer *tr, const ptdp_runfile_metrics *r)
{
  char gn[128] = "";
  if (tr->model.cfg.arch.moe.num_experts > 0) /* the mixtures' load-balancing and z losses (Megatron logs them too) */
    snprintf(gn, 64, " moe loss: %.6E |", tr->moe_loss_iters ? tr->moe_loss_sum / tr->moe_loss_iters : 0.0);
  if (!tr->skipped) snprintf(gn + strlen(gn), sizeof gn - strlen(gn), " grad norm: %.3f |", r->grad_norm);
  printf(" iteration %8lld/%8lld | consumed samples: %12lld | elapsed time per iteration (ms): %.1f |"
         " throughput per GPU (TFLOP/s/GPU): %.1f | learning rate: %.6E | global batch size: %5lld |"
         " lm loss: %.6E | loss scale: %.1f |%s number of skipped iterations: %3lld |"
         " number of nan iterations: %3lld |\n",
         r->iteration, tr->args.train_iters, r->consumed_samples, r->ms_per_iteration, r->tflops_per_rank,
         r->learning_rate, tr->gbs, r->lm_loss, r->loss_scale, gn, r->skipped, r->nan_iterations);
  fflush(stdout);
}

/* The pipeline bubble of the interval (p > 1) as Narayanan et al. define it: idle time over ideal
 * (compute) time, t_pb / t_id = (p - 1) / m for 1F1B; idle = this rank's time blocked in
 * receives.  Measured (rank 0, max and min over ranks) and replayed with the measured times. */
static int report_bubble(ptdp_trainer *tr, const log_interval *li)
{
  double frac = li->busy > 0 ? li->wait / li->busy : 0, fmax = frac, fmin = -frac;
  PTDP_CALL(ptdp_comm_allreduce_max_f64(&tr->grid.world, &fmax, 1, PTDP_TAG_MISC));
  PTDP_CALL(ptdp_comm_allreduce_max_f64(&tr->grid.world, &fmin, 1, PTDP_TAG_MISC));
  int v = tr->model.nchunks;
  double replay = 0;
  PTDP_CALL(replay_bubble(tr, &replay));
  if (tr->grid.world_rank == 0)
    printf("[pipeline] bubble (time waiting for neighbours / time computing): rank 0 %.3f, max %.3f, min %.3f over "
           "ranks; replayed with the measured compute times %.3f; schedule %s: (p-1)/(v m) = %.3f\n",
           frac, fmax, -fmin, replay, ptdp_schedule_name(tr->pipe.sched.kind),
           (double)(tr->grid.layout.p - 1) / ((double)v * tr->m));
  return 0;
}

/* The end of a log interval: the log line, the timers, the run file's row, the communication
 * counters and the bubble. */
static int end_interval(ptdp_trainer *tr, const log_interval *li, double norm, double flops)
{
  const ptdp_runfile_metrics row = interval_metrics(tr, li, norm, flops, MPI_Wtime());
  if (tr->grid.world_rank == 0) print_log_line(tr, &row);
  PTDP_CALL(print_timers(tr, li->iters));
  if (tr->runfile) {
    ptdp_events_summary sum;
    ptdp_events_last(tr->events, &sum);
    PTDP_CALL(ptdp_runfile_interval(tr->runfile, &row, &sum));
  }
  print_comm(tr, li->iters);
  if (tr->grid.layout.p > 1) PTDP_CALL(report_bubble(tr, li));
  return 0;
}

/* After an iteration: the memory report (the first iteration of this launch) and a sampled
 * iteration's pipeline timeline. */
static int after_step_reports(ptdp_trainer *tr, int *memory_written)
{
  if (!*memory_written) {
    PTDP_CALL(print_memory(tr));
    PTDP_CALL(ptdp_runfile_memory(tr->runfile));
    *memory_written = 1;
  }
  if (tr->sampled && tr->runfile) {
    double replay = 0;
    if (tr->grid.layout.p > 1) PTDP_CALL(replay_bubble(tr, &replay));
    PTDP_CALL(ptdp_runfile_sample(tr->runfile, replay));
  }
  return 0;
}

/* The validation loss, printed (rank 0) and recorded. */
static int evaluate_and_report(ptdp_trainer *tr)
{
  double vl;
  PTDP_CALL(ptdp_trainer_evaluate(tr, &vl));
  if (tr->grid.world_rank == 0) {
    printf("-----------------------------------------------------------------------------------------------\n"
           " validation loss at iteration %lld | lm loss value: %.6E | lm loss PPL: %.6E | \n"
           "-----------------------------------------------------------------------------------------------\n",
           tr->iteration, vl, exp(vl < 700 ? vl : 700));
    fflush(stdout);
  }
  PTDP_CALL(ptdp_runfile_eval(tr->runfile, tr->iteration, vl));
  reset_comm_stats(tr); /* evaluation traffic is not the next training interval's */
  return 0;
}

int ptdp_trainer_run(ptdp_trainer *tr)
{
  const ptdp_args *a = &tr->args;
  const double flops = iteration_flops(tr), t_start = MPI_Wtime();
  log_interval li = {.t_last = t_start};
  int memory_written = 0;
  while (tr->iteration < a->train_iters) {
    double loss, norm, lr;
    PTDP_CALL(ptdp_trainer_step(tr, &loss, &norm, &lr));
    interval_add(&li, tr, loss);
    PTDP_CALL(after_step_reports(tr, &memory_written));
    if (tr->iteration % a->log_interval == 0 || tr->iteration == a->train_iters) {
      PTDP_CALL(end_interval(tr, &li, norm, flops));
      li = (log_interval){.t_last = MPI_Wtime()};
      tr->moe_loss_sum = 0;
      tr->moe_loss_iters = 0;
    }
    if (a->eval_iters > 0 && tr->iteration % a->eval_interval == 0 && ptdp_batch_has_split(tr->data, PTDP_SPLIT_VALID)) {
      PTDP_CALL(evaluate_and_report(tr));
      li.t_last = MPI_Wtime();
    }
    int stop = 0;
    PTDP_CALL(ptdp_trainer_after_iteration(tr, t_start, &stop));
    if (stop) break;
  }
  if (a->save[0] && tr->iteration > 0 && tr->saved_iteration != tr->iteration) PTDP_CALL(ptdp_trainer_save(tr));
  if (tr->dump) PTDP_CALL(ptdp_dump_close(&tr->dump));
  if (tr->runfile && tr->grid.world_rank == 0)
    printf("[run file] %s; plot it with: ptdp-plot %s\n", ptdp_runfile_path(tr->runfile), ptdp_runfile_path(tr->runfile));
  PTDP_CALL(ptdp_runfile_close(&tr->runfile));
  return 0;
}

/* Activation memory measured from the arena, per rank (first iteration), beside the formulas. */
static int print_memory(ptdp_trainer *tr)
{
  ptdp_gpt *m = &tr->model;
  const ptdp_args *a = &tr->args;
  double peak = (double)m->mem.peak_busy_bytes, maxp = peak, minp = -peak;
  PTDP_CALL(ptdp_comm_allreduce_max_f64(&tr->grid.world, &maxp, 1, PTDP_TAG_MISC));
  PTDP_CALL(ptdp_comm_allreduce_max_f64(&tr->grid.world, &minp, 1, PTDP_TAG_MISC));
  minp = -minp;
  if (tr->grid.world_rank != 0) return 0;
  const ptdp_layer_shape ls = ptdp_gpt_layer_shape(m);
  /* a layer that keeps everything (under full recompute: the first of a group keeps its input) */
  size_t layer = m->chunks[0].nlayers ? ptdp_memory_held(&m->mem, 0, 0, m->chunks[0].layer0) : 0;
  double ours = ptdp_layer_bytes_ptdp(&ls), paper = ptdp_layer_bytes_paper(&ls);
  int layers = 0;
  for (int c = 0; c < m->nchunks; c++) layers += m->chunks[c].nlayers;
  printf("[memory] activations per layer per micro-batch: measured %zu bytes, ptdp %s count %.0f bytes, "
         "Korthikanti et al. (2-byte activations) %.0f bytes\n", layer, ptdp_dtype_name(m->cfg.dtype), ours, paper);
  const ptdp_plan *pl = &m->plan;
  printf("[memory] peak held activations: rank 0 %.0f bytes (max over ranks %.0f, min %.0f); rank 0 holds %d layers x "
         "up to %d micro-batches in flight; parameters %zu bytes, gradients %zu bytes, optimizer state %zu bytes%s\n",
         peak, maxp, minp, layers, pl->slots, pl->total[PTDP_MEM_PARAMS], pl->total[PTDP_MEM_GRADS], tr->opt.state_bytes,
         m->cfg.dtype == PTDP_F32 ? "" : " (fp32 master weights and moments)");
  if (m->cfg.dtype != PTDP_F32) /* outside the plan: the mixed-precision wrapper's fp32 work space */
    printf("[memory] %s: fp32 work space of the conversions %zu bytes (rank 0, high-water mark)\n",
           ptdp_dtype_name(m->cfg.dtype), ptdp_backend_mixed_work_bytes(m->be));
  printf("[memory] rank 0 plan: activations held at peak %zu bytes (of %zu allocated for %d slots), work space %zu, "
         "per-slot buffers %zu, pipeline buffers %zu, optimizer %zu; at peak %zu bytes, allocated %zu bytes\n",
         pl->peak_activations, pl->total[PTDP_MEM_ACTIVATIONS], pl->slots, pl->total[PTDP_MEM_WORK],
         pl->total[PTDP_MEM_TRANSIENT], pl->total[PTDP_MEM_P2P], pl->total[PTDP_MEM_OPTIMIZER], pl->peak, pl->allocated);
  if (ours > 0 && tr->grid.layout.p > 1) {
    /* Korthikanti et al. eq. 5: the first stage of 1F1B holds p micro-batches x L/p layers = L layers' worth;
     * interleaving multiplies that by 1 + (p - 1) / (p v) */
    const double p = tr->grid.layout.p, v = m->nchunks, L = (double)a->num_layers;
    double paper_layers = L * (v > 1 ? 1.0 + (p - 1) / (p * v) : 1.0);
    if ((double)tr->m < p && v == 1) paper_layers = L / p * tr->m; /* fewer micro-batches than stages */
    printf("[memory] first stage: peak = %.3f layers' activations (embedding extras included); Korthikanti et al. "
           "eq. 5%s: %.3f\n", peak / ours, v > 1 ? " x interleaving factor 1 + (p-1)/(p v)" : "", paper_layers);
  }
  return 0;
}

/* The bubble of the last iteration replayed from every stage's measured compute times (no
 * message time, a processor per stage): what the schedule implies, free of waits the machine
 * adds (oversubscribed cores).  The largest over the stages of this rank's PP group. */
static int replay_bubble(ptdp_trainer *tr, double *bubble)
{
  ptdp_pipeline *pl = &tr->pipe;
  const int p = tr->grid.layout.p, n = pl->sched.count;
  const ptdp_event_record *rec = NULL;
  int nrec = 0;
  const int kept = ptdp_events_timelines(tr->events);
  if (kept > 0) PTDP_CALL(ptdp_events_timeline(tr->events, kept - 1, NULL, &rec, &nrec));
  const size_t cnt = (size_t)(n > 0 ? n : 1);
  double *mine = malloc(sizeof(double) * cnt), *dur = malloc(sizeof(double) * cnt * (size_t)p); /* freed below */
  int err = mine && dur ? 0 : PTDP_FAIL(PTDP_ERR_MEM, "out of memory replaying the pipeline schedule");
  for (int i = 0; !err && i < n; i++) mine[i] = i < nrec ? rec[i].end - rec[i].start - rec[i].wait : 0.0;
  if (!err) err = ptdp_comm_allgather_f64(&tr->grid.pp, mine, dur, (size_t)n, PTDP_TAG_MISC);
  ptdp_replay rp = {0};
  if (!err) err = ptdp_schedule_replay(pl->sched.kind, p, tr->model.nchunks, tr->m, dur, 0.0, &rp);
  *bubble = 0;
  for (int st = 0; !err && st < p; st++) *bubble = rp.idle[st] > *bubble ? rp.idle[st] : *bubble;
  ptdp_replay_destroy(&rp);
  free(mine);
  free(dur);
  return err;
}

/* Timers of the interval: ms per iteration, max and min over ranks. */
static int print_timers(ptdp_trainer *tr, int iters)
{
  PTDP_CALL(ptdp_events_reduce(tr->events, &tr->grid.world, iters, NULL));
  if (tr->grid.world_rank != 0) return 0;
  char line[2048];
  PTDP_CALL(ptdp_events_format(tr->events, line, sizeof line));
  fputs(line, stdout);
  return 0;
}

/* Start the next interval's communication counters from zero. */
static void reset_comm_stats(ptdp_trainer *tr)
{
  ptdp_grid *g = &tr->grid;
  ptdp_comm *all[] = {&g->tp, &g->dp, &g->pp, &g->mp, &g->emb, &g->world};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) ptdp_comm_reset_stats(all[i]);
}

/* Bytes sent per iteration by rank 0 on each communicator since the last report. */
static void print_comm(ptdp_trainer *tr, long long iters)
{
  ptdp_grid *g = &tr->grid;
  double tp = ptdp_comm_total_bytes(&g->tp), dp = ptdp_comm_total_bytes(&g->dp), pp = ptdp_comm_total_bytes(&g->pp);
  double emb = g->emb.size > 0 ? ptdp_comm_total_bytes(&g->emb) : 0, layer = g->tp.stats.bytes[PTDP_TAG_LAYER];
  if (g->world_rank == 0)
    printf("[comm] rank 0 bytes sent per iteration: TP %.0f (transformer layers %.0f), DP %.0f, PP %.0f, embedding %.0f\n",
           tp / iters, layer / iters, dp / iters, pp / iters, emb / iters);
  reset_comm_stats(tr);
}

void ptdp_trainer_destroy(ptdp_trainer *tr)
{
  ptdp_runfile_close(&tr->runfile);
  ptdp_pipeline_destroy(&tr->pipe);
  ptdp_events_destroy(&tr->events);
  ptdp_optimizer_destroy(&tr->opt);
  ptdp_ddp_destroy(&tr->ddp);
  ptdp_master_destroy(&tr->master);
  ptdp_gpt_destroy(&tr->model);
  ptdp_batch_close(&tr->data);
  ptdp_backend_destroy(&tr->be);
  free(tr->scratch);
  if (tr->grid.world.comm != MPI_COMM_NULL && tr->grid.world.size > 0) ptdp_grid_destroy(&tr->grid);
}
