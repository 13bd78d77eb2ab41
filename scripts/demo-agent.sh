#!/usr/bin/env bash
# A small stand-in for a coding agent, used by `make demo`: it reads its task on stdin as
# `claude -p` does, "works" for a moment, and ends the way the task's first line asks:
#   a task that mentions "fail"  exits 1 after a failing check
#   a task that mentions "slow"  never finishes (dispatch's timeout stops it)
#   anything else                writes NOTES.md in the repository and exits 0
task="$(cat)"
first="$(head -n1 <<<"$task")"
echo "demo-agent: task: $first"
for step in "reading the code" "making a plan" "editing files"; do
  echo "demo-agent: $step…"
  sleep 0.3
done
case "$first" in
  *fail*)
    echo "demo-agent: the tests fail: 1 of 12 checks broken" >&2
    exit 1 ;;
  *slow*)
    echo "demo-agent: this will take a while…"
    while :; do sleep 1; done ;;
esac
printf '# Notes\n\n%s\n' "$first" > NOTES.md
echo "demo-agent: wrote NOTES.md; done"
