#!/usr/bin/env bash
# A stand-in for an interactive coding agent, for tests. It prints a banner and a prompt, then
# reads lines from its terminal:
#   exit N      exit with N              say WORD    print "agent says: WORD"
#   hang        ignore SIGTERM and sleep (a hang-up ends it, else the supervisor must KILL it)
#   deaf        ignore SIGHUP and SIGTERM and sleep (the supervisor must KILL it)
#   pwd         print its working directory     env K   print K's value
#   work        show a busy status line "working (esc to interrupt)" until the next line
#   ask         ask "Continue? (y/n)" and print the answer
# anything else is echoed as "agent got: LINE". Ctrl-C prints "agent: interrupted" and goes on;
# end of input (Ctrl-D) prints "agent: eof" and exits 0. Arguments: "exit N" at once, or
# "print WORD" before the banner.
[ "$1" = exit ] && { echo "agent: exiting $2"; exit "$2"; }
[ "$1" = print ] && echo "agent prints: $2"
# "gate": a start-up screen that waits for Enter, then clears itself (as a theme picker does).
[ "$1" = gate ] && { echo "Choose the text style"; IFS= read -r _; printf '\033[2J\033[H'; }
trap 'echo "agent: interrupted"' INT
echo "agent ready (pid $$)"
while :; do
  printf '> '
  IFS= read -r line
  rc=$?
  [ $rc -gt 128 ] && continue # interrupted: the trap said so
  if [ $rc -ne 0 ]; then
    echo "agent: eof"
    exit 0
  fi
  case "$line" in
    "exit "*) echo "agent: exiting ${line#exit }"; exit "${line#exit }" ;;
    "say "*) echo "agent says: ${line#say }" ;;
    hang) trap '' TERM; echo "agent: hanging"; while :; do sleep 1; done ;;
    deaf) trap '' HUP TERM; echo "agent: deaf"; while :; do sleep 1; done ;;
    pwd) echo "agent in: $(pwd)" ;;
    work) printf 'working (esc to interrupt)'; IFS= read -r _; printf '\033[1A\r\033[Kdone working\n' ;;
    ask) printf 'Continue? (y/n) '; IFS= read -r a; echo "agent answered: $a" ;;
    "env "*) echo "agent env: ${line#env }=$(printenv "${line#env }")" ;;
    "") ;;
    *) echo "agent got: $line" ;;
  esac
done
