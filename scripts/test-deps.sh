#!/usr/bin/env bash
# The real consumers the tests hand the toolkit's output to, installed from Debian's packages
# when one is missing: pre-commit (runs .pre-commit-hooks.yaml), python3-junitparser (reads the
# JUnit XML), man-db (renders the man pages), zsh and fish (load the completions). Only as root with apt-get; otherwise it says what
# is missing, and the tests that need it skip, each saying so in one line.
set -euo pipefail
missing=()
command -v pre-commit >/dev/null 2>&1 || missing+=(pre-commit)
/usr/bin/python3 -c 'import junitparser' >/dev/null 2>&1 || missing+=(python3-junitparser)
command -v man >/dev/null 2>&1 || missing+=(man-db)
command -v zsh >/dev/null 2>&1 || missing+=(zsh)
command -v fish >/dev/null 2>&1 || missing+=(fish)
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "test-deps: not installed: ${missing[*]} (as root: apt-get install ${missing[*]}); the tests that need them skip"
  exit 0
fi
echo "test-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
if ! { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; }; then
  echo "test-deps: could not install ${missing[*]}; the tests that need them skip"
fi
