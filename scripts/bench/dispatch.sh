#!/usr/bin/env bash
# Times dispatch against the issue's targets, on the real binary, real tmux on a private socket
# and the stand-in agents of cmd/dispatch/testdata:
#   - dispatch returns with the agent running in under 200 ms (median; the agent's own start,
#     in the supervisor after dispatch has returned, is reported apart);
#   - the outcome is recorded within 1 s of the agent's exit (dispatch.sh's watcher polled every
#     20 s: its outcome came 0-20 s after the exit, 10 s on average);
#   - an idle supervisor uses no measurable CPU (clock ticks of 10 ms over 5 s);
#   - an agent printing 1 GiB through the terminal relay keeps the supervisor under 20 MB of
#     memory (peak RSS), without tmux and in a tmux pane, and the log is complete (every byte
#     checked: the benchmark fails otherwise); the pace is reported.
#
#   scripts/bench/dispatch.sh
#
# Environment:
#   BENCH_RUNS=N        timed runs per latency benchmark (go test -benchtime Nx, default 20).
#   BENCH_RELAY_MB=N    MiB the agent prints through the relay (default 1024); the run in tmux
#                       goes at the pane's pace, a few MiB/s, so 1024 takes minutes.
#   DISPATCH_BIN=PATH   time this dispatch binary (another build, for a before and after)
#                       instead of building bin/dispatch.
#
# Runs the benchmarks of cmd/dispatch/bench_test.go and relay_bench_test.go against the binary.
# The exit status is 0 unless something could not be run or the relayed log was incomplete: a
# target missed is reported, not failed on.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
runs=${BENCH_RUNS:-20}
relay_mb=${BENCH_RELAY_MB:-1024}

if ! command -v tmux >/dev/null; then
	echo "dispatch bench: tmux is not installed; skipped"
	exit 0
fi

bin=${DISPATCH_BIN:-}
if [[ -z $bin ]]; then
	go build -o bin/dispatch ./cmd/dispatch
	bin="$root/bin/dispatch"
fi
# The latency benchmarks take BENCH_RUNS runs; one relay of the whole volume is one run.
out=$(DISPATCH_BIN="$bin" go test -run '^$' -bench 'Latency|IdleCPU' -benchtime "${runs}x" ./cmd/dispatch/ 2>&1 &&
	DISPATCH_BIN="$bin" BENCH_RELAY_MB="$relay_mb" go test -run '^$' -bench 'Relay' -benchtime 1x -timeout 60m ./cmd/dispatch/ 2>&1) || {
	echo "$out"
	exit 1
}
echo "$out" | grep -E '^(goos|goarch|cpu|Benchmark)' | awk '!seen[$0]++' || true

# metric BENCHMARK UNIT: the value go test reported for UNIT on BENCHMARK's line.
metric() {
	awk -v name="$1" -v unit="$2" '$1 ~ "^"name"(-[0-9]+)?$" { for (i = 3; i < NF; i++) if ($(i+1) == unit) print $i }' <<<"$out"
}
dispatch_ms=$(metric BenchmarkDispatchLatency median-ms)
dispatch_p90=$(metric BenchmarkDispatchLatency p90-ms)
agent_up_ms=$(metric BenchmarkDispatchLatency agent-up-ms)
outcome_ms=$(metric BenchmarkOutcomeLatency median-ms)
outcome_p90=$(metric BenchmarkOutcomeLatency p90-ms)
idle_ticks=$(metric BenchmarkIdleCPU ticks/s)
relay_rss=$(metric BenchmarkRelay/no-tmux peak-rss-MB)
relay_anon=$(metric BenchmarkRelay/no-tmux anon-MB)
relay_rate=$(metric BenchmarkRelay/no-tmux MiB/s)
relay_tmux_rss=$(metric BenchmarkRelay/tmux peak-rss-MB)
relay_tmux_anon=$(metric BenchmarkRelay/tmux anon-MB)
relay_tmux_rate=$(metric BenchmarkRelay/tmux MiB/s)
for v in dispatch_ms outcome_ms idle_ticks relay_rss relay_tmux_rss; do
	if [[ -z ${!v} ]]; then
		echo "dispatch bench: no figure for $v in the benchmark output" >&2
		exit 1
	fi
done

met() { awk -v v="$1" -v t="$2" 'BEGIN { print (v < t) ? "met" : "NOT met" }'; }

echo
echo "dispatch ($bin), $runs runs each, $(nproc) cores:"
printf '  %-40s %12s %12s %14s  %s\n' "measure" "median" "p90" "target" ""
printf '  %-40s %9.1f ms %9.1f ms %14s  %s\n' "dispatch returns, supervisor running" "$dispatch_ms" "$dispatch_p90" "< 200 ms" "$(met "$dispatch_ms" 200)"
printf '  %-40s %9.1f ms %12s %14s\n' "  ... and the agent started" "$agent_up_ms" "" "(reported)"
printf '  %-40s %9.1f ms %9.1f ms %14s  %s\n' "outcome recorded after the agent's exit" "$outcome_ms" "$outcome_p90" "< 1000 ms" "$(met "$outcome_ms" 1000)"
printf '  %-40s %6.2f ticks/s %9s %14s  %s\n' "idle supervisor CPU (10 ms ticks, 5 s)" "$idle_ticks" "" "~0" "$(met "$idle_ticks" 0.2)"
printf '  %-40s %9.1f MB %12s %14s  %s\n' "$relay_mb MiB relayed, no tmux: peak RSS" "$relay_rss" "" "< 20 MB" "$(met "$relay_rss" 20)"
printf '  %-40s %9.1f MB %12s %14s\n' "  ... of it its own (RssAnon)" "$relay_anon" "" "(reported)"
printf '  %-40s %7.1f MiB/s %12s %14s\n' "  ... at" "$relay_rate" "" "(reported)"
printf '  %-40s %9.1f MB %12s %14s  %s\n' "$relay_mb MiB relayed, in tmux: peak RSS" "$relay_tmux_rss" "" "< 20 MB" "$(met "$relay_tmux_rss" 20)"
printf '  %-40s %9.1f MB %12s %14s\n' "  ... of it its own (RssAnon)" "$relay_tmux_anon" "" "(reported)"
printf '  %-40s %7.1f MiB/s %12s %14s\n' "  ... at the pane's pace" "$relay_tmux_rate" "" "(reported)"
printf '  %-40s %12s %12s %14s  %s\n' "  ... the logs, byte for byte" "complete" "" "complete" "met"
echo
awk -v ms="$outcome_ms" 'BEGIN {
	if (ms < 0.5) ms = 0.5
	printf "  dispatch.sh polled every 20 s: its outcome came up to 20000 ms (10000 ms on average) after the exit,\n"
	printf "  %.0fx (worst case) and %.0fx (average) the %.1f ms measured here.\n", 20000 / ms, 10000 / ms, ms
}'
