#!/usr/bin/env bash
# A stand-in agent for the outcome-latency benchmark: it reads its prompt on stdin, sleeps for
# SLEEP=<s> of the prompt's first line (default 0), writes the time (ns since the epoch) to
# STAMP=<path> of that line (else $STAMP_FILE, else ./agent-exit.ns), and exits 0 right after,
# so the time from the agent's exit to its recorded outcome can be measured. The path comes in
# the prompt: in tmux the agent has the server's environment, not the dispatching process's
# (as dispatch.sh's agents had), so a variable set for one dispatch does not reach its agent.
prompt="$(cat)"
secs="$(head -n1 <<<"$prompt" | grep -o 'SLEEP=[^ ]*' | head -n1 | cut -d= -f2-)"
stamp="$(head -n1 <<<"$prompt" | grep -o 'STAMP=[^ ]*' | head -n1 | cut -d= -f2-)"
[ -n "$secs" ] && sleep "$secs"
date +%s%N >"${stamp:-${STAMP_FILE:-agent-exit.ns}}"
exit 0
