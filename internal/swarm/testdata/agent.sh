#!/bin/sh
# A stand-in for an interactive coding agent, for the package's tests. It prints a banner and a
# prompt, then reads lines from its terminal:
#   say WORD    print "agent says: WORD"        exit N    exit with N
#   env K       print "agent env: K=<value>"    anything else: "agent got: LINE"
# End of input exits 0.
echo "agent ready (pid $$)"
while :; do
  printf '> '
  IFS= read -r line || { echo "agent: eof"; exit 0; }
  case "$line" in
    "say "*) echo "agent says: ${line#say }" ;;
    "exit "*) echo "agent: exiting ${line#exit }"; exit "${line#exit }" ;;
    "env "*) echo "agent env: ${line#env }=$(printenv "${line#env }")" ;;
    "") ;;
    *) echo "agent got: $line" ;;
  esac
done
