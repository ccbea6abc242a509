/* The trainer's use of checkpoints: resuming at set-up, saving at intervals and at the end, and
 * ending a run early (exit-interval, exit-duration-in-mins, exit-signal-handler) with a save.
 *
 * All ranks must agree on when to stop, since saving is collective: a signal may reach the ranks
 * at different moments, so after every iteration the ranks take the maximum of their flags
 * (signal received, time up) and act on it together. */
#include "ptdp/checkpoint.h"
#include "ptdp/error.h"
#include "ptdp/trainer.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

static volatile sig_atomic_t got_signal = 0;

static void on_signal(int sig)
{
  (void)sig;
  got_signal = 1;
}

static int signal_number(ptdp_exit_signal s)
{
  switch (s) {
  case PTDP_EXIT_SIGINT: return SIGINT;
  case PTDP_EXIT_SIGUSR1: return SIGUSR1;
  case PTDP_EXIT_SIGUSR2: return SIGUSR2;
  default: return SIGTERM;
  }
}

static const char *signal_name(ptdp_exit_signal s)
{
  static const char *const names[] = {"SIGTERM", "SIGINT", "SIGUSR1", "SIGUSR2"};
  return names[s >= PTDP_EXIT_SIGTERM && s <= PTDP_EXIT_SIGUSR2 ? s : 0];
}

int ptdp_trainer_install_signal(const ptdp_trainer *tr)
{
  if (!tr->args.exit_signal_handler) return 0;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART; /* a system call interrupted by the signal goes on */
  PTDP_CHECK_IO(sigaction(signal_number(tr->args.exit_signal), &sa, NULL) == 0, "cannot install a handler for %s",
                signal_name(tr->args.exit_signal));
  return 0;
}

int ptdp_trainer_resume(ptdp_trainer *tr)
{
  const ptdp_args *a = &tr->args;
  if (!a->load[0]) return 0;
  ptdp_checkpoint_ref ref;
  int found = 0;
  PTDP_CALL(ptdp_checkpoint_locate(a->load, tr->grid.world.comm, &ref, &found));
  if (!found) {
    if (tr->grid.world_rank == 0)
      printf("[checkpoint] no checkpoint in %s (no %s): training starts from scratch\n", a->load,
             PTDP_CHECKPOINT_TRACKER);
    return 0;
  }
  const int weights_only = a->finetune || a->no_load_optim;
  ptdp_checkpoint_info info;
  ptdp_checkpoint_stats st;
  PTDP_CALL(ptdp_checkpoint_load(&ref, &tr->model, &tr->master, weights_only ? NULL : &tr->opt, &info, &st));
  if (!a->finetune) {
    tr->iteration = info.iteration;
    tr->consumed = info.consumed_train;
    tr->consumed_valid = info.consumed_valid;
    tr->resumed = 1;
  }
  if (tr->grid.world_rank == 0) {
    printf("[checkpoint] loaded iteration %lld from %s: %.3f GB in %.3f s (%.3f GB/s), %.0f%% by direct I/O%s\n",
           ref.iteration, ref.dir, st.bytes / 1e9, st.seconds, st.seconds > 0 ? st.bytes / 1e9 / st.seconds : 0.0,
           st.bytes > 0 ? 100 * st.direct_bytes / st.bytes : 0.0,
           a->finetune ? "; finetune: weights only, iteration, optimizer and data start afresh"
           : a->no_load_optim ? "; no-load-optim: the optimizer state starts afresh" : "");
    fflush(stdout);
  }
  return 0;
}

int ptdp_trainer_save(ptdp_trainer *tr)
{
  const ptdp_args *a = &tr->args;
  ptdp_options keys; /* every key over its value, for /args */
  ptdp_args_view(&tr->args, &keys);
  ptdp_checkpoint_info info = {.iteration = tr->iteration, .consumed_train = tr->consumed,
                               .consumed_valid = tr->consumed_valid, .opt_step = tr->opt.step,
                               .scaler = tr->opt.scaler,
                               .lr = ptdp_lr_at(&tr->opt.cfg.lr, tr->opt.step > 0 ? tr->opt.step - 1 : 0),
                               .keys = &keys, .keep = (int)a->keep_checkpoints};
  ptdp_checkpoint_stats st;
  PTDP_CALL(ptdp_events_begin(tr->events, tr->ev.checkpoint));
  PTDP_CALL(ptdp_checkpoint_save(a->save, &info, &tr->model, &tr->master, a->no_save_optim ? NULL : &tr->opt, &st));
  PTDP_CALL(ptdp_events_end(tr->events, tr->ev.checkpoint));
  tr->saved_iteration = tr->iteration;
  if (tr->grid.world_rank == 0) {
    printf("[checkpoint] saved iteration %lld to %s/iter_%07lld: %.3f GB in %.3f s (%.3f GB/s)\n", tr->iteration,
           a->save, tr->iteration, st.bytes / 1e9, st.seconds, st.seconds > 0 ? st.bytes / 1e9 / st.seconds : 0.0);
    fflush(stdout);
  }
  return 0;
}

int ptdp_trainer_after_iteration(ptdp_trainer *tr, double t_start, int *stop)
{
  const ptdp_args *a = &tr->args;
  *stop = 0;
  if (a->save[0] && a->save_interval && tr->iteration % a->save_interval == 0) PTDP_CALL(ptdp_trainer_save(tr));
  double flags[2] = {got_signal ? 1.0 : 0.0, 0.0};
  if (a->exit_duration_in_mins > 0) flags[1] = (MPI_Wtime() - t_start) / 60.0 > a->exit_duration_in_mins;
  if (a->exit_signal_handler || a->exit_duration_in_mins > 0)
    PTDP_CALL(ptdp_comm_allreduce_max_f64(&tr->grid.world, flags, 2, PTDP_TAG_MISC));
  const int by_interval = a->exit_interval && tr->iteration % a->exit_interval == 0;
  if (!(flags[0] > 0 || flags[1] > 0 || by_interval)) return 0;
  if (a->save[0] && tr->saved_iteration != tr->iteration) PTDP_CALL(ptdp_trainer_save(tr));
  if (tr->grid.world_rank == 0) {
    if (flags[0] > 0) printf("exiting program after receiving %s at iteration %lld\n", signal_name(a->exit_signal), tr->iteration);
    else if (flags[1] > 0) printf("exiting program after %.2f minutes at iteration %lld\n", (MPI_Wtime() - t_start) / 60.0, tr->iteration);
    else printf("exiting program at iteration %lld\n", tr->iteration);
    fflush(stdout);
  }
  *stop = 1;
  return 0;
}
