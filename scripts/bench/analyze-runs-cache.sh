#!/usr/bin/env bash
# The figures of issue 22, side by side in one run, as ratios:
#   1. 100,000 pairs, --json: this checkout against eff6891 (the commit before the hostile-input
#      bounds), A/B in alternation, medians; target ratio <= 1.0 (and under 2 s when quiet);
#   2. 1,000,000 pairs with 1% new since the last run: a run through the cache against a full
#      run (--no-cache), medians; target under 1 s with the cache. The new names (genrecords
#      -start) sort after the old ones, as a counter's do: every old chunk of the cache is
#      unchanged and added as its totals (docs/analyze-runs.md, the fourth round, has the case
#      of new names scattered among the old);
#   3. a cold 1,000,000-pair run (no cache yet: it is built): target under 20 s and 300 MB.
#
#   scripts/bench/analyze-runs-cache.sh
#
# Environment:
#   BENCH_DIR=DIR        where the record sets go (default: a temporary directory); sets already
#                        there are reused (scripts/bench/analyze-runs.sh makes the same ones).
#   BENCH_RUNS=N         runs of each side for the medians (default 5).
#   BENCH_LARGE=N        the large set's pairs (default 1000000; about 9 KB of disk a pair).
#   BENCH_BASE=REV       the commit to compare with in 1. (default eff6891).
# Not a test: a missed target is reported, not failed on. The load average is printed: on a
# shared machine the ratios (same conditions, alternated) mean more than the wall times.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
runs=${BENCH_RUNS:-5}
large=${BENCH_LARGE:-1000000}
base=${BENCH_BASE:-eff6891}
export SOURCE_DATE_EPOCH=1771243200 # the same report bytes in every run
say() { echo "$@" >&2; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/analyze-runs-cache-bench.XXXXXX")
cleanup() {
	git -C "$root" worktree remove --force "$tmp/base" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
data=${BENCH_DIR:-$tmp/data}
mkdir -p "$data"

say "building this checkout, $base and genrecords"
go build -o "$tmp/new" ./cmd/analyze-runs
go build -o "$tmp/genrecords" ./tools/genrecords
git worktree add --detach "$tmp/base" "$base" >/dev/null 2>&1
(cd "$tmp/base" && go build -o "$tmp/old" ./cmd/analyze-runs)

set_dir() { echo "$data/pairs-$1-seed1/state"; }
gen() {
	local dir
	dir=$(set_dir "$1")
	if [[ ! -f $dir/.complete ]]; then
		say "generating $1 pairs into $dir (not timed)"
		rm -rf "$dir"
		"$tmp/genrecords" -n "$1" -seed 1 -out "$dir" >&2
		touch "$dir/.complete"
	fi
}

# run CMD...: wall ms, CPU s and peak KiB of one run into r_ms, r_cpu, r_kb.
run() {
	local s e
	s=$(date +%s%N)
	/usr/bin/time -f '%U %S %M' -o "$tmp/time" "$@" >"$tmp/out" 2>"$tmp/err" || { say "$* failed:"; tail -5 "$tmp/err" >&2; exit 1; }
	e=$(date +%s%N)
	r_ms=$(((e - s) / 1000000))
	read -r r_cpu r_kb < <(awk '{ printf "%.2f %d\n", $1 + $2, $3 }' "$tmp/time")
}
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }

echo "analyze-runs cache bench ($(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg), $runs runs a side)"

# ---- 1. 100,000 pairs --json against the base -----------------------------------------------
gen 100000
set100k=$(set_dir 100000)
run "$tmp/old" --json --state-dir "$set100k" # warm-up, both
run "$tmp/new" --json --state-dir "$set100k"
: >"$tmp/a"
: >"$tmp/b"
for ((i = 0; i < runs; i++)); do
	run "$tmp/old" --json --state-dir "$set100k"
	echo "$r_ms $r_cpu $r_kb" >>"$tmp/a"
	run "$tmp/new" --json --state-dir "$set100k"
	echo "$r_ms $r_cpu $r_kb" >>"$tmp/b"
done
a_ms=$(cut -d' ' -f1 "$tmp/a" | median) b_ms=$(cut -d' ' -f1 "$tmp/b" | median)
a_cpu=$(cut -d' ' -f2 "$tmp/a" | median) b_cpu=$(cut -d' ' -f2 "$tmp/b" | median)
echo
echo "1. 100,000 pairs --json, medians: $base $a_ms ms ($a_cpu s CPU), this $b_ms ms ($b_cpu s CPU)"
echo "   ratio this/$base: wall $(ratio "$b_ms" "$a_ms"), CPU $(ratio "$b_cpu" "$a_cpu") (target <= 1.0; under 2 s on a quiet machine)"

# ---- 3. cold 1,000,000 (before 2., which needs the cache this builds) ------------------------
gen "$large"
setL=$(set_dir "$large")
rm -rf "$setL/cache"
run "$tmp/new" --state-dir "$setL"
echo
echo "3. $large pairs cold (the cache built): $r_ms ms, $r_cpu s CPU, peak $((r_kb / 1024)) MiB (target < 20 s, < 300 MB)"

# ---- 2. 1,000,000 with 1% new: through the cache against a full run --------------------------
new=$((large / 100))
: >"$tmp/c"
: >"$tmp/f"
for ((i = 0; i < runs; i++)); do
	# The last run's cache is up to date; 1% new pairs arrive; the cached run reads them.
	"$tmp/genrecords" -start "$large" -n "$new" -seed $((i + 2)) -out "$setL" >&2
	run "$tmp/new" --state-dir "$setL"
	echo "$r_ms $r_cpu $r_kb" >>"$tmp/c"
	cp "$tmp/out" "$tmp/cached.txt"
	run "$tmp/new" --no-cache --state-dir "$setL"
	echo "$r_ms $r_cpu" >>"$tmp/f"
	cmp -s "$tmp/out" "$tmp/cached.txt" || { say "the cached report differs from the full one"; exit 1; }
	# Back to the large set alone, and a cache of it (not timed).
	find "$setL/runs" "$setL/results" -name 'bd-*.json' -newer "$setL/.complete" -delete
	"$tmp/new" --state-dir "$setL" >/dev/null
done
c_ms=$(cut -d' ' -f1 "$tmp/c" | median) f_ms=$(cut -d' ' -f1 "$tmp/f" | median)
echo
echo "2. $large pairs + $new new, medians: through the cache $c_ms ms ($(cut -d' ' -f2 "$tmp/c" | median) s CPU, peak $(($(cut -d' ' -f3 "$tmp/c" | median) / 1024)) MiB), full $f_ms ms ($(cut -d' ' -f2 "$tmp/f" | median) s CPU)"
echo "   ratio cached/full: $(ratio "$c_ms" "$f_ms") (target: under 1 s with the cache; peak under 300 MB)"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
