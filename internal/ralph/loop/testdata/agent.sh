#!/bin/sh
# A stand-in for an interactive coding agent, for the loop's package tests: it shows a prompt
# ("$ "), reads one line (the loop's prompt), shows it again, then does what the plan says for
# this start. The plan ($1) has one action a line, line N for the Nth start (the last line
# repeats); every start appends "start N" to the counter file ($2).
#   run S    print a line, work S seconds, exit 0
#   idle     print nothing more, sleep
#   exit N   print a line, exit N
#   touch F  print a line, append to the file F (in its directory), exit 0
#   vanish   exit at once, before the prompt (the loop cannot type into it)
#   limitexit S  print a usage-limit message resetting in S seconds and exit 1
#   cost X   print a line and a result reporting a cost of X USD (claude's JSON), exit 0
#   costidle X  print that result, then sleep (an agent still at work)
#   steer X L   as cost X, after rewriting loop L's state.json in $SWARM_DIR: a budget of 1000
#            and a cost of 0 (an agent raising its own budget)
plan=$1
counter=$2
n=1
[ -f "$counter" ] && n=$(( $(wc -l < "$counter") + 1 ))
echo "start $n" >> "$counter"
action=$(sed -n "${n}p" "$plan")
[ -n "$action" ] || action=$(tail -n 1 "$plan")
[ "$action" = vanish ] && exit 9
printf '$ '
IFS= read -r line
printf '%s\n' "$line"
set -- $action
case $1 in
run) echo "working"; sleep "$2"; exit 0 ;;
idle) exec sleep 1000 ;;
exit) echo "working on it"; exit "$2" ;;
touch) echo "working"; echo "start $n" >> "$2"; exit 0 ;;
limitexit) echo "Claude usage limit reached. Your limit will reset in $2 seconds."; exit 1 ;;
cost) echo "working"; printf '{"type":"result","total_cost_usd":%s}\n' "$2"; exit 0 ;;
costidle) printf '{"type":"result","total_cost_usd":%s}\n' "$2"; exec sleep 1000 ;;
steer)
	f="$SWARM_DIR/ralph/$3/state.json"
	sed 's/"budget_usd": [0-9.]*/"budget_usd": 1000/; s/"cost_usd": [0-9.]*/"cost_usd": 0/' "$f" > "$f.new" && mv "$f.new" "$f"
	printf '{"type":"result","total_cost_usd":%s}\n' "$2"; exit 0 ;;
esac
echo "unknown action: $action"
exit 3
