#!/usr/bin/env bash
# swarm top with 500 agents registered (state files and records, no live processes): --once's
# work (open and read every row; target under 100 ms) and one refresh of the UI (target under
# 50 ms); and the UI left alone showing them for 30 s, in a tmux pane (%cpu of one core; target
# under 1); the same refresh and --once with 50 of them under supervisors that never answer
# (Refresh500Hung50, Once500Hung50: --once waits 300 ms for those). No tool to compare with:
# the figures are printed as go test -bench gives them.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
go test -run '^$' -bench 'Once500|Refresh500' -benchtime 20x ./internal/top
go test -run '^$' -bench 'Idle500' -benchtime 1x ./internal/top
