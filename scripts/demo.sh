#!/usr/bin/env bash
# make demo: the toolkit's main job on a throwaway workspace, start to finish, with nothing but
# what a fresh machine has. It builds the tools, writes a sample state directory (full records,
# legacy minimal ones, a few broken ones), checks it with validate-state, migrates the legacy
# records with --fix, and checks again.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n\033[1m==> %s\033[0m\n' "$*"; }
[ -n "${NO_COLOR:-}" ] || [ ! -t 1 ] && step() { printf '\n==> %s\n' "$*"; }

step "building the tools into bin/"
go build -o bin/ ./cmd/...
export PATH="$PWD/bin:$PATH"

work="$(mktemp -d "${TMPDIR:-/tmp}/fleet-demo.XXXXXX")"
if [ -z "${DEMO_KEEP:-}" ]; then trap 'rm -rf "$work"' EXIT; fi
state="state"
cd "$work"

step "writing a sample state directory: $state"
go run -C "$OLDPWD" ./tools/genrecords -n 12 -legacy 35 -out "$work/$state"
# Two records as people break them: a hand edit with a typo, and a write cut short.
cat >"$state/runs/bd-typo.json" <<'JSON'
{"bead": "bd-typo", "agent": "claude", "model": "opus", "repo": "/srv/repo",
 "started_at": "2026-02-12T10:00:00Z", "attempt": "2", "prompt": "Fix the login bug"}
JSON
printf '{"bead": "bd-cut", "agent": "cla' >"$state/results/bd-cut.json"
echo "  $(ls state/runs | wc -l) run records and $(ls state/results | wc -l) result records, some in the legacy minimal form, two broken by hand"

# show CMD...: runs a tool, prints the start of its diagnostics and its summary, and the exit code.
show() {
  local code=0
  "$@" 2>"$work/stderr" || code=$?
  if [ "$(wc -l <"$work/stderr")" -gt 16 ]; then
    head -n 12 "$work/stderr"; echo "  … ($(grep -c '^FAIL' "$work/stderr") files failed in all)"; grep -E '^[A-Z][a-z]+ records:' "$work/stderr"
  else
    cat "$work/stderr"
  fi
  echo "exit $code"
}

step "validate-state --all   (legacy and broken records fail: exit 1)"
show validate-state --all --state-dir "$state"

step "validate-state --all --fix --dry-run   (what --fix would change; nothing is written)"
validate-state --all --fix --dry-run --quiet --state-dir "$state" | head -n 8 || true
echo "  …"

step "validate-state --all --fix   (migrates legacy records, keeps <file>.bak)"
show validate-state --all --fix --state-dir "$state"

step "validate-state --all   (only what needs a person is left)"
show validate-state --all --state-dir "$state"

step "validate-state --all --json | the summary"
validate-state --all --json --state-dir "$state" | sed -n '/"summary"/,$p' || true

step "done"
if [ -n "${DEMO_KEEP:-}" ]; then echo "The sample workspace is kept in $work."; else echo "The sample workspace is removed now; DEMO_KEEP=1 keeps it."; fi
