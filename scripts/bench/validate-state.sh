#!/usr/bin/env bash
# Times validate-state against ajv-cli 5 on the same generated state directories and the same
# JSON Schemas (2020-12), and says whether the targets are met:
#   - at least 10x ajv-cli's throughput at 10,000 files (and at 10,000 pairs = 20,000 files);
#   - 100,000 files in under 3 s (and 100,000 pairs = 200,000 files);
#   - peak memory flat in the number of files.
#
#   scripts/bench/validate-state.sh
#
# Environment:
#   BENCH_DIR=DIR      where the record sets go (default: a temporary directory). Sets already
#                      generated there are reused; a BENCH_DIR you give is never deleted.
#   BENCH_KEEP=1       keep the temporary directory (data, outputs) and print where it is.
#   BENCH_FULL=1       also time ajv-cli on 100,000 pairs (else its time is extrapolated).
#   BENCH_PAIRS="S L"  the two pair counts (default "10000 100000").
#   BENCH_RUNS=N       timed runs per measurement, the median is reported (default 3).
#   SCHEMA_DIR=DIR     the schemas (default: ../shared/compat/schemas, the users' schemas,
#                      else state/schemas).
#
# Generation is not timed. Wall time is measured with date +%s%N around the command; peak RSS
# comes from GNU time (/usr/bin/time) when there is one, else it is reported as n/a. The exit
# status is 0 unless something could not be run (a target missed is reported, not failed on).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"

read -r small large <<<"${BENCH_PAIRS:-10000 100000}"
runs=${BENCH_RUNS:-3}
check_pairs=500
invalid_pct=5
cores=$(nproc 2>/dev/null || getconf _NPROCESSORS_ONLN)

if [[ -z ${SCHEMA_DIR:-} ]]; then
	if [[ -f $root/../shared/compat/schemas/run.schema.json ]]; then
		SCHEMA_DIR=$root/../shared/compat/schemas
	else
		SCHEMA_DIR=$root/state/schemas
	fi
fi
schemas=$(cd "$SCHEMA_DIR" && pwd)

tmp=$(mktemp -d "${TMPDIR:-/tmp}/validate-state-bench.XXXXXX")
cleanup() {
	if [[ ${BENCH_KEEP:-0} == 1 ]]; then
		echo "kept $tmp" >&2
	else
		rm -rf "$tmp"
	fi
}
trap cleanup EXIT
data=${BENCH_DIR:-$tmp/data}
mkdir -p "$data"
data=$(cd "$data" && pwd)

say() { echo "$@" >&2; }

load_before=""
read -r load_before _ </proc/loadavg 2>/dev/null || true

# ---- build and generate (not timed) ---------------------------------------------------------

say "building bin/validate-state"
go build -o bin/ ./cmd/validate-state
vs=$root/bin/validate-state

# gen PAIRS: prints the directory of a set of PAIRS record pairs, generating it unless a complete
# one is there already.
gen() {
	local n=$1 dir=$data/pairs-$1-invalid$invalid_pct-seed1
	if [[ ! -f $dir/.complete ]]; then
		say "generating $n pairs into $dir (not timed)"
		rm -rf "$dir"
		go run ./tools/genrecords -n "$n" -invalid "$invalid_pct" -seed 1 -out "$dir" >&2
		touch "$dir/.complete"
	fi
	echo "$dir"
}
check_set=$(gen "$check_pairs")
one_set=$(gen 1)
small_set=$(gen "$small")
large_set=$(gen "$large")

# ---- ajv-cli ---------------------------------------------------------------------------------

ajv=""
ajv_note=""
cache=${XDG_CACHE_HOME:-$HOME/.cache}/agentfleet-bench/ajv
ajv_ok() { [[ -x $1/node_modules/.bin/ajv ]] && grep -q '"version": "5\.' "$1/node_modules/ajv-cli/package.json" 2>/dev/null; }
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
	ajv_note="ajv-cli: node or npm not found; timing validate-state only"
elif ajv_ok "$cache"; then
	ajv=$cache/node_modules/.bin/ajv
