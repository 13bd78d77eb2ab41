#!/usr/bin/env bash
# Times analyze-runs on generated state directories of 100, 1,000, 100,000 and 1,000,000 run and
# result pairs and says whether the targets are met:
#   - 100 pairs in under 25 ms (20x analyze-runs.sh, which took about 0.5 s for 100 pairs on this
#     kind of machine and died at about 150: it cannot be run for a comparison at scale);
#   - 100,000 pairs in under 2 s;
#   - 1,000,000 pairs in under 20 s with peak memory under 300 MB.
#
#   scripts/bench/analyze-runs.sh
#
# Environment:
#   BENCH_DIR=DIR      where the record sets go (default: a temporary directory). Sets already
#                      generated there are reused; a BENCH_DIR you give is never deleted.
#   BENCH_KEEP=1       keep the temporary directory and print where it is.
#   BENCH_PAIRS="..."  the set sizes (default "100 1000 100000 1000000").
#   BENCH_RUNS=N       timed runs per set below 1,000,000 pairs, the median is reported
#                      (default 5); larger sets are timed once (BENCH_RUNS_LARGE, default 1).
#   BENCH_FLOOR=0      skip the "cat floor" (the time to merely read every file with cat).
#   BENCH_GO=0         skip the Go benchmarks of internal/report (scan, --json path, aggregation).
#
# 1,000,000 pairs are 2,000,000 files, about 8 GB on ext4 (one 4 KiB block each): the script
# checks the free space first and scales the largest set down, saying so, when it is short.
# Generation is not timed. Each set is read once before it is timed (a warm page cache, as for a
# cron job that runs often); a set larger than the page cache stays cold whatever is done, and
# the "cat floor" column shows what merely reading its files costs, to tell I/O from our work.
# Wall time is measured with date +%s%N; peak RSS and CPU time (user + system; above the wall
# time when both cores work) come from GNU time when there is one. The exit
# status is 0 unless something could not be run (a missed target is reported, not failed on).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"

read -r -a sizes <<<"${BENCH_PAIRS:-100 1000 100000 1000000}"
runs=${BENCH_RUNS:-5}
runs_large=${BENCH_RUNS_LARGE:-1}
cores=$(nproc 2>/dev/null || getconf _NPROCESSORS_ONLN)
load_before=$(cut -d' ' -f1 /proc/loadavg 2>/dev/null || true)
original_100=0.5 # seconds analyze-runs.sh took for 100 pairs, from the issue

