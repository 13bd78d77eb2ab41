#!/usr/bin/env bash
# swarm run against GNU parallel on this machine (issue 28's speed targets: at most 1.5x
# parallel's wall and CPU time, with one slot and with four; nothing quadratic: 1,000 tasks
# cost at most 1.2x a task what 200 do):
#   - A: GNU parallel (-j1, -j4) running lib/parallel-task.sh for BENCH_TASKS tasks, the
#     required work of a task done by hand (the task's branch from the base in a worktree kept
#     per slot, {%}; the agent, a command that does nothing; a commit), then lib/merge-order.sh
#     (each branch merged onto the base and those before it: git merge-tree --write-tree and
#     git commit-tree);
#   - B: swarm run on a manifest of the same tasks (agent /bin/true, --max-parallel 1 and 4,
#     --forge none);
#   - C: GNU parallel running the bare command (/bin/true) as often;
#   - swarm run on BENCH_BIG tasks (four slots) against BENCH_TASKS: the cost per task.
# A and B are alternated (their order swapped each round), each on a fresh repository, for
# BENCH_ROUNDS rounds; the figures are the medians. The wall time is the command's; the CPU
# time is user + system of every process it started, detached ones included (lib/childtime:
# swarm run's supervisors are detached, parallel's jobs are its children).
# GNU parallel is installed here when missing (as root, with apt-get).
#
#   scripts/bench/swarm-run-parallel.sh
#
# Environment: BENCH_TASKS (200), BENCH_ROUNDS (3), BENCH_SLOTS ("1 4"), BENCH_BIG (1000; 0:
# no scaling run), BENCH_BIG_ROUNDS (1), SWARM_BIN=PATH (another swarm build instead of the
# tree's), SWARM_BIN_BEFORE=PATH (a second build, run in each round too, in turn with the other
# two: before and after a change, each as a ratio to parallel measured in the same run).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
tasks=${BENCH_TASKS:-200}
rounds=${BENCH_ROUNDS:-3}
slots_list=${BENCH_SLOTS:-1 4}
big=${BENCH_BIG:-1000}
big_rounds=${BENCH_BIG_ROUNDS:-1}
lib=$root/scripts/bench/lib
# shellcheck source=lib/need-parallel.sh
. "$lib/need-parallel.sh"
if ! have_parallel; then
	exit 0
fi
go=${GO:-go}
command -v "$go" >/dev/null || go=/usr/local/go/bin/go
work=$(mktemp -d "${TMPDIR:-/tmp}/swarm-run-parallel.XXXXXX")
trap 'rm -rf "$work"' EXIT
"$go" build -o "$work/childtime" ./scripts/bench/lib/childtime
swarm=${SWARM_BIN:-}
if [[ -z $swarm ]]; then
	"$go" build -o "$work/swarm" ./cmd/swarm
	swarm=$work/swarm
fi
echo '{"true": {"command": "/bin/true", "terminal": false}}' >"$work/agents.json"
export CONFIG_FILE=$work/agents.json GIT_TERMINAL_PROMPT=0

# newrepo DIR N: a repository with a base commit of a few files, and a manifest of N tasks.
newrepo() {
	local dir=$1 n=$2 i
	mkdir -p "$dir"
	git -C "$dir" init -q -b main
	git -C "$dir" config user.name bench
	git -C "$dir" config user.email bench@example.com
	for i in $(seq 1 20); do echo "file $i" >"$dir/f$i.txt"; done
	git -C "$dir" add -A
	git -C "$dir" commit -q -m base
	{
		echo "name: bench"
		echo "defaults: {agent: true}"
		echo "tasks:"
		for ((i = 0; i < n; i++)); do echo "  - {id: t$i, prompt: nothing, branch: b$i}"; done
	} >"$dir.yaml"
}

# timed NAME CMD...: runs CMD under childtime and prints "NAME WALL CPU" (seconds).
timed() {
	local name=$1 out
	shift
	out=$("$work/childtime" "$@" 2>&1 >/dev/null) || {
		echo "$name failed: $out" >&2
		exit 1
	}
	awk -v name="$name" '/^childtime: / { printf "%s %s %.3f\n", name, $2, $3 + $4 }' <<<"$out"
}

run_parallel() { # SLOTS N
	local dir=$work/p$RANDOM$RANDOM base
	newrepo "$dir" "$2"
	base=$(git -C "$dir" rev-parse HEAD)
	mkdir -p "$dir.slots"
	timed "parallel-script-$1-$2" bash -c 'parallel -j"$1" "$2/parallel-task.sh" "$3" "$4" {%} {} "$5" ::: $(seq 0 $(($6 - 1))) && "$2/merge-order.sh" "$3" "$5" "$6"' \
		_ "$1" "$lib" "$dir" "$dir.slots" "$base" "$2"
	rm -rf "$dir" "$dir.slots" "$dir.yaml"
}

run_swarm() { # SLOTS N [BINARY NAME]
	local dir=$work/s$RANDOM$RANDOM bin=${3:-$swarm} name=${4:-swarm}
	newrepo "$dir" "$2"
	timed "$name-$1-$2" bash -c 'cd "$1" && "$2" run "$1.yaml" --max-parallel "$3" --forge none --state-dir "$1.state"' _ "$dir" "$bin" "$1"
	rm -rf "$dir" "$dir.state" "$dir.yaml"
}
before=${SWARM_BIN_BEFORE:-}
run_before() { # SLOTS N
	if [[ -n $before ]]; then run_swarm "$1" "$2" "$before" swarm-before; fi
}

