/* Pipeline schedules as a pure function (Narayanan et al. 2021, Sec. 2.2).
 *
 * For pipeline stage `stage` of p, v model chunks per stage (v = 1 unless interleaved), and m
 * micro-batches, ptdp_schedule_build lists the ordered work items of that stage.  A model chunk
 * c of stage s holds virtual stage c * p + s (layers assigned round-robin to chunks, as
 * Megatron does).  Kinds:
 *   GPIPE        all m forwards (chunk 0), then all m backwards
 *   1F1B         warmup = min(p - stage - 1, m) forwards, then alternating 1F/1B, then cooldown
 *   INTERLEAVED  Megatron's interleaved 1F1B: micro-batches in groups of p per chunk; requires
 *                m % p == 0 and p > 1; warmup = (p - stage - 1) * 2 + (v - 1) * p, capped at m v
 * Every (micro-batch, chunk) appears once forward and once backward, the forward first. */
#ifndef PTDP_SCHEDULE_H
#define PTDP_SCHEDULE_H

typedef enum { PTDP_SCHED_GPIPE = 0, PTDP_SCHED_1F1B = 1, PTDP_SCHED_INTERLEAVED = 2 } ptdp_schedule_kind;
typedef enum { PTDP_WORK_FORWARD = 0, PTDP_WORK_BACKWARD = 1 } ptdp_work_kind;

typedef struct {
  ptdp_work_kind kind;
  int microbatch; /* 0 .. m-1 */
  int chunk;      /* 0 .. v-1 */
} ptdp_work;

typedef struct {
  ptdp_schedule_kind kind;
  int stage, p, v, m;
  int n_warmup; /* warmup forwards (Megatron's num_warmup_microbatches); the steady phase then
                   starts with one more forward, so min(n_warmup + 1, m v) forwards precede the
                   first backward (GPipe: n_warmup = m) */
  int count;    /* = 2 m v */
  ptdp_work *items;
} ptdp_schedule;

int ptdp_schedule_parse(const char *s); /* "gpipe" | "1f1b" | "interleaved", else -1 */
const char *ptdp_schedule_name(ptdp_schedule_kind k);
/* Check (p, v, m) for kind; PTDP_ERR_INPUT with a clear message if invalid. */
int ptdp_schedule_validate(ptdp_schedule_kind kind, int p, int v, int m);
int ptdp_schedule_build(ptdp_schedule_kind kind, int stage, int p, int v, int m, ptdp_schedule *s);
void ptdp_schedule_free(ptdp_schedule *s);
/* Largest number of micro-batches (x chunks) whose activations this stage holds at once. */
int ptdp_schedule_max_in_flight(const ptdp_schedule *s);

/* Replay the schedules of all p stages with measured compute times (durations[stage * 2mv + i]
 * for item i of that stage's list), messages taking no time: idle[stage] = (total - busy) / busy,
 * the bubble the schedule implies (Narayanan et al.'s t_pb / t_id); *total the makespan. */
int ptdp_schedule_replay(ptdp_schedule_kind kind, int p, int v, int m, const double *durations, double *idle,
                         double *total);

#endif