else
	say "installing ajv-cli@5 from the npm registry"
	# ajv-formats is not needed: the schemas use no "format" keyword.
	limit=()
	command -v timeout >/dev/null && limit=(timeout 300)
	if "${limit[@]}" npm install --prefix "$tmp/ajv" --no-audit --no-fund --loglevel=error ajv-cli@5 >"$tmp/npm.log" 2>&1 && ajv_ok "$tmp/ajv"; then
		ajv=$tmp/ajv/node_modules/.bin/ajv
		# Cache it for the next run when the cache is writable (moved in whole, or not at all).
		if mkdir -p "$(dirname "$cache")" 2>/dev/null && rm -rf "$cache" && cp -R "$tmp/ajv" "$cache.$$" 2>/dev/null && mv "$cache.$$" "$cache" 2>/dev/null; then
			ajv=$cache/node_modules/.bin/ajv
		else
			rm -rf "$cache.$$"
		fi
	else
		ajv_note="ajv-cli: npm install ajv-cli@5 failed ($( (grep -m1 -i 'err' "$tmp/npm.log" || tail -n1 "$tmp/npm.log") | cut -c1-120)); timing validate-state only"
	fi
fi
[[ -n $ajv_note ]] && echo "$ajv_note"

# ---- timing ----------------------------------------------------------------------------------

gnu_time=""
if [[ -x /usr/bin/time ]] && /usr/bin/time -f %M -o /dev/null true 2>/dev/null; then
	gnu_time=/usr/bin/time
elif command time -f %M -o /dev/null true 2>/dev/null; then
	gnu_time=$(type -P time || true)
fi

# timed OUT ERR CMD...: runs CMD in the current directory with stdout and stderr to OUT and
# ERR; sets t_ns (wall clock), t_kb (peak RSS in KiB, "" when unknown) and t_rc.
timed() {
	local out=$1 err=$2 start end
	shift 2
	t_rc=0
	start=$(date +%s%N)
	if [[ -n $gnu_time ]]; then
		"$gnu_time" -f %M -o "$tmp/rss" "$@" >"$out" 2>"$err" || t_rc=$?
	else
		"$@" >"$out" 2>"$err" || t_rc=$?
	fi
	end=$(date +%s%N)
	t_ns=$((end - start))
	t_kb=""
	[[ -n $gnu_time ]] && t_kb=$(tail -n1 "$tmp/rss")
	return 0
}

# A measurement is a list of commands (ajv needs one per schema) run one after the other in a
# set's directory; its time is their sum, its peak RSS their max. measure repeats it $runs times
# and sets m_ns (median) and m_kb (max over the runs).
#
# run_vs SET WHAT: validate-state on runs/ ("runs") or both ("all"), outputs in $tmp/vs.{out,err}.
run_vs() {
	local set=$1 what=$2
	(cd "$set" && timed "$tmp/vs.out" "$tmp/vs.err" "$vs" "--$what" --state-dir . --schema-dir "$schemas"
		echo "$t_ns ${t_kb:--} $t_rc") >"$tmp/m"
	read -r r_ns r_kb r_rc <"$tmp/m"
	[[ $r_kb == - ]] && r_kb=""
	if ((r_rc > 1)); then
		say "validate-state failed (exit $r_rc):"
		tail -n5 "$tmp/vs.err" >&2
		exit 1
	fi
}

# run_ajv SET WHAT: ajv-cli on runs/ (and results/), outputs in $tmp/ajv-{run,result}.{out,err}.
run_ajv() {
	local set=$1 what=$2 kind ns=0 kb="" sub
	for kind in run result; do
		[[ $what == runs && $kind == result ]] && continue
		sub=${kind}s
		(cd "$set" && timed "$tmp/ajv-$kind.out" "$tmp/ajv-$kind.err" "$ajv" validate --spec=draft2020 \
			-s "$schemas/$kind.schema.json" -d "$sub/*.json"
			echo "$t_ns ${t_kb:--} $t_rc") >"$tmp/m"
		read -r r_ns r_kb r_rc <"$tmp/m"
	[[ $r_kb == - ]] && r_kb=""
		if ((r_rc > 1)); then
			say "ajv-cli failed (exit $r_rc):"
			grep -v -E ' (in)?valid$|^[][{}]|^  ' "$tmp/ajv-$kind.err" | head -n5 >&2
			exit 1
		fi
		ns=$((ns + r_ns))
		if [[ -n $r_kb && (-z $kb || $r_kb -gt $kb) ]]; then kb=$r_kb; fi
	done
	r_ns=$ns r_kb=$kb
}

