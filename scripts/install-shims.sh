#!/usr/bin/env bash
# The drop-in shims, installed where a workspace links to them (not to a clone, which may move):
#
#   scripts/install-shims.sh DIR [BINDIR]
#
# DIR gets shim.sh and the script names linked to it (dispatch.sh, validate-state.sh,
# analyze-runs.sh, score-templates.sh); BINDIR, where 'make install' put the binaries, is
# written into the installed shim.sh as the first place after $FLEET_BIN and <workspace>/bin
# it looks for them (empty: a release archive, whose shims look in ../../../bin, beside them).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
dir="$1" bindir="${2:-}"
mkdir -p "$dir"
sed "s|^installed_bin=.*|installed_bin='${bindir//|/\\|}'|" "$here/shim.sh" >"$dir/shim.sh.tmp"
chmod 0755 "$dir/shim.sh.tmp"
mv -f "$dir/shim.sh.tmp" "$dir/shim.sh"
for s in dispatch validate-state analyze-runs score-templates; do
  ln -sfn shim.sh "$dir/$s.sh"
done
