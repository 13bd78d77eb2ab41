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
# BINDIR goes in single-quoted, each ' of it as '\'' (close, an escaped quote, reopen): bash then
# reads back exactly BINDIR, whatever its characters, and runs nothing of it. awk takes it from
# its environment (ENVIRON), where nothing is escaped or replaced: sed's replacement read & and
# \ as its own, and a ' ended the quoted string, so a BINDIR '$(…)' ran a command at every call.
squote="'\\''"
quoted="'${bindir//\'/$squote}'"
INSTALLED_BIN="$quoted" awk '/^installed_bin=/ { print "installed_bin=" ENVIRON["INSTALLED_BIN"] " # BINDIR, written by scripts/install-shims.sh"; next } { print }' \
  "$here/shim.sh" >"$dir/shim.sh.tmp"
chmod 0755 "$dir/shim.sh.tmp"
bash -n "$dir/shim.sh.tmp"
mv -f "$dir/shim.sh.tmp" "$dir/shim.sh"
for s in dispatch validate-state analyze-runs score-templates; do
  ln -sfn shim.sh "$dir/$s.sh"
done
