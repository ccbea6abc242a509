# Functions the Slurm job scripts share (train.sbatch, sweep.sbatch); source it, do not run it.
#
# Inside a job the script Slurm runs is a copy in its spool directory, so nothing here may be
# found relative to the script: PTDP_ROOT (default: the directory sbatch was called from, the
# repository root) names the repository, and everything else is relative to it or given.

# ptdp_slurm_setup: resolve PTDP_ROOT, BUILD_DIR, LOG_DIR; say where and what.
ptdp_slurm_setup() {
  PTDP_ROOT=${PTDP_ROOT:-${SLURM_SUBMIT_DIR:-$PWD}}
  PTDP_ROOT=$(cd "$PTDP_ROOT" && pwd)
  BUILD_DIR=${BUILD_DIR:-$PTDP_ROOT/build}
  LOG_DIR=${LOG_DIR:-$PTDP_ROOT/logs}
  case $LOG_DIR in /*) ;; *) LOG_DIR=$PTDP_ROOT/$LOG_DIR ;; esac
  mkdir -p "$LOG_DIR"
  [ -x "$BUILD_DIR/ptdp-train" ] || { echo "ptdp-slurm: no $BUILD_DIR/ptdp-train (set BUILD_DIR, or build first: jobs/setup.sh)" >&2; exit 1; }
  # the job as the scheduler names it: an array task is ARRAYJOB_TASK (its SLURM_JOB_ID is its own)
  if [ -n "${SLURM_ARRAY_TASK_ID:-}" ]; then PTDP_JOB=${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}; else PTDP_JOB=${SLURM_JOB_ID:-local}; fi
  PTDP_LAUNCH_NO=${SLURM_RESTART_COUNT:-0}
  echo "ptdp-slurm: job $PTDP_JOB (launch $PTDP_LAUNCH_NO) on ${SLURM_JOB_NODELIST:-?}, ${SLURM_NTASKS:-?} tasks, $(date -u +%FT%TZ)"
}

# ptdp_slurm_abs PATH: PATH made absolute against PTDP_ROOT.
ptdp_slurm_abs() { case $1 in /*) echo "$1" ;; *) echo "$PTDP_ROOT/$1" ;; esac; }

# ptdp_slurm_launcher: LAUNCH (an array) = how to start one rank per task.  LAUNCHER = srun,
# mpirun or auto.  srun starts Open MPI ranks only through a PMI both sides have: Slurm's
# plugin list (srun --mpi=list) and Open MPI's (ompi_info: an external PMIx, "MCA pmix: ext*"
# or "pmix3x", or Slurm's PMI-2, "s2").  Without a common one, ranks started by srun would each
# be a world of one, so auto falls back to mpirun inside the allocation (it reads the
# allocation from Slurm's variables).  Other MPIs (no ompi_info): srun.
ptdp_slurm_launcher() {
  local want=${LAUNCHER:-auto} mpis ompi pmi="" why
  if [ "$want" = auto ]; then
    mpis=$(srun --mpi=list 2>&1 || true)
    if command -v ompi_info >/dev/null 2>&1; then
      ompi=$(ompi_info 2>/dev/null | grep "MCA pmix:" || true)
      if echo "$mpis" | grep -qw pmix && echo "$ompi" | grep -qE "pmix: (ext|pmix[0-9])"; then pmi=pmix
      elif echo "$mpis" | grep -qw pmi2 && echo "$ompi" | grep -qE "pmix: s2"; then pmi=pmi2; fi
      if [ -n "$pmi" ]; then want=srun why="Slurm and Open MPI share PMI $pmi"
      else want=mpirun why="srun and this Open MPI share no PMI (srun: $(echo $mpis | tr '\n' ' '))"; fi
    else
      want=srun why="no ompi_info: an MPI that srun launches directly"
    fi
  else
    why="LAUNCHER=$want"
    [ "$want" = srun ] && pmi=${SRUN_MPI:-pmix}
  fi
  case $want in
    srun) LAUNCH=(srun ${pmi:+--mpi=$pmi} --kill-on-bad-exit=1 ${SRUN_FLAGS:-}) ;;
    mpirun)
      # as root Open MPI needs these; --oversubscribe only when more ranks than cores were allocated
      export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
      LAUNCH=(mpirun -n "${SLURM_NTASKS:-1}" ${MPIRUN_FLAGS:-}) ;;
    *) echo "ptdp-slurm: LAUNCHER=$want: choose srun, mpirun or auto" >&2; exit 1 ;;
  esac
  echo "ptdp-slurm: launcher ${LAUNCH[*]} ($why)"
}

# ptdp_slurm_train LOG ARG...: start ptdp-train (one rank per task) with ARG..., its output in
# LOG, and wait.  A warning signal (USR1: sbatch --signal=B:USR1@T, or scancel -b -s USR1) or
# the time limit's TERM reaching this shell is passed on to the launcher, which passes it to
# the ranks (srun and mpirun both forward USR1/USR2/TERM); with exit-signal-handler and
# exit-signal = SIGUSR1 the ranks finish the iteration, save and exit 0.  A run that ended that
# way (its log says "exiting program after receiving") is requeued: Slurm does not requeue a
# job that reaches its time limit, and the same save/load directory makes the next launch
# resume, appending to the same run file.  Returns the launcher's status.
ptdp_slurm_train() {
  local log=$1 pid rc
  shift
  echo "ptdp-slurm: ${LAUNCH[*]} $BUILD_DIR/ptdp-train $*"
  echo "ptdp-slurm: log $log"
  "${LAUNCH[@]}" "$BUILD_DIR/ptdp-train" "$@" >> "$log" 2>&1 &
  pid=$!
  trap 'echo "ptdp-slurm: USR1 at $(date -u +%T): passed to the ranks"; kill -USR1 $pid 2>/dev/null' USR1
  trap 'echo "ptdp-slurm: TERM at $(date -u +%T): passed to the ranks"; kill -TERM $pid 2>/dev/null' TERM
  # wait returns early when a trapped signal arrives: wait again until the launcher is gone
  while :; do
    wait $pid
    rc=$?
    kill -0 $pid 2>/dev/null || break
  done
  trap - USR1 TERM
  echo "ptdp-slurm: ptdp-train exited with status $rc at $(date -u +%T)"
  grep -E "^\[checkpoint\]|^exiting program|^\[run file\]" "$log" | tail -n 4
  if [ $rc -eq 0 ] && tail -n 40 "$log" | grep -q "^exiting program after receiving"; then
    if [ -n "${SLURM_JOB_ID:-}" ] && [ "${PTDP_NO_REQUEUE:-0}" != 1 ]; then
      echo "ptdp-slurm: saved before the time limit; requeueing $PTDP_JOB"
      scontrol requeue "$PTDP_JOB" || { echo "ptdp-slurm: scontrol requeue $PTDP_JOB failed" >&2; return 1; }
      sleep 60 & wait $! # the requeue ends this launch (TERM); do not report success before it
    fi
  fi
  return $rc
}