measure() {
	local fn=$1 set=$2 what=$3 i times=() kb=""
	"$fn" "$set" "$what" # warm-up: page cache, node's compile cache (not timed)
	for ((i = 0; i < runs; i++)); do
		"$fn" "$set" "$what"
		times+=("$r_ns")
		if [[ -n $r_kb && (-z $kb || $r_kb -gt $kb) ]]; then kb=$r_kb; fi
	done
	m_ns=$(printf '%s\n' "${times[@]}" | sort -n | sed -n "$(((runs + 1) / 2))p")
	m_kb=$kb
}

# ---- verdicts --------------------------------------------------------------------------------

# verdicts SET: runs both tools on all of SET (outputs as above) and compares their verdicts per
# file; prints one line.
verdicts() {
	local set=$1 label=$2 kind vs_p vs_f ajv_p ajv_f summary=() agree=1
	run_vs "$set" all
	run_ajv "$set" all
	awk '/^FAIL: / {print $2}' "$tmp/vs.err" | sort >"$tmp/vs.invalid"
	cat "$tmp/ajv-run.err" "$tmp/ajv-result.err" | awk '$2 == "invalid" && NF == 2 {print $1}' | sort >"$tmp/ajv.invalid"
	for kind in run result; do
		local label_kind=Run
		[[ $kind == result ]] && label_kind=Result
		read -r vs_p vs_f < <(sed -n "s/^$label_kind records: \([0-9]*\) passed, \([0-9]*\) failed$/\1 \2/p" "$tmp/vs.err") || true
		ajv_p=$(grep -c ' valid$' "$tmp/ajv-$kind.out" || true)
		ajv_f=$(grep -c -E '^[^ ]+ invalid$' "$tmp/ajv-$kind.err" || true)
		summary+=("${kind}s validate-state $vs_p passed/$vs_f failed, ajv-cli $ajv_p/$ajv_f")
		[[ $vs_p == "$ajv_p" && $vs_f == "$ajv_f" ]] || agree=0
	done
	if ! cmp -s "$tmp/vs.invalid" "$tmp/ajv.invalid"; then
		agree=0
	fi
	if ((agree)); then
		echo "verdicts, $label: agree file for file (${summary[0]}; ${summary[1]})"
	else
		echo "verdicts, $label: DISAGREE (${summary[0]}; ${summary[1]})"
		echo "  invalid only for validate-state: $(comm -23 "$tmp/vs.invalid" "$tmp/ajv.invalid" | head -n5 | tr '\n' ' ')"
		echo "  invalid only for ajv-cli:        $(comm -13 "$tmp/vs.invalid" "$tmp/ajv.invalid" | head -n5 | tr '\n' ' ')"
	fi
}

# ---- report ----------------------------------------------------------------------------------

