#!/usr/bin/env bash
# make demo: the toolkit's main job on a throwaway workspace, start to finish, with nothing but
# what a fresh machine has (Go, git, tmux). It builds the tools, makes a git repository, and
# dispatches three beads to a small demo agent (one succeeds, one fails, one times out), waiting
# for each; then it checks every record with validate-state, reports with analyze-runs, and
# shows validate-state --fix migrating legacy records. Each tool's exit status is shown with what it
# means; one that is not the expected status fails the demo (exit 1) at its end.
set -euo pipefail
cd "$(dirname "$0")/.."
toolkit="$PWD"

step() { printf '\n==> %s\n' "$*"; }
if [ -t 1 ] && [ -z "${NO_COLOR:-}" ]; then step() { printf '\n\033[1m==> %s\033[0m\n' "$*"; }; fi
# expect CODE MEANING CMD...: run a tool and say what its exit status means; never stop the
# demo, but a status other than CODE is named as a surprise and fails the demo at its end.
surprises=0
expect() {
  local want="$1" meaning="$2" code=0
  shift 2
  "$@" || code=$?
  if [ "$code" = "$want" ]; then
    echo "($1 exited $code: $meaning)"
  else
    echo "($1 exited $code, not $want as expected: $meaning did not happen; see the lines above)"
    surprises=$((surprises + 1))
  fi
}

step "building the tools into bin/"
"${GO:-go}" build -ldflags "${LDFLAGS:-}" -o bin/ ./cmd/...
export PATH="$toolkit/bin:$PATH"

work="$(mktemp -d "${TMPDIR:-/tmp}/fleet-demo.XXXXXX")"
socket="$work/tmux.sock"
cleanup() {
  tmux -S "$socket" kill-server 2>/dev/null || true
  if [ -z "${DEMO_KEEP:-}" ]; then rm -rf "$work"; fi
}
trap cleanup EXIT
cd "$work"

step "a workspace in $work: a git repository and an agents config with a demo agent"
git init -q -b main repo
git -C repo -c user.email=demo@example.com -c user.name=demo commit -q --allow-empty -m "initial commit"
mkdir -p config
printf '{"demo": {"command": "%s/scripts/demo-agent.sh"}}\n' "$toolkit" > config/agents.json
cat config/agents.json
export CONFIG_FILE="$work/config/agents.json" DISPATCH_TMUX_SOCKET="$socket" STATE_DIR="$work/state"

step "dispatch bd-docs: an agent that succeeds (--wait follows it to its end)"
expect 0 "the agent succeeded" dispatch bd-docs repo demo "Write the project notes" docs --wait

step "dispatch bd-bug: an agent that fails (its real exit code decides)"
expect 1 "the agent's own exit status, its check failed" dispatch bd-bug repo demo "Fix the login bug; the check will fail" bug-fix --wait

step "dispatch bd-big: an agent that does not finish in time (--timeout 3s)"
expect 124 "the agent ran out of time and was stopped, as timeout(1) says it" dispatch bd-big repo demo "Refactor everything, slow and steady" refactor --timeout 3 --wait

step "dispatch ps: no agent left running, the last results"
dispatch ps

step "the records: state/results/bd-bug.json"
cat state/results/bd-bug.json

step "validate-state --all: every record dispatch wrote satisfies its schema"
expect 0 "every record is valid" validate-state --all

if command -v analyze-runs >/dev/null 2>&1; then
  step "analyze-runs: the flywheel report"
  expect 0 "the report is printed" analyze-runs
fi

step "validate-state --fix on legacy records (as older dispatchers wrote them)"
mkdir -p legacy/runs legacy/results
printf '%s\n' '{"bead":"bd-old","agent":"claude","model":"sonnet","repo":"/srv/repo","started_at":"'"'"'$START'"'"'","attempt":1,"prompt":"Review PR 12"}' > legacy/runs/bd-old.json
printf '%s\n' '{"bead":"bd-old","status":"done","finished_at":"2026-02-12T10:05:00Z","attempt":1,"duration_seconds":300}' > legacy/results/bd-old.json
expect 1 "the legacy records fail the schema (--quiet prints nothing but the status)" validate-state --all --state-dir legacy --quiet
expect 0 "both records migrated, the originals kept as .bak" validate-state --all --fix --state-dir legacy
expect 0 "the migrated records are valid" validate-state --all --state-dir legacy
cat legacy/runs/bd-old.json

step "done"
if [ -n "${DEMO_KEEP:-}" ]; then echo "The workspace is kept in $work."; else echo "The workspace is removed now; DEMO_KEEP=1 keeps it."; fi
if [ "$surprises" -gt 0 ]; then
  echo "demo: $surprises tool(s) exited other than expected (marked above); this toolkit is not working as documented here" >&2
  exit 1
fi
