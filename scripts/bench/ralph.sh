#!/usr/bin/env bash
# Times swarm's ralph loops (ralph spawn|status) against the Python swarm's (mtomcal/swarm's
# swarm.py, from ../.mirror) on this machine, with the same agent, and prints ratios. Targets
# (issue 11): between the end of one iteration and the start of the next under 1 s (the agent's
# exit to the next agent's start: the Python monitor polled every 2 s); `ralph status` under
# 50 ms. A target missed is reported, never failed on. Then the go test benchmarks.
#
#   scripts/bench/ralph.sh     BENCH_RUNS=N status runs (median, default 9)
#                              BENCH_ITER=N iterations timed (default 8; the Python swarm's
#                              first one waits 10 s for its pre-flight check)
#
# The Python tool is skipped, with a line saying so, when python3 or the mirror is absent.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
runs=${BENCH_RUNS:-9}
iters=${BENCH_ITER:-8}
tmp=$(mktemp -d /tmp/ralphbench.XXXXXX)
export TMUX_TMPDIR=$tmp/tmux TMUX= STATE_DIR=
mkdir -p "$TMUX_TMPDIR"
cleanup() {
  SWARM_DIR=$tmp/ours "$tmp/ralph" stop gap >/dev/null 2>&1 || true
  SWARM_DIR=$tmp/ours "$tmp/ralph" stop st >/dev/null 2>&1 || true
  if [ -n "${py:-}" ]; then
    for n in gap st; do
      pid=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1])).get('monitor_pid') or '')" "$tmp/py/ralph/$n/state.json" 2>/dev/null || true)
      [ -n "$pid" ] && kill "$pid" 2>/dev/null || true
    done
  fi
  for s in "$TMUX_TMPDIR"/tmux-*/*; do [ -S "$s" ] && tmux -S "$s" kill-server 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT
go build -o "$tmp/ralph" ./cmd/ralph
py=""
mirror=$root/../.mirror/mtomcal+swarm/repo
if command -v python3 >/dev/null && git -C "$mirror" show HEAD:swarm.py >"$tmp/swarm.py" 2>/dev/null; then
  py=$tmp/swarm.py
else
  echo "python swarm: skipped (python3 or $mirror missing)"
fi

# The agent: notes its start and its exit (ns), shows a line both tools take for "ready",
# reads the prompt, works a second (the Python swarm presses Enter half a second after typing a
# prompt with a newline: an agent gone by then fails its spawn) and exits.
cat >"$tmp/agent.sh" <<'SH'
#!/bin/sh
date +%s%N >> "$1/starts"
echo "bypass permissions on"
printf '> '
IFS= read -r line
sleep 1
date +%s%N >> "$1/exits"
exit 0
SH
echo "next" >"$tmp/PROMPT.md"

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a > 0) printf "%.1fx", b / a; else print "n/a" }'; }
report() { # what ours python target
  local line
  line=$(printf '%-40s ours %8s ms' "$1" "$2")
  if [ -n "$3" ]; then line+=$(printf '   python %8s ms   python/ours %s' "$3" "$(ratio "$2" "$3")"); fi
  awk -v o="$2" -v t="$4" 'BEGIN { exit !(o < t) }' && line+="   (target < $4 ms: met)" || line+="   (target < $4 ms: MISSED)"
  echo "$line"
}
# gaps DIR N: waits for N exits in DIR, then prints the median and max exit-to-next-start, ms.
gaps() {
  local dir=$1 n=$2 deadline
  deadline=$(( $(date +%s) + 60 + $2 * 6 ))
  while [ "$(cat "$dir/exits" 2>/dev/null | wc -l)" -lt "$n" ]; do
    [ "$(date +%s)" -gt "$deadline" ] && { echo "timeout timeout"; return; }
    sleep 0.2
  done
  paste <(tail -n +2 "$dir/starts") "$dir/exits" | awk 'NF == 2 { print ($1 - $2) / 1e6 }' | sort -n |
    awk '{a[NR]=$1} END { printf "%.1f %.1f\n", a[int((NR+1)/2)], a[NR] }'
}

mkdir -p "$tmp/ours/g" "$tmp/py/g"
# --no-progress 0: the agent changes nothing, and the breaker (issue 19) would end the loop
# after 3 iterations; the Python swarm has no breaker.
SWARM_DIR=$tmp/ours "$tmp/ralph" spawn --name gap --prompt-file "$tmp/PROMPT.md" --no-worktree --no-progress 0 \
  --max-iterations $((iters + 1)) -- sh "$tmp/agent.sh" "$tmp/ours/g" >/dev/null
read -r ours oursmax < <(gaps "$tmp/ours/g" $((iters + 1)))
pyt=""; pymax=""
if [ -n "$py" ]; then
  # The Python swarm starts its monitor as ./swarm.py relative to the current directory.
  (cd "$tmp" && SWARM_DIR=$tmp/py python3 swarm.py ralph spawn --name gap --prompt-file "$tmp/PROMPT.md" --no-worktree \
    --max-iterations $((iters + 1)) -- sh "$tmp/agent.sh" "$tmp/py/g" >/dev/null)
  read -r pyt pymax < <(gaps "$tmp/py/g" $((iters + 1)))
fi
report "iteration end to next start (median)" "$ours" "$pyt" 1000
report "iteration end to next start (max)" "$oursmax" "$pymax" 1000

# status of a loop whose agent runs (idle after the prompt).
cat >"$tmp/idle.sh" <<'SH'
#!/bin/sh
echo "bypass permissions on"
printf '> '
IFS= read -r line
exec sleep 600
SH
SWARM_DIR=$tmp/ours "$tmp/ralph" spawn --name st --prompt-file "$tmp/PROMPT.md" --no-worktree -- sh "$tmp/idle.sh" >/dev/null
now() { date +%s%N; }
median_ms() {
  local ts=() i t0
  for ((i = 0; i < runs; i++)); do
    t0=$(now); "$@" >/dev/null 2>&1 || true; ts+=($(( $(now) - t0 )))
  done
  printf '%s\n' "${ts[@]}" | sort -n | awk '{a[NR]=$1} END {printf "%.1f", a[int((NR+1)/2)]/1e6}'
}
ours=$(SWARM_DIR=$tmp/ours median_ms "$tmp/ralph" status st)
pyt=""
if [ -n "$py" ]; then
  (cd "$tmp" && SWARM_DIR=$tmp/py python3 swarm.py ralph spawn --name st --prompt-file "$tmp/PROMPT.md" --no-worktree \
    --no-run -- sh "$tmp/idle.sh" >/dev/null)
  pyt=$(SWARM_DIR=$tmp/py median_ms python3 "$py" ralph status st)
fi
report "ralph status" "$ours" "$pyt" 50

go test -run '^$' -bench 'BenchmarkIterationGap|BenchmarkStatus' -benchtime 10x ./cmd/ralph | grep -E '^Benchmark'
