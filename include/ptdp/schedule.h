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
/* The ring order that lets NCCL match the pipeline's messages by posting order, not by tag
 * (src/pipeline/driver.c): in the lists st[0 .. p-1] (each built for its stage, p > 1),
 * forwards send only to stage + 1 and backwards only to stage - 1 (mod p), and for every
 * (sender, direction) the messages in the order the sender's list sends them are the messages
 * in the order the receiver's list receives them.  0 when it holds, else PTDP_ERR_INTERNAL
 * naming the first message out of order. */
int ptdp_schedule_check_ring(const ptdp_schedule *st, int p, int v);

/* The stage-dependency rule, the one place it is written.  Virtual stage k = chunk p + stage
 * (0 .. p v - 1); activations flow from k to k + 1, their gradients from k to k - 1, so
 *   forward  (mb, k) needs forward  (mb, k - 1), run by PP rank (k - 1) mod p as its chunk (k - 1) / p;
 *   backward (mb, k) needs backward (mb, k + 1), run by PP rank (k + 1) mod p as its chunk (k + 1) / p.
 * The first virtual stage's forward reads data and the last one's backward starts from its own
 * loss (after its own forward, which every stage's list puts first): neither needs a message.
 * With p > 1 the other item is always on another PP rank.
 *   e.g. p = 2, v = 2 (k = 2 chunk + stage), F(mb) needs / B(mb) needs:
 *     k 0 = stage 0 chunk 0:  F none                  B of stage 1 chunk 0 (k 1)
 *     k 1 = stage 1 chunk 0:  F of stage 0 chunk 0    B of stage 0 chunk 1 (k 2)
 *     k 2 = stage 0 chunk 1:  F of stage 1 chunk 0    B of stage 1 chunk 1 (k 3)
 *     k 3 = stage 1 chunk 1:  F of stage 0 chunk 1    B none
 *   p = 4, v = 1: stage 2's F needs stage 1's, its B stage 3's; stage 0's F and stage 3's B
 *   need none. */
typedef struct {
  int stage;           /* PP rank that runs it (-1 when there is none) */
  int chunk;           /* its chunk on that rank (-1 when there is none) */
  int microbatch;      /* always the same micro-batch */
  ptdp_work_kind kind; /* always the same direction */
} ptdp_work_dep;

/* Whether work item w of `stage` (of p stages, v chunks each) needs the output of an item of
 * another virtual stage; if so (1) *dep names that item.  0 at the pipeline's ends.  dep may be
 * NULL (the question alone). */
int ptdp_work_dependency(int p, int v, int stage, ptdp_work w, ptdp_work_dep *dep);
/* The converse: the item that needs w's output (where w sends it); 0 at the pipeline's ends.
 *   e.g. p = 2, v = 2: forward of stage 1 chunk 0 (k 1) -> forward of stage 0 chunk 1 (k 2);
 *   backward of stage 1 chunk 0 (k 1) -> backward of stage 0 chunk 0 (k 0). */
int ptdp_work_consumer(int p, int v, int stage, ptdp_work w, ptdp_work_dep *dep);

/* A replayed iteration: every stage runs its list (ptdp_schedule_build) in order on its own
 * processor, each item starting as soon as its stage is free and its dependency
 * (ptdp_work_dependency) has ended, plus a fixed latency per message.  Times are in the unit of
 * the durations (seconds when measured). */
typedef struct {
  int p, n;              /* stages; items per stage, n = 2 m v */
  ptdp_schedule *sched;  /* [p] the lists replayed: item i of stage s is sched[s].items[i] */
  double *start, *end;   /* [p n] item i of stage s at [s n + i]; end = start + its duration */
  double *busy;          /* [p] sum of the stage's durations */
  double *idle;          /* [p] (total - busy) / busy: the bubble the schedule implies
                            (Narayanan et al.'s t_pb / t_id); 0 for a stage with no work */
  double total;          /* makespan: the largest end */
} ptdp_replay;

/* Replay the schedules of all p stages with compute times durations[stage * 2mv + i] for item i
 * of that stage's list; latency (>= 0) is added to every dependency between stages (0: messages
 * take no time).  Fills *r (its arrays owned by r: ptdp_replay_destroy). */
int ptdp_schedule_replay(ptdp_schedule_kind kind, int p, int v, int m, const double *durations, double latency,
                         ptdp_replay *r);
void ptdp_replay_destroy(ptdp_replay *r);

#endif
