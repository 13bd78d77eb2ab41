#!/usr/bin/env bash
# Times swarm run's own overhead per task (issue 18's target: under 20 ms): BENCH_TASKS
# independent tasks of an agent that does nothing (/bin/true) on one local slot and on four, each a
# worktree, a dispatched attempt (records, supervisor) and a commit; the time per task less
# the agent's own (/bin/true started as often), and the parallel_speedup the run reports.
#
#   scripts/bench/swarm-run.sh
#
# Environment: BENCH_TASKS=N tasks (default 100).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
tasks=${BENCH_TASKS:-100}
go test -count=1 -run '^$' -bench '^BenchmarkRunOverhead$' -benchtime "${tasks}x" ./internal/swarmrun | grep -E '^Benchmark|^ok|FAIL'
