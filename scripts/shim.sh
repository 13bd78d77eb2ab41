#!/usr/bin/env bash
# Drop-in shim for the workspace scripts the toolkit replaces. Each script name is a symlink to
# this file (validate-state.sh, analyze-runs.sh, dispatch.sh); the name picks the binary, which
# runs with this workspace's state directory, so existing callers keep their paths and flags.
#
# The binary is looked for in $FLEET_BIN (a directory), then <workspace>/bin, then PATH.
set -euo pipefail

name="$(basename "${BASH_SOURCE[0]}" .sh)"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
workspace="$(dirname "$here")"
export STATE_DIR="${STATE_DIR:-$workspace/state}"

for dir in "${FLEET_BIN:-}" "$workspace/bin"; do
  if [ -n "$dir" ] && [ -x "$dir/$name" ]; then
    exec "$dir/$name" "$@"
  fi
done
if command -v "$name" >/dev/null 2>&1; then
  exec "$name" "$@"
fi
echo "$name.sh: the $name binary was not found in \$FLEET_BIN, $workspace/bin or PATH; run 'make install' in the toolkit" >&2
exit 127
