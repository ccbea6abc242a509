#!/bin/bash
# The Slurm job scripts on a real Slurm: a controller and a node daemon started on localhost in a
# scratch directory (no systemd; ../shared facts in jobs/slurm and ptdp-train(1), SLURM), then
#   1. jobs/slurm/train.sbatch on 2 ranks; the early-warning signal (scancel -b -s USR1, what
#      sbatch --signal=B:USR1@T sends) arrives mid-run: the ranks save, the script requeues the
#      job itself, the job runs again, resumes, finishes, and its one run file holds the losses
#      of an uninterrupted run, bit for bit;
#   2. a 3-task sweep array from a ptdp-sweep table: three run files and the collected table;
# then stops the daemons it started, by PID.  Installs nothing: SKIPs (77) with the reason when
# slurm-wlm or munge is absent (jobs/setup.sh installs them) or the daemons cannot start.
. "$top_srcdir/validation/tests/common.sh"
for c in slurmctld slurmd sbatch scontrol squeue sinfo scancel munged mungekey; do
  command -v $c >/dev/null || skip "no $c: install slurm-wlm and munge (jobs/setup.sh does, as root)"
done
[ "$(id -u)" = 0 ] || skip "slurmd must run as root to start jobs (this test runs it as SlurmUser root)"
python_or_skip h5py
S=$TMPD/slurm
mkdir -p "$S/munge" "$S/state" "$S/spool" "$S/log" "$S/jobs"
chmod 755 "$TMPD" "$S" "$S/munge" # munged refuses a socket in a directory others cannot reach
pids=""
stop_all() { # jobs first (their steps outlive slurmd), then slurmd, slurmctld, munged: by PID
  if [ -n "${SLURM_CONF:-}" ] && [ -n "$pids" ]; then
    scancel --user=root >/dev/null 2>&1
    for _ in $(seq 50); do [ -z "$(squeue -h 2>/dev/null)" ] && break; sleep 0.2; done
  fi
  for p in $pids; do kill -TERM "$p" 2>/dev/null; done
  for p in $pids; do for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done; kill -KILL "$p" 2>/dev/null; done
  rm -rf "$TMPD"
}
trap stop_all EXIT
daemon_fail() { # say why, with the daemons' logs, then SKIP
  echo "--- $1"; tail -n 20 "$S"/log/* 2>/dev/null; skip "$2"
}
# free TCP ports for the controller and the node daemon (two tests at once must not collide)
read -r cport dport < <($PYTHON3 -c '
import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*(x.getsockname()[1] for x in s))')

# munge: a key, a socket in the scratch directory
mungekey -c -k "$S/munge/munge.key" >/dev/null 2>&1 || skip "mungekey cannot create a key"
munged -F -S "$S/munge/munge.socket.2" --key-file="$S/munge/munge.key" --log-file="$S/log/munged.log" \
  --pid-file="$S/munge/munged.pid" --seed-file="$S/munge/munge.seed" > "$S/log/munged.out" 2>&1 &
pids="$!"
for _ in $(seq 50); do [ -S "$S/munge/munge.socket.2" ] && break; sleep 0.1; done
[ -S "$S/munge/munge.socket.2" ] || daemon_fail munged "munged did not start"

cpus=$(nproc)
[ "$cpus" -ge 2 ] || cpus=2 # 2 ranks need 2 CPUs; config_overrides lets the node claim them
cat > "$S/slurm.conf" <<EOF
ClusterName=ptdptest
SlurmctldHost=localhost
SlurmUser=root
SlurmctldPort=$cport
SlurmdPort=$dport
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$S/munge/munge.socket.2,cred_expire=5
MailProg=/bin/true
StateSaveLocation=$S/state
SlurmdSpoolDir=$S/spool
SlurmctldPidFile=$S/slurmctld.pid
SlurmdPidFile=$S/slurmd.pid
SlurmctldLogFile=$S/log/slurmctld.log
SlurmdLogFile=$S/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$S/log/jobcomp.txt
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0,bf_interval=1
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=pmix
ReturnToService=2
SlurmdTimeout=30
InactiveLimit=0
KillWait=5
MinJobAge=300
SlurmdParameters=config_overrides
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF=$S/slurm.conf
slurmctld -D -c -f "$SLURM_CONF" > "$S/log/slurmctld.out" 2>&1 &
pids="$! $pids"
for _ in $(seq 100); do scontrol ping 2>/dev/null | grep -q "UP" && break; sleep 0.1; done
scontrol ping 2>/dev/null | grep -q UP || daemon_fail slurmctld "slurmctld did not answer scontrol ping"
slurmd -D -N localhost -f "$SLURM_CONF" > "$S/log/slurmd.out" 2>&1 &
slurmd_pid=$!
pids="$slurmd_pid $pids"
for _ in $(seq 100); do
  st=$(sinfo -h -n localhost -o %T 2>/dev/null)
  case $st in idle) break ;; drain*) scontrol update nodename=localhost state=resume 2>/dev/null ;; esac
  sleep 0.1
done
kill -0 $slurmd_pid 2>/dev/null && [ "$st" = idle ] || daemon_fail slurmd "slurmd did not register the node (state '$st')"
ok 0 "slurmctld and slurmd on localhost (ports $cport, $dport), node idle"

# job_state J: the state of job (or array task) J
job_state() { scontrol show job "$1" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p' | head -n 1; }
# wait_state J STATE... [timeout s]: until J is in one of the states
wait_for() { # wait_for SECONDS COMMAND...: until COMMAND succeeds
  local n=$(( $1 * 10 )); shift
  while [ $n -gt 0 ]; do "$@" && return 0; sleep 0.1; n=$((n - 1)); done
  return 1
}
in_state() { local s; s=$(job_state "$1"); shift; for w in "$@"; do [ "$s" = "$w" ] && return 0; done; return 1; }
# a requeued job runs again after cred_expire plus a scheduler delay (10-20 s): once it is
# pending, and a second later (earlier is overridden), let it start now
start_now() {
  wait_for 30 in_state "$1" PENDING || return 1
  sleep 1.2
  scontrol update jobid="$1" StartTime=now 2>/dev/null
  return 0
}

DECK=$TMPD/slurm.in
write_deck "$DECK" train-iters=120 lr=1e-3 log-interval=1
export PTDP_ROOT=$top_srcdir BUILD_DIR=$top_builddir LOG_DIR=$S/jobs DECK OMP_NUM_THREADS=1

# 1. train.sbatch, warned mid-run
RUN=$S/run
J=$(cd "$S/jobs" && RUN_DIR=$RUN sbatch --parsable -n 2 --time=10 --output="$S/jobs/%x-%j.out" \
      "$top_srcdir/jobs/slurm/train.sbatch")
ok $? "sbatch jobs/slurm/train.sbatch: job $J"
log0=$S/jobs/ptdp-train-$J.0.log
wait_for 90 grep -q "iteration  *5/" "$log0" 2>/dev/null
ok $? "launch 0 reached iteration 5"
scancel -b -s USR1 "$J"
ok $? "scancel -b -s USR1 $J (the warning sbatch --signal=B:USR1@T sends)"
wait_for 60 grep -q "^exiting program after receiving SIGUSR1" "$log0"
ok $? "the ranks saved and exited: '$(grep -m1 '^exiting' "$log0")'"
saved=$(cat "$RUN/latest_checkpointed_iteration.txt" 2>/dev/null)
[ -n "$saved" ] && [ "$saved" -lt 120 ] && grep -q "saved iteration $saved to" "$log0"
ok $? "checkpoint of iteration $saved in the run directory"
wait_for 30 grep -q "requeueing $J" "$S/jobs/ptdp-train-$J.out"
ok $? "the script requeued the job ($(grep -m1 requeueing "$S/jobs/ptdp-train-$J.out"))"
start_now "$J"
ok $? "job $J pending again after the requeue"
wait_for 120 in_state "$J" COMPLETED FAILED CANCELLED TIMEOUT
st=$(job_state "$J")
[ "$st" = COMPLETED ]
ok $? "job $J ran again and completed (state $st, restarts $(scontrol show job "$J" | sed -n 's/.*Restarts=\([0-9]*\).*/\1/p'))"
log1=$S/jobs/ptdp-train-$J.1.log
grep -q "loaded iteration $saved from" "$log1" && grep -q "iteration  *120/" "$log1"
ok $? "launch 1 resumed from iteration $saved and finished iteration 120"
# the uninterrupted run, outside Slurm
LAUNCH_TIMEOUT=300 train_log straight 2 --run-file "$TMPD/straight.h5"
ok $? "uninterrupted run of 120 iterations"
$PYTHON3 - "$RUN/run.h5" "$TMPD/straight.h5" "$J" <<'PY'
import sys, h5py, numpy as np
def losses(path):
    with h5py.File(path, "r") as f:
        last = {int(i): l for i, l in zip(f["metrics/iteration"][...], f["metrics/lm_loss"][...])}
        jobs = f["jobs"][...] if "jobs" in f else None
    return last, jobs
run, jobs = losses(sys.argv[1])
ref, _ = losses(sys.argv[2])
ids = sorted({r["slurm_job_id"].decode() for r in jobs})
print("run file: %d launches, slurm_job_id %s, iterations %d..%d" % (len(jobs), ids, min(run), max(run)))
assert len(jobs) == 2 and ids == [sys.argv[3]], "expected 2 launches of job %s" % sys.argv[3]
assert sorted(run) == sorted(ref) == list(range(1, 121)), "iterations differ"
bad = [i for i in ref if run[i] != ref[i]]
assert not bad, "losses differ at iterations %s" % bad[:5]
print("losses of iterations 1..120 equal the uninterrupted run's, bit for bit")
PY
ok $? "one run file ($RUN/run.h5): two launches, losses equal an uninterrupted run's"

# 2. a 3-task sweep array from a ptdp-sweep table
TSV=$S/sweep.tsv
"$top_builddir/ptdp-sweep" "$DECK" --hardware "$top_srcdir/inputs/hw/cpu-local.hw" --world-size 2 --top 3 \
  --emit-tsv "$TSV" > "$TMPD/sweep.out" 2>&1
ok $? "ptdp-sweep --world-size 2 --top 3 --emit-tsv"
[ "$(wc -l < "$TSV")" -eq 4 ]
ok $? "the table has a header and 3 rows"
cat "$TSV"
A=$(cd "$S/jobs" && LAUNCHER=mpirun TRAIN_ARGS="--train-iters 12" sbatch --parsable -n 2 --time=10 --array=0-2 \
      --output="$S/jobs/%x-%A_%a.out" "$top_srcdir/jobs/slurm/sweep.sbatch" "$TSV")
ok $? "sbatch --array=0-2 jobs/slurm/sweep.sbatch: job $A"
done3() { for i in 0 1 2; do in_state "${A}_$i" COMPLETED FAILED CANCELLED TIMEOUT || return 1; done; }
wait_for 150 done3
for i in 0 1 2; do
  task=$(sed -n "$((i + 2))p" "$TSV" | cut -f1)
  st=$(job_state "${A}_$i")
  [ "$st" = COMPLETED ] && [ -f "$S/sweep/$task/run.h5" ]
  ok $? "array task ${A}_$i ($task): $st, run file sweep/$task/run.h5"
done
grep -q "launcher mpirun" "$S/jobs/ptdp-sweep-${A}_0.out"
ok $? "sweep tasks ran with mpirun inside the allocation (LAUNCHER=mpirun); train.sbatch with: $(grep -m1 -o 'launcher [a-z]*' "$S/jobs/ptdp-train-$J.out")"
"$top_srcdir/jobs/slurm/collect.sh" "$TSV" > "$TMPD/collect.txt"
ok $? "jobs/slurm/collect.sh"
cat "$TMPD/collect.txt"
[ "$(grep -c " 12 " "$TMPD/collect.txt")" -eq 3 ] && ! grep -q missing "$TMPD/collect.txt"
ok $? "the collected table: 3 tasks, each measured at 12 iterations beside its prediction"
for f in "$S"/jobs/*.out; do echo "--- $f"; cat "$f"; done
finish
