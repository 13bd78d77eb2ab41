#!/usr/bin/env bash
# The merge order done by hand, after the tasks of the swarm run comparison
# (scripts/bench/swarm-run-parallel.sh): each task's branch merged onto the base and the
# branches before it, as swarm run checks its suggested merge order.
#
#   merge-order.sh REPO BASE_SHA TASKS
set -euo pipefail
repo=$1 cur=$2 tasks=$3
for ((i = 0; i < tasks; i++)); do
	tree=$(git -C "$repo" merge-tree --write-tree "$cur" "refs/heads/b$i")
	cur=$(git -C "$repo" commit-tree "$tree" -p "$cur" -p "refs/heads/b$i" -m "merge b$i")
done
