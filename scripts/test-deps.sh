#!/usr/bin/env bash
# The tools the tests need beyond Go, git and tmux, installed from Debian's packages when one is
# missing, as root with apt-get (CI: Debian as root). `make test` runs it (make test-deps), and
# `make sshd` runs it for the remote hosts' tests (test-deps.sh sshd).
#
#   test-deps.sh          the consumers the tests hand the toolkit's output to: pre-commit (runs
#                         .pre-commit-hooks.yaml), python3-junitparser (reads the JUnit XML),
#                         man-db (renders the man pages), zsh and fish (load the completions)
#   test-deps.sh sshd     openssh-server and iproute2: sshd hosts in network namespaces
#                         (internal/testenv/sshlab)
#
# Anything still missing is said in one line; the tests that need it then skip, each saying so
# in one line, or fail under CI=true (internal/testenv/need). Another apt-get or dpkg holding the
# package lock is waited for (2 minutes), and said: it once made this install nothing, and the
# tests skip without notice.
set -euo pipefail

missing=()
if [ "${1:-}" = sshd ]; then
  what="the remote hosts' tests"
  command -v sshd >/dev/null 2>&1 || [ -x /usr/sbin/sshd ] || missing+=(openssh-server)
  command -v ip >/dev/null 2>&1 || [ -x /usr/sbin/ip ] || [ -x /sbin/ip ] || missing+=(iproute2)
else
  what="the tests that need them"
  command -v pre-commit >/dev/null 2>&1 || missing+=(pre-commit)
  /usr/bin/python3 -c 'import junitparser' >/dev/null 2>&1 || missing+=(python3-junitparser)
  command -v man >/dev/null 2>&1 || missing+=(man-db)
  command -v zsh >/dev/null 2>&1 || missing+=(zsh)
  command -v fish >/dev/null 2>&1 || missing+=(fish)
fi
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "test-deps: not installed: ${missing[*]} (as root: apt-get install ${missing[*]}); $what skip (under CI=true: fail)"
  exit 0
fi

# lock_holder names what holds dpkg's lock, if anything (fuser, from psmisc, may be absent).
lock_holder() {
  local pids
  pids="$(fuser /var/lib/dpkg/lock-frontend /var/lib/dpkg/lock 2>/dev/null | xargs || true)"
  [ -n "$pids" ] || return 0
  ps -o pid=,args= -p "${pids// /,}" 2>/dev/null | awk '{$1=$1; print}' | paste -sd ';' - || true
}

echo "test-deps: installing ${missing[*]}"
holder="$(lock_holder)"
[ -n "$holder" ] && echo "test-deps: the package lock is held (by: $holder); waiting up to 2 minutes"
export DEBIAN_FRONTEND=noninteractive
apt=(apt-get -o DPkg::Lock::Timeout=120 -qq)
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
if ! { "${apt[@]}" update && "${apt[@]}" install -y --no-install-recommends "${missing[@]}"; } >"$log" 2>&1; then
  echo "test-deps: could not install ${missing[*]}; $what skip (under CI=true: fail). apt-get said:"
  tail -n 5 "$log" | sed 's/^/    /'
fi
