#!/usr/bin/env bash
# Times swarm run's own overhead per task (issue 18's target: under 20 ms) on BENCH_TASKS
# independent tasks of an agent that does nothing (/bin/true), each a worktree, a dispatched
# attempt (records, supervisor) and a commit:
#   - on this machine, one slot (a task's latency) and four (the throughput): the time per task
#     less the agent's own (/bin/true started as often), and the parallel_speedup the run
#     reports (BenchmarkRunOverhead);
#   - on three sshd hosts of the test lab (internal/testenv/sshlab, two agents each; needs root
#     for network namespaces and sshd, which `make sshd` installs; otherwise it skips with one
#     line), two rounds, each alternating: swarm run through each host's server (ms/task) and
#     with one ssh session a command (per-command-ms/task); GNU parallel doing a task's required
#     work by hand on the same hosts over one master a host
#     (internal/swarmrun/testdata/remote-task.sh: the branch pushed, the agent run in a
#     worktree kept per slot, committed, the branch fetched back; parallel-work-ms/task); and parallel --sshlogin --controlmaster running the bare
#     do-nothing command (parallel-M-ms/task); the ratios of the wall times
#     (BenchmarkRunHosts).
# GNU parallel is installed here when missing (as root, with apt-get). The side by side with
# GNU parallel running a task's required work by hand on this machine is
# scripts/bench/swarm-run-parallel.sh.
#
#   scripts/bench/swarm-run.sh
#
# Environment: BENCH_TASKS=N tasks (default 200).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
tasks=${BENCH_TASKS:-200}
# shellcheck source=lib/need-parallel.sh
. "$root/scripts/bench/lib/need-parallel.sh"
# The whole output is kept in a file: a failure's lines are shown (the tasks that did not
# complete, with their errors and log lines, prefixed "bench:"), and the file named.
out=$(mktemp "${TMPDIR:-/tmp}/swarm-run-bench.XXXXXX")
status=0
go test -count=1 -run '^$' -bench '^(BenchmarkRunOverhead|BenchmarkRunHosts)$' -benchtime "${tasks}x" -timeout 60m ./internal/swarmrun \
  >"$out" 2>&1 || status=$?
grep -E '^Benchmark|^ok|FAIL|_test\.go:|^\s*bench:|sshlab|parallel|^panic|signal|timed out' "$out" || true
if [ "$status" -ne 0 ]; then
  echo "swarm-run benchmark failed (exit $status); its whole output: $out"
  exit "$status"
fi
rm -f "$out"
