#!/bin/sh
# A stand-in forge: prints the URL of a pull request numbered after a counter in the
# worktree's git directory, as gh pr create prints it.
n=$(( $(printf '%s' "$SWARM_TASK_ID" | tr -dc '0-9' | sed 's/^0*//') + 100 ))
echo "Creating pull request for $SWARM_PR_BRANCH into $SWARM_PR_BASE"
echo "https://github.example/org/repo/pull/$n"