run_bare() { # SLOTS N
	timed "parallel-bare-$1-$2" bash -c 'parallel -j"$1" /bin/true ::: $(seq 1 "$2")' _ "$1" "$2"
}

results=$work/results
for ((round = 0; round < rounds; round++)); do
	for s in $slots_list; do
		if ((round % 2 == 0)); then
			run_parallel "$s" "$tasks" >>"$results"
			run_swarm "$s" "$tasks" >>"$results"
			run_before "$s" "$tasks" >>"$results"
		else
			run_before "$s" "$tasks" >>"$results"
			run_swarm "$s" "$tasks" >>"$results"
			run_parallel "$s" "$tasks" >>"$results"
		fi
		run_bare "$s" "$tasks" >>"$results"
	done
done
if ((big > 0)); then
	for ((round = 0; round < big_rounds; round++)); do
		run_swarm 4 "$big" >>"$results"
		run_swarm 4 "$tasks" >>"$results"
		if [[ -n $before ]]; then
			run_before 4 "$big" >>"$results"
			run_before 4 "$tasks" >>"$results"
		fi
	done
fi

# median NAME FIELD: the median of a figure (2: wall, 3: CPU) of NAME's runs.
median() {
	awk -v name="$1" -v f="$2" '$1 == name { print $f }' "$results" | sort -n |
		awk '{ v[NR] = $1 } END { if (NR == 0) print "nan"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
pertask() { awk -v v="$1" -v n="$2" 'BEGIN { printf "%.1f", v * 1000 / n }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2fx", a / b; else print "-" }'; }

echo "swarm run ($swarm) against GNU parallel, $tasks do-nothing tasks, medians of $rounds alternated rounds,"
echo "$(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); ms per task (wall; CPU: user + system of every process):"
printf '  %-5s %-42s %8s %8s\n' slots what wall CPU
for s in $slots_list; do
	pw=$(median "parallel-script-$s-$tasks" 2) pc=$(median "parallel-script-$s-$tasks" 3)
	sw=$(median "swarm-$s-$tasks" 2) sc=$(median "swarm-$s-$tasks" 3)
	bw=$(median "parallel-bare-$s-$tasks" 2) bc=$(median "parallel-bare-$s-$tasks" 3)
	printf '  %-5s %-42s %8s %8s\n' "$s" "GNU parallel, the script (by hand)" "$(pertask "$pw" "$tasks")" "$(pertask "$pc" "$tasks")"
	printf '  %-5s %-42s %8s %8s\n' "$s" "swarm run" "$(pertask "$sw" "$tasks")" "$(pertask "$sc" "$tasks")"
	printf '  %-5s %-42s %8s %8s   (target: at most 1.5x)\n' "$s" "  swarm run / parallel with the script" "$(ratio "$sw" "$pw")" "$(ratio "$sc" "$pc")"
	if [[ -n $before ]]; then
		xw=$(median "swarm-before-$s-$tasks" 2) xc=$(median "swarm-before-$s-$tasks" 3)
		printf '  %-5s %-42s %8s %8s\n' "$s" "swarm run, SWARM_BIN_BEFORE" "$(pertask "$xw" "$tasks")" "$(pertask "$xc" "$tasks")"
		printf '  %-5s %-42s %8s %8s\n' "$s" "  before / parallel with the script" "$(ratio "$xw" "$pw")" "$(ratio "$xc" "$pc")"
	fi
	printf '  %-5s %-42s %8s %8s\n' "$s" "GNU parallel, the bare command" "$(pertask "$bw" "$tasks")" "$(pertask "$bc" "$tasks")"
	printf '  %-5s %-42s %8s %8s\n' "$s" "  swarm run / parallel with the bare command" "$(ratio "$sw" "$bw")" "$(ratio "$sc" "$bc")"
done
if ((big > 0)); then
	gw=$(median "swarm-4-$big" 2) gc=$(median "swarm-4-$big" 3)
	hw=$(median "swarm-4-$tasks" 2) hc=$(median "swarm-4-$tasks" 3)
	printf '  %-5s %-42s %8s %8s\n' 4 "swarm run, $big tasks" "$(pertask "$gw" "$big")" "$(pertask "$gc" "$big")"
	printf '  %-5s %-42s %8s %8s   (target: at most 1.2x)\n' 4 "  a task at $big / a task at $tasks" \
		"$(awk -v a="$gw" -v b="$hw" -v n="$big" -v m="$tasks" 'BEGIN { printf "%.2fx", (a / n) / (b / m) }')" \
		"$(awk -v a="$gc" -v b="$hc" -v n="$big" -v m="$tasks" 'BEGIN { printf "%.2fx", (a / n) / (b / m) }')"
	if [[ -n $before ]]; then
		gw=$(median "swarm-before-4-$big" 2) gc=$(median "swarm-before-4-$big" 3)
		hw=$(median "swarm-before-4-$tasks" 2) hc=$(median "swarm-before-4-$tasks" 3)
		printf '  %-5s %-42s %8s %8s\n' 4 "  before: a task at $big / a task at $tasks" \
			"$(awk -v a="$gw" -v b="$hw" -v n="$big" -v m="$tasks" 'BEGIN { printf "%.2fx", (a / n) / (b / m) }')" \
			"$(awk -v a="$gc" -v b="$hc" -v n="$big" -v m="$tasks" 'BEGIN { printf "%.2fx", (a / n) / (b / m) }')"
	fi
fi
