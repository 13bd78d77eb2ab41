#!/usr/bin/env bash
# Times swarm against the Python swarm (mtomcal/swarm's swarm.py, from ../.mirror) on the same
# machine and the same state, and prints ratios. Targets (issue 10): ls with 500 workers under
# 50 ms; send until the agent has the text under 50 ms; spawn to a running worker under 200 ms
# (the agent's own start excluded); start-up against the Python tool's (about 100 ms a
# command). A target missed is reported, never failed on. The same figures as Go benchmarks:
# go test -run '^$' -bench . ./cmd/swarm
#
#   scripts/bench/swarm.sh          BENCH_RUNS=N  timed runs per figure, median (default 5)
#
# The Python tool is skipped, with a line saying so, when python3 or the mirror is absent.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
runs=${BENCH_RUNS:-5}
tmp=$(mktemp -d /tmp/swarmbench.XXXXXX)
export TMUX_TMPDIR=$tmp/tmux TMUX=
mkdir -p "$TMUX_TMPDIR"
cleanup() {
  for s in "$TMUX_TMPDIR"/tmux-*/*; do [ -S "$s" ] && tmux -S "$s" kill-server 2>/dev/null || true; done
  SWARM_DIR=$tmp/ours "$tmp/swarm" kill --all >/dev/null 2>&1 || true
  rm -rf "$tmp"
}
trap cleanup EXIT
go build -o "$tmp/swarm" ./cmd/swarm
py=""
mirror=$root/../.mirror/mtomcal+swarm/repo
if command -v python3 >/dev/null && git -C "$mirror" show HEAD:swarm.py >"$tmp/swarm.py" 2>/dev/null; then
  py=$tmp/swarm.py
else
  echo "python swarm: skipped (python3 or $mirror missing)"
fi

now() { date +%s%N; }
# median_ms CMD...: the median wall time of runs runs, in ms with one decimal, after one run
# untimed (the first run of a binary or of python3 reads them from disk).
median_ms() {
  local ts=() run t0
  "$@" >/dev/null 2>&1 || true
  for ((run = 0; run < runs; run++)); do
    t0=$(now); "$@" >/dev/null 2>&1 || true; ts+=($(( $(now) - t0 )))
  done
  printf '%s\n' "${ts[@]}" | sort -n | awk '{a[NR]=$1} END {printf "%.1f", a[int((NR+1)/2)]/1e6}'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a > 0) printf "%.1fx", b / a; else print "n/a" }'; }
report() { # what ours python target
  local line
  line=$(printf '%-34s ours %7s ms' "$1" "$2")
  if [ -n "$3" ]; then line+=$(printf '   python %7s ms   python/ours %s' "$3" "$(ratio "$2" "$3")"); fi
  awk -v o="$2" -v t="$4" 'BEGIN { exit !(o < t) }' && line+="   (target < $4 ms: met)" || line+="   (target < $4 ms: MISSED)"
  echo "$line"
}

# Start-up: a command that reads an empty swarm directory (ls), the cost of every command.
mkdir -p "$tmp/empty-ours" "$tmp/empty-py"
ours=$(SWARM_DIR=$tmp/empty-ours median_ms "$tmp/swarm" ls)
pyt=""; [ -n "$py" ] && pyt=$(SWARM_DIR=$tmp/empty-py median_ms python3 "$py" ls)
report "start-up (ls, no workers)" "$ours" "$pyt" 100

# ls with 500 workers: the same state.json (process workers whose pids are gone) for both.
for d in ours py; do
  mkdir -p "$tmp/$d"
  python3 - "$tmp/$d/state.json" <<'PY'
import json, sys
ws = [{"name": f"w{i}", "status": "stopped", "cmd": ["sleep", "1"], "started": "2026-01-01T00:00:00",
       "cwd": "/tmp", "env": {}, "tags": ["bench"], "tmux": None, "worktree": None, "pid": 4000000 + i,
       "metadata": {}} for i in range(500)]
json.dump({"workers": ws}, open(sys.argv[1], "w"), indent=2)
PY
done
ours=$(SWARM_DIR=$tmp/ours median_ms "$tmp/swarm" ls)
pyt=""; [ -n "$py" ] && pyt=$(SWARM_DIR=$tmp/py median_ms python3 "$py" ls)
report "ls, 500 workers" "$ours" "$pyt" 50

# spawn to a running worker (process mode; the agent is sleep).
rm -rf "$tmp/ours" "$tmp/py"; mkdir -p "$tmp/ours" "$tmp/py"
# Each spawn a new name: a file counts them (the functions run in $(...) subshells).
echo 0 >"$tmp/n"
next_name() { local n; n=$(($(cat "$tmp/n") + 1)); echo "$n" >"$tmp/n"; echo "s$n"; }
spawn_ours() { SWARM_DIR=$tmp/ours "$tmp/swarm" spawn --name "$(next_name)" -- sleep 600; }
spawn_py() { SWARM_DIR=$tmp/py python3 "$py" spawn --name "$(next_name)" -- sleep 600 </dev/null; }
ours=$(median_ms spawn_ours)
pyt=""; [ -n "$py" ] && pyt=$(median_ms spawn_py)
report "spawn to a running worker" "$ours" "$pyt" 200
SWARM_DIR=$tmp/ours "$tmp/swarm" kill --all >/dev/null 2>&1 || true
[ -n "$py" ] && SWARM_DIR=$tmp/py python3 "$py" kill --all >/dev/null 2>&1 || true

# send until the agent has the text: ours returns once the screen shows it (and Enter is
# pressed); the Python swarm's send returns after its send-keys and 0.1 s pause (tmux, cat).
SWARM_DIR=$tmp/ours "$tmp/swarm" spawn --name cat -- cat >/dev/null
sleep 0.3
ours=$(SWARM_DIR=$tmp/ours median_ms "$tmp/swarm" send cat "hello from the bench")
pyt=""
if [ -n "$py" ]; then
  SWARM_DIR=$tmp/py python3 "$py" spawn --tmux --tmux-socket b --name cat -- cat >/dev/null
  sleep 0.3
  pyt=$(SWARM_DIR=$tmp/py median_ms python3 "$py" send cat "hello from the bench")
fi
report "send until the agent has the text" "$ours" "$pyt" 50
