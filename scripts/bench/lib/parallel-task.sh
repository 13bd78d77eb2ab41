#!/usr/bin/env bash
# One task's required work done by hand, as GNU parallel runs it in the swarm run comparison
# (scripts/bench/swarm-run-parallel.sh): the task's branch made from the base in the worktree
# its slot keeps, the agent (a command that does nothing), the task's commit.
#
#   parallel-task.sh REPO SLOTS_DIR SLOT TASK BASE_SHA
set -euo pipefail
repo=$1 slots=$2 slot=$3 task=$4 base=$5
wt=$slots/$slot
if [[ ! -e $wt/.git ]]; then
	# A slot's first task makes its worktree; git worktree add must not run twice at once.
	flock "$slots/.lock" git -C "$repo" worktree add --quiet --detach "$wt" "$base"
fi
git -C "$wt" checkout --quiet -B "b$task" "$base"
/bin/true
git -C "$wt" -c maintenance.auto=false -c gc.auto=0 commit --quiet --allow-empty -m "t$task: nothing"
