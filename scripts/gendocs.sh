#!/usr/bin/env bash
# The man pages and shell completions of the toolkit's binaries, generated from their command
# lines (TOOL __man, TOOL __completion SHELL; internal/cli/docs.go), laid out as they install:
#
#   scripts/gendocs.sh BINDIR SHAREDIR
#
# SHAREDIR/man/man1/TOOL.1, SHAREDIR/bash-completion/completions/TOOL,
# SHAREDIR/zsh/site-functions/_fleet_TOOL (with '-' as '_'), SHAREDIR/fish/vendor_completions.d/TOOL.fish.
# Not _TOOL for zsh: zsh's completion system has a _dispatch of its own (its dispatcher), which a
# file of that name in fpath replaces; the file earlier builds wrote under that name is removed.
set -euo pipefail
bin="$1" share="$2"
mkdir -p "$share/man/man1" "$share/bash-completion/completions" "$share/zsh/site-functions" "$share/fish/vendor_completions.d"
for tool in dispatch validate-state analyze-runs swarm ralph; do
  "$bin/$tool" __man >"$share/man/man1/$tool.1"
  "$bin/$tool" __completion bash >"$share/bash-completion/completions/$tool"
  "$bin/$tool" __completion zsh >"$share/zsh/site-functions/_fleet_${tool//-/_}"
  rm -f "$share/zsh/site-functions/_$tool"
  "$bin/$tool" __completion fish >"$share/fish/vendor_completions.d/$tool.fish"
done
