#!/usr/bin/env bash
# A stand-in for a coding agent, for tests: it reads its prompt on stdin, like `claude -p`, and
# does what the words of the prompt's first line say (the lines dispatch adds after it, such as
# other agents' prompts, are not orders):
#   SAY=<word>      print the word            SLEEP=<s>   sleep s seconds
#   EXIT=<n>        exit with n (default 0)   HANG        sleep until killed
#   IGNORE_TERM     ignore SIGTERM            WRITE=<f>   create file f in the working directory
#   FILL=<MB>       write MB megabytes into fill.bin (to exhaust a disk)
#   ECHO_PROMPT     print the whole prompt    ARGS        print its arguments
#   TTY             say whether its output is a terminal, and its TERM
#   WAITFOR=<f>     wait until file f exists (at most 60 s): a script lets the agent end once
#                   it has seen what happens while the agent works
#   READ            read a line from its terminal (keys typed into its pane) and print it
#   ENVTO=<f>       write its environment (env) to file f
#   COMMIT=<msg>    commit everything in its working directory with message msg
#   SPEW=<MB>       print MB MiB of text as fast as it can: 1 MiB blocks, each a line
#                   "spew <block, 9 digits> <48 dots>" then 16383 lines of 63 x's (64-byte
#                   lines throughout), so a reader can check every byte (relay_bench_test.go)
prompt=""
[ -t 0 ] || prompt="$(cat)"  # on a terminal, stdin is the keyboard: the prompt is an argument
[ -n "$prompt" ] || prompt="${*: -1}"  # agents configured to take the prompt as an argument
orders="$(head -n1 <<<"$prompt")"
word() { grep -o "$1=[^ ]*" <<<"$orders" | head -n1 | cut -d= -f2-; }
has() { grep -qw "$1" <<<"$orders"; }

echo "agent: pid $$, prompt of ${#prompt} bytes, in $(pwd)"
has ARGS && printf 'agent: arg <%s>\n' "$@"
has ECHO_PROMPT && printf '%s\n' "$prompt"
[ -n "$(word ENVTO)" ] && env > "$(word ENVTO)"
if has TTY; then
  out=pipe; [ -t 1 ] && out=tty
  echo "tty-check: stdout=$out TERM=${TERM:-unset}"
fi
if has READ; then
  read -r line
  echo "agent read: $line"
fi
has IGNORE_TERM && trap 'echo "agent: ignoring SIGTERM"' TERM
[ -n "$(word SAY)" ] && echo "agent says: $(word SAY)"
if [ -n "$(word WAITFOR)" ]; then
  i=0
  while [ ! -e "$(word WAITFOR)" ] && [ $i -lt 3000 ]; do sleep 0.02; i=$((i + 1)); done
fi
[ -n "$(word WRITE)" ] && echo "work" > "$(word WRITE)"
if [ -n "$(word COMMIT)" ]; then
  git add -A && git -c user.email=agent@example.com -c user.name=agent commit -q -m "$(word COMMIT)"
fi
if [ -n "$(word FILL)" ]; then
  dd if=/dev/zero of=fill.bin bs=1M count="$(word FILL)" 2>/dev/null
  echo "agent: filled"
fi
if [ -n "$(word SPEW)" ]; then
  # awk prints each block with one printf: a shell loop would be slower than the relay it times.
  awk -v mb="$(word SPEW)" 'BEGIN {
    line = "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n"
    body = line; while (length(body) < 1048576) body = body body
    body = substr(body, 65)
    for (b = 0; b < mb; b++) printf "spew %09d ................................................\n%s", b, body
  }'
fi
[ -n "$(word SLEEP)" ] && sleep "$(word SLEEP)"
if has HANG; then
  while :; do sleep 1; done
fi
printf '\033[32magent: finished\033[0m\n'
code="$(word EXIT)"
exit "${code:-0}"
