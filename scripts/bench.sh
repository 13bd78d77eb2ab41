#!/usr/bin/env bash
# Runs every benchmark script in scripts/bench/: each compares one tool with the one it replaces
# on the same generated data and prints its figures. BENCH_DIR keeps generated data between runs.
set -euo pipefail
cd "$(dirname "$0")/.."
status=0
for bench in scripts/bench/*.sh; do
  [ -e "$bench" ] || continue
  echo "==> $bench"
  bash "$bench" || status=$?
  echo
done
exit "$status"
