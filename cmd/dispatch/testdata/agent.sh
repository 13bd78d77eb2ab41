#!/usr/bin/env bash
# A stand-in for a coding agent, for tests: it reads its prompt on stdin, like `claude -p`, and
# does what the words of the prompt's first line say (the lines dispatch adds after it, such as
# other agents' prompts, are not orders):
#   SAY=<word>      print the word            SLEEP=<s>   sleep s seconds
#   EXIT=<n>        exit with n (default 0)   HANG        sleep until killed
#   IGNORE_TERM     ignore SIGTERM            WRITE=<f>   create file f in the working directory
#   FILL=<MB>       write MB megabytes into fill.bin (to exhaust a disk)
#   ECHO_PROMPT     print the whole prompt    ARGS        print its arguments
prompt=""
[ -t 0 ] || prompt="$(cat)"  # on a terminal, stdin is the keyboard: the prompt is an argument
[ -n "$prompt" ] || prompt="${*: -1}"  # agents configured to take the prompt as an argument
orders="$(head -n1 <<<"$prompt")"
word() { grep -o "$1=[^ ]*" <<<"$orders" | head -n1 | cut -d= -f2-; }
has() { grep -qw "$1" <<<"$orders"; }

echo "agent: pid $$, prompt of ${#prompt} bytes, in $(pwd)"
has ARGS && printf 'agent: arg <%s>\n' "$@"
has ECHO_PROMPT && printf '%s\n' "$prompt"
has IGNORE_TERM && trap 'echo "agent: ignoring SIGTERM"' TERM
[ -n "$(word SAY)" ] && echo "agent says: $(word SAY)"
[ -n "$(word WRITE)" ] && echo "work" > "$(word WRITE)"
if [ -n "$(word FILL)" ]; then
  dd if=/dev/zero of=fill.bin bs=1M count="$(word FILL)" 2>/dev/null
  echo "agent: filled"
fi
[ -n "$(word SLEEP)" ] && sleep "$(word SLEEP)"
if has HANG; then
  while :; do sleep 1; done
fi
printf '\033[32magent: finished\033[0m\n'
code="$(word EXIT)"
exit "${code:-0}"
