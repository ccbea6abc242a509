/* The memory plan against the allocations, on 4 ranks, for several layouts.
 *
 * For each layout every rank builds its model, data-parallel module, optimizer and pipeline
 * driver on a backend that counts every byte allocated through it, runs one training iteration
 * of mock tokens, and checks:
 *   - the bytes allocated through the backend equal the plan's total (nothing unplanned);
 *   - every record of the accounting allocator is the plan's entry of the same index (kind,
 *     chunk, slot, layer, index, held, bytes);
 *   - the measured peak of held activations equals the plan's, which walks the schedule;
 *   - a plan built from the configuration alone (no model, no MPI call) equals the model's.
 * An inference plan (ptdp-generate's) holds the parameters and no gradient or optimizer buffer:
 * the training plan less exactly those.  It also times ptdp_plan_build for a large model
 * (printed, not asserted: timings are for benchmarks). */
#include "ptdp/backend.h"
#include "ptdp/ddp.h"
#include "ptdp/master.h"
#include "ptdp/gpt.h"
#include "ptdp/grid.h"
#include "ptdp/optimizer.h"
#include "ptdp/pipeline.h"
#include "ptdp/rng.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../expect.h"

static void check(int ok, const char *layout, const char *what, long long got, long long want)
{
  MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
  EXPECT(ok, "%s: %s: %lld, expected %lld", layout, what, got, want);
}

/* The CPU backend with alloc/free counted (bytes in use). */
static ptdp_backend *inner;
static long long in_use;
static int count_alloc(ptdp_backend *be, void **p, size_t bytes)
{
  (void)be;
  in_use += (long long)bytes;
  return inner->alloc(inner, p, bytes);
}
static void count_free(ptdp_backend *be, void *p)
{
  (void)be;
  inner->free(inner, p);
}

static int feed(void *ctx, int mb, int32_t *tokens, int32_t *targets, long long *sample0)
{
  const int N = *(int *)ctx;
  *sample0 = mb;
  for (int r = 0; tokens && r < N; r++) {
    tokens[r] = (int32_t)(ptdp_rng_mix(1000 + (uint64_t)mb * N + r) % 97);
    targets[r] = (int32_t)(ptdp_rng_mix(5000 + (uint64_t)mb * N + r) % 97);
  }
  return 0;
}

typedef struct {
  const char *name;
  int t, p, v, sp, distopt, m;
  ptdp_schedule_kind sched;
  ptdp_recompute rc;
  ptdp_recompute_method method;
} layout;