say() { echo "$@" >&2; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/analyze-runs-bench.XXXXXX")
cleanup() {
	if [[ ${BENCH_KEEP:-0} == 1 ]]; then
		say "kept $tmp"
	else
		rm -rf "$tmp"
	fi
}
trap cleanup EXIT
data=${BENCH_DIR:-$tmp/data}
mkdir -p "$data"
data=$(cd "$data" && pwd)

# ---- build, check the space, generate (not timed) -------------------------------------------

say "building bin/analyze-runs and genrecords"
go build -o bin/ ./cmd/analyze-runs
ar=$root/bin/analyze-runs
go build -o "$tmp/genrecords" ./tools/genrecords

# bytes_per_pair is what a pair of generated records takes on disk: two files of about 1 KB,
# each in its own 4 KiB block, plus directory entries and inodes.
bytes_per_pair=9000
set_dir() { echo "$data/pairs-$1-seed1/state"; }
need=0
for n in "${sizes[@]}"; do
	[[ -f $(set_dir "$n")/.complete ]] || need=$((need + n * bytes_per_pair))
done
free=$(($(df -Pk "$data" | awk 'NR == 2 {print $4}') * 1024))
if ((need > free * 9 / 10)); then
	largest=${sizes[-1]}
	while ((largest > 1000 && need > free * 9 / 10)); do
		need=$((need - largest * bytes_per_pair))
		largest=$((largest / 10))
		need=$((need + largest * bytes_per_pair))
	done
	echo "NOTE: $(awk -v b="$free" 'BEGIN { printf "%.1f GB", b / 1e9 }') free under $data is not enough for ${sizes[-1]} pairs (about $(awk -v b="$((${sizes[-1]} * bytes_per_pair))" 'BEGIN { printf "%.1f GB", b / 1e9 }')); timing $largest pairs instead. Point BENCH_DIR at a bigger disk for the full run."
	sizes[-1]=$largest
fi

gen() {
	local n=$1 dir
	dir=$(set_dir "$n")
	if [[ ! -f $dir/.complete ]]; then
		say "generating $n pairs into $dir (not timed)"
		rm -rf "$dir"
		"$tmp/genrecords" -n "$n" -seed 1 -out "$dir" >&2
		touch "$dir/.complete"
	fi
}
for n in "${sizes[@]}"; do gen "$n"; done

# ---- timing ----------------------------------------------------------------------------------

gnu_time=""
if [[ -x /usr/bin/time ]] && /usr/bin/time -f %M -o /dev/null true 2>/dev/null; then
	gnu_time=/usr/bin/time
fi

# timed CMD...: runs CMD with stdout to $tmp/out and stderr to $tmp/err; sets t_ns (wall clock),
# t_kb (peak RSS in KiB) and t_cpu (user + system seconds), "" when unknown; exits the script
# when CMD fails.
timed() {
	local start end rc=0
	start=$(date +%s%N)
	if [[ -n $gnu_time ]]; then
		"$gnu_time" -f '%M %U %S' -o "$tmp/rss" "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
	else
		"$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
	fi
	end=$(date +%s%N)
	if ((rc != 0)); then
		say "$* failed (exit $rc):"
		tail -n5 "$tmp/err" >&2
		exit 1
	fi
	t_ns=$((end - start))
	t_kb="" t_cpu=""
	[[ -n $gnu_time ]] && read -r t_kb t_cpu < <(tail -n1 "$tmp/rss" | awk '{ printf "%s %.2f\n", $1, $2 + $3 }')
	return 0
}

# measure N CMD...: a warm-up run, then N timed runs; sets m_ns and m_cpu (of the median run)
# and m_kb (max).
measure() {
	local n=$1 i times=() kb=""
	shift
	timed "$@"
	for ((i = 0; i < n; i++)); do
		timed "$@"
		times+=("$t_ns ${t_cpu:--}")
		if [[ -n $t_kb && (-z $kb || $t_kb -gt $kb) ]]; then kb=$t_kb; fi
	done
	read -r m_ns m_cpu < <(printf '%s\n' "${times[@]}" | sort -n | sed -n "$(((n + 1) / 2))p")
	m_kb=$kb
}

# floor SET: the time cat takes to read every record file of SET, in parallel (once, warm).
floor() {
	local set=$1 start end
	cat_all() { (cd "$set" && find runs results -name '*.json' -print0 | xargs -0 -P "$((cores * 4))" -n 2000 cat >/dev/null); }
	cat_all
	start=$(date +%s%N)
	cat_all
	end=$(date +%s%N)
	f_ns=$((end - start))
}

# ---- report ----------------------------------------------------------------------------------

secs() { awk -v ns="$1" 'BEGIN { s = ns / 1e9; if (s < 0.1) printf "%.1f ms", s * 1000; else if (s < 10) printf "%.2f s", s; else printf "%.1f s", s }'; }
rate() { awk -v n="$1" -v ns="$2" 'BEGIN { printf "%.0f", n / (ns / 1e9) }'; }
mb() { if [[ -n $1 ]]; then awk -v kb="$1" 'BEGIN { printf "%.0f MB", kb / 1024 }'; else echo n/a; fi; }
fmt='%-9s %-9s %-10s %-9s %-10s %-9s %-11s %s\n'

echo
echo "analyze-runs bench ($cores cores, median of $runs runs after a warm-up; sets of 1,000,000+ pairs: $runs_large run)"
if [[ -n $load_before ]]; then
	echo "load average before the bench: $load_before$(awk -v l="$load_before" -v c="$cores" 'BEGIN { if (l > c / 2) print " (the machine was busy: expect noisy timings)" }')"
fi
echo "data: tools/genrecords -seed 1 (10% legacy records); command: analyze-runs --state-dir SET (the text report)"
[[ -z $gnu_time ]] && echo "GNU time not found: peak RSS not measured"
printf "$fmt" pairs files wall "cpu" pairs/s "peak RSS" "cat floor" target
declare -A NS KB
for n in "${sizes[@]}"; do
	set=$(set_dir "$n")
	r=$runs
	((n >= 1000000)) && r=$runs_large
	say "timing analyze-runs on $n pairs"
	measure "$r" "$ar" --state-dir "$set"
	NS[$n]=$m_ns KB[$n]=$m_kb
	if ! grep -q "^  Total runs:     $n\$" "$tmp/out"; then
		say "analyze-runs counted $(sed -n 's/^  Total runs: *//p' "$tmp/out") runs in $n pairs"
		exit 1
	fi
	fl=-
	if [[ ${BENCH_FLOOR:-1} == 1 ]]; then
		say "timing cat on the $((2 * n)) files of $n pairs"
		floor "$set"
		fl=$(secs "$f_ns")
	fi
	tgt=""
	case $n in
	100) tgt="< 25 ms" ;;
	100000) tgt="< 2 s" ;;
	1000000) tgt="< 20 s, < 300 MB" ;;
	esac
	cpu=-
	[[ $m_cpu != - ]] && cpu="$m_cpu s"
	printf "$fmt" "$n" "$((2 * n))" "$(secs "$m_ns")" "$cpu" "$(rate "$n" "$m_ns")" "$(mb "$m_kb")" "$fl" "$tgt"
