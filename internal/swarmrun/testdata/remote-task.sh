#!/bin/sh
# One task of the side by side of swarm run over hosts (BenchmarkRunHosts, which make bench
# runs), as GNU parallel runs it on this machine: the required work of a task on a host done by hand, through
# one ssh connection per host kept open (ControlMaster, as parallel's --controlmaster):
#   the task's branch made from the base here and pushed to the host's clone, checked out in the
#   worktree kept for the job slot there (CLONE.slotSLOT, made before), the agent (/bin/true) run in it, what it left
#   committed, and the branch fetched back here.
#
#   remote-task.sh TASK SLOT      (parallel's {} and {%})
#
# Environment: BENCH_REPO (the local repository, its base branch main), BENCH_HOSTS (one
# DEST:CLONE a host, space separated; slot S runs on host (S-1) mod N), BENCH_SSH (the ssh
# command, its options included).
set -eu
task=$1 slot=$2
set -- $BENCH_HOSTS
h=$(( (slot - 1) % $# + 1 ))
eval "target=\${$h}"
dest=${target%%:*} clone=${target#*:}
branch=bench/p$task
git -C "$BENCH_REPO" branch -f "$branch" main
export GIT_SSH_COMMAND="$BENCH_SSH"
git -C "$BENCH_REPO" push -q "$dest:$clone" "refs/heads/$branch:refs/heads/$branch"
$BENCH_SSH "$dest" "set -e; cd $clone.slot$slot; git checkout -q $branch; /bin/true; git add -A; git -c user.name=bench -c user.email=bench@localhost commit -q --allow-empty -m $branch"
git -C "$BENCH_REPO" fetch -q --no-write-fetch-head "$dest:$clone" "+refs/heads/$branch:refs/remotes/bench/$branch"
