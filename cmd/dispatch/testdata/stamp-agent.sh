#!/usr/bin/env bash
# A stand-in agent for the outcome-latency benchmark: it reads its prompt on stdin, sleeps for
# SLEEP=<s> of the prompt's first line (default 0), writes the time (ns since the epoch) to
# $STAMP_FILE (default ./agent-exit.ns), and exits 0 right after, so the time from the agent's
# exit to its recorded outcome can be measured.
prompt="$(cat)"
secs="$(head -n1 <<<"$prompt" | grep -o 'SLEEP=[^ ]*' | head -n1 | cut -d= -f2-)"
[ -n "$secs" ] && sleep "$secs"
date +%s%N >"${STAMP_FILE:-agent-exit.ns}"
exit 0