static int run(const layout *L, ptdp_backend *be)
{
  ptdp_grid g;
  if (ptdp_grid_create(MPI_COMM_WORLD, L->t, L->p, PTDP_ORDER_TP_DP_PP, &g)) return 1;
  ptdp_gpt_config c = {.num_layers = 4, .hidden = 32, .heads = 4, .ffn = 64, .seq = 16, .max_pos = 16,
                       .micro_batch = 2, .vocab = 97, .vocab_divisible_by = 8, .eps = 1e-5f, .hidden_dropout = 0.1f,
                       .attn_dropout = 0.1f, .init_std = 0.02f, .seed = 5, .sequence_parallel = L->sp,
                       .chunks = L->v, .schedule = L->sched, .m = L->m, .recompute = L->rc,
                       .recompute_method = L->method, .recompute_num_layers = 1, .bucket_elems = 3000,
                       .dp_size = g.layout.d, .distributed_optimizer = L->distopt};
  in_use = 0;
  ptdp_gpt m;
  ptdp_ddp ddp;
  ptdp_master master;
  ptdp_optimizer opt;
  ptdp_pipeline pl;
  ptdp_optim_config oc = {.wd = 0.01, .clip = 1.0, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8,
                          .lr = {.lr = 1e-3, .decay_iters = 10, .style = PTDP_LR_CONSTANT}};
  if (ptdp_gpt_create(&m, &c, be, &g) || ptdp_master_create(&master, &m, L->distopt) || ptdp_master_init(&master) ||
      ptdp_ddp_create(&ddp, &m, L->distopt) || ptdp_optimizer_create(&opt, &oc, &m, &ddp, &master) ||
      ptdp_pipeline_create(&pl, &m, L->sched, L->m))
    return 1;
  check(in_use == (long long)m.plan.allocated, L->name, "bytes allocated through the backend vs the plan", in_use,
        (long long)m.plan.allocated);
  check(m.mem.n == m.plan.n, L->name, "records vs planned buffers", m.mem.n, m.plan.n);
  for (int i = 0; i < m.mem.n && i < m.plan.n; i++) {
    const ptdp_buffer *a = &m.mem.rec[i].buf, *b = &m.plan.buf[i];
    int same = a->kind == b->kind && a->chunk == b->chunk && a->slot == b->slot && a->layer == b->layer &&
               a->index == b->index && a->held == b->held && a->bytes == b->bytes && m.mem.rec[i].ptr;
    check(same, L->name, ptdp_buffer_kind_name(b->kind), i, i);
  }
  /* the same plan from the configuration alone */
  const ptdp_param_position pos = {.t = L->t, .tp_rank = g.me.tp, .p = L->p, .stage = g.me.pp, .v = L->v};
  ptdp_plan_config pc = ptdp_gpt_plan_config(&c, &pos);
  ptdp_plan alone;
  if (ptdp_plan_build(&pc, &alone)) return 1;
  check(alone.n == m.plan.n && alone.allocated == m.plan.allocated && alone.peak == m.plan.peak, L->name,
        "plan from the configuration alone, bytes", (long long)alone.allocated, (long long)m.plan.allocated);
  ptdp_plan_free(&alone);
  int N = c.seq * c.micro_batch;
  if (ptdp_pipeline_run(&pl, feed, &N, 1.0f / L->m, 0) || ptdp_ddp_sync(&ddp)) return 1;
  double norm;
  int skipped;
  if (ptdp_optimizer_update(&opt, 1e-3, &norm, &skipped)) return 1;
  check(m.mem.peak_busy_bytes == m.plan.peak_activations, L->name, "measured peak of held activations vs the plan",
        (long long)m.mem.peak_busy_bytes, (long long)m.plan.peak_activations);
  check(m.mem.peak_busy_bytes > 0, L->name, "the peak is not empty", (long long)m.mem.peak_busy_bytes, 1);
  ptdp_pipeline_destroy(&pl);
  ptdp_optimizer_destroy(&opt);
  ptdp_ddp_destroy(&ddp);
  ptdp_master_destroy(&master);
  ptdp_gpt_destroy(&m);
  ptdp_grid_destroy(&g);
  return 0;
}

/* The inference plan against the training plan of the same model (t 2, d 2, distributed optimizer). */
static void check_inference_plan(void)
{
  ptdp_plan_config pc = {.shape = {.num_layers = 4, .hidden = 64, .heads = 4, .ffn = 256, .max_pos = 32, .vocab = 300,
                                   .vocab_divisible_by = 128},
                         .pos = {.t = 2, .tp_rank = 1, .p = 1, .stage = 0, .v = 1}, .seq = 32, .micro_batch = 2,
                         .schedule = PTDP_SCHED_1F1B, .m = 2, .bucket_elems = 40000000, .d = 2, .distributed_optimizer = 1};
  ptdp_plan train, infer;
  if (ptdp_plan_build(&pc, &train)) {
    check(0, "inference", "training plan built", 0, 1);
    return;
  }
  pc.inference = 1;
  if (ptdp_plan_build(&pc, &infer)) {
    check(0, "inference", "inference plan built", 0, 1);
    ptdp_plan_free(&train);
    return;
  }
  long long params[2] = {0, 0}, state = 0, others[2] = {0, 0};
  const ptdp_plan *pl[2] = {&train, &infer};
  for (int k = 0; k < 2; k++)
    for (int i = 0; i < pl[k]->n; i++) {
      const ptdp_buffer *b = &pl[k]->buf[i];
      if (b->kind == PTDP_BUF_PARAMS) params[k] += (long long)b->bytes;
      else if (b->kind == PTDP_BUF_GRADS || b->kind == PTDP_BUF_ADAM_M || b->kind == PTDP_BUF_ADAM_V ||
               b->kind == PTDP_BUF_GRAD_SHARD) {
        if (k == 0) state += (long long)b->bytes;
        else check(0, "inference", "gradient or optimizer buffers in the inference plan", (long long)b->bytes, 0);
      } else others[k] += (long long)b->bytes;
    }
  check(params[0] > 0 && params[1] == params[0], "inference", "parameter bytes", params[1], params[0]);
  check(state > 0, "inference", "the training plan's gradient and optimizer bytes", state, 1);
  check(others[1] == others[0], "inference", "activation and work bytes", others[1], others[0]);
  check((long long)infer.allocated == (long long)train.allocated - state, "inference", "allocated bytes",
        (long long)infer.allocated, (long long)train.allocated - state);
  ptdp_plan_free(&train);
  ptdp_plan_free(&infer);
}