secs() { awk -v ns="$1" 'BEGIN { s = ns / 1e9; if (s < 10) printf "%.3fs", s; else printf "%.1fs", s }'; }
rate() { awk -v n="$1" -v ns="$2" 'BEGIN { printf "%.0f", n / (ns / 1e9) }'; }
mb() { if [[ -n $1 ]]; then awk -v kb="$1" 'BEGIN { printf "%.0f MB", kb / 1024 }'; else echo n/a; fi; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", a / b }'; }
fmt='%-7s %-7s %-15s %-15s %-8s %-8s %-9s %s\n'
row() { # PAIRS FILES DIRS TOOL NS KB [NOTE]
	printf "$fmt" "$1" "$2" "$3" "$4" "$(secs "$5")" "$(rate "$2" "$5")" "$(mb "$6")" "${7:-}"
}

echo
echo "validate-state bench ($cores cores, median of $runs runs, warm page cache)"
echo "schemas: $schemas"
if [[ -n $load_before ]]; then
	echo "load average before the bench: $load_before$(awk -v l="$load_before" -v c="$cores" 'BEGIN { if (l > c / 2) print " (the machine was busy: expect noisy timings)" }')"
fi
echo "data: genrecords -invalid $invalid_pct (5% of runs invalid; the 10% legacy records fail the users' schemas too)"
if [[ -n $ajv ]]; then
	echo "ajv-cli $(sed -n 's/^  "version": "\(.*\)",$/\1/p' "$(dirname "$(dirname "$ajv")")/ajv-cli/package.json"):" \
		"ajv validate --spec=draft2020 -s <kind>.schema.json -d '<runs|results>/*.json'," \
		"one node process per schema; ajv-cli expands the quoted glob itself, no xargs batching"
fi
[[ -z $gnu_time ]] && echo "GNU time not found: peak RSS not measured"
printf "$fmt" pairs files dirs tool wall files/s "peak RSS" ""

declare -A NS KB
for set_n in "$small" "$large"; do
	set=$small_set
	[[ $set_n == "$large" ]] && set=$large_set
	for what in runs all; do
		files=$set_n dirs=runs/ est=""
		[[ $what == all ]] && files=$((2 * set_n)) dirs=runs/+results/
		if [[ -n $ajv ]] && [[ $set_n == "$small" || ${BENCH_FULL:-0} == 1 ]]; then
			say "timing ajv-cli on $files files"
			measure run_ajv "$set" "$what"
			NS[ajv.$files]=$m_ns KB[ajv.$files]=$m_kb
			row "$set_n" "$files" "$dirs" "ajv-cli 5" "$m_ns" "$m_kb"
		elif [[ -n $ajv ]]; then
			# ajv's fixed cost plus its per-file cost at the small size times the files, so that
			# node's start-up and the schema compilation are not multiplied with the files.
			small_files=$((files * small / set_n))
			NS[ajv.$files]=$(awk -v a="${NS[ajv.$small_files]}" -v a0="$small_files" \
				-v c="${NS[ajv.fixed.$what]}" -v c0="$((small_files / small))" -v n="$files" \
				'BEGIN { per = (a - c) / (a0 - c0); if (per < 0) per = a / a0; printf "%.0f", c + per * (n - c0) }')
			est=" (ajv-cli extrapolated)"
			row "$set_n" "$files" "$dirs" "ajv-cli 5" "${NS[ajv.$files]}" "" "extrapolated: start-up + per-file cost at $small pairs (BENCH_FULL=1 times it)"
		fi
		say "timing validate-state on $files files"
		measure run_vs "$set" "$what"
		NS[vs.$files]=$m_ns KB[vs.$files]=$m_kb
		row "$set_n" "$files" "$dirs" "validate-state" "$m_ns" "$m_kb"
		if [[ -n ${NS[ajv.$files]:-} ]]; then
			echo "ratio (throughput, validate-state / ajv-cli) at $files files: $(ratio "${NS[ajv.$files]}" "$m_ns")x$est"
		fi
	done
	if [[ $set_n == "$small" && -n $ajv ]]; then
		# ajv's fixed cost (node start-up, loading ajv, compiling the schema), for the
		# extrapolation: its time on one file per schema, median of 5.
		for what in runs all; do
			runs=5 measure run_ajv "$one_set" "$what"
			NS[ajv.fixed.$what]=$m_ns
		done
	fi
done

echo
target() { # LABEL OK
	if [[ $2 == 1 ]]; then echo "  met:     $1"; else echo "  NOT met: $1"; fi
}
echo "targets:"
if [[ -n $ajv ]]; then
	for files in "$small" "$((2 * small))"; do
		r=$(ratio "${NS[ajv.$files]}" "${NS[vs.$files]}")
		target ">= 10x ajv-cli's throughput at $files files: ${r}x" "$(awk -v r="$r" 'BEGIN { print (r >= 10) }')"
	done
else
	echo "  (throughput against ajv-cli not measured)"
fi
for files in "$large" "$((2 * large))"; do
	target "$files files in under 3 s: $(secs "${NS[vs.$files]}")" "$(awk -v ns="${NS[vs.$files]}" 'BEGIN { print (ns < 3e9) }')"
done
if [[ -n ${KB[vs.$((2 * small))]} ]]; then
	a=${KB[vs.$((2 * small))]} b=${KB[vs.$((2 * large))]}
	target "memory flat in the number of files (peak RSS, within 1.25x): $(mb "$a") at $((2 * small)) files, $(mb "$b") at $((2 * large)) files ($(ratio "$b" "$a")x)" \
		"$(awk -v a="$a" -v b="$b" 'BEGIN { print (b <= 1.25 * a) }')"
else
	echo "  memory: peak RSS n/a (no GNU time)"
fi

if [[ -n $ajv ]]; then
	echo
	verdicts "$check_set" "$check_pairs pairs, ${invalid_pct}% invalid"
	verdicts "$small_set" "$small pairs, ${invalid_pct}% invalid"
fi
