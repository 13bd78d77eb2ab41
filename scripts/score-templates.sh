#!/usr/bin/env bash
# Drop-in for the workspace script score-templates.sh: `analyze-runs --templates --write-scores`
# on this workspace's state. As the original did, it prints the TEMPLATE SCORING REPORT ending in
# "Scores written to: <workspace>/state/template-scores.json" (with --json, the document itself)
# and writes that file every time, for select-template.sh to read.
#
# The workspace and the binary are found as shim.sh finds them (the other shims are links to
# it): the workspace is the directory above the one this script was called from; its state is
# <workspace>/state whatever STATE_DIR the caller inherited, unless the caller passes
# --state-dir DIR; the binary is looked for in $FLEET_BIN, then <workspace>/bin, then PATH.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
workspace="$(dirname "$here")"
export FLEET_WORKSPACE="$workspace"
export STATE_DIR="$workspace/state"

for dir in "${FLEET_BIN:-}" "$workspace/bin"; do
  if [ -n "$dir" ] && [ -x "$dir/analyze-runs" ]; then
    exec "$dir/analyze-runs" --templates --write-scores "$@"
  fi
done
if command -v analyze-runs >/dev/null 2>&1; then
  exec analyze-runs --templates --write-scores "$@"
fi
echo "score-templates.sh: the analyze-runs binary was not found in \$FLEET_BIN, $workspace/bin or PATH; run 'make install' in the toolkit" >&2
exit 127
