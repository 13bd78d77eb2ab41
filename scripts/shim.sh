#!/usr/bin/env bash
# Drop-in shim for the workspace scripts the toolkit replaces. Each script name is a symlink to
# this file (validate-state.sh, analyze-runs.sh, dispatch.sh, score-templates.sh); the name picks
# the binary, so existing callers keep their paths and flags. score-templates.sh is
# `analyze-runs --templates --write-scores`: as the original did, it prints the template report
# ending in "Scores written to: <path>" (with --json, the document) and writes
# state/template-scores.json every time, for select-template.sh to read.
#
# The workspace is the directory above the one the shim was called from (its scripts/), found
# from the path the caller used, not from the caller's directory: cron and orchestrators call
# <workspace>/scripts/dispatch.sh from anywhere, as the originals allowed. As the originals did,
# the binary then works on that workspace:
#   - state: <workspace>/state, always. A STATE_DIR inherited from the caller's environment (set
#     for some other tool) does not move it; the caller says otherwise with --state-dir DIR.
#   - agents config (dispatch): <workspace>/config/agents.json, which must exist, unless
#     CONFIG_FILE is set (then that file, which must exist and be valid JSON).
# FLEET_WORKSPACE tells the binary which workspace it runs for.
#
# The binary is looked for in $FLEET_BIN (a directory), then <workspace>/bin, then where
# 'make install' put it (written into the installed copy of this file), then beside the shim
# itself (a clone's bin/, which make build fills; a release archive's bin/), then PATH, then
# $HOME/go/bin and /usr/local/bin ('make install''s defaults), so that cron's bare PATH
# (/usr/bin:/bin) finds them. When none has it, it says where it looked and how to set
# FLEET_BIN, and exits 127.
set -euo pipefail

installed_bin='' # make install writes its BINDIR here in the installed copy (scripts/install-shims.sh)

script="$(basename "${BASH_SOURCE[0]}")"
name="${script%.sh}"
if [ "$name" = score-templates ]; then
  name=analyze-runs
  set -- --templates --write-scores "$@"
fi
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
workspace="$(dirname "$here")"
export FLEET_WORKSPACE="$workspace"
export STATE_DIR="$workspace/state"

# The shim itself, through the workspace's link to it: its clone, or where it was installed.
shimdir="$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")"
home_bin=""
[ -n "${HOME:-}" ] && home_bin="$HOME/go/bin"
looked=()
for dir in "${FLEET_BIN:-}" "$workspace/bin" "$installed_bin" "$shimdir/../bin" "$shimdir/../../../bin" PATH "$home_bin" /usr/local/bin; do
  [ -n "$dir" ] || continue
  if [ "$dir" = PATH ]; then
    looked+=("PATH ($PATH)")
    if command -v "$name" >/dev/null 2>&1; then
      exec "$name" "$@"
    fi
    continue
  fi
  looked+=("$dir")
  if [ -x "$dir/$name" ] && [ ! -d "$dir/$name" ]; then
    exec "$dir/$name" "$@"
  fi
done
[ -n "${FLEET_BIN:-}" ] || looked=("\$FLEET_BIN (not set)" "${looked[@]}")
list="$(printf '%s, ' "${looked[@]}")"
echo "$script: the $name binary was not found; looked in: ${list%, }. Set FLEET_BIN to the directory that holds it (make install puts it in \$(go env GOPATH)/bin, or \$PREFIX/bin), or run 'make install' in the toolkit" >&2
exit 127
