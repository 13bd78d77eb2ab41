#!/bin/sh
# A stand-in for an interactive coding agent, for ralph's loop tests: it shows a prompt ("$ "),
# reads one line (the loop's prompt), shows it again (as an agent's transcript does), then does
# what the plan says for this start. The plan ($1) has one action a line, line N for the Nth
# start (the last line repeats); every start appends "start N" to the counter file ($2).
#   exit N       print a line, exit N
#   done         print the done marker TASK_DONE and exit at once
#   donewait     print TASK_DONE, then idle
#   echo P       print the prompt again behind the prefix P (a transcript's "User:"), exit 0
#   idle         print nothing more, sleep
#   run S        print a line, work S seconds, exit 0
#   await F      print a line, work until the file F beside the plan exists (at most 60 s), exit
#                0: a script does what it tests while the iteration runs, then lets it end
#   ask          wait for another line typed (a heartbeat), print "got: LINE", exit 0
#   chatty S     print a line every 0.2 s for S seconds, exit 0
#   compact      show "Compacting conversation", then idle
#   context N    show "Context: N% used" as its status line, then idle
#   (a plan whose first line is "login" shows a login screen before its prompt, and idles)
#   limit S      show a usage-limit message resetting in S seconds, idle; on the next line typed,
#                print "resumed", exit 0
#   limitexit S  print a usage-limit message resetting in S seconds and exit 1
#   cost X F     append a line to the file F (in the agent's directory), print a result
#                reporting a cost of X USD (claude's JSON), exit 0
plan=$1
counter=$2
n=1
[ -f "$counter" ] && n=$(( $(wc -l < "$counter") + 1 ))
echo "start $n" >> "$counter"
action=$(sed -n "${n}p" "$plan")
[ -n "$action" ] || action=$(tail -n 1 "$plan")
if [ "$action" = login ]; then echo "Select login method:"; echo " 1. Claude account"; exec sleep 1000; fi
printf '$ '
IFS= read -r line
printf '%s\n' "$line"
set -- $action
case $1 in
exit) echo "working on it"; exit "$2" ;;
done) echo "TASK_DONE"; exit 0 ;;
donewait) echo "TASK_DONE"; exec sleep 1000 ;;
echo) printf '%s %s\n' "$2" "$line"; exit 0 ;;
idle) exec sleep 1000 ;;
run) echo "working"; sleep "$2"; exit 0 ;;
await) echo "working"; i=0; while [ ! -e "$(dirname "$plan")/$2" ] && [ $i -lt 3000 ]; do sleep 0.02; i=$((i + 1)); done; exit 0 ;;
ask) IFS= read -r more; echo "got: $more"; exit 0 ;;
chatty) i=0; while [ $i -lt $(( $2 * 5 )) ]; do echo "tick $i"; i=$((i + 1)); sleep 0.2; done; exit 0 ;;
compact) echo "Compacting conversation..."; exec sleep 1000 ;;
context) echo "thinking"; echo "100% of tests pass"; echo "Context: $2% used"; exec sleep 1000 ;;
limit) echo "Claude usage limit reached. Your limit will reset in $2 seconds."; IFS= read -r more; echo "resumed: $more"; exit 0 ;;
limitexit) echo "Claude usage limit reached. Your limit will reset in $2 seconds."; exit 1 ;;
cost) echo "start $n" >> "$3"; printf '{"type":"result","total_cost_usd":%s}\n' "$2"; exit 0 ;;
esac
echo "unknown action: $action"
exit 3