/* Time of one plan of a 1T-parameter-like model (Narayanan et al. Table 1's last row). */
static void time_large_plan(void)
{
  ptdp_plan_config pc = {.shape = {.num_layers = 128, .hidden = 25600, .heads = 160, .ffn = 102400, .max_pos = 2048,
                                   .vocab = 51200, .vocab_divisible_by = 128},
                         .pos = {.t = 8, .tp_rank = 0, .p = 64, .stage = 0, .v = 1}, .seq = 2048, .micro_batch = 1,
                         .hidden_dropout = 1, .attention_dropout = 1, .schedule = PTDP_SCHED_1F1B, .m = 512,
                         .bucket_elems = 40000000, .d = 6, .distributed_optimizer = 1};
  ptdp_plan p;
  double t0 = MPI_Wtime();
  if (ptdp_plan_build(&pc, &p)) return;
  double t1 = MPI_Wtime();
  printf("plan of the 1T model (t 8, p 64, d 6, m 512), first stage: %d buffers, %.3f GB at peak, built in %.1f us\n",
         p.n, (double)p.peak / 1e9, (t1 - t0) * 1e6);
  ptdp_plan_free(&p);
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  int rank, world;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  if (world != 4) {
    if (rank == 0) printf("test_plan needs 4 ranks\n");
    MPI_Finalize();
    return 77;
  }
  ptdp_backend counting;
  if (ptdp_backend_cpu_create(&inner)) return 2;
  counting = *inner;
  counting.alloc = count_alloc;
  counting.free = count_free;
  counting.destroy = NULL;
  const layout layouts[] = {
    {"d4", 1, 1, 1, 0, 0, 2, PTDP_SCHED_1F1B, PTDP_RECOMPUTE_NONE, PTDP_RECOMPUTE_UNIFORM},
    {"d4 distributed optimizer", 1, 1, 1, 0, 1, 2, PTDP_SCHED_1F1B, PTDP_RECOMPUTE_NONE, PTDP_RECOMPUTE_UNIFORM},
    {"t2 p2 1f1b", 2, 2, 1, 0, 0, 4, PTDP_SCHED_1F1B, PTDP_RECOMPUTE_NONE, PTDP_RECOMPUTE_UNIFORM},
    {"t2 sp d2 selective", 2, 1, 1, 1, 1, 2, PTDP_SCHED_1F1B, PTDP_RECOMPUTE_SELECTIVE, PTDP_RECOMPUTE_UNIFORM},
    {"p4 1f1b full uniform", 1, 4, 1, 0, 0, 8, PTDP_SCHED_1F1B, PTDP_RECOMPUTE_FULL, PTDP_RECOMPUTE_UNIFORM},
    {"p2 d2 gpipe full block", 1, 2, 1, 0, 1, 4, PTDP_SCHED_GPIPE, PTDP_RECOMPUTE_FULL, PTDP_RECOMPUTE_BLOCK},
    {"p2 v2 t2 interleaved", 2, 2, 2, 0, 0, 4, PTDP_SCHED_INTERLEAVED, PTDP_RECOMPUTE_NONE, PTDP_RECOMPUTE_UNIFORM},
  };
  for (size_t i = 0; i < sizeof layouts / sizeof layouts[0]; i++) {
    if (run(&layouts[i], &counting)) {
      EXPECT(0, "%s could not be set up or run", layouts[i].name);
    }
  }
  if (rank == 0) check_inference_plan();
  if (rank == 0) time_large_plan();
  int status = expect_summary_all("test_plan");
  ptdp_backend_destroy(&inner);
  MPI_Finalize();
  return status;
}