done

if [[ ${BENCH_FLOOR:-1} == 1 ]]; then
	echo "cat floor: cat reading every file of the set ($((cores * 4)) in parallel, after a warm-up): near or above the"
	echo "wall time, the run was bound by reading files (a set bigger than what the page cache keeps is read cold)"
fi

echo
target() { # LABEL OK
	if [[ $2 == 1 ]]; then echo "  met:     $1"; else echo "  NOT met: $1"; fi
}
echo "targets:"
if [[ -n ${NS[100]:-} ]]; then
	echo "  analyze-runs.sh on 100 pairs: about ${original_100} s (the issue's figure; the script cannot be run here)"
	target "100 pairs in under 25 ms: $(secs "${NS[100]}"), $(awk -v a="$original_100" -v ns="${NS[100]}" 'BEGIN { printf "%.0fx", a / (ns / 1e9) }') the original's speed" \
		"$(awk -v ns="${NS[100]}" 'BEGIN { print (ns < 25e6) }')"
fi
if [[ -n ${NS[100000]:-} ]]; then
	target "100,000 pairs in under 2 s: $(secs "${NS[100000]}")" "$(awk -v ns="${NS[100000]}" 'BEGIN { print (ns < 2e9) }')"
fi
if [[ -n ${NS[1000000]:-} ]]; then
	target "1,000,000 pairs in under 20 s: $(secs "${NS[1000000]}")" "$(awk -v ns="${NS[1000000]}" 'BEGIN { print (ns < 20e9) }')"
	if [[ -n ${KB[1000000]} ]]; then
		target "1,000,000 pairs in under 300 MB: $(mb "${KB[1000000]}")" "$(awk -v kb="${KB[1000000]}" 'BEGIN { print (kb < 300 * 1024) }')"
	fi
else
	echo "  (1,000,000 pairs not timed)"
fi

if [[ ${BENCH_GO:-1} == 1 ]]; then
	echo
	echo "go test -bench (internal/report, 2,000 pairs in a temporary directory):"
	go test -run '^$' -bench . -benchtime 10x ./internal/report/ 2>&1 | grep -E '^Benchmark' | sed 's/^/  /'
fi
