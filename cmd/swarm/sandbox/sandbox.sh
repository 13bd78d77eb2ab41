#!/usr/bin/env bash
# sandbox.sh: run Claude Code in a Docker container that sees only this directory, with capped
# memory, CPUs and processes, on the locked-down network setup-sandbox-network.sh makes.
#
#   ./sandbox.sh [claude arguments...]
#   swarm spawn --name dev --tmux -- ./sandbox.sh --dangerously-skip-permissions
#   swarm ralph spawn --name dev --prompt-file PROMPT.md --max-iterations 50 \
#       -- ./sandbox.sh --dangerously-skip-permissions
#
# Settings (environment):
#   SANDBOX_IMAGE   image name            (default sandbox-loop; built from Dockerfile.sandbox
#                                          when missing)
#   SANDBOX_NETWORK Docker network        (default sandbox-net)
#   MEMORY_LIMIT    memory cap, no swap   (default 8g)
#   CPU_LIMIT       CPUs                  (default 4)
#   PIDS_LIMIT      processes             (default 512)
#
# Credentials: no SSH key enters the container. git pushes over HTTPS with GH_TOKEN (else
# `gh auth token`). Claude signs in with ANTHROPIC_API_KEY, else CLAUDE_CODE_OAUTH_TOKEN, else
# the OAuth token of ~/.claude/.credentials.json (read again at every start: it expires).
set -euo pipefail

image=${SANDBOX_IMAGE:-sandbox-loop}
network=${SANDBOX_NETWORK:-sandbox-net}
memory=${MEMORY_LIMIT:-8g}
cpus=${CPU_LIMIT:-4}
pids=${PIDS_LIMIT:-512}

say() { printf 'sandbox.sh: %s\n' "$*" >&2; }

if ! docker image inspect "$image" >/dev/null 2>&1; then
  say "no image '$image' yet: building it from Dockerfile.sandbox"
  docker build --build-arg USER_ID="$(id -u)" --build-arg GROUP_ID="$(id -g)" \
    -t "$image" -f Dockerfile.sandbox . >&2
fi

if [ -z "${GH_TOKEN:-}" ] && command -v gh >/dev/null 2>&1; then
  GH_TOKEN=$(gh auth token 2>/dev/null || true)
fi
if [ -z "${GH_TOKEN:-}" ]; then
  say "warning: no GH_TOKEN: git push will fail in the container (run 'gh auth login' or export GH_TOKEN)"
fi
export GH_TOKEN="${GH_TOKEN:-}"

if [ -z "${ANTHROPIC_API_KEY:-}" ] && [ -z "${CLAUDE_CODE_OAUTH_TOKEN:-}" ]; then
  creds="$HOME/.claude/.credentials.json"
  if [ -f "$creds" ] && command -v jq >/dev/null 2>&1; then
    CLAUDE_CODE_OAUTH_TOKEN=$(jq -r '.claudeAiOauth.accessToken // empty' "$creds" 2>/dev/null || true)
    [ -n "$CLAUDE_CODE_OAUTH_TOKEN" ] && export CLAUDE_CODE_OAUTH_TOKEN
  fi
  if [ -z "${CLAUDE_CODE_OAUTH_TOKEN:-}" ]; then
    say "warning: no Claude credentials: the agent will ask you to log in (export ANTHROPIC_API_KEY, or run 'claude login' here)"
  fi
fi
# (-e NAME passes NAME only when it is set here: an unset key stays unset in the container.)

# settings.json is often a link: mount what it points to.
settings=$(readlink -f "$HOME/.claude/settings.json" 2>/dev/null || true)
mounts=(-v "$PWD:/workspace")
if [ -n "$settings" ] && [ -f "$settings" ]; then
  mounts+=(-v "$settings:/home/loopuser/.claude/settings.json:ro")
fi
mkdir -p "$HOME/.claude/projects"
mounts+=(-v "$HOME/.claude/projects:/home/loopuser/.claude/projects")

tty=(-i)
[ -t 0 ] && tty=(-it)

exec docker run --rm "${tty[@]}" \
  --memory="$memory" --memory-swap="$memory" --cpus="$cpus" --pids-limit="$pids" \
  --network="$network" "${mounts[@]}" -w /workspace \
  -e ANTHROPIC_API_KEY -e CLAUDE_CODE_OAUTH_TOKEN -e GH_TOKEN -e DISABLE_AUTOUPDATER=1 \
  "$image" claude "$@"
